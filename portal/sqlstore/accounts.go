package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// SetAdminToken makes tokenHash the administrator's token, creating the administrator when
// there is none. It reports whether the administrator was created.
func (s *DB) SetAdminToken(ctx context.Context, tokenHash string) (created bool, err error) {
	err = s.tx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET token_hash = ? WHERE role = 'admin'`, tokenHash)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		created = true
		_, err = tx.ExecContext(ctx, `INSERT INTO users (name, role, token_hash, created_at) VALUES ('admin', 'admin', ?, ?)`, tokenHash, ms0(s.Now()))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("set administrator token: %w", err)
	}
	return created, nil
}

// HasAdmin reports whether an administrator exists.
func (s *DB) HasAdmin(ctx context.Context) (bool, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE role = 'admin'`).Scan(&n)
	return n > 0, err
}

// CreateUser adds an account signing in with the token whose hash is given.
func (s *DB) CreateUser(ctx context.Context, name, role, tokenHash string) (store.User, error) {
	u := store.User{Name: name, Role: role, CreatedAt: s.Now().UTC()}
	err := s.write.QueryRowContext(ctx, `INSERT INTO users (name, role, token_hash, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
		name, role, tokenHash, ms0(u.CreatedAt)).Scan(&u.ID)
	if err != nil {
		if isUnique(err) {
			return store.User{}, fault.New(fault.Conflict, "an account named %q already exists (names are unique regardless of case)", name)
		}
		return store.User{}, fmt.Errorf("create user %s: %w", name, err)
	}
	return u, nil
}

// UserByToken returns the account signing in with the token of that hash.
func (s *DB) UserByToken(ctx context.Context, tokenHash string) (store.User, error) {
	var u store.User
	var created sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT id, name, role, created_at FROM users WHERE token_hash = ? AND revoked_at IS NULL`, tokenHash).Scan(&u.ID, &u.Name, &u.Role, &created)
	if err != nil {
		return store.User{}, notFound(err, "unknown token")
	}
	u.CreatedAt = fromMS(created)
	return u, nil
}

// Page queries of the administrator's lists (plans.go explains them).
const (
	qUsers         = `SELECT id, name, role, created_at, revoked_at FROM users ORDER BY id DESC LIMIT ?`
	qRunners       = `SELECT ` + runnerCols + ` FROM runners ORDER BY last_seen DESC LIMIT ?`
	qAllKeys       = `SELECT ` + submitterKeyCols + ` FROM submitter_keys k JOIN users u ON u.id = k.user_id ORDER BY k.id DESC LIMIT ?`
	qUserKeys      = `SELECT ` + submitterKeyCols + ` FROM submitter_keys k JOIN users u ON u.id = k.user_id WHERE k.user_id = ? ORDER BY k.id DESC LIMIT ?`
	qFirmware      = `SELECT ` + firmwareCols + ` FROM firmware f LEFT JOIN users u ON u.id = f.uploaded_by ORDER BY f.created_at DESC LIMIT ?`
	qBoardFirmware = `SELECT ` + firmwareCols + ` FROM firmware f LEFT JOIN users u ON u.id = f.uploaded_by WHERE f.board_class = ? ORDER BY f.created_at DESC LIMIT ?`
)

// Users lists the newest store.AdminList accounts, newest first.
func (s *DB) Users(ctx context.Context) ([]store.User, error) {
	rows, err := s.read.QueryContext(ctx, qUsers, store.AdminList)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	defer rows.Close()
	var out []store.User
	for rows.Next() {
		var u store.User
		var c, rev sql.NullInt64
		if err := rows.Scan(&u.ID, &u.Name, &u.Role, &c, &rev); err != nil {
			return nil, err
		}
		u.CreatedAt, u.RevokedAt = fromMS(c), fromMS(rev)
		out = append(out, u)
	}
	return out, rows.Err()
}

// CreateSession records a session for user until expires.
func (s *DB) CreateSession(ctx context.Context, tokenHash string, userID int64, expires time.Time) error {
	_, err := s.write.ExecContext(ctx, `INSERT INTO sessions (token_hash, user_id, expires_at) VALUES (?, ?, ?)`, tokenHash, userID, ms0(expires))
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// UserBySession returns the user of an unexpired session.
func (s *DB) UserBySession(ctx context.Context, tokenHash string) (store.User, error) {
	var u store.User
	var c sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT u.id, u.name, u.role, u.created_at FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = ? AND s.expires_at > ? AND u.revoked_at IS NULL`, tokenHash, ms0(s.Now())).Scan(&u.ID, &u.Name, &u.Role, &c)
	if err != nil {
		return store.User{}, notFound(err, "no such session")
	}
	u.CreatedAt = fromMS(c)
	return u, nil
}

// DeleteSession ends a session.
func (s *DB) DeleteSession(ctx context.Context, tokenHash string) error {
	_, err := s.write.ExecContext(ctx, `DELETE FROM sessions WHERE token_hash = ?`, tokenHash)
	return err
}

const runnerCols = `id, name, fingerprint, public_keys, boards, version, created_at, last_seen, capabilities, revoked_at, reenrol_allowed`

func scanRunner(sc interface{ Scan(...any) error }) (store.Runner, error) {
	var r store.Runner
	var keys, boards, caps string
	var c, l, rev sql.NullInt64
	if err := sc.Scan(&r.ID, &r.Name, &r.Fingerprint, &keys, &boards, &r.Version, &c, &l, &caps, &rev, &r.ReenrolAllowed); err != nil {
		return store.Runner{}, err
	}
	if err := json.Unmarshal([]byte(caps), &r.Capabilities); err != nil {
		return store.Runner{}, fmt.Errorf("runner %d capabilities: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(keys), &r.PublicKeys); err != nil {
		return store.Runner{}, fmt.Errorf("runner %d keys: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(boards), &r.Boards); err != nil {
		return store.Runner{}, fmt.Errorf("runner %d boards: %w", r.ID, err)
	}
	r.CreatedAt, r.LastSeen, r.RevokedAt = fromMS(c), fromMS(l), fromMS(rev)
	return r, nil
}

// SetRunnerCapabilities records the capabilities a runner reported when it enrolled.
func (s *DB) SetRunnerCapabilities(ctx context.Context, id int64, c protocol.Capabilities) error {
	b, _ := json.Marshal(c)
	if _, err := s.write.ExecContext(ctx, `UPDATE runners SET capabilities = ? WHERE id = ?`, string(b), id); err != nil {
		return fmt.Errorf("record runner %d capabilities: %w", id, err)
	}
	s.changed(ctx, genWork)
	return nil
}

// RunnerByToken returns the runner whose bearer token has that hash, and marks it seen.
func (s *DB) RunnerByToken(ctx context.Context, tokenHash string) (store.Runner, error) {
	r, err := scanRunner(s.read.QueryRowContext(ctx, `SELECT `+runnerCols+` FROM runners WHERE token_hash = ? AND revoked_at IS NULL`, tokenHash))
	if err != nil {
		return store.Runner{}, notFound(err, "unknown runner token")
	}
	return r, nil
}

// TouchRunner records that the runner was heard from now. Failures are not worth failing a
// request over, so it only returns them.
func (s *DB) TouchRunner(ctx context.Context, id int64) error {
	_, err := s.write.ExecContext(ctx, `UPDATE runners SET last_seen = ? WHERE id = ?`, ms0(s.Now()), id)
	return err
}

// Runner returns a runner by id.
func (s *DB) Runner(ctx context.Context, id int64) (store.Runner, error) {
	r, err := scanRunner(s.read.QueryRowContext(ctx, `SELECT `+runnerCols+` FROM runners WHERE id = ?`, id))
	if err != nil {
		return store.Runner{}, notFound(err, "runner %d not found", id)
	}
	return r, nil
}

// Runners lists the store.AdminList most recently seen runners, most recently seen first
// (the connected ones are among them).
func (s *DB) Runners(ctx context.Context) ([]store.Runner, error) {
	rows, err := s.read.QueryContext(ctx, qRunners, store.AdminList)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	defer rows.Close()
	var out []store.Runner
	for rows.Next() {
		r, err := scanRunner(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

const submitterKeyCols = `k.id, k.user_id, u.name, k.label, k.fingerprint, k.public_keys, k.created_at, k.revoked_at`

func scanSubmitterKey(sc interface{ Scan(...any) error }) (store.SubmitterKey, error) {
	var k store.SubmitterKey
	var keys string
	var c, rev sql.NullInt64
	if err := sc.Scan(&k.ID, &k.UserID, &k.UserName, &k.Label, &k.Fingerprint, &keys, &c, &rev); err != nil {
		return store.SubmitterKey{}, err
	}
	if err := json.Unmarshal([]byte(keys), &k.PublicKeys); err != nil {
		return store.SubmitterKey{}, err
	}
	k.CreatedAt, k.RevokedAt = fromMS(c), fromMS(rev)
	return k, nil
}

// SubmitterKeyByFingerprint returns the registered keys with that fingerprint, revoked or not.
func (s *DB) SubmitterKeyByFingerprint(ctx context.Context, fp string) (store.SubmitterKey, error) {
	k, err := scanSubmitterKey(s.read.QueryRowContext(ctx, `SELECT `+submitterKeyCols+` FROM submitter_keys k JOIN users u ON u.id = k.user_id WHERE k.fingerprint = ?`, fp))
	if err != nil {
		return store.SubmitterKey{}, notFound(err, "unknown key %s", fp)
	}
	return k, nil
}

// SubmitterKeys lists a user's registered keys (all users' when userID is 0), the newest
// store.AdminList, newest first.
func (s *DB) SubmitterKeys(ctx context.Context, userID int64) ([]store.SubmitterKey, error) {
	q, args := qAllKeys, []any{store.AdminList}
	if userID != 0 {
		q, args = qUserKeys, []any{userID, store.AdminList}
	}
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var out []store.SubmitterKey
	for rows.Next() {
		k, err := scanSubmitterKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// AddFirmware records a firmware build whose blob is already stored. Re-adding a digest is
// a conflict.
func (s *DB) AddFirmware(ctx context.Context, f store.Firmware, by int64) error {
	info, err := json.Marshal(f.Build)
	if err != nil {
		return fmt.Errorf("add firmware: encode build info: %w", err)
	}
	_, err = s.write.ExecContext(ctx, `INSERT INTO firmware (digest, filename, size, board_class, toolchain, libraries, source_url, source_commit, uploaded_by, created_at,
		build_info, metadata_json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, f.Digest, f.Filename, f.Size, f.BoardClass, f.Toolchain, f.Libraries, f.SourceURL, f.SourceCommit, by, ms0(s.Now()),
		string(info), f.Metadata)
	if err != nil {
		if isUnique(err) {
			return fault.New(fault.Conflict, "firmware %s is already stored", f.Digest)
		}
		return fmt.Errorf("add firmware: %w", err)
	}
	s.changed(ctx, genWork)
	return nil
}

const firmwareCols = `f.digest, f.filename, f.size, f.board_class, f.toolchain, f.libraries, f.source_url, f.source_commit, COALESCE(u.name, ''), f.created_at,
	COALESCE(f.uploaded_by, 0), f.withdrawn_at, f.withdrawn_reason`

// scanFirmware scans firmwareCols, then into more (columns selected after them).
func scanFirmware(sc interface{ Scan(...any) error }, more ...any) (store.Firmware, error) {
	var f store.Firmware
	var c, w sql.NullInt64
	err := sc.Scan(append([]any{&f.Digest, &f.Filename, &f.Size, &f.BoardClass, &f.Toolchain, &f.Libraries, &f.SourceURL, &f.SourceCommit, &f.UploadedBy, &c,
		&f.UploaderID, &w, &f.Withdrawn}, more...)...)
	f.CreatedAt, f.WithdrawnAt = fromMS(c), fromMS(w)
	return f, err
}

// WithdrawFirmware marks a build withdrawn, with the reason: new jobs naming it are refused,
// and the jobs still queued that would flash it are cancelled in the same transaction (failed,
// with the error store.CancelledByWithdrawal gives); it returns their ids. Jobs already
// running finish: their board has the build flashed, and the run records its digest. Its file
// and the runs that used it stay. Withdrawing it again is a conflict.
func (s *DB) WithdrawFirmware(ctx context.Context, digest, reason string) ([]int64, error) {
	now := s.Now()
	var cancelled []int64
	err := s.tx(ctx, func(tx *Tx) error {
		cancelled = nil
		res, err := tx.ExecContext(ctx, `UPDATE firmware SET withdrawn_at = ?, withdrawn_reason = ? WHERE digest = ? AND withdrawn_at IS NULL`, ms0(now), reason, digest)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNothingWithdrawn
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM jobs WHERE state = 'queued' AND firmware_digest = ? ORDER BY id`, digest)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			cancelled = append(cancelled, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(cancelled) == 0 {
			tx.change(genWork)
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?, finished_at = ? WHERE state = 'queued' AND firmware_digest = ?`,
			store.CancelledByWithdrawal(digest, now, reason), ms0(now), digest); err != nil {
			return err
		}
		return tx.notify(ctx, store.EventJobs)
	})
	if errors.Is(err, errNothingWithdrawn) {
		if _, err := s.FirmwareBuild(ctx, digest); err != nil {
			return nil, err
		}
		return nil, fault.New(fault.Conflict, "firmware %s is withdrawn already", digest)
	}
	if err != nil {
		return nil, fmt.Errorf("withdraw firmware: %w", err)
	}
	return cancelled, nil
}

// errNothingWithdrawn ends WithdrawFirmware's transaction when no build was withdrawn.
var errNothingWithdrawn = errors.New("no firmware row withdrawn")

// FirmwareBuild returns one firmware build, with how it was built and its metadata.json.
func (s *DB) FirmwareBuild(ctx context.Context, digest string) (store.Firmware, error) {
	var info, meta string
	f, err := scanFirmware(s.read.QueryRowContext(ctx, `SELECT `+firmwareCols+`, f.build_info, f.metadata_json FROM firmware f LEFT JOIN users u ON u.id = f.uploaded_by WHERE f.digest = ?`, digest),
		&info, &meta)
	if err != nil {
		return store.Firmware{}, notFound(err, "firmware %s not found", digest)
	}
	f.Metadata = meta
	if info != "" {
		if err := json.Unmarshal([]byte(info), &f.Build); err != nil {
			return store.Firmware{}, fmt.Errorf("firmware %s: decode build info: %w", digest, err)
		}
	}
	return f, nil
}

// FirmwareBuilds lists the newest store.AdminList builds, for one board class or all (""),
// newest first.
func (s *DB) FirmwareBuilds(ctx context.Context, boardClass string) ([]store.Firmware, error) {
	q, args := qFirmware, []any{store.AdminList}
	if boardClass != "" {
		q, args = qBoardFirmware, []any{boardClass, store.AdminList}
	}
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list firmware: %w", err)
	}
	defer rows.Close()
	var out []store.Firmware
	for rows.Next() {
		f, err := scanFirmware(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
