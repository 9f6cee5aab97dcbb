package postgres_test

import (
	"context"
	"pqrepro/portal/sqlstore"
	"testing"

	"pqrepro/portal/postgres"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/storetest"
)

// TestStoreSuite runs the store suite on a fresh PostgreSQL database per subtest.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.DB {
		st, err := postgres.Open(context.Background(), pgtest.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
