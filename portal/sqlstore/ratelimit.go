package sqlstore

import (
	"context"
	"fmt"
	"time"
)

// TakeToken takes one token from the bucket named key, which refills at perSecond up to
// burst (a new bucket starts full). When none is left it reports false and how long until
// one is. Concurrent takers of one key queue on its row, so the budget holds across every
// process sharing the database.
func (s *DB) TakeToken(ctx context.Context, key string, perSecond float64, burst int, now time.Time) (ok bool, wait time.Duration, err error) {
	at := ms0(now)
	err = s.txOpts(ctx, nil, func(tx *Tx) error {
		ok, wait = false, 0
		if _, err := tx.ExecContext(ctx, `INSERT INTO rate_buckets (key, tokens, at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`, key, float64(burst), at); err != nil {
			return err
		}
		var tokens float64
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT tokens, at FROM rate_buckets WHERE key = ? `+s.d.RowLock, key).Scan(&tokens, &last); err != nil {
			return err
		}
		if at > last {
			tokens = min(float64(burst), tokens+float64(at-last)/1000*perSecond)
			last = at
		}
		if tokens >= 1 {
			tokens--
			ok = true
		} else {
			wait = time.Duration((1 - tokens) / perSecond * float64(time.Second))
		}
		_, err := tx.ExecContext(ctx, `UPDATE rate_buckets SET tokens = ?, at = ? WHERE key = ?`, tokens, last, key)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("rate limit %s: %w", key, err)
	}
	return ok, wait, nil
}

// PruneTokens drops buckets untouched since before (they have refilled long ago).
func (s *DB) PruneTokens(ctx context.Context, before time.Time) (int, error) {
	res, err := s.write.ExecContext(ctx, `DELETE FROM rate_buckets WHERE at < ?`, ms0(before))
	if err != nil {
		return 0, fmt.Errorf("prune rate limits: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
