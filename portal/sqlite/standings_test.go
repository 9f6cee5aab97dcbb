package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/store"
)

// TestValueStandings ranks boards by the one-value-per-cell metrics (heap, stack, energy)
// from cells stored in a real SQLite file; a cell without the figure is left out, not zero.
func TestValueStandings(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "portal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	i := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	publish := func(board string, level artifacts.Level, c artifacts.Cell) {
		c.Algorithm, c.Operation, c.Status, c.Unit = "ML-KEM-768", "encaps", artifacts.StatusOK, "instructions"
		c.Stats = &artifacts.Stats{N: 5, Min: 1, P25: 1, Median: 1, P75: 1, Max: 1, Mean: 1}
		now := time.Now()
		_, err := st.Publish(ctx, store.Publication{Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:x",
			Kind: "kem-bench", Method: "in-process", BoardClass: board, BoardName: board, Level: level, Origin: "community",
			Signer: "s", PublicKeys: id.Public(), Bundle: fakeDigest(board), StartedAt: now, FinishedAt: now, Environment: "{}", Report: "{}", Checks: "[]",
			CellsTotal: 1, CellsOK: 1}, Cells: []artifacts.Cell{c}})
		if err != nil {
			t.Fatal(err)
		}
	}
	publish("qemu-mps2-an386", "emulated", artifacts.Cell{Memory: &artifacts.Memory{StackBytes: i(3632)}})
	publish("qemu-riscv32-virt", "emulated", artifacts.Cell{Memory: &artifacts.Memory{StackBytes: i(3728)}})
	publish("host", "host", artifacts.Cell{Memory: &artifacts.Memory{HeapBytesPerOp: f(1216)},
		Energy: &artifacts.Energy{Source: "rapl", JoulesPerOp: &artifacts.Stats{N: 3, Median: 0.0004}}})

	stack, err := st.Standings(ctx, "ML-KEM-768", "encaps", store.MetricStack)
	if err != nil {
		t.Fatal(err)
	}
	if len(stack) != 2 || stack[0].Unit != "B" {
		t.Fatalf("stack standings %+v, want the two firmware boards", stack)
	}
	got := map[string]float64{}
	for _, s := range stack {
		got[s.BoardClass] = s.Median
	}
	if got["qemu-mps2-an386"] != 3632 || got["qemu-riscv32-virt"] != 3728 {
		t.Errorf("stack medians %v", got)
	}
	energy, err := st.Standings(ctx, "ML-KEM-768", "encaps", store.MetricEnergy)
	if err != nil {
		t.Fatal(err)
	}
	if len(energy) != 1 || energy[0].BoardClass != "host" || energy[0].Median != 0.0004 || energy[0].Unit != "J" {
		t.Fatalf("energy standings %+v", energy)
	}
}

// TestMigrationClassStatus upgrades a database from before migration 0004: host runs filed
// under a declared class (a catalogue board or the operator's own) become declared, the
// rest verified, and their cells carry the run's method and class status.
func TestMigrationClassStatus(t *testing.T) {
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
		if m.Version >= 4 {
			break
		}
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, m.Version, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range []struct{ class, level, method string }{
		{"host", "host", "in-process"}, {"rpi4-b", "host", "process-per-operation"}, {"lab-box", "host", "in-process"}, {"qemu-mps2-an386", "emulated", "in-process"},
	} {
		if _, err := db.ExecContext(ctx, `INSERT INTO runs (id, experiment, paper, manifest_id, kind, method, board_class, board_name, level, origin, signer, public_keys,
			bundle_digest, bundle_size, started_at, finished_at, published_at, environment, report, checks, cells_total, cells_ok)
			VALUES (?, 'paper001/mlkem', 'paper001', 'sha256:x', 'kem-bench', ?, ?, 'b', ?, 'community', 's', '{}', 'sha256:b' || ?, 1, 0, 0, 0, '{}', '{}', '[]', 1, 1)`,
			i+1, r.method, r.class, r.level, i+1); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO cells (run_id, idx, algorithm, operation, status, error, unit, n, p25, median, p75, board_class, level, origin)
			VALUES (?, 0, 'ML-KEM-768', 'encaps', 'ok', '', 'ns', 1, 1, 1, 1, ?, ?, 'community')`, i+1, r.class, r.level); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	st, err := sqlite.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want := map[string]string{"host": "verified", "rpi4-b": "declared", "lab-box": "declared", "qemu-mps2-an386": "verified"}
	runs, err := st.Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.ClassStatus != want[r.BoardClass] {
			t.Errorf("run on %s migrated as %q, want %q", r.BoardClass, r.ClassStatus, want[r.BoardClass])
		}
	}
	rows, err := st.Standings(ctx, "ML-KEM-768", "encaps", store.MetricLatency)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("standings %+v", rows)
	}
	for _, r := range rows {
		if r.ClassStatus != want[r.BoardClass] || (r.BoardClass == "rpi4-b") != (r.Method == "process-per-operation") {
			t.Errorf("cell of %s migrated as %s/%s", r.BoardClass, r.Method, r.ClassStatus)
		}
	}
}
