-- Summaries the paper, board, home and runs pages read instead of counting every run.
--
-- A counter is the sum of n over its key's rows. The transactions that change what is counted
-- only append rows: Publish one +1 row per counter of its run, SaveRebuilt a -1 row per old
-- claim verdict and a +1 row per new one. No writer reads or updates a counter row, so
-- publishers on several processes never lose a serialisation race on one (a read-modify-write
-- upsert did, under PostgreSQL's serialisable transactions). CompactSummaries, run by a
-- periodic job, folds each key's rows into one (dropping keys that sum to zero), so a reader
-- sums one row per key plus the rows appended since the last compaction. RebuildSummaries
-- (pqrepro rebuild) recomputes them from the runs. Revoking a signer changes none of them:
-- the pages count a revoked signer's runs, labelled on the run's own page.

-- Claim verdicts per paper, claim, assurance level, board class, class status and verdict.
-- Each key index covers n (rows are appended, never updated), so a reader sums from it alone.
CREATE TABLE claim_tallies (
	paper         TEXT    NOT NULL,
	claim_id      TEXT    NOT NULL,
	level         TEXT    NOT NULL,
	board_class   TEXT    NOT NULL,
	class_status  TEXT    NOT NULL,
	verdict       TEXT    NOT NULL,
	n             INTEGER NOT NULL
);
CREATE INDEX claim_tallies_key ON claim_tallies (paper, claim_id, level, board_class, class_status, verdict, n);

-- Runs per board class and assurance level.
CREATE TABLE board_counts (
	board_class  TEXT    NOT NULL,
	level        TEXT    NOT NULL,
	n            INTEGER NOT NULL
);
CREATE INDEX board_counts_key ON board_counts (board_class, level, n);

-- Runs per value of one run column: dimension is paper, experiment, kind, method or runner
-- (the runner's id; runs uploaded without a runner are not counted under it).
CREATE TABLE run_counts (
	dimension  TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	n          INTEGER NOT NULL
);
CREATE INDEX run_counts_key ON run_counts (dimension, key, n);

-- The home page's small leaderboards, recomputed by a periodic job (never per view): the
-- standings of one (algorithm, operation, metric) as store.Standings returns them, in order.
CREATE TABLE leader_highlights (
	algorithm     TEXT    NOT NULL,
	operation     TEXT    NOT NULL,
	metric        TEXT    NOT NULL,
	pos           INTEGER NOT NULL,
	unit          TEXT    NOT NULL,
	level         TEXT    NOT NULL,
	method        TEXT    NOT NULL,
	class_status  TEXT    NOT NULL,
	board_class   TEXT    NOT NULL,
	origin        TEXT    NOT NULL,
	median        DOUBLE PRECISION NOT NULL,
	p25           DOUBLE PRECISION NOT NULL,
	p75           DOUBLE PRECISION NOT NULL,
	n             BIGINT  NOT NULL,
	runs          BIGINT  NOT NULL,
	latest_run    BIGINT  NOT NULL,
	computed_at   BIGINT  NOT NULL,
	PRIMARY KEY (algorithm, operation, metric, pos)
);

INSERT INTO claim_tallies (paper, claim_id, level, board_class, class_status, verdict, n)
	SELECT v.paper, v.claim_id, r.level, r.board_class, v.class_status, v.verdict, COUNT(*)
	FROM claim_verdicts v JOIN runs r ON r.id = v.run_id
	GROUP BY v.paper, v.claim_id, r.level, r.board_class, v.class_status, v.verdict;
INSERT INTO board_counts (board_class, level, n) SELECT board_class, level, COUNT(*) FROM runs GROUP BY board_class, level;
INSERT INTO run_counts (dimension, key, n) SELECT 'paper', paper, COUNT(*) FROM runs GROUP BY paper;
INSERT INTO run_counts (dimension, key, n) SELECT 'experiment', experiment, COUNT(*) FROM runs GROUP BY experiment;
INSERT INTO run_counts (dimension, key, n) SELECT 'kind', kind, COUNT(*) FROM runs GROUP BY kind;
INSERT INTO run_counts (dimension, key, n) SELECT 'method', method, COUNT(*) FROM runs GROUP BY method;
INSERT INTO run_counts (dimension, key, n)
	SELECT 'runner', CAST(runner_id AS TEXT), COUNT(*) FROM runs WHERE runner_id IS NOT NULL GROUP BY runner_id;
