package runner

import (
	"context"
	"testing"

	"github.com/cloudflare/circl/kem/mlkem/mlkem768"

	"pqrepro/artifacts"
)

// BenchmarkHarnessOverhead measures, in one run, ML-KEM-768 encapsulation two ways: the plain
// circl call in a testing.B loop (ns/op, a mean), then the runner's own host cell (median and
// mean of its per-iteration samples, each output checked). The second sub-benchmark reports
// the runner's excess over the first in percent:
//
//	go test -run XXX -bench HarnessOverhead ./runner/
func BenchmarkHarnessOverhead(b *testing.B) {
	s := mlkem768.Scheme()
	pk, _ := s.DeriveKeyPair(make([]byte, s.SeedSize()))
	seeds := make([][]byte, 1024)
	rng := newDRBG("bench", "seeds")
	for i := range seeds {
		seeds[i] = rng.bytes(s.EncapsulationSeedSize())
	}
	var plainNs float64
	b.Run("circl", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, _, err := s.EncapsulateDeterministically(pk, seeds[i%len(seeds)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
		plainNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("runner", func(b *testing.B) {
		m := &artifacts.Manifest{Kind: artifacts.KindKEMBench, Spec: artifacts.Spec{Seed: "bench", Method: artifacts.MethodInProcess}}
		kems, _ := hostAlgorithms()
		var median, mean float64
		for b.Loop() {
			r, err := kemCell(context.Background(), m, artifacts.CellRef{Algorithm: "ML-KEM-768", Operation: artifacts.OpEncaps},
				cellPlan{warmup: 1000, iterations: 20000}, kems["ML-KEM-768"])
			if err != nil || r.cell.Status != artifacts.StatusOK {
				b.Fatal(err, r.cell.Error)
			}
			st := Summarize(r.samples)
			median, mean = st.Median, st.Mean
		}
		b.ReportMetric(median, "median-ns")
		b.ReportMetric(mean, "mean-ns")
		if plainNs > 0 {
			b.ReportMetric(100*(median-plainNs)/plainNs, "median-vs-circl-%")
			b.ReportMetric(100*(mean-plainNs)/plainNs, "mean-vs-circl-%")
		}
	})
}
