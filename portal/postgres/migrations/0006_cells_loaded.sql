-- A cell of a loaded host run (other processes used the CPU above the runner's threshold while
-- it measured; environment.json timing.external.exceeded) stays out of the home page's
-- highlights. Rows published before this migration get it from `pqrepro rebuild`.
ALTER TABLE cells ADD COLUMN loaded BIGINT NOT NULL DEFAULT 0;
