// Package sqlstore is the portal's store written once in portable SQL over database/sql, for
// every engine: portal/sqlite and portal/postgres open their connections and migrations and
// hand them to New with a Dialect, which says what differs (placeholders, the lease's row
// lock, how other processes are told about new jobs, which errors mean "run the transaction
// again").
//
// The SQL is hand-written and parameterised: BIGINT Unix milliseconds for times, INSERT ...
// ON CONFLICT, UPDATE ... RETURNING, no engine-only functions; queries are written with `?`
// placeholders and rebound for engines that number theirs.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// Dialect is what one engine does differently.
type Dialect struct {
	// Name is the engine's name, for errors.
	Name string
	// Numbered placeholders: `?` becomes $1, $2, ... (PostgreSQL).
	Numbered bool
	// IntBools: Go booleans are sent as 0 and 1, as the schema's flag columns are integers
	// (SQLite's driver does this itself; PostgreSQL's does not).
	IntBools bool
	// LeaseLock is appended to the lease's candidate query to lock the chosen row and skip
	// rows another transaction holds ("FOR UPDATE SKIP LOCKED"); empty where writers are
	// serialised anyway (SQLite's single write connection).
	LeaseLock string
	// RowLock is appended to a SELECT that reads a row it will update in a read-committed
	// transaction ("FOR UPDATE"); empty where writers are serialised anyway.
	RowLock string
	// Notify raises an event for other processes inside tx, delivered when it commits
	// (PostgreSQL's pg_notify); nil where one process owns the database.
	Notify func(ctx context.Context, tx *Tx, event string) error
	// Retry reports whether a failed transaction may simply run again (a serialisation
	// failure or a deadlock); nil: never.
	Retry func(err error) bool
	// TxOptions are the options of write transactions (PostgreSQL: serializable).
	TxOptions *sql.TxOptions
	// Analyze is the statement that refreshes the planner's statistics ("ANALYZE" when
	// empty; PostgreSQL's VACUUM (ANALYZE) also marks pages all-visible for index-only scans).
	Analyze string
	// Explain returns the engine's plan of a query, in a line.
	Explain func(ctx context.Context, c *Conn, query string, args []any) (string, error)
	// Generations is the query that reads the change counters (store.Generations) as one row
	// of three columns, runs, work and log; Advance returns the statement that advances one of
	// them (named by GenerationNames). AdvanceInTx: the statement runs inside the writing
	// transaction, just before it commits (SQLite: writers are serialised, so a reader sees
	// the counter and the data it counts together); otherwise right after the commit
	// (PostgreSQL: a sequence, which is never rolled back and never waits for a lock, so it
	// must not advance before the data is visible).
	Generations string
	Advance     func(name string) string
	AdvanceInTx bool
	// QuickCheck checks the database's integrity quickly at start (SQLite's quick_check, the
	// migrations applied on PostgreSQL); nil: nothing to check.
	QuickCheck func(ctx context.Context, db *DB) error
}

// DB is the store over one engine's connection pools. It is safe for concurrent use.
type DB struct {
	read  *Conn
	write *Conn
	d     Dialect
	// Now returns the current time; tests may replace it before use.
	Now func() time.Time
	// Logs bounds job logs (zero values: DefaultLogLimits); set it before use.
	Logs store.LogLimits
	// Listener delivers the events other processes raise on the database until ctx ends
	// (PostgreSQL's LISTEN; see Listen); nil where one process owns the database. The engine
	// sets it when it opens the database.
	Listener func(ctx context.Context, fn func(event string)) error
	// Hook, when set, is called at named points of a publication ("publish:uncommitted"
	// inside its transaction once everything is written, "publish:committed" after it), for
	// fault tests that kill the process there.
	Hook func(point string)
}

func (s *DB) hook(point string) {
	if s.Hook != nil {
		s.Hook(point)
	}
}

// New returns a store reading through read and writing through write (which may be the
// same pool).
func New(read, write *sql.DB, d Dialect) *DB {
	return &DB{read: &Conn{db: read, d: &d}, write: &Conn{db: write, d: &d}, d: d, Now: time.Now, Logs: store.DefaultLogLimits()}
}

// QuickCheck checks the database's integrity the engine's quick way (Dialect.QuickCheck).
func (s *DB) QuickCheck(ctx context.Context) error {
	if s.d.QuickCheck == nil {
		return nil
	}
	return s.d.QuickCheck(ctx, s)
}

// Listen calls fn for each event any process on the same database raised until ctx ends,
// and returns ctx's error or the connection's when it breaks (the caller listens again and
// treats that as "anything may have happened"). Where one process owns the database it
// returns nil at once: that process raises its own events.
func (s *DB) Listen(ctx context.Context, fn func(event string)) error {
	if s.Listener == nil {
		return nil
	}
	return s.Listener(ctx, fn)
}

// Read and Write are the connection pools, for the engine's own queries.
func (s *DB) Read() *Conn  { return s.read }
func (s *DB) Write() *Conn { return s.write }

// Close closes both connection pools.
func (s *DB) Close() error {
	if s.read.db == s.write.db {
		return s.write.db.Close()
	}
	return errors.Join(s.read.db.Close(), s.write.db.Close())
}

// Conn is a connection pool whose queries are rebound for its dialect.
type Conn struct {
	db *sql.DB
	d  *Dialect
}

// DB is the underlying pool.
func (c *Conn) DB() *sql.DB { return c.db }

func (c *Conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.db.ExecContext(ctx, c.d.rebind(q), c.d.args(args)...)
}

func (c *Conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.db.QueryContext(ctx, c.d.rebind(q), c.d.args(args)...)
}

func (c *Conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.db.QueryRowContext(ctx, c.d.rebind(q), c.d.args(args)...)
}

// Tx is a transaction whose queries are rebound for its dialect.
type Tx struct {
	tx *sql.Tx
	d  *Dialect
	// changed marks the generations (1<<genRuns, 1<<genWork) the transaction advances.
	changed uint8
	// notified are the events raised in this transaction: PostgreSQL delivers one
	// notification of a channel and payload per transaction however often it is raised, so a
	// batch of publications raises it once.
	notified []string
}

func (t *Tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.d.rebind(q), t.d.args(args)...)
}

func (t *Tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, t.d.rebind(q), t.d.args(args)...)
}

func (t *Tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.d.rebind(q), t.d.args(args)...)
}

// notify raises event for other processes when the transaction commits, and advances the
// generation the event stands for (EventRuns: runs; EventJobs: work).
func (t *Tx) notify(ctx context.Context, event string) error {
	switch event {
	case store.EventRuns:
		t.change(genRuns)
	case store.EventJobs:
		t.change(genWork)
	}
	if t.d.Notify == nil || slices.Contains(t.notified, event) {
		return nil
	}
	if err := t.d.Notify(ctx, t, event); err != nil {
		return err
	}
	t.notified = append(t.notified, event)
	return nil
}

// maxRetries bounds how often a transaction that lost a serialisation race runs again.
const maxRetries = 20

// Tx runs fn in a write transaction, committing when it returns nil. Where the dialect says
// a failure was a lost race (serialisation, deadlock) the whole of fn runs again, so fn must
// do nothing but database work.
func (s *DB) Tx(ctx context.Context, fn func(*Tx) error) error { return s.tx(ctx, fn) }

func (s *DB) tx(ctx context.Context, fn func(*Tx) error) error {
	return s.txOpts(ctx, s.d.TxOptions, fn)
}

func (s *DB) txOpts(ctx context.Context, opts *sql.TxOptions, fn func(*Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := s.once(ctx, opts, fn)
		if err == nil || s.d.Retry == nil || !s.d.Retry(err) || attempt >= maxRetries || ctx.Err() != nil {
			return err
		}
		// A short, growing pause spreads the racers apart.
		t := time.NewTimer(time.Duration(attempt+1) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (s *DB) once(ctx context.Context, opts *sql.TxOptions, fn func(*Tx) error) error {
	tx, err := s.write.db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	t := &Tx{tx: tx, d: &s.d}
	if err := fn(t); err != nil {
		tx.Rollback()
		return err
	}
	if s.d.AdvanceInTx {
		if err := t.advance(ctx); err != nil {
			tx.Rollback()
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if !s.d.AdvanceInTx {
		s.advance(ctx, t.changed)
	}
	return nil
}

// rebind numbers the `?` placeholders of q for dialects that need it, leaving quoted text
// alone.
func (d *Dialect) rebind(q string) string {
	if !d.Numbered || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// args converts arguments the engine's driver would refuse.
func (d *Dialect) args(args []any) []any {
	if !d.IntBools {
		return args
	}
	var out []any
	for i, a := range args {
		if b, ok := a.(bool); ok {
			if out == nil {
				out = slices.Clone(args)
			}
			out[i] = int64(0)
			if b {
				out[i] = int64(1)
			}
		}
	}
	if out == nil {
		return args
	}
	return out
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

// inList is "col IN (?, ...)" for n parameters, or a false condition when n is 0 (an empty
// IN list is not portable SQL).
func inList(col string, n int) string {
	if n == 0 {
		return "1 = 0"
	}
	return col + " IN (" + placeholders(n) + ")"
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func (t *Tx) PrepareContext(ctx context.Context, q string) (*Stmt, error) {
	st, err := t.tx.PrepareContext(ctx, t.d.rebind(q))
	if err != nil {
		return nil, err
	}
	return &Stmt{st: st, d: t.d}, nil
}

// Stmt is a prepared statement whose arguments are converted for its dialect.
type Stmt struct {
	st *sql.Stmt
	d  *Dialect
}

func (s *Stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return s.st.ExecContext(ctx, s.d.args(args)...)
}

func (s *Stmt) Close() error { return s.st.Close() }
