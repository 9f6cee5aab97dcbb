package bench

import (
	"context"
	"testing"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem768"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/trial"
)

// BenchmarkHarnessOverhead measures, in one run, ML-KEM-768 encapsulation two ways and
// compares like with like: a bare loop that times every call with the same clock the runner
// uses (time.Now/time.Since around the call alone), and the runner's own host cell (input
// preparation and output check outside the timed window). Both give per-iteration samples;
// the benchmark reports both medians and their ratio, for each key form:
//
//	go test -run XXX -bench HarnessOverhead ./runner/
//
// runner/bare is the harness's cost relative to the bare call (1.00 = none).
func BenchmarkHarnessOverhead(b *testing.B) {
	const warmup, iterations = 1000, 20000
	s := mlkem768.Scheme()
	pk, _ := s.DeriveKeyPair(make([]byte, s.SeedSize()))
	pkBytes, _ := pk.MarshalBinary()
	seeds := make([][]byte, 1024)
	rng := trial.NewDRBG("bench", "seeds")
	for i := range seeds {
		seeds[i] = rng.Bytes(s.EncapsulationSeedSize())
	}
	for _, form := range []string{artifacts.KeysParsed, artifacts.KeysEncoded} {
		b.Run("keys="+form, func(b *testing.B) {
			bare := func(i int) (time.Duration, error) {
				t0 := time.Now()
				key := pk
				if form == artifacts.KeysEncoded {
					var err error
					if key, err = s.UnmarshalBinaryPublicKey(pkBytes); err != nil {
						return 0, err
					}
				}
				_, _, err := s.EncapsulateDeterministically(key, seeds[i%len(seeds)])
				return time.Since(t0), err
			}
			m := &artifacts.Manifest{Kind: artifacts.KindKEMBench, Spec: artifacts.Spec{Seed: "bench", Method: artifacts.MethodInProcess, Keys: form}}
			kems, _ := Algorithms()
			var bareMedian, runnerMedian float64
			for b.Loop() {
				samples := make([]float64, 0, iterations)
				for i := range warmup + iterations {
					d, err := bare(i)
					if err != nil {
						b.Fatal(err)
					}
					if i >= warmup {
						samples = append(samples, float64(d.Nanoseconds()))
					}
				}
				bareMedian = runner.Summarize(samples).Median
				r, err := kemCell(context.Background(), m, artifacts.CellRef{Algorithm: "ML-KEM-768", Operation: artifacts.OpEncaps},
					trial.Plan{Warmup: warmup, Iterations: iterations}, kems["ML-KEM-768"])
				if err != nil || r.Cell.Status != artifacts.StatusOK {
					b.Fatal(err, r.Cell.Error)
				}
				runnerMedian = runner.Summarize(r.Samples).Median
			}
			b.ReportMetric(bareMedian, "bare-median-ns")
			b.ReportMetric(runnerMedian, "runner-median-ns")
			b.ReportMetric(runnerMedian/bareMedian, "runner/bare")
		})
	}
}
