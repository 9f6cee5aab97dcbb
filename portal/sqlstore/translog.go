package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/portal/fault"
	"pqrepro/portal/translog"
)

var (
	_ translog.Store        = (*DB)(nil)
	_ translog.Reader       = (*DB)(nil)
	_ translog.WitnessStore = (*DB)(nil)
)

// queueLogEntry queues a published run's leaf in the publish transaction, so a run is
// published with its pending log entry or not at all.
func queueLogEntry(ctx context.Context, tx *Tx, runID int64, bundle string, published time.Time) error {
	leaf, err := translog.Leaf{RunID: runID, Bundle: bundle, Published: time.UnixMilli(ms0(published))}.Encode()
	if err != nil {
		return fmt.Errorf("log leaf of run %d: %w", runID, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO log_entries (run_id, leaf, queued_at) VALUES (?, ?, ?)`, runID, leaf, ms0(published))
	return err
}

const sequencerLock = "sequencer"

// LockSequencer implements translog.Store.
func (s *DB) LockSequencer(ctx context.Context, holder string, until time.Time) (bool, error) {
	var got bool
	err := s.tx(ctx, func(tx *Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO log_lock (name, holder, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE log_lock.holder = excluded.holder OR log_lock.expires_at < ?`, sequencerLock, holder, ms0(until), ms0(s.Now()))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		got = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("lock the log sequencer: %w", err)
	}
	return got, nil
}

// UnlockSequencer implements translog.Store.
func (s *DB) UnlockSequencer(ctx context.Context, holder string) error {
	return s.tx(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM log_lock WHERE name = ? AND holder = ?`, sequencerLock, holder)
		return err
	})
}

func holdsLock(ctx context.Context, tx *Tx, holder string, now time.Time) error {
	var h string
	var exp int64
	err := tx.QueryRowContext(ctx, `SELECT holder, expires_at FROM log_lock WHERE name = ?`, sequencerLock).Scan(&h, &exp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if err != nil || h != holder || exp < ms0(now) {
		return fault.New(fault.Conflict, "the log sequencer lock is not held by %s", holder)
	}
	return nil
}

func tlogState(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (translog.State, error) {
	var st translog.State
	var root []byte
	err := q.QueryRowContext(ctx, `SELECT size, root, published, checkpoint FROM log_state WHERE id = 1`).Scan(&st.Size, &root, &st.Published, &st.Checkpoint)
	if errors.Is(err, sql.ErrNoRows) {
		return translog.State{}, nil
	}
	if err != nil {
		return translog.State{}, fmt.Errorf("read log state: %w", err)
	}
	copy(st.Root[:], root)
	return st, nil
}

// LogState implements translog.Store.
func (s *DB) LogState(ctx context.Context) (translog.State, error) { return tlogState(ctx, s.read) }

type txHashes struct {
	ctx context.Context
	tx  *Tx
}

func (r txHashes) ReadHashes(idx []int64) ([]tlog.Hash, error) { return readHashes(r.ctx, r.tx, idx) }

func readHashes(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, idx []int64) ([]tlog.Hash, error) {
	got := make(map[int64]tlog.Hash, len(idx))
	for start := 0; start < len(idx); start += 500 {
		part := idx[start:min(start+500, len(idx))]
		args := make([]any, len(part))
		for i, x := range part {
			args[i] = x
		}
		rows, err := q.QueryContext(ctx, `SELECT id, hash FROM log_hashes WHERE `+inList("id", len(part)), args...)
		if err != nil {
			return nil, fmt.Errorf("read log hashes: %w", err)
		}
		for rows.Next() {
			var id int64
			var b []byte
			if err := rows.Scan(&id, &b); err != nil {
				rows.Close()
				return nil, err
			}
			var h tlog.Hash
			copy(h[:], b)
			got[id] = h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		h, ok := got[x]
		if !ok {
			return nil, fmt.Errorf("read log hashes: hash %d is not stored", x)
		}
		out[i] = h
	}
	return out, nil
}

// Integrate implements translog.Store.
func (s *DB) Integrate(ctx context.Context, holder string, max int, fn translog.IntegrateFunc) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *Tx) error {
		if err := holdsLock(ctx, tx, holder, s.Now()); err != nil {
			return err
		}
		st, err := tlogState(ctx, tx)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT run_id, leaf FROM log_entries WHERE idx IS NULL ORDER BY run_id LIMIT ?`, max)
		if err != nil {
			return err
		}
		var pending []translog.Pending
		for rows.Next() {
			var p translog.Pending
			if err := rows.Scan(&p.RunID, &p.Leaf); err != nil {
				rows.Close()
				return err
			}
			pending = append(pending, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		hashes, root, err := fn(st.Size, pending, txHashes{ctx, tx})
		if err != nil {
			return err
		}
		base := tlog.StoredHashCount(st.Size)
		if want := tlog.StoredHashCount(st.Size+int64(len(pending))) - base; int64(len(hashes)) != want {
			return fmt.Errorf("integrate: %d hashes for %d leaves, want %d", len(hashes), len(pending), want)
		}
		hs, err := tx.PrepareContext(ctx, `INSERT INTO log_hashes (id, hash) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer hs.Close()
		for i, h := range hashes {
			if _, err := hs.ExecContext(ctx, base+int64(i), h[:]); err != nil {
				return fmt.Errorf("store log hash %d: %w", base+int64(i), err)
			}
		}
		up, err := tx.PrepareContext(ctx, `UPDATE log_entries SET idx = ? WHERE run_id = ? AND idx IS NULL`)
		if err != nil {
			return err
		}
		defer up.Close()
		for i, p := range pending {
			if _, err := up.ExecContext(ctx, st.Size+int64(i), p.RunID); err != nil {
				return fmt.Errorf("index run %d: %w", p.RunID, err)
			}
		}
		size := st.Size + int64(len(pending))
		if _, err := tx.ExecContext(ctx, `INSERT INTO log_state (id, size, root, published, checkpoint) VALUES (1, ?, ?, 0, ?)
			ON CONFLICT (id) DO UPDATE SET size = excluded.size, root = excluded.root`, size, root[:], []byte{}); err != nil {
			return err
		}
		n = len(pending)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// MarkPublished implements translog.Store.
func (s *DB) MarkPublished(ctx context.Context, holder string, size int64, checkpoint []byte) error {
	return s.tx(ctx, func(tx *Tx) error {
		if err := holdsLock(ctx, tx, holder, s.Now()); err != nil {
			return err
		}
		tx.change(genLog)
		res, err := tx.ExecContext(ctx, `UPDATE log_state SET published = ?, checkpoint = ? WHERE id = 1 AND published <= ? AND size >= ?`, size, checkpoint, size, size)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fault.New(fault.Conflict, "checkpoint %d is not between the published and integrated sizes", size)
		}
		return nil
	})
}

// QueuePartials implements translog.Store.
func (s *DB) QueuePartials(ctx context.Context, dirs []string, due time.Time) error {
	if len(dirs) == 0 {
		return nil
	}
	return s.tx(ctx, func(tx *Tx) error {
		for _, d := range dirs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO log_partials (dir, due_at) VALUES (?, ?) ON CONFLICT (dir) DO NOTHING`, d, ms0(due)); err != nil {
				return fmt.Errorf("queue partial tiles %s: %w", d, err)
			}
		}
		return nil
	})
}

// DuePartials implements translog.Store.
func (s *DB) DuePartials(ctx context.Context, now time.Time, max int) ([]string, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT dir FROM log_partials WHERE due_at <= ? ORDER BY due_at, dir LIMIT ?`, ms0(now), max)
	if err != nil {
		return nil, fmt.Errorf("read due partial tiles: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DropPartials implements translog.Store.
func (s *DB) DropPartials(ctx context.Context, dirs []string) error {
	return s.tx(ctx, func(tx *Tx) error {
		for _, d := range dirs {
			if _, err := tx.ExecContext(ctx, `DELETE FROM log_partials WHERE dir = ?`, d); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadHashes implements translog.Reader.
func (s *DB) ReadHashes(ctx context.Context, idx []int64) ([]tlog.Hash, error) {
	return readHashes(ctx, s.read, idx)
}

// Leaves implements translog.Reader.
func (s *DB) Leaves(ctx context.Context, start, end int64) ([][]byte, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT idx, leaf FROM log_entries WHERE idx >= ? AND idx < ? ORDER BY idx`, start, end)
	if err != nil {
		return nil, fmt.Errorf("read log leaves %d-%d: %w", start, end, err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var i int64
		var l []byte
		if err := rows.Scan(&i, &l); err != nil {
			return nil, err
		}
		if i != start+int64(len(out)) {
			return nil, fmt.Errorf("read log leaves: index %d is missing", start+int64(len(out)))
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if int64(len(out)) != end-start {
		return nil, fmt.Errorf("read log leaves %d-%d: %d found", start, end, len(out))
	}
	return out, nil
}

// qLogEntry is LogEntry's query, by the primary key.
const qLogEntry = `SELECT leaf, idx FROM log_entries WHERE run_id = ?`

// LogEntry implements translog.Reader.
func (s *DB) LogEntry(ctx context.Context, runID int64) (translog.Entry, error) {
	e := translog.Entry{RunID: runID}
	var idx sql.NullInt64
	err := s.read.QueryRowContext(ctx, qLogEntry, runID).Scan(&e.Leaf, &idx)
	if err != nil {
		return translog.Entry{}, notFound(err, "log entry of run %d", runID)
	}
	e.Index = -1
	if idx.Valid {
		e.Index = idx.Int64
	}
	return e, nil
}

// PendingLogEntries counts queued leaves.
func (s *DB) PendingLogEntries(ctx context.Context) (int, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM log_entries WHERE idx IS NULL`).Scan(&n)
	return n, err
}

// AddWitness implements translog.WitnessStore.
func (s *DB) AddWitness(ctx context.Context, w translog.Witness) error {
	return s.tx(ctx, func(tx *Tx) error {
		tx.change(genLog)
		_, err := tx.ExecContext(ctx, `INSERT INTO log_witnesses (name, ed25519, mldsa44, url, added_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET ed25519 = excluded.ed25519, mldsa44 = excluded.mldsa44, url = excluded.url, added_at = excluded.added_at`,
			w.Name, w.Ed25519, w.MLDSA44, w.URL, ms0(w.Added))
		return err
	})
}

// Witnesses implements translog.WitnessStore.
func (s *DB) Witnesses(ctx context.Context) ([]translog.Witness, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT name, ed25519, mldsa44, url, added_at FROM log_witnesses ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list witnesses: %w", err)
	}
	defer rows.Close()
	var out []translog.Witness
	for rows.Next() {
		var w translog.Witness
		var at sql.NullInt64
		if err := rows.Scan(&w.Name, &w.Ed25519, &w.MLDSA44, &w.URL, &at); err != nil {
			return nil, err
		}
		w.Added = fromMS(at)
		out = append(out, w)
	}
	return out, rows.Err()
}

// AddCosignature implements translog.WitnessStore.
func (s *DB) AddCosignature(ctx context.Context, size int64, name string, keyID uint32, line string) error {
	return s.tx(ctx, func(tx *Tx) error {
		tx.change(genLog)
		_, err := tx.ExecContext(ctx, `INSERT INTO log_cosignatures (size, name, key_id, line) VALUES (?, ?, ?, ?)
			ON CONFLICT (size, name, key_id) DO UPDATE SET line = excluded.line`, size, name, int64(keyID), line)
		return err
	})
}

// Cosignatures implements translog.WitnessStore.
func (s *DB) Cosignatures(ctx context.Context, size int64) ([]string, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT line FROM log_cosignatures WHERE size = ? ORDER BY name, key_id`, size)
	if err != nil {
		return nil, fmt.Errorf("read cosignatures: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
