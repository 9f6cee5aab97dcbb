package sqlstore

import "testing"

func TestRebindNumbersPlaceholdersOutsideQuotes(t *testing.T) {
	pg := &Dialect{Numbered: true}
	for in, want := range map[string]string{
		`SELECT 1`:                                  `SELECT 1`,
		`SELECT a FROM t WHERE b = ? AND c = ?`:     `SELECT a FROM t WHERE b = $1 AND c = $2`,
		`SELECT '?' || ? FROM "we?ird" WHERE x = ?`: `SELECT '?' || $1 FROM "we?ird" WHERE x = $2`,
		`SELECT 'it''s ?', ?`:                       `SELECT 'it''s ?', $1`,
	} {
		if got := pg.rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
	lite := &Dialect{}
	if got := lite.rebind(`SELECT ?`); got != `SELECT ?` {
		t.Errorf("SQLite rebind changed the query: %q", got)
	}
}
