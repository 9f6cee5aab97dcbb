-- Witnesses the log pushes checkpoints to (C2SP tlog-witness): their add-checkpoint URL
-- prefix, '' for a witness that follows the log itself. A witness of the ecosystem has an
-- Ed25519 cosignature key only: its mldsa44 is ''.
ALTER TABLE log_witnesses ADD COLUMN url TEXT NOT NULL DEFAULT '';
-- The partial tiles of completed tiles, each directory ("tile/0/000.p") removed from the files
-- once due: kept for the log's retention window so a reader holding an older checkpoint can
-- still read the tiles of its tree.
CREATE TABLE log_partials (
	dir    TEXT PRIMARY KEY,
	due_at BIGINT NOT NULL
);
