-- The summary lines of each attempt's streamed log (artifacts/logtext: "cell ...", "link: ...",
-- "self-test: ...", "budget: ...", "board: ..."), each at its byte position in the log. They
-- stay when the chunks holding them are dropped to bound the log, so a bounded log still says
-- what became of every cell. job_log_state.summary_bytes bounds them per attempt.
CREATE TABLE job_log_lines (
	job_id  BIGINT NOT NULL REFERENCES jobs (id),
	attempt BIGINT NOT NULL,
	pos     BIGINT NOT NULL,
	line    TEXT   NOT NULL,
	PRIMARY KEY (job_id, attempt, pos)
);
ALTER TABLE job_log_state ADD COLUMN summary_bytes BIGINT NOT NULL DEFAULT 0;
