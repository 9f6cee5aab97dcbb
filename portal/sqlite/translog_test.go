package sqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/portal/fault"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/translog"
)

// fakeDigest is a well-formed bundle digest for runs published by tests without a bundle
// (the log's leaf grammar takes only "sha256:<64 hex>").
func fakeDigest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// TestMigrationQueuesEarlierRuns upgrades a database from before migration 0012: its runs are
// queued for the log with exactly the leaf the portal would have written, and a run whose
// digest cannot be a leaf is left out.
func TestMigrationQueuesEarlierRuns(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := sqlite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= 12 {
			break
		}
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	good := fakeDigest("old run")
	for id, digest := range map[int]string{1: good, 2: "sha256:not-a-digest"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO runs (id, experiment, paper, manifest_id, kind, method, board_class, board_name, level, origin, signer, public_keys,
			bundle_digest, bundle_size, started_at, finished_at, published_at, environment, report, checks, cells_total, cells_ok)
			VALUES (?, 'paper001/mlkem', 'paper001', 'sha256:x', 'kem-bench', 'in-process', 'host', 'b', 'host', 'community', 's', '{}', ?, 1, 0, 0, 1764590000123, '{}', '{}', '[]', 1, 1)`,
			id, digest); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st, err := sqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := st.LogEntry(ctx, 1)
	if err != nil || e.Index != -1 {
		t.Fatalf("run 1: %+v, %v", e, err)
	}
	want, _ := translog.Leaf{RunID: 1, Bundle: good, Published: time.UnixMilli(1764590000123)}.Encode()
	if string(e.Leaf) != string(want) {
		t.Fatalf("migrated leaf %q, want %q", e.Leaf, want)
	}
	if _, err := st.LogEntry(ctx, 2); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("run 2 with a malformed digest: %v", err)
	}
}
