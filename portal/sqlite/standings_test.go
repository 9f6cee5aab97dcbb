package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/portal/sqlite"
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
	id, err := artifacts.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	i := func(v int) *int { return &v }
	f := func(v float64) *float64 { return &v }
	publish := func(board, level string, c artifacts.Cell) {
		c.Algorithm, c.Operation, c.Status, c.Unit = "ML-KEM-768", "encaps", artifacts.StatusOK, "instructions"
		c.Stats = &artifacts.Stats{N: 5, Min: 1, P25: 1, Median: 1, P75: 1, Max: 1, Mean: 1}
		now := time.Now()
		_, err := st.Publish(ctx, sqlite.Publication{Run: sqlite.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:x",
			Kind: "kem-bench", Method: "in-process", BoardClass: board, BoardName: board, Level: level, Origin: "community",
			Signer: "s", PublicKeys: id.Public(), Bundle: "sha256:" + board, StartedAt: now, FinishedAt: now, Environment: "{}", Report: "{}", Checks: "[]",
			CellsTotal: 1, CellsOK: 1}, Cells: []artifacts.Cell{c}})
		if err != nil {
			t.Fatal(err)
		}
	}
	publish("qemu-mps2-an386", "emulated", artifacts.Cell{Memory: &artifacts.Memory{StackBytes: i(3632)}})
	publish("qemu-riscv32-virt", "emulated", artifacts.Cell{Memory: &artifacts.Memory{StackBytes: i(3728)}})
	publish("host", "host", artifacts.Cell{Memory: &artifacts.Memory{HeapBytesPerOp: f(1216)},
		Energy: &artifacts.Energy{Source: "rapl", JoulesPerOp: &artifacts.Stats{N: 3, Median: 0.0004}}})

	stack, err := st.Standings(ctx, "ML-KEM-768", "encaps", sqlite.MetricStack)
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
	energy, err := st.Standings(ctx, "ML-KEM-768", "encaps", sqlite.MetricEnergy)
	if err != nil {
		t.Fatal(err)
	}
	if len(energy) != 1 || energy[0].BoardClass != "host" || energy[0].Median != 0.0004 || energy[0].Unit != "J" {
		t.Fatalf("energy standings %+v", energy)
	}
}
