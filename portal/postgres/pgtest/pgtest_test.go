package pgtest_test

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"

	"pqrepro/portal/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestDSN: each call gives a fresh, empty, writable database of its own, dropped when its test
// ends; the cluster sorts text by bytes (C collation), as SQLite does.
func TestDSN(t *testing.T) {
	ctx := context.Background()
	var names []string
	t.Run("two databases", func(t *testing.T) {
		for range 2 {
			dsn := pgtest.DSN(t)
			u, err := url.Parse(dsn)
			if err != nil || u.Scheme != "postgres" || !strings.HasPrefix(u.Path, "/t_") {
				t.Fatalf("DSN %q: %v", dsn, err)
			}
			names = append(names, strings.TrimPrefix(u.Path, "/"))
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("a fresh database has %d tables (%v)", n, err)
			}
			if _, err := db.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES ('b'), ('B'), ('a'), ('_z')`); err != nil {
				t.Fatal(err)
			}
			var order string
			if err := db.QueryRowContext(ctx, `SELECT string_agg(v, ',' ORDER BY v) FROM t`).Scan(&order); err != nil || order != "B,_z,a,b" {
				t.Fatalf("text order %q (%v), want byte order B,_z,a,b", order, err)
			}
		}
		if names[0] == names[1] {
			t.Fatalf("two DSN calls gave the same database %s", names[0])
		}
	})
	// pg_database is shared by the cluster's databases: any of them lists them all.
	admin, err := sql.Open("pgx", pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, n := range names {
		var c int
		if err := admin.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_database WHERE datname = $1`, n).Scan(&c); err != nil || c != 0 {
			t.Errorf("database %s after its test: %d (%v), want dropped", n, c, err)
		}
	}
}
