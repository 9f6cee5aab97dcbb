-- Trust in who registered which keys (issue 8).
--
-- Proof-of-possession challenges: issued by any portal process sharing this database, used
-- once (used_at set atomically under the write lock), refused after expires_at.
CREATE TABLE pop_challenges (
	challenge   TEXT    PRIMARY KEY,
	purpose     TEXT    NOT NULL,
	created_at  BIGINT  NOT NULL,
	expires_at  BIGINT  NOT NULL,
	used_at     BIGINT
);
CREATE INDEX pop_challenges_expiry ON pop_challenges (expires_at);

-- Enrolment tokens are single-use unless the administrator gives a use count, and may expire.
-- Tokens made before this migration were reusable: one that enrolled a runner is used up,
-- one that never did becomes single-use.
ALTER TABLE enrol_tokens ADD COLUMN max_uses INTEGER NOT NULL DEFAULT 1;
ALTER TABLE enrol_tokens ADD COLUMN uses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE enrol_tokens ADD COLUMN expires_at BIGINT;
UPDATE enrol_tokens SET uses = (SELECT COUNT(*) FROM runners r WHERE r.enrol_token = enrol_tokens.id);
UPDATE enrol_tokens SET max_uses = MAX(uses, 1);

-- Runners and submitter keys can be revoked; their published runs stay and are flagged.
-- A runner the administrator released may re-enrol its keys once without its current token.
ALTER TABLE runners ADD COLUMN revoked_at BIGINT;
ALTER TABLE runners ADD COLUMN reenrol_allowed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE submitter_keys ADD COLUMN revoked_at BIGINT;
ALTER TABLE users ADD COLUMN revoked_at BIGINT;

-- Account names are unique regardless of case. Names that clash already keep the oldest
-- account's name; later ones get their id appended.
UPDATE users SET name = name || ' #' || id
	WHERE EXISTS (SELECT 1 FROM users o WHERE lower(o.name) = lower(users.name) AND o.id < users.id);
CREATE UNIQUE INDEX users_name_unique ON users (lower(name));
