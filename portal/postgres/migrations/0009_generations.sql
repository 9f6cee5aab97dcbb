-- The change counters (store.Generations) the portal's response cache is keyed by: one
-- sequence each, advanced with nextval right after a write that changes what pages show has
-- committed (a sequence is never rolled back and never waits for a lock, so concurrent
-- publishers do not conflict over it), read as last_value by every replica. Advanced once
-- here so that last_value moves with the first nextval after it.
CREATE SEQUENCE generation_runs;
CREATE SEQUENCE generation_work;
CREATE SEQUENCE generation_log;
SELECT nextval('generation_runs'), nextval('generation_work'), nextval('generation_log');
