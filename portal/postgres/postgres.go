// Package postgres is the portal's shared store: one PostgreSQL database that any number of
// portal processes open at once, running the shared SQL of portal/sqlstore through pgx's
// database/sql driver.
//
// What differs from SQLite, where one write connection serialises every writer:
//   - write transactions run SERIALIZABLE and run again when PostgreSQL reports a lost race
//     (40001, 40P01), so each keeps the meaning it has on SQLite;
//   - a lease claims the oldest queued job with FOR UPDATE SKIP LOCKED in one statement, so
//     concurrent leases on any replica neither wait for each other nor share a job;
//   - queuing a job and publishing a run raise pg_notify('pqrepro', event) in their
//     transaction, and Listen delivers them to every replica (a runner's long-poll on one
//     replica wakes when a job is queued on another);
//   - migrations (migrations/, numbered for this engine) run under an advisory lock, so
//     replicas starting together apply each once.
//
// Two differences stay: text sorts by the database's collation (create it with
// --locale=C, as scripts/postgres does, for SQLite's byte order in facet and name lists), and
// lower() in the unique index of account names folds non-ASCII letters too, where SQLite
// folds ASCII only.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"pqrepro/portal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// channel is the LISTEN/NOTIFY channel of the portal's events.
const channel = "pqrepro"

// migrationLock is the advisory lock key migrations hold ("pqrepro" in ASCII, truncated).
const migrationLock = `SELECT pg_advisory_xact_lock(7381534805614933)`

var dialect = sqlstore.Dialect{
	Name:      "PostgreSQL",
	Numbered:  true,
	IntBools:  true,
	LeaseLock: "FOR UPDATE SKIP LOCKED",
	RowLock:   "FOR UPDATE",
	Notify: func(ctx context.Context, tx *sqlstore.Tx, event string) error {
		_, err := tx.ExecContext(ctx, `SELECT pg_notify('`+channel+`', ?)`, event)
		return err
	},
	Retry:     retryable,
	TxOptions: &sql.TxOptions{Isolation: sql.LevelSerializable},
	Explain:   explain,
	Analyze:   "VACUUM (ANALYZE)",
	// The change counters are sequences, advanced right after the write commits.
	Generations: `SELECT (SELECT last_value FROM generation_runs), (SELECT last_value FROM generation_work),
		(SELECT last_value FROM generation_log)`,
	Advance:    func(name string) string { return `SELECT nextval('generation_` + name + `')` },
	QuickCheck: quickCheck,
}

// IsURL reports whether s names a PostgreSQL database (postgres:// or postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at dsn (a postgres:// URL) and applies pending migrations.
// The store is safe for concurrent use by any number of processes; it listens for their
// events over a connection of its own (listen).
func Open(ctx context.Context, dsn string) (*sqlstore.DB, error) {
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", Redact(dsn), err)
	}
	db.SetMaxOpenConns(24)
	db.SetMaxIdleConns(24)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", Redact(dsn), err)
	}
	s := sqlstore.New(db, db, dialect)
	s.Listener = func(ctx context.Context, fn func(event string)) error { return listen(ctx, dsn, fn) }
	ms, err := Migrations()
	if err == nil {
		err = s.Migrate(ctx, ms, migrationLock)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Migrations lists the embedded migrations in order.
func Migrations() ([]sqlstore.Migration, error) {
	return sqlstore.LoadMigrations(migrations, "migrations")
}

// retryable reports a serialisation failure or a deadlock: the transaction lost a race and
// may run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// quickCheck checks the connection and that every migration this build knows is applied.
func quickCheck(ctx context.Context, s *sqlstore.DB) error {
	applied, err := s.AppliedMigrations(ctx)
	if err != nil {
		return fmt.Errorf("check database: %w", err)
	}
	ms, err := Migrations()
	if err != nil {
		return err
	}
	if len(applied) < len(ms) {
		return fmt.Errorf("check database: %d of %d migrations applied", len(applied), len(ms))
	}
	return nil
}

// listen delivers the events every process raises on the database at dsn until ctx ends,
// over a connection of its own (LISTEN holds it). It returns ctx's error, or the
// connection's when it breaks; the caller listens again, and should treat that as "anything
// may have happened" (events raised while no one listened are not replayed).
func listen(ctx context.Context, dsn string, fn func(event string)) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("listen: %w", err)
		}
		fn(n.Payload)
	}
}

// explain is the plan of query from EXPLAIN (FORMAT JSON): each node as "<Node Type> using
// <Index Name> on <Relation>", "; "-separated, outermost first.
func explain(ctx context.Context, c *sqlstore.Conn, query string, args []any) (string, error) {
	var raw string
	if err := c.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&raw); err != nil {
		return "", err
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &plans); err != nil {
		return "", fmt.Errorf("read EXPLAIN: %w", err)
	}
	var out []string
	var walk func(n planNode)
	walk = func(n planNode) {
		line := n.NodeType
		if n.IndexName != "" {
			line += " using " + n.IndexName
		}
		if n.Relation != "" {
			line += " on " + n.Relation
		}
		out = append(out, line)
		for _, p := range n.Plans {
			walk(p)
		}
	}
	for _, p := range plans {
		walk(p.Plan)
	}
	return strings.Join(out, "; "), nil
}

type planNode struct {
	NodeType  string     `json:"Node Type"`
	IndexName string     `json:"Index Name"`
	Relation  string     `json:"Relation Name"`
	Plans     []planNode `json:"Plans"`
}

// Redact is dsn without its password, for messages.
func Redact(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "(unreadable URL)"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}
