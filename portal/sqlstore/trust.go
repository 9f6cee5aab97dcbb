package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// isUnique reports whether err is a unique-constraint violation.
// isUnique reports a unique-constraint violation: SQLite's "UNIQUE constraint failed",
// PostgreSQL's SQLSTATE 23505.
func isUnique(err error) bool {
	if err == nil {
		return false
	}
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == "23505" {
		return true
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// maxOpenChallenges bounds how many unexpired challenges may be outstanding at once, so
// asking for challenges cannot fill the database.
const maxOpenChallenges = 100000

// IssueChallenge records a proof-of-possession challenge (lowercase hex) for purpose, valid
// once until expires. Expired challenges older than an hour are deleted on the way.
func (s *DB) IssueChallenge(ctx context.Context, challenge, purpose string, expires time.Time) error {
	now := ms0(s.Now())
	err := s.tx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM pop_challenges WHERE expires_at < ?`, now-int64(time.Hour/time.Millisecond)); err != nil {
			return err
		}
		var open int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pop_challenges WHERE expires_at > ? AND used_at IS NULL`, now).Scan(&open); err != nil {
			return err
		}
		if open >= maxOpenChallenges {
			return fault.New(fault.Conflict, "too many challenges are outstanding; try again in a few minutes")
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO pop_challenges (challenge, purpose, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			challenge, purpose, now, ms0(expires))
		return err
	})
	if err != nil {
		return fmt.Errorf("issue challenge: %w", err)
	}
	return nil
}

// UseChallenge marks a challenge used, once: it fails (unauthorized, with the reason) when
// the challenge is unknown, was issued for another purpose, is already used or has expired.
// The marking commits on its own, so a challenge is spent even if what it was for is refused.
func (s *DB) UseChallenge(ctx context.Context, challenge, purpose string) error {
	now := ms0(s.Now())
	res, err := s.write.ExecContext(ctx, `UPDATE pop_challenges SET used_at = ? WHERE challenge = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?`,
		now, challenge, purpose, now)
	if err != nil {
		return fmt.Errorf("use challenge: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var p string
	var exp int64
	var used sql.NullInt64
	err = s.write.QueryRowContext(ctx, `SELECT purpose, expires_at, used_at FROM pop_challenges WHERE challenge = ?`, challenge).Scan(&p, &exp, &used)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fault.New(fault.Unauthorized, "proof of possession: unknown challenge (ask %s for one first)", protocol.RouteChallenge)
	case err != nil:
		return fmt.Errorf("use challenge: %w", err)
	case p != purpose:
		return fault.New(fault.Unauthorized, "proof of possession: the challenge was issued for %s, not %s", p, purpose)
	case used.Valid:
		return fault.New(fault.Unauthorized, "proof of possession: the challenge was already used (a challenge is good for one proof)")
	default:
		return fault.New(fault.Unauthorized, "proof of possession: the challenge expired at %s; ask for a new one", time.UnixMilli(exp).UTC().Format(time.RFC3339))
	}
}

// CreateEnrolToken records a runner enrolment token (by hash) created by the user by (0 for
// the portal itself).
func (s *DB) CreateEnrolToken(ctx context.Context, label, tokenHash string, by int64, opt store.EnrolTokenOptions) (int64, error) {
	if opt.MaxUses < 1 {
		opt.MaxUses = 1
	}
	var byArg, expArg any
	if by > 0 {
		byArg = by
	}
	if !opt.Expires.IsZero() {
		expArg = ms0(opt.Expires)
	}
	var id int64
	err := s.write.QueryRowContext(ctx, `INSERT INTO enrol_tokens (label, token_hash, created_by, created_at, max_uses, expires_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		label, tokenHash, byArg, ms0(s.Now()), opt.MaxUses, expArg).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("create enrolment token: %w", err)
	}
	return id, nil
}

const enrolTokenCols = `t.id, t.label, t.created_at, t.expires_at, t.revoked_at, t.max_uses, t.uses, (SELECT COUNT(*) FROM runners r WHERE r.enrol_token = t.id)`

func scanEnrolToken(sc interface{ Scan(...any) error }) (store.EnrolToken, error) {
	var t store.EnrolToken
	var c, e, r sql.NullInt64
	if err := sc.Scan(&t.ID, &t.Label, &c, &e, &r, &t.MaxUses, &t.Uses, &t.Runners); err != nil {
		return store.EnrolToken{}, err
	}
	t.CreatedAt, t.Expires, t.RevokedAt = fromMS(c), fromMS(e), fromMS(r)
	return t, nil
}

// qEnrolTokens is the page query of EnrolTokens; each token's runners are counted from
// runners_enrol_token.
const qEnrolTokens = `SELECT ` + enrolTokenCols + ` FROM enrol_tokens t ORDER BY t.id DESC LIMIT ?`

// EnrolTokens lists the newest store.EnrolTokenList enrolment tokens.
func (s *DB) EnrolTokens(ctx context.Context) ([]store.EnrolToken, error) {
	rows, err := s.read.QueryContext(ctx, qEnrolTokens, store.EnrolTokenList)
	if err != nil {
		return nil, fmt.Errorf("list enrolment tokens: %w", err)
	}
	defer rows.Close()
	var out []store.EnrolToken
	for rows.Next() {
		t, err := scanEnrolToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Enrol registers a runner whose keys nobody holds yet, spending one use of a usable
// enrolment token; or re-enrols the runner holding the same keys when the caller presents
// that runner's current token or the administrator released it, without an enrolment token.
// Keys held by another runner or by a submitter are a conflict and nothing changes; a
// revoked runner's keys are refused for good.
func (s *DB) Enrol(ctx context.Context, e store.Enrolment) (id int64, reenrolled bool, err error) {
	keysJSON, _ := json.Marshal(e.Keys)
	boardsJSON, _ := json.Marshal(e.Boards)
	capsJSON, _ := json.Marshal(e.Capabilities)
	fp := e.Keys.Fingerprint()
	now := s.Now()
	err = s.tx(ctx, func(tx *Tx) error {
		tx.change(genWork)
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM submitter_keys WHERE fingerprint = ?`, fp).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fault.New(fault.Conflict, "keys %s are registered as a submitter's keys; a runner cannot enrol with them", fp)
		}
		r, err := scanRunner(tx.QueryRowContext(ctx, `SELECT `+runnerCols+` FROM runners WHERE fingerprint = ?`, fp))
		switch {
		case err == nil:
			var tokHash string
			if err := tx.QueryRowContext(ctx, `SELECT token_hash FROM runners WHERE id = ?`, r.ID).Scan(&tokHash); err != nil {
				return err
			}
			switch {
			case !r.RevokedAt.IsZero():
				return fault.New(fault.Forbidden, "runner %d (keys %s) was revoked by the administrator; enrol with new keys", r.ID, fp)
			case e.CurrentTokenHash != "" && e.CurrentTokenHash == tokHash, r.ReenrolAllowed:
			default:
				return fault.New(fault.Conflict, "keys %s are already enrolled as runner %d (%s): re-enrolling needs that runner's current token, or the administrator's release on the admin page", fp, r.ID, r.Name)
			}
			id, reenrolled = r.ID, true
			_, err = tx.ExecContext(ctx, `UPDATE runners SET name = ?, boards = ?, token_hash = ?, version = ?, capabilities = ?, last_seen = ?, reenrol_allowed = 0 WHERE id = ?`,
				e.Name, string(boardsJSON), e.NewTokenHash, e.Version, string(capsJSON), ms0(now), r.ID)
			return err
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if e.EnrolTokenHash == "" {
			return fault.New(fault.Unauthorized, "an enrolment token is needed to enrol new keys")
		}
		t, err := scanEnrolToken(tx.QueryRowContext(ctx, `SELECT `+enrolTokenCols+` FROM enrol_tokens t WHERE t.token_hash = ?`, e.EnrolTokenHash))
		if err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fault.New(fault.Unauthorized, "unknown enrolment token")
			}
			return err
		}
		if ok, why := t.Usable(now); !ok {
			return fault.New(fault.Unauthorized, "%s", why)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE enrol_tokens SET uses = uses + 1 WHERE id = ?`, t.ID); err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO runners (name, fingerprint, public_keys, boards, token_hash, version, enrol_token, created_at, last_seen, capabilities)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, e.Name, fp, string(keysJSON), string(boardsJSON), e.NewTokenHash, e.Version, t.ID, ms0(now), ms0(now), string(capsJSON)).Scan(&id)
		if isUnique(err) {
			return fault.New(fault.Conflict, "keys %s are already enrolled", fp)
		}
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("enrol runner %s: %w", e.Name, err)
	}
	return id, reenrolled, nil
}

// AddSubmitterKey registers keys (their possession already proven) for a user. Keys
// registered before by anyone, or enrolled by a runner, are a conflict and nothing changes.
func (s *DB) AddSubmitterKey(ctx context.Context, userID int64, label string, keys identity.PublicKeys) (store.SubmitterKey, error) {
	keysJSON, _ := json.Marshal(keys)
	k := store.SubmitterKey{UserID: userID, Label: label, Fingerprint: keys.Fingerprint(), PublicKeys: keys, CreatedAt: s.Now().UTC()}
	err := s.tx(ctx, func(tx *Tx) error {
		var owner sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT u.name FROM submitter_keys k JOIN users u ON u.id = k.user_id WHERE k.fingerprint = ?`, k.Fingerprint).Scan(&owner)
		switch {
		case err == nil:
			return fault.New(fault.Conflict, "keys %s are already registered to the account %s", k.Fingerprint, owner.String)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		var runner int64
		err = tx.QueryRowContext(ctx, `SELECT id FROM runners WHERE fingerprint = ?`, k.Fingerprint).Scan(&runner)
		switch {
		case err == nil:
			return fault.New(fault.Conflict, "keys %s are enrolled as portal runner %d; a runner's keys cannot also be a submitter's", k.Fingerprint, runner)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		err = tx.QueryRowContext(ctx, `INSERT INTO submitter_keys (user_id, label, fingerprint, public_keys, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
			userID, label, k.Fingerprint, string(keysJSON), ms0(k.CreatedAt)).Scan(&k.ID)
		if isUnique(err) {
			return fault.New(fault.Conflict, "keys %s are already registered", k.Fingerprint)
		}
		return err
	})
	if err != nil {
		return store.SubmitterKey{}, fmt.Errorf("register keys: %w", err)
	}
	return k, nil
}

// revoke sets revoked_at on one row of table (by id) that is not revoked yet; what names the
// row in errors.
func (s *DB) revoke(ctx context.Context, table string, id int64, what string, extra string) error {
	err := s.tx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`+extra, ms0(s.Now()), id)
		if err != nil {
			return fmt.Errorf("revoke %s %d: %w", what, id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fault.New(fault.NotFound, "no %s %d that could be revoked (unknown, or revoked already)", what, id)
		}
		return tx.notify(ctx, store.EventRuns)
	})
	return err
}

// RevokeEnrolToken stops an enrolment token from enrolling more runners.
func (s *DB) RevokeEnrolToken(ctx context.Context, id int64) error {
	return s.revoke(ctx, "enrol_tokens", id, "enrolment token", "")
}

// RevokeRunner revokes a runner: its token stops working at once, its keys can never enrol
// again, and its published runs are flagged.
func (s *DB) RevokeRunner(ctx context.Context, id int64) error {
	return s.revoke(ctx, "runners", id, "runner", "")
}

// RevokeSubmitterKey revokes registered keys: bundles they sign are refused from now on and
// runs they signed are flagged.
func (s *DB) RevokeSubmitterKey(ctx context.Context, id int64) error {
	return s.revoke(ctx, "submitter_keys", id, "submitter key", "")
}

// RevokeUser revokes an account (never the administrator's): its token and sessions stop
// working. Its published runs stay.
func (s *DB) RevokeUser(ctx context.Context, id int64) error {
	if err := s.revoke(ctx, "users", id, "account", ` AND role <> 'admin'`); err != nil {
		return err
	}
	if _, err := s.write.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = ?`, id); err != nil {
		return fmt.Errorf("end sessions of account %d: %w", id, err)
	}
	return nil
}

// AllowReenrol releases a (not revoked) runner's keys for one re-enrolment without its
// current token, for a runner that lost it.
func (s *DB) AllowReenrol(ctx context.Context, id int64) error {
	res, err := s.write.ExecContext(ctx, `UPDATE runners SET reenrol_allowed = 1 WHERE id = ? AND revoked_at IS NULL`, id)
	if err != nil {
		return fmt.Errorf("release runner %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fault.New(fault.NotFound, "no runner %d that could be released (unknown, or revoked)", id)
	}
	return nil
}

// AllowReenrolKeys is AllowReenrol for the runner holding the keys of fingerprint fp; it does
// nothing when no runner holds them.
func (s *DB) AllowReenrolKeys(ctx context.Context, fp string) error {
	if _, err := s.write.ExecContext(ctx, `UPDATE runners SET reenrol_allowed = 1 WHERE fingerprint = ? AND revoked_at IS NULL`, fp); err != nil {
		return fmt.Errorf("release runner %s: %w", fp, err)
	}
	return nil
}

// qSignerRevoked is SignerRevoked's query: a runner by its primary key, keys by their unique
// fingerprint.
const qSignerRevoked = `SELECT MIN(t) FROM (
		SELECT revoked_at AS t FROM runners WHERE id = ? AND revoked_at IS NOT NULL
		UNION ALL SELECT revoked_at FROM submitter_keys WHERE fingerprint = ? AND revoked_at IS NOT NULL) x`

// SignerRevoked says whether the keys that signed run r were revoked: its runner's, for a
// portal runner's run, or the registered submitter keys with its signer fingerprint; and when.
func (s *DB) SignerRevoked(ctx context.Context, r store.Run) (time.Time, error) {
	var rev sql.NullInt64
	err := s.read.QueryRowContext(ctx, qSignerRevoked, r.RunnerID, r.Signer).Scan(&rev)
	if err != nil {
		return time.Time{}, fmt.Errorf("revocation of run %d's signer: %w", r.ID, err)
	}
	return fromMS(rev), nil
}
