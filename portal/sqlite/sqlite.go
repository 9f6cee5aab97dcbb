// Package sqlite is the portal's store: one SQLite file in WAL mode, with hand-written,
// parameterised SQL kept portable toward PostgreSQL (no SQLite-only functions; BIGINT Unix
// milliseconds for times; INSERT ... ON CONFLICT; UPDATE ... RETURNING). Migrations are the
// numbered files in migrations/, embedded, each applied in its own transaction and recorded
// in schema_migrations, forward only.
//
// Writes go through a pool of one connection whose transactions begin IMMEDIATE, so
// concurrent writers queue instead of failing, and reads through a separate pool.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the portal's database. It is safe for concurrent use.
type Store struct {
	read  *sql.DB
	write *sql.DB
	// Now returns the current time; tests may replace it before use.
	Now func() time.Time
	// Logs bounds job logs (zero values: DefaultLogLimits); set it before use.
	Logs store.LogLimits
}

// Open opens (creating if needed) the database file at path and applies pending migrations.
func Open(ctx context.Context, file string) (*Store, error) {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	wq := url.Values{}
	for k, v := range q {
		wq[k] = v
	}
	wq.Set("_txlock", "immediate")
	write, err := sql.Open("sqlite3", "file:"+file+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", file, err)
	}
	write.SetMaxOpenConns(1)
	write.SetConnMaxLifetime(0)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: %w", file, err)
	}
	read, err := sql.Open("sqlite3", "file:"+file+"?"+q.Encode())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("open database %s: %w", file, err)
	}
	read.SetMaxOpenConns(8)
	s := &Store{read: read, write: write, Now: time.Now, Logs: store.DefaultLogLimits()}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes both connection pools.
func (s *Store) Close() error {
	return errors.Join(s.read.Close(), s.write.Close())
}

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations lists the embedded migrations in order.
func Migrations() ([]Migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and an underscore", base)
		}
		b, err := migrations.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share a number", out[i-1].Name, out[i].Name)
		}
	}
	return out, nil
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ms, err := Migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range ms {
		err := s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, m.Version, m.Name, ms0(s.Now()))
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.Name, err)
		}
	}
	return nil
}

// AppliedMigrations returns the recorded migration versions in order.
func (s *Store) AppliedMigrations(ctx context.Context) ([]int, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, rows.Err()
}

// tx runs fn in a write transaction, committing when it returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// ms0 is t as Unix milliseconds.
func ms0(t time.Time) int64 { return t.UnixMilli() }

// fromMS turns Unix milliseconds into a UTC time; 0 and NULL become the zero time.
func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid || v.Int64 == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

func notFound(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fault.Wrap(fault.NotFound, err, format, args...)
	}
	return fmt.Errorf(fmt.Sprintf(format, args...)+": %w", err)
}

// placeholders returns "?, ?, ?" for n values.
// inList is "col IN (?, ...)" for n parameters, or a false condition when n is 0 (an empty
// IN list is not portable SQL).
func inList(col string, n int) string {
	if n == 0 {
		return "1 = 0"
	}
	return col + " IN (" + placeholders(n) + ")"
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// QuickCheck runs PRAGMA quick_check and fails with the first problems it reports.
func (s *Store) QuickCheck(ctx context.Context) error {
	rows, err := s.write.QueryContext(ctx, `PRAGMA quick_check(20)`)
	if err != nil {
		return fmt.Errorf("quick_check: %w", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return fmt.Errorf("quick_check: %w", err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("quick_check: %w", err)
	}
	if len(msgs) == 1 && msgs[0] == "ok" {
		return nil
	}
	return fmt.Errorf("quick_check: %s", strings.Join(msgs, "; "))
}

// Listen returns at once: only one process opens a SQLite file as a portal, and it raises
// its own events.
func (s *Store) Listen(ctx context.Context, fn func(event string)) error { return nil }

var _ store.Store = (*Store)(nil)
