package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/portal/postgres"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/store"
)

// benchPublication is a run of 20 ok cells and 6 claim verdicts on one of four boards: the
// shape of a paper001 run. The numbers are benchmark input, not measurements.
func benchPublication(i int64) store.Publication {
	b := []struct {
		class string
		level artifacts.Level
	}{{"host", "host"}, {"qemu-mps2-an386", "emulated"}, {"rpi4-b", "hardware"}, {"seed-lab-a", "host"}}[i%4]
	now := time.Now()
	var cells []artifacts.Cell
	for c := range 20 {
		v := float64(1000 + c)
		cells = append(cells, artifacts.Cell{Algorithm: fmt.Sprintf("ALG-%d", c%5), Operation: []string{"keygen", "encaps", "decaps", "sign"}[c%4], Status: artifacts.StatusOK,
			Unit: "ns", Stats: &artifacts.Stats{N: 100, Min: v, P25: v, Median: v, P75: v, Max: v, Mean: v}})
	}
	var claims []store.ClaimVerdict
	for c := range 6 {
		claims = append(claims, store.ClaimVerdict{Paper: "paper001", ClaimID: fmt.Sprintf("C%02d", c), Verdict: []string{"holds", "fails", "inconclusive"}[(i+int64(c))%3],
			Reason: "r", ClassStatus: artifacts.ClassVerified})
	}
	return store.Publication{Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:x", Kind: "kem-bench", Method: artifacts.MethodInProcess,
		BoardClass: b.class, BoardName: b.class, Level: b.level, ClassStatus: artifacts.ClassVerified, Origin: "community", Signer: "s",
		Bundle: fmt.Sprintf("sha256:%064d", i), StartedAt: now, FinishedAt: now, Environment: "{}", Report: "{}", Checks: "[]", CellsTotal: 20, CellsOK: 20},
		Cells: cells, Claims: claims}
}

// BenchmarkPublish publishes runs of 20 cells and 6 verdicts through the store, one at a
// time and from 8 goroutines at once, on a SQLite file and on PostgreSQL (pgtest; skipped
// where it cannot start).
func BenchmarkPublish(b *testing.B) {
	ctx := context.Background()
	open := map[string]func(b *testing.B) store.Store{
		"sqlite": func(b *testing.B) store.Store {
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "portal.db"))
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		"postgres": func(b *testing.B) store.Store {
			st, err := postgres.Open(ctx, pgtest.DSN(b))
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, par := range []int{1, 8} {
			b.Run(fmt.Sprintf("%s/publishers=%d", engine, par), func(b *testing.B) {
				st := open[engine](b)
				defer st.Close()
				var next atomic.Int64
				b.ResetTimer()
				var wg sync.WaitGroup
				for range par {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							if _, err := st.Publish(ctx, benchPublication(i)); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				next.Store(int64(b.N))
				b.StopTimer()
				if n, err := st.CountCells(ctx); err != nil || int64(n) != 20*next.Load() {
					b.Fatalf("%d cells stored (%v), %d runs of 20 published", n, err, next.Load())
				}
				b.ReportMetric(float64(next.Load())/b.Elapsed().Seconds(), "runs/s")
			})
		}
	}
}
