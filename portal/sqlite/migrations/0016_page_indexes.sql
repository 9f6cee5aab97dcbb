-- Indexes for the page queries that had none (portal/sqlstore/plans.go lists every page
-- query with the index it uses; a test checks the plans): the newest verdicts of one claim,
-- the admin lists in their order, firmware builds newest first (all, or of one board class),
-- a runner count per enrolment token, a user's submitter keys.
CREATE INDEX claim_verdicts_latest ON claim_verdicts (paper, claim_id, run_id);
CREATE INDEX runners_last_seen ON runners (last_seen);
CREATE INDEX runners_enrol_token ON runners (enrol_token);
CREATE INDEX firmware_list ON firmware (created_at);
CREATE INDEX firmware_list_board ON firmware (board_class, created_at);
DROP INDEX firmware_board_class; -- firmware_list_board serves its queries
CREATE INDEX submitter_keys_user ON submitter_keys (user_id, id);
