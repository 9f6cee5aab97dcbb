package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"pqrepro/portal/sqlite"
	"pqrepro/portal/store"
)

// TestMigrationPublishesABundleOnce upgrades a database from before migration 0009 in which
// one bundle was published three times: the first run stays (labelled legacy) with its cells,
// the repeats go with theirs, the job that published a repeat points at the first run, and a
// fourth publication of that digest is refused naming the first run.
func TestMigrationPublishesABundleOnce(t *testing.T) {
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
		if m.Version >= 9 {
			break
		}
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO jobs (id, experiment, paper, manifest_yaml, manifest_id, board_class, state, created_at, run_id)
		VALUES (1, 'paper001/mlkem', 'paper001', '', 'sha256:x', 'host', 'published', 0, 3)`); err != nil {
		t.Fatal(err)
	}
	for id, digest := range map[int]string{1: "sha256:same", 2: "sha256:other", 3: "sha256:same", 4: "sha256:same"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO runs (id, experiment, paper, manifest_id, kind, method, board_class, board_name, level, origin, signer, public_keys,
			bundle_digest, bundle_size, started_at, finished_at, published_at, environment, report, checks, cells_total, cells_ok)
			VALUES (?, 'paper001/mlkem', 'paper001', 'sha256:x', 'kem-bench', 'in-process', 'host', 'b', 'host', 'community', 's', '{}', ?, 1, 0, 0, 0, '{}', '{}', '[]', 1, 1)`,
			id, digest); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO cells (run_id, idx, algorithm, operation, status, error, unit, n, median) VALUES (?, 0, 'ML-KEM-768', 'encaps', 'ok', '', 'ns', 1, 1)`, id); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st, err := sqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != 2 || runs[1].ID != 1 || runs[1].Binding != store.BindingLegacy {
		t.Fatalf("after the migration: %+v", runs)
	}
	if n, _ := st.CountCells(ctx); n != 2 {
		t.Errorf("%d cells left, want the 2 of the remaining runs", n)
	}
	if j, _ := st.Job(ctx, 1); j.RunID != 1 {
		t.Errorf("the job that published a repeat points at run %d, want 1", j.RunID)
	}
	_, err = st.Publish(ctx, store.Publication{Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:x", Kind: "kem-bench",
		Method: "in-process", BoardClass: "host", BoardName: "b", Level: "host", Origin: "community", Bundle: "sha256:same", Environment: "{}", Report: "{}", Checks: "[]"}})
	var dup *store.DuplicateBundleError
	if !errors.As(err, &dup) || dup.RunID != 1 {
		t.Errorf("publishing the digest again: %v, want a duplicate of run 1", err)
	}
}
