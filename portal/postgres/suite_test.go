package postgres_test

import (
	"context"
	"testing"

	"pqrepro/portal/postgres"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/store"
	"pqrepro/portal/storetest"
)

// TestStoreSuite runs the store suite on a fresh PostgreSQL database per subtest.
func TestStoreSuite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		st, err := postgres.Open(context.Background(), pgtest.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
