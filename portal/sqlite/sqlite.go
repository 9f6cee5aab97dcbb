// Package sqlite is the portal's default store: one SQLite file in WAL mode, running the
// shared SQL of portal/sqlstore. Migrations are the
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
	"fmt"
	"net/url"
	"strings"

	_ "github.com/mattn/go-sqlite3"

	"pqrepro/portal/sqlstore"
)

//go:embed migrations/*.sql
var migrations embed.FS

// dialect is SQLite's: `?` placeholders; writes serialised by the single write connection,
// so the lease needs no row lock and nothing needs retrying.
// The change counters are rows of generations, advanced inside the writing transaction.
var dialect = sqlstore.Dialect{Name: "SQLite", Explain: explain,
	Generations: `SELECT (SELECT n FROM generations WHERE name = 'runs'), (SELECT n FROM generations WHERE name = 'work'),
		(SELECT n FROM generations WHERE name = 'log')`,
	Advance:     func(name string) string { return `UPDATE generations SET n = n + 1 WHERE name = '` + name + `'` },
	AdvanceInTx: true,
	QuickCheck:  quickCheck,
}

// Open opens (creating if needed) the database file at path and applies pending migrations:
// the shared SQL of portal/sqlstore over a write pool of one connection and a read pool.
func Open(ctx context.Context, file string) (*sqlstore.DB, error) {
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", "10000")
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	// Each connection keeps its prepared statements: a page's dozen queries are otherwise
	// compiled anew on every request (sqlite3_prepare was 15% of an uncached page's CPU).
	q.Set("_stmt_cache_size", "64")
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
	// Keep them all open: a connection closed when more than two were idle took its cached
	// statements with it, and the next one paid for opening the file again.
	read.SetMaxIdleConns(8)
	s := sqlstore.New(read, write, dialect)
	ms, err := Migrations()
	if err == nil {
		err = s.Migrate(ctx, ms, "")
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

// quickCheck runs PRAGMA quick_check and fails with the first problems it reports.
func quickCheck(ctx context.Context, s *sqlstore.DB) error {
	rows, err := s.Write().QueryContext(ctx, `PRAGMA quick_check(20)`)
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

// explain is EXPLAIN QUERY PLAN's details, "; "-separated.
func explain(ctx context.Context, c *sqlstore.Conn, query string, args []any) (string, error) {
	rows, err := c.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return "", err
		}
		out = append(out, detail)
	}
	return strings.Join(out, "; "), rows.Err()
}
