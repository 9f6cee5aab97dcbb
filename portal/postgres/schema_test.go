package postgres_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"pqrepro/portal/postgres"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// schema is a database's tables with their columns, and its named indexes.
type schema struct {
	columns map[string][]string // table -> sorted column names
	indexes map[string]string   // index name -> table
}

// sqliteSchema reads the schema SQLite's migrations leave behind.
func sqliteSchema(t *testing.T) schema {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "portal.db")
	st, err := sqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
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

// postgresSchema opens a fresh PostgreSQL database as the portal does (every migration of
// migrations/) and reads its schema.
func postgresSchema(t *testing.T) schema {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
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
