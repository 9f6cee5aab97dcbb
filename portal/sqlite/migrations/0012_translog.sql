-- The transparency log (portal/translog). A published run's leaf is queued in log_entries in
-- the publish transaction (idx NULL: pending); the sequencer gives it an index and stores
-- the tree's hashes (tlog storage order) and state under the lock row.
CREATE TABLE log_entries (
	run_id    INTEGER PRIMARY KEY REFERENCES runs(id),
	leaf      BLOB NOT NULL,
	queued_at BIGINT NOT NULL,
	idx       BIGINT UNIQUE
);
CREATE INDEX log_entries_pending ON log_entries (run_id) WHERE idx IS NULL;
CREATE TABLE log_hashes (
	id   BIGINT PRIMARY KEY,
	hash BLOB NOT NULL
);
CREATE TABLE log_state (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	size       BIGINT NOT NULL,
	root       BLOB NOT NULL,
	published  BIGINT NOT NULL,
	checkpoint BLOB NOT NULL
);
CREATE TABLE log_lock (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	expires_at BIGINT NOT NULL
);
CREATE TABLE log_witnesses (
	name     TEXT PRIMARY KEY,
	ed25519  TEXT NOT NULL,
	mldsa44  TEXT NOT NULL,
	added_at BIGINT NOT NULL
);
CREATE TABLE log_cosignatures (
	size    BIGINT NOT NULL,
	name    TEXT NOT NULL,
	key_id  BIGINT NOT NULL,
	line    TEXT NOT NULL,
	PRIMARY KEY (size, name, key_id)
);
-- Runs published before the log existed are queued too, in run order, with the same leaf
-- encoding as translog.Leaf.Encode (a digest that is not sha256:<64 hex> cannot be a leaf and
-- is left out: no bundle the portal stored has one).
INSERT INTO log_entries (run_id, leaf, queued_at)
SELECT id, CAST('pqrepro-run/v1' || char(10) || 'run ' || id || char(10) || 'bundle ' || bundle_digest || char(10) ||
		'published ' || published_at || char(10) AS BLOB), published_at
	FROM runs
	WHERE length(bundle_digest) = 71 AND substr(bundle_digest, 1, 7) = 'sha256:' AND substr(bundle_digest, 8) NOT GLOB '*[^0-9a-f]*'
		AND published_at >= 0
	ORDER BY id;
