-- Summaries the paper, board, home and runs pages read instead of counting every run. The
-- store keeps them in the transaction that publishes a run (upserts adding one) and in the one
-- that replaces a run's claim verdicts (SaveRebuilt: the old verdicts taken off, the new ones
-- added); RebuildSummaries (pqrepro rebuild) recomputes them from the runs. A row whose count
-- fell to zero is deleted. Revoking a signer changes none of them: the pages count a revoked
-- signer's runs, labelled on the run's own page.
--
-- Each counter may be spread over several rows (shard: the run's id modulo the engine's
-- CounterShards, 1 on SQLite, 16 on PostgreSQL), so concurrent publishers add to different
-- rows; readers sum them.

-- Claim verdicts per paper, claim, assurance level, board class, class status and verdict.
CREATE TABLE claim_tallies (
	paper         TEXT    NOT NULL,
	claim_id      TEXT    NOT NULL,
	level         TEXT    NOT NULL,
	board_class   TEXT    NOT NULL,
	class_status  TEXT    NOT NULL,
	verdict       TEXT    NOT NULL,
	shard         INTEGER NOT NULL,
	n             INTEGER NOT NULL,
	PRIMARY KEY (paper, claim_id, level, board_class, class_status, verdict, shard)
);

-- Runs per board class and assurance level.
CREATE TABLE board_counts (
	board_class  TEXT    NOT NULL,
	level        TEXT    NOT NULL,
	shard        INTEGER NOT NULL,
	n            INTEGER NOT NULL,
	PRIMARY KEY (board_class, level, shard)
);

-- Runs per value of one run column: dimension is paper, experiment, kind, method or runner
-- (the runner's id; runs uploaded without a runner are not counted under it).
CREATE TABLE run_counts (
	dimension  TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	shard      INTEGER NOT NULL,
	n          INTEGER NOT NULL,
	PRIMARY KEY (dimension, key, shard)
);

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

INSERT INTO claim_tallies (paper, claim_id, level, board_class, class_status, verdict, shard, n)
	SELECT v.paper, v.claim_id, r.level, r.board_class, v.class_status, v.verdict, 0, COUNT(*)
	FROM claim_verdicts v JOIN runs r ON r.id = v.run_id
	GROUP BY v.paper, v.claim_id, r.level, r.board_class, v.class_status, v.verdict;
INSERT INTO board_counts (board_class, level, shard, n)
	SELECT board_class, level, 0, COUNT(*) FROM runs GROUP BY board_class, level;
INSERT INTO run_counts (dimension, key, shard, n) SELECT 'paper', paper, 0, COUNT(*) FROM runs GROUP BY paper;
INSERT INTO run_counts (dimension, key, shard, n) SELECT 'experiment', experiment, 0, COUNT(*) FROM runs GROUP BY experiment;
INSERT INTO run_counts (dimension, key, shard, n) SELECT 'kind', kind, 0, COUNT(*) FROM runs GROUP BY kind;
INSERT INTO run_counts (dimension, key, shard, n) SELECT 'method', method, 0, COUNT(*) FROM runs GROUP BY method;
INSERT INTO run_counts (dimension, key, shard, n)
	SELECT 'runner', CAST(runner_id AS TEXT), 0, COUNT(*) FROM runs WHERE runner_id IS NOT NULL GROUP BY runner_id;
