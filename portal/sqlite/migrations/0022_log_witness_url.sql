-- Witnesses the log pushes checkpoints to (C2SP tlog-witness): their add-checkpoint URL
-- prefix, '' for a witness that follows the log itself. A witness of the ecosystem has an
-- Ed25519 cosignature key only: its mldsa44 is ''.
ALTER TABLE log_witnesses ADD COLUMN url TEXT NOT NULL DEFAULT '';
