-- Accounts: an administrator, submitters and members sign in with a token (stored hashed).
CREATE TABLE users (
	id          INTEGER PRIMARY KEY,
	name        TEXT    NOT NULL,
	role        TEXT    NOT NULL CHECK (role IN ('admin', 'submitter', 'member')),
	token_hash  TEXT    NOT NULL UNIQUE,
	created_at  BIGINT  NOT NULL
);

CREATE TABLE sessions (
	token_hash  TEXT    PRIMARY KEY,
	user_id     INTEGER NOT NULL REFERENCES users (id),
	expires_at  BIGINT  NOT NULL
);

CREATE TABLE enrol_tokens (
	id          INTEGER PRIMARY KEY,
	label       TEXT    NOT NULL,
	token_hash  TEXT    NOT NULL UNIQUE,
	created_by  INTEGER REFERENCES users (id),
	created_at  BIGINT  NOT NULL,
	revoked_at  BIGINT
);

CREATE TABLE runners (
	id           INTEGER PRIMARY KEY,
	name         TEXT    NOT NULL,
	fingerprint  TEXT    NOT NULL UNIQUE,
	public_keys  TEXT    NOT NULL,
	boards       TEXT    NOT NULL,
	token_hash   TEXT    NOT NULL UNIQUE,
	version      TEXT    NOT NULL,
	enrol_token  INTEGER REFERENCES enrol_tokens (id),
	created_at   BIGINT  NOT NULL,
	last_seen    BIGINT  NOT NULL
);

CREATE TABLE submitter_keys (
	id           INTEGER PRIMARY KEY,
	user_id      INTEGER NOT NULL REFERENCES users (id),
	label        TEXT    NOT NULL,
	fingerprint  TEXT    NOT NULL UNIQUE,
	public_keys  TEXT    NOT NULL,
	created_at   BIGINT  NOT NULL
);

CREATE TABLE firmware (
	digest         TEXT    PRIMARY KEY,
	filename       TEXT    NOT NULL,
	size           BIGINT  NOT NULL,
	board_class    TEXT    NOT NULL,
	toolchain      TEXT    NOT NULL,
	libraries      TEXT    NOT NULL,
	source_url     TEXT    NOT NULL,
	source_commit  TEXT    NOT NULL,
	uploaded_by    INTEGER REFERENCES users (id),
	created_at     BIGINT  NOT NULL
);
CREATE INDEX firmware_board_class ON firmware (board_class);

CREATE TABLE jobs (
	id               INTEGER PRIMARY KEY,
	experiment       TEXT    NOT NULL,
	paper            TEXT    NOT NULL,
	manifest_yaml    TEXT    NOT NULL,
	manifest_id      TEXT    NOT NULL,
	board_class      TEXT    NOT NULL,
	firmware_digest  TEXT    NOT NULL DEFAULT '',
	state            TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'published', 'failed')),
	requested_by     INTEGER REFERENCES users (id),
	created_at       BIGINT  NOT NULL,
	started_at       BIGINT,
	finished_at      BIGINT,
	runner_id        INTEGER REFERENCES runners (id),
	lease_id         TEXT,
	lease_expires    BIGINT,
	attempt          INTEGER NOT NULL DEFAULT 0,
	progress         TEXT    NOT NULL DEFAULT '',
	progress_at      BIGINT,
	note             TEXT    NOT NULL DEFAULT '',
	error            TEXT    NOT NULL DEFAULT '',
	run_id           INTEGER
);
CREATE INDEX jobs_queue ON jobs (state, board_class, id);
CREATE INDEX jobs_experiment ON jobs (experiment, id);

-- Log chunks by (job, attempt, index): a retried append of the same index is a no-op.
CREATE TABLE job_logs (
	job_id      INTEGER NOT NULL REFERENCES jobs (id),
	attempt     INTEGER NOT NULL,
	idx         INTEGER NOT NULL,
	data        TEXT    NOT NULL,
	created_at  BIGINT  NOT NULL,
	PRIMARY KEY (job_id, attempt, idx)
);

CREATE TABLE runs (
	id                  INTEGER PRIMARY KEY,
	job_id              INTEGER REFERENCES jobs (id),
	experiment          TEXT    NOT NULL,
	paper               TEXT    NOT NULL,
	manifest_id         TEXT    NOT NULL,
	kind                TEXT    NOT NULL,
	method              TEXT    NOT NULL,
	board_class         TEXT    NOT NULL,
	board_name          TEXT    NOT NULL,
	level               TEXT    NOT NULL CHECK (level IN ('host', 'emulated', 'hardware')),
	origin              TEXT    NOT NULL CHECK (origin IN ('portal-runner', 'community')),
	runner_id           INTEGER REFERENCES runners (id),
	submitter_id        INTEGER REFERENCES users (id),
	signer              TEXT    NOT NULL,
	public_keys         TEXT    NOT NULL,
	bundle_digest       TEXT    NOT NULL,
	bundle_size         BIGINT  NOT NULL,
	firmware_digest     TEXT    NOT NULL DEFAULT '',
	started_at          BIGINT  NOT NULL,
	finished_at         BIGINT  NOT NULL,
	published_at        BIGINT  NOT NULL,
	environment         TEXT    NOT NULL,
	report              TEXT    NOT NULL,
	checks              TEXT    NOT NULL,
	cells_total         INTEGER NOT NULL,
	cells_ok            INTEGER NOT NULL
);
CREATE INDEX runs_experiment ON runs (experiment, id);
CREATE INDEX runs_board ON runs (board_class, id);
CREATE INDEX runs_paper ON runs (paper, id);

CREATE TABLE cells (
	run_id     INTEGER NOT NULL REFERENCES runs (id),
	idx        INTEGER NOT NULL,
	algorithm  TEXT    NOT NULL,
	operation  TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	error      TEXT    NOT NULL,
	unit       TEXT    NOT NULL,
	n          INTEGER NOT NULL,
	min        DOUBLE PRECISION,
	p25        DOUBLE PRECISION,
	median     DOUBLE PRECISION,
	p75        DOUBLE PRECISION,
	max        DOUBLE PRECISION,
	mean       DOUBLE PRECISION,
	stddev     DOUBLE PRECISION,
	heap_per_op DOUBLE PRECISION,
	PRIMARY KEY (run_id, idx)
);
CREATE INDEX cells_leaderboard ON cells (algorithm, operation, status);

CREATE TABLE claim_verdicts (
	run_id    INTEGER NOT NULL REFERENCES runs (id),
	paper     TEXT    NOT NULL,
	claim_id  TEXT    NOT NULL,
	verdict   TEXT    NOT NULL,
	reason    TEXT    NOT NULL,
	PRIMARY KEY (run_id, claim_id)
);
CREATE INDEX claim_verdicts_paper ON claim_verdicts (paper, claim_id);
