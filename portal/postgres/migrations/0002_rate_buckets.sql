-- Rate-limit token buckets kept in the store, so every portal process sharing a database
-- spends the same budget per client address (used when the store is shared).
CREATE TABLE rate_buckets (
	key    TEXT PRIMARY KEY,
	tokens DOUBLE PRECISION NOT NULL,
	at     BIGINT NOT NULL
);
CREATE INDEX rate_buckets_at ON rate_buckets (at);
