-- Browsing (issue 12): lists of runs and jobs, newest first, paged by keyset.
--
-- A run list is ordered by (published_at DESC, id DESC); a job list by (created_at DESC,
-- id DESC). Each filter a list can lead with has an index ending in that order, so a page is
-- one index range scan from the cursor, whatever the list's length: a filter by paper,
-- experiment, board class, assurance level, kind, timing method or submitter, with or without
-- a date range (see ListRuns and portal/README.md, "Lists").
CREATE INDEX runs_list ON runs (published_at, id);
CREATE INDEX runs_list_paper ON runs (paper, published_at, id);
CREATE INDEX runs_list_experiment ON runs (experiment, published_at, id);
CREATE INDEX runs_list_board ON runs (board_class, published_at, id);
CREATE INDEX runs_list_level ON runs (level, published_at, id);
CREATE INDEX runs_list_kind ON runs (kind, published_at, id);
CREATE INDEX runs_list_method ON runs (method, published_at, id);
CREATE INDEX runs_list_submitter ON runs (submitter_id, published_at, id);

CREATE INDEX jobs_list ON jobs (created_at, id);
CREATE INDEX jobs_list_paper ON jobs (paper, created_at, id);
CREATE INDEX jobs_list_experiment ON jobs (experiment, created_at, id);
CREATE INDEX jobs_list_board ON jobs (board_class, created_at, id);
CREATE INDEX jobs_list_state ON jobs (state, created_at, id);
CREATE INDEX jobs_list_method ON jobs (method, created_at, id);

-- Filtering runs by algorithm tests each examined run's cells: (run_id, algorithm) answers
-- "does run r have algorithm a" with one index probe (cells_rank, led by algorithm, would
-- read every cell of that algorithm instead).
CREATE INDEX cells_run_algorithm ON cells (run_id, algorithm);

-- The scheme table's picker lists the (board class, level) pairs with runs: a distinct scan
-- of this small index, not of the runs rows.
CREATE INDEX runs_board_level ON runs (board_class, level);

-- The scheme table (every scheme x operation on one assurance level and board class) reads
-- one (level, board_class) range of this covering index, ordered by median within a group.
CREATE INDEX cells_scheme ON cells (level, board_class, status, algorithm, operation, unit, method, class_status, median, p25, p75, n, run_id);

-- /compare: the bootstrap intervals of one pair of runs (run_b against run_a), computed once
-- per version of the comparison code and kept. report is JSON (portal.PairReport).
CREATE TABLE run_pair_intervals (
	run_a         INTEGER NOT NULL REFERENCES runs (id),
	run_b         INTEGER NOT NULL REFERENCES runs (id),
	code_version  TEXT    NOT NULL,
	computed_at   BIGINT  NOT NULL,
	report        TEXT    NOT NULL,
	PRIMARY KEY (run_a, run_b, code_version)
);
