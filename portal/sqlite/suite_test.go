package sqlite_test

import (
	"context"
	"path/filepath"
	"pqrepro/portal/sqlstore"
	"testing"

	"pqrepro/portal/sqlite"
	"pqrepro/portal/storetest"
)

// TestStoreSuite runs the store suite on a real SQLite file per subtest.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.DB {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "portal.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
