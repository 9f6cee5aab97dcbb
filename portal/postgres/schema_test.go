package postgres_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"pqrepro/portal/postgres"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// column is what the schemas must agree on for one column.
type column struct {
	// typ is the PostgreSQL type (SQLite's declared type mapped: INTEGER and BIGINT to bigint,
	// REAL and DOUBLE PRECISION to double precision, BLOB to bytea).
	typ     string
	notNull bool
	// def is the default with quotes and PostgreSQL casts removed ("" for none).
	def string
}

// schema is a database's tables with their columns, and its named indexes.
type schema struct {
	tables  map[string]map[string]column // table -> column -> column
	indexes map[string]string            // index name -> table
}

var sqliteTypes = map[string]string{"INTEGER": "bigint", "BIGINT": "bigint", "TEXT": "text", "REAL": "double precision",
	"DOUBLE PRECISION": "double precision", "BLOB": "bytea"}

// normDefault removes quotes, parentheses and ::casts from a column default.
func normDefault(d string) string {
	if i := strings.Index(d, "::"); i >= 0 {
		d = d[:i]
	}
	return strings.Trim(d, "'()")
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
	s := schema{tables: map[string]map[string]column{}, indexes: map[string]string{}}
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
		s.tables[tbl] = map[string]column{}
		cols, err := db.QueryContext(ctx, `SELECT name, type, "notnull", COALESCE(dflt_value, ''), pk FROM pragma_table_info(?)`, tbl)
		if err != nil {
			t.Fatal(err)
		}
		for cols.Next() {
			var name, typ, def string
			var notNull, pk int
			if err := cols.Scan(&name, &typ, &notNull, &def, &pk); err != nil {
				t.Fatal(err)
			}
			pgType, ok := sqliteTypes[typ]
			if !ok {
				t.Fatalf("column %s.%s: SQLite type %q has no PostgreSQL mapping here", tbl, name, typ)
			}
			// A primary key column is NOT NULL in PostgreSQL; SQLite reports it nullable.
			s.tables[tbl][name] = column{typ: pgType, notNull: notNull == 1 || pk > 0, def: normDefault(def)}
		}
		cols.Close()
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
	s := schema{tables: map[string]map[string]column{}, indexes: map[string]string{}}
	rows, err := db.QueryContext(ctx, `SELECT table_name, column_name, data_type, is_nullable, COALESCE(column_default, ''), is_identity
		FROM information_schema.columns WHERE table_schema = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, name, typ, nullable, def, identity string
		if err := rows.Scan(&tbl, &name, &typ, &nullable, &def, &identity); err != nil {
			t.Fatal(err)
		}
		if tbl == "schema_migrations" {
			continue // made by the store's migration code (the same SQL on both engines)
		}
		if s.tables[tbl] == nil {
			s.tables[tbl] = map[string]column{}
		}
		s.tables[tbl][name] = column{typ: typ, notNull: nullable == "NO", def: normDefault(def)}
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
// in the PostgreSQL one with the same name, the mapped type, the same nullability and the same
// default, and PostgreSQL has nothing more than the indexes of its primary keys and unique
// columns (named <table>_pkey and <table>_<col>_key; SQLite's are sqlite_autoindex_*).
func TestSchemaMatchesSQLite(t *testing.T) {
	lite := sqliteSchema(t)
	pg := postgresSchema(t)
	var names []string
	for tbl := range lite.tables {
		if tbl == "generations" {
			continue // SQLite's change counters are rows; PostgreSQL's are sequences (0009_generations.sql)
		}
		names = append(names, tbl)
	}
	sort.Strings(names)
	for _, tbl := range names {
		got, ok := pg.tables[tbl]
		if !ok {
			t.Errorf("table %s is missing in PostgreSQL", tbl)
			continue
		}
		for name, want := range lite.tables[tbl] {
			switch g, ok := got[name]; {
			case !ok:
				t.Errorf("column %s.%s is missing in PostgreSQL", tbl, name)
			case g != want:
				t.Errorf("column %s.%s is %+v in PostgreSQL, %+v in SQLite", tbl, name, g, want)
			}
		}
		for name := range got {
			if _, ok := lite.tables[tbl][name]; !ok {
				t.Errorf("column %s.%s is in PostgreSQL only", tbl, name)
			}
		}
	}
	for tbl := range pg.tables {
		if _, ok := lite.tables[tbl]; !ok {
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
	if len(lite.indexes) < 30 || len(lite.tables) < 15 {
		t.Fatalf("read %d indexes and %d tables of SQLite: the schema was not read", len(lite.indexes), len(lite.tables))
	}
	if !t.Failed() {
		t.Logf("%d tables and %d named indexes match; the test cluster started in %v", len(lite.tables), len(lite.indexes), pgtest.StartupTime())
	}
}
