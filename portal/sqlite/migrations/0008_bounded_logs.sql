-- Job logs are bounded per attempt and per job (LogLimits): each chunk records its size in
-- bytes, its start in the attempt's whole log (what the runner sent, dropped parts included)
-- and whether it belongs to the kept head; job_log_state keeps each attempt's totals, so a
-- new chunk is checked against the limits without summing the log.
ALTER TABLE job_logs ADD COLUMN size BIGINT NOT NULL DEFAULT 0;
ALTER TABLE job_logs ADD COLUMN pos BIGINT NOT NULL DEFAULT 0;
ALTER TABLE job_logs ADD COLUMN head INTEGER NOT NULL DEFAULT 0;
-- (octet_length in PostgreSQL)
UPDATE job_logs SET size = length(CAST(data AS BLOB));
UPDATE job_logs SET pos = (SELECT COALESCE(SUM(o.size), 0) FROM job_logs o
	WHERE o.job_id = job_logs.job_id AND o.attempt = job_logs.attempt AND o.idx < job_logs.idx AND o.idx < 1000000000)
	WHERE idx < 1000000000;
UPDATE job_logs SET head = 1 WHERE pos < 65536 OR idx = 1000000000;

CREATE TABLE job_log_state (
	job_id          INTEGER NOT NULL REFERENCES jobs (id),
	attempt         INTEGER NOT NULL,
	-- end_pos is the length of everything the runner sent (streamed chunks), dropped or not.
	end_pos         BIGINT  NOT NULL DEFAULT 0,
	stored_bytes    BIGINT  NOT NULL DEFAULT 0,
	stored_chunks   INTEGER NOT NULL DEFAULT 0,
	dropped_bytes   BIGINT  NOT NULL DEFAULT 0,
	dropped_chunks  INTEGER NOT NULL DEFAULT 0,
	-- max_dropped_idx: a retried chunk at or below it was dropped before and is not stored again.
	max_dropped_idx INTEGER NOT NULL DEFAULT -1,
	PRIMARY KEY (job_id, attempt)
);
INSERT INTO job_log_state (job_id, attempt, end_pos, stored_bytes, stored_chunks)
	SELECT job_id, attempt, COALESCE(SUM(CASE WHEN idx < 1000000000 THEN size ELSE 0 END), 0), SUM(size), COUNT(*)
	FROM job_logs GROUP BY job_id, attempt;

-- Trimming picks the oldest chunk outside the head; reading a tail or what is new since a
-- position walks pos. Both without touching the chunks' text.
CREATE INDEX job_logs_trim ON job_logs (job_id, attempt, head, idx, size);
CREATE INDEX job_logs_pos ON job_logs (job_id, attempt, pos);
