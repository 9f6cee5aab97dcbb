-- The change counters (store.Generations) the portal's response cache is keyed by: each is
-- advanced in the same transaction as a write that changes what pages show, so a reader
-- sees a counter and the data it counts together.
CREATE TABLE generations (
	name TEXT PRIMARY KEY,
	n    BIGINT NOT NULL
);
INSERT INTO generations (name, n) VALUES ('runs', 1), ('work', 1), ('log', 1);
