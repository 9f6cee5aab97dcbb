package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// schema is a database's tables with their columns, and its named indexes.
type schema struct {
	columns map[string][]string // table -> sorted column names
	indexes map[string]string   // index name -> table
}

// sqliteSchema reads the schema SQLite migrations 0001-0013 leave behind.
func sqliteSchema(t *testing.T) schema {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "portal.db")
	st, err := sqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	vs, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if last := vs[len(vs)-1].Version; last != 13 {
		// A new SQLite migration needs its PostgreSQL counterpart (migrations/00NN_*.sql) and
		// this test taught to apply it.
		t.Fatalf("SQLite has migrations up to %d; the PostgreSQL schema is the image of 0001-0013 only", last)
	}
	db, err := sql.Open("sqlite3", "file:"+file+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := schema{columns: map[string][]string{}, indexes: map[string]string{}}
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var typ, name, tbl string
		if err := rows.Scan(&typ, &name, &tbl); err != nil {
			t.Fatal(err)
		}
		if typ == "table" {
			tables = append(tables, name)
		} else {
			s.indexes[name] = tbl
		}
	}
	rows.Close()
	for _, tbl := range tables {
		if tbl == "schema_migrations" {
			continue // made by the store's migration code, not by a migration
		}
		cols, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, tbl)
		if err != nil {
			t.Fatal(err)
		}
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				t.Fatal(err)
			}
			s.columns[tbl] = append(s.columns[tbl], c)
		}
		cols.Close()
		sort.Strings(s.columns[tbl])
	}
	return s
}

// postgresSchema applies migrations/0001_init.sql to a fresh PostgreSQL database and reads
// its schema.
func postgresSchema(t *testing.T) schema {
	ctx := context.Background()
	sqlText, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, string(sqlText)); err != nil {
		t.Fatalf("apply migrations/0001_init.sql: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s := schema{columns: map[string][]string{}, indexes: map[string]string{}}
	rows, err := db.QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		s.columns[tbl] = append(s.columns[tbl], col)
	}
	rows.Close()
	rows, err = db.QueryContext(ctx, `SELECT indexname, tablename FROM pg_indexes WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, tbl string
		if err := rows.Scan(&name, &tbl); err != nil {
			t.Fatal(err)
		}
		s.indexes[name] = tbl
	}
	rows.Close()
	return s
}

// TestSchemaMatchesSQLite: every table, column and named index of the SQLite schema exists
// in the PostgreSQL one (same names, same tables), and PostgreSQL has nothing more than the
// indexes of its primary keys and unique columns (named <table>_pkey and <table>_<col>_key;
// SQLite's are sqlite_autoindex_*).
func TestSchemaMatchesSQLite(t *testing.T) {
	lite := sqliteSchema(t)
	pg := postgresSchema(t)
	for tbl, cols := range lite.columns {
		got, ok := pg.columns[tbl]
		if !ok {
			t.Errorf("table %s is missing in PostgreSQL", tbl)
			continue
		}
		for _, c := range cols {
			if !slices.Contains(got, c) {
				t.Errorf("column %s.%s is missing in PostgreSQL", tbl, c)
			}
		}
		for _, c := range got {
			if !slices.Contains(cols, c) {
				t.Errorf("column %s.%s is in PostgreSQL only", tbl, c)
			}
		}
	}
	for tbl := range pg.columns {
		if _, ok := lite.columns[tbl]; !ok {
			t.Errorf("table %s is in PostgreSQL only", tbl)
		}
	}
	for name, tbl := range lite.indexes {
		switch got, ok := pg.indexes[name]; {
		case !ok:
			t.Errorf("index %s (on %s) is missing in PostgreSQL", name, tbl)
		case got != tbl:
			t.Errorf("index %s is on %s in PostgreSQL, on %s in SQLite", name, got, tbl)
		}
	}
	for name, tbl := range pg.indexes {
		if _, ok := lite.indexes[name]; !ok && !strings.HasSuffix(name, "_pkey") && !strings.HasSuffix(name, "_key") {
			t.Errorf("index %s (on %s) is in PostgreSQL only", name, tbl)
		}
	}
	if len(lite.indexes) < 30 || len(lite.columns) < 15 {
		t.Fatalf("read %d indexes and %d tables of SQLite: the schema was not read", len(lite.indexes), len(lite.columns))
	}
	t.Logf("%d tables and %d named indexes match; cluster started in %v", len(lite.columns), len(lite.indexes), pgtest.StartupTime())
}
