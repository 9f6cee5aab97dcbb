package compare

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// noisy returns n hand-built samples spread uniformly over center ± spread, from a fixed
// stream so every test run sees the same data.
func noisy(seed uint64, n int, center, spread float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	v := make([]float64, n)
	for i := range v {
		v[i] = center + spread*(2*r.Float64()-1)
	}
	return v
}

// sampledRun builds a run from cells' samples, with statistics that agree with them.
func sampledRun(unit artifacts.Unit, cells map[string][]float64) Run {
	run := Run{Result: &artifacts.Result{ManifestID: "sha256:test", Board: "host", Assurance: artifacts.AssuranceHost, Method: artifacts.MethodInProcess},
		Samples: artifacts.Samples{Values: map[artifacts.CellKey][]float64{}, Energy: map[artifacts.CellKey][]float64{}}}
	names := make([]string, 0, len(cells))
	for k := range cells {
		names = append(names, k)
	}
	slices.Sort(names)
	if unit == artifacts.UnitInstructions {
		run.Result.Assurance = artifacts.AssuranceEmulated
	}
	run.Samples.Rounds = map[artifacts.CellKey][]int{}
	for _, ref := range names {
		alg, op, _ := strings.Cut(ref, "/")
		v := cells[ref]
		c := artifacts.Cell{Algorithm: alg, Operation: op, Status: artifacts.StatusOK, Unit: unit,
			Stats: &artifacts.Stats{N: len(v), Median: median(slices.Clone(v))}}
		run.Result.Cells = append(run.Result.Cells, c)
		run.Samples.Values[artifacts.KeyOf(c)] = v
		if run.Result.Assurance == artifacts.AssuranceHost {
			// A host run's cells share rounds: up to 20, the samples spread evenly over them.
			run.Samples.Rounds[artifacts.KeyOf(c)] = evenRounds(len(v), min(len(v), 20))
		}
	}
	return run
}

// evenRounds spreads n samples over r rounds in order.
func evenRounds(n, r int) []int {
	out := make([]int, n)
	for j := range out {
		out[j] = j * r / n
	}
	return out
}

func f(v float64) *float64 { return &v }

func order(cells ...string) experiments.Check { return experiments.Check{Kind: "order", Cells: cells} }

func TestBootstrapChecks(t *testing.T) {
	run := sampledRun("ns", map[string][]float64{
		"A/verify": noisy(1, 200, 100, 10),
		"A/sign":   noisy(2, 200, 200, 20),
		"B/sign":   noisy(3, 200, 500, 50),
		"C/sign":   noisy(4, 200, 100, 10), // same distribution as A/verify
		"D/sign":   noisy(5, 200, 216, 30), // 2.16 × A/verify: on the band's lower bound below
		"E/sign":   noisy(6, 200, 240, 5),  // 2.4 × A/verify
		"F/sign":   noisy(7, 3, 100, 1),    // too few
	})
	tests := []struct {
		name   string
		check  experiments.Check
		want   string
		detail string
	}{
		{"clearly separated ordering holds", order("A/verify", "A/sign", "B/sign"), Holds, "in order"},
		{"reversed ordering fails", order("A/sign", "A/verify"), Fails, "out of order"},
		{"overlapping ordering is inconclusive", order("A/verify", "C/sign"), Inconclusive, "cannot tell"},
		{"ratio inside the band holds", experiments.Check{Kind: "ratio", Num: "E/sign", Den: "A/verify", Expected: 2.4, Tolerance: 0.1}, Holds, "i.e. [2.16, 2.64]"},
		{"ratio straddling a bound is inconclusive", experiments.Check{Kind: "ratio", Num: "D/sign", Den: "A/verify", Expected: 2.4, Tolerance: 0.1}, Inconclusive, ""},
		{"ratio wholly outside fails", experiments.Check{Kind: "ratio", Num: "B/sign", Den: "A/verify", Min: f(1), Max: f(3)}, Fails, ""},
		{"ratio with a minimum only", experiments.Check{Kind: "ratio", Num: "B/sign", Den: "A/verify", Min: f(3)}, Holds, "≥ 3"},
		{"too few samples", order("A/verify", "F/sign"), Untestable, "too few samples for an interval"},
		{"cell not measured", order("A/sign", "Z/sign"), Untestable, "not measured"},
		{"method gate", experiments.Check{Kind: "ratio", Num: "A/sign", Den: "B/sign", Min: f(0), Method: artifacts.MethodOpenSSLCLI}, Untestable, "applies to openssl-cli runs"},
		{"energy without per-iteration samples", experiments.Check{Kind: "ratio", Num: "A/sign", Den: "B/sign", Min: f(0), Metric: "energy"}, Untestable, "no per-iteration energy samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCheck(tt.check, run, artifacts.MethodInProcess)
			if r.Verdict != tt.want {
				t.Fatalf("verdict %s (%s), want %s", r.Verdict, r.Detail, tt.want)
			}
			if tt.detail != "" && !strings.Contains(r.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", r.Detail, tt.detail)
			}
			if r.Verdict == Untestable {
				if len(r.Intervals) != 0 || r.Method != "" {
					t.Errorf("an untestable check records an interval: %+v", r)
				}
				return
			}
			if r.Method != MethodRounds || r.Resamples != Resamples || len(r.Intervals) == 0 || r.Intervals[0].Rounds != 20 || r.Intervals[0].Block != 3 {
				t.Fatalf("method %q resamples %d intervals %d", r.Method, r.Resamples, len(r.Intervals))
			}
			for _, iv := range r.Intervals {
				if !(iv.Lo <= iv.Point && iv.Point <= iv.Hi) || len(iv.Seed) != 64 {
					t.Errorf("interval %+v: the point must lie inside and the seed be 32 bytes of hex", iv)
				}
			}
			again := runCheck(tt.check, run, artifacts.MethodInProcess)
			if !reflect.DeepEqual(r, again) {
				t.Errorf("a re-run with the same seed differs:\n%+v\n%+v", r, again)
			}
		})
	}
}

func TestBootstrapSeedAndInterval(t *testing.T) {
	a, b := noisy(1, 50, 100, 10), noisy(2, 50, 150, 10)
	ca, cb := slices.Clone(a), slices.Clone(b)
	s1 := BootstrapSeed("sha256:m", "time", "X/b", "X/a")
	p1, lo1, hi1 := RatioInterval(b, a, s1)
	p2, lo2, hi2 := RatioInterval(b, a, s1)
	if p1 != p2 || lo1 != lo2 || hi1 != hi2 {
		t.Fatalf("same seed, different interval: %v %v %v vs %v %v %v", p1, lo1, hi1, p2, lo2, hi2)
	}
	if !slices.Equal(a, ca) || !slices.Equal(b, cb) {
		t.Fatal("RatioInterval reordered its inputs")
	}
	for _, other := range [][32]byte{BootstrapSeed("sha256:n", "time", "X/b", "X/a"), BootstrapSeed("sha256:m", "time", "X/a", "X/b"), BootstrapSeed("sha256:m", "energy", "X/b", "X/a")} {
		if other == s1 {
			t.Error("the seed must depend on the manifest, the metric and the cells")
		}
	}
	if _, lo3, hi3 := RatioInterval(b, a, BootstrapSeed("sha256:n", "time", "X/b", "X/a")); lo3 == lo1 && hi3 == hi1 {
		t.Error("a different seed gave a bit-identical interval")
	}
	// Constant samples (emulated instruction counts) have a degenerate interval.
	if p, lo, hi := RatioInterval([]float64{6, 6, 6, 6, 6}, []float64{3, 3, 3, 3, 3}, s1); p != 2 || lo != 2 || hi != 2 {
		t.Errorf("constant samples: %v [%v, %v], want 2 [2, 2]", p, lo, hi)
	}
}

func TestMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for n := 1; n < 60; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(7)) // many ties
		}
		s := slices.Sorted(slices.Values(v))
		want := s[(n-1)/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		if got := median(v); got != want {
			t.Fatalf("n=%d: median %v, want %v", n, got, want)
		}
	}
}

func TestClaimVerdicts(t *testing.T) {
	run := sampledRun("ns", map[string][]float64{
		"A/verify": noisy(1, 100, 100, 10),
		"A/sign":   noisy(2, 100, 200, 20),
		"C/sign":   noisy(4, 100, 100, 10),
	})
	run.Board.ClassStatus = artifacts.ClassVerified
	holds, fails, unsure := order("A/verify", "A/sign"), order("A/sign", "A/verify"), order("A/verify", "C/sign")
	missing := order("A/verify", "Z/sign")
	tests := []struct {
		name   string
		claim  experiments.Claim
		method artifacts.Method
		want   string
		reason string
	}{
		{"every check holds", experiments.Claim{Checks: []experiments.Check{holds, holds}}, "", Holds, ""},
		{"one check untestable", experiments.Claim{Checks: []experiments.Check{holds, missing}}, "", PartlyTestable, "1 of 2 checks testable"},
		{"method-gated check on another method", experiments.Claim{Checks: []experiments.Check{holds, {Kind: "ratio", Num: "A/sign", Den: "A/verify", Min: f(0.9), Method: artifacts.MethodOpenSSLCLI}}}, artifacts.MethodInProcess, PartlyTestable, ""},
		{"no check testable", experiments.Claim{Checks: []experiments.Check{missing}}, "", Untestable, ""},
		{"a failing check decides", experiments.Claim{Checks: []experiments.Check{holds, unsure, fails, missing}}, "", Fails, ""},
		{"a straddling check, none failing", experiments.Claim{Checks: []experiments.Check{holds, unsure}}, "", Inconclusive, ""},
		{"caveat scope with checks is never verdicted", experiments.Claim{Scope: "caveat", Reason: "the paper's command failed", Checks: []experiments.Check{fails}}, "", NotVerdicted, "scope caveat: the paper's command failed"},
		{"board-specific scope", experiments.Claim{Scope: "board-specific", Reason: "needs the ESP32-C6", Checks: []experiments.Check{holds}}, "", NotVerdicted, "needs the ESP32-C6"},
		{"no checks", experiments.Claim{}, "", Untestable, "no check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CheckClaim(tt.claim, run, tt.method)
			if r.Verdict != tt.want {
				t.Fatalf("verdict %s (%s) %+v, want %s", r.Verdict, r.Reason, r.Checks, tt.want)
			}
			if tt.reason != "" && !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("reason %q lacks %q", r.Reason, tt.reason)
			}
			if r.Verdict == NotVerdicted && len(r.Checks) != 0 {
				t.Errorf("a scoped claim's checks were run: %+v", r.Checks)
			}
			if r.Board != "host" || r.Assurance != artifacts.AssuranceHost || r.ClassStatus != artifacts.ClassVerified {
				t.Errorf("verdict not tied to its board: %q %q %q", r.Board, r.Assurance, r.ClassStatus)
			}
		})
	}
}

func TestInstructionCountsSaySo(t *testing.T) {
	run := sampledRun(artifacts.UnitInstructions, map[string][]float64{
		"A/keygen": {100, 100, 100, 100, 100},
		"B/keygen": {250, 250, 250, 250, 250},
	})
	r := CheckClaim(experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "B/keygen", Den: "A/keygen", Expected: 2.5, Tolerance: 0.2}}}, run, "")
	if r.Verdict != Holds || !strings.Contains(r.Checks[0].Detail, "tested on emulated instruction counts, not time") {
		t.Errorf("verdict %s, detail %q", r.Verdict, r.Checks[0].Detail)
	}
	// Identical samples: the exact ratio, never a "95% interval" [2.5, 2.5].
	iv := r.Checks[0].Intervals[0]
	if !iv.Exact || iv.Point != 2.5 || strings.Contains(r.Checks[0].Detail, "95%") || !strings.Contains(r.Checks[0].Detail, "2.500 exactly") {
		t.Errorf("interval %+v, detail %q", iv, r.Checks[0].Detail)
	}
	// Counts that vary with the seeded inputs keep their interval, and say what it describes.
	varied := sampledRun(artifacts.UnitInstructions, map[string][]float64{
		"A/sign": {100, 120, 100, 140, 100, 100},
		"B/sign": {250, 250, 250, 250, 250, 250},
	})
	r = CheckClaim(experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "B/sign", Den: "A/sign", Min: f(1)}}}, varied, "")
	if r.Checks[0].Intervals[0].Exact || !strings.Contains(r.Checks[0].Detail, "vary with the seeded inputs") {
		t.Errorf("detail %q", r.Checks[0].Detail)
	}
}

// TestWithheld: a host run during which other processes used the CPU has its checks computed
// and shown, and no verdict; a claim about timing noise is withheld on a virtual machine; an
// emulated run's counts are never withheld for the host's load.
func TestWithheld(t *testing.T) {
	run := sampledRun("ns", map[string][]float64{"A/verify": noisy(1, 100, 100, 10), "A/sign": noisy(2, 100, 200, 20)})
	cl := experiments.Claim{Checks: []experiments.Check{order("A/verify", "A/sign")}}
	if r := CheckClaim(cl, run, ""); r.Verdict != Holds {
		t.Fatalf("quiet run: %s", r.Verdict)
	}
	run.Timing = &artifacts.TimingContext{Virtualization: "kvm", External: &artifacts.ExternalLoad{Mean: 0.62, P90: 1.1, Max: 1.9, Intervals: 143, Threshold: 0.2, Exceeded: true}}
	r := CheckClaim(cl, run, "")
	if r.Verdict != NotVerdicted || !strings.Contains(r.Reason, "other processes used the CPU") || !strings.Contains(r.Reason, "mean 0.62 CPUs") {
		t.Fatalf("loaded run: %s (%s)", r.Verdict, r.Reason)
	}
	if len(r.Checks) != 1 || r.Checks[0].Verdict != Holds || len(r.Checks[0].Intervals) != 1 {
		t.Errorf("a withheld claim's checks must be computed and shown: %+v", r.Checks)
	}
	run.Timing.External.Exceeded = false
	if r := CheckClaim(cl, run, ""); r.Verdict != Holds {
		t.Errorf("below the threshold on a VM: %s", r.Verdict)
	}
	noise := experiments.Claim{TimingNoise: true, Checks: cl.Checks}
	if r := CheckClaim(noise, run, ""); r.Verdict != NotVerdicted || !strings.Contains(r.Reason, "virtual machine (kvm)") {
		t.Errorf("timing noise on a VM: %s (%s)", r.Verdict, r.Reason)
	}
	emu := sampledRun(artifacts.UnitInstructions, map[string][]float64{"A/verify": {100, 100, 100, 100, 100}, "A/sign": {300, 310, 300, 320, 300}})
	emu.Result.Assurance = artifacts.AssuranceEmulated
	emu.Timing = &artifacts.TimingContext{Virtualization: "kvm", External: &artifacts.ExternalLoad{Mean: 1.5, Threshold: 0.2, Exceeded: true}}
	if r := CheckClaim(noise, emu, ""); r.Verdict != Holds {
		t.Errorf("emulated counts withheld for the host's load: %s (%s)", r.Verdict, r.Reason)
	}
}

func TestSamplesMustMatchTheResult(t *testing.T) {
	run := sampledRun("ns", map[string][]float64{"A/sign": noisy(1, 10, 1, 0.1), "B/sign": noisy(2, 10, 2, 0.1)})
	run.Result.Cells[0].Stats.N = 11
	r := runCheck(order("A/sign", "B/sign"), run, "")
	if r.Verdict != Untestable || !strings.Contains(r.Detail, "n=11") {
		t.Errorf("verdict %s detail %q: a samples.csv that disagrees with result.json must not be tested", r.Verdict, r.Detail)
	}
}

func TestVariantCellStandsInForAFailedCommand(t *testing.T) {
	run := sampledRun("ns", map[string][]float64{"A/sign": noisy(1, 20, 1, 0.1)})
	v := noisy(2, 20, 3, 0.1)
	run.Result.Cells = append(run.Result.Cells,
		artifacts.Cell{Algorithm: "B", Operation: "sign", Status: artifacts.StatusFailed, Error: "the paper's command fails"},
		artifacts.Cell{Algorithm: "B", Operation: "sign", Variant: "-rawin -digest sha256", Status: artifacts.StatusOK, Unit: "ns", Stats: &artifacts.Stats{N: 20}})
	run.Samples.Values[artifacts.CellKey{Algorithm: "B", Operation: "sign", Variant: "-rawin -digest sha256"}] = v
	run.Samples.Rounds[artifacts.CellKey{Algorithm: "B", Operation: "sign", Variant: "-rawin -digest sha256"}] = evenRounds(20, 20)
	r := runCheck(order("A/sign", "B/sign"), run, "")
	if r.Verdict != Holds || !strings.Contains(r.Detail, "variant (-rawin -digest sha256)") {
		t.Errorf("verdict %s detail %q", r.Verdict, r.Detail)
	}
}

// BenchmarkRatioInterval times one interval on two cells of 3,000 samples (a default host run).
func BenchmarkRatioInterval(b *testing.B) {
	x, y := noisy(1, 3000, 100, 10), noisy(2, 3000, 150, 10)
	seed := BootstrapSeed("sha256:m", "time", "X/b", "X/a")
	for b.Loop() {
		RatioInterval(y, x, seed)
	}
}

// TestResampledMedian checks the counting median against sorting the same resample.
func TestResampledMedian(t *testing.T) {
	for n := 1; n < 40; n++ {
		v := slices.Sorted(slices.Values(noisy(uint64(n), n, 10, 5)))
		for i := range v {
			if i%3 == 0 && i > 0 {
				v[i] = v[i-1] // ties
			}
		}
		counts := make([]int32, n)
		seed := BootstrapSeed("m", "time", "a", "b")
		r1, r2 := rand.New(rand.NewChaCha8(seed)), rand.New(rand.NewChaCha8(seed))
		for range 20 {
			got := resampledMedian(v, counts, r1)
			draw := make([]float64, n)
			for i := range draw {
				draw[i] = v[r2.IntN(n)]
			}
			if want := median(draw); got != want {
				t.Fatalf("n=%d: counting median %v, sorted resample %v", n, got, want)
			}
		}
	}
}

// TestGridReplicatesAsSorted checks the counted replicates against drawing and sorting every
// ratio, bit for bit, for odd and even sample counts, ties, and equal cells; the third pair
// has the first's seed and counts but other values, so its grid is the one kept (drawnGrid).
func TestGridReplicatesAsSorted(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for m := 1; m <= 9; m++ {
			num := noisy(uint64(n*100+m), n, 10, 5)
			den := noisy(uint64(m*100+n), m, 7, 3)
			if n > 2 {
				num[1] = num[0] // ties
			}
			seed := BootstrapSeed("m", "time", strconv.Itoa(n), strconv.Itoa(m))
			other := make([]float64, n)
			for i, v := range num {
				other[i] = 3*v + float64(i%3)
			}
			for _, pair := range [][2][]float64{{num, den}, {num, num}, {other, den}} {
				_, got := ratioReplicates(pair[0], pair[1], seed)
				sn, sd := slices.Sorted(slices.Values(pair[0])), slices.Sorted(slices.Values(pair[1]))
				rng := rand.New(rand.NewChaCha8(seed))
				cn, cd := make([]int32, len(sn)), make([]int32, len(sd))
				want := make([]float64, Resamples)
				for b := range want {
					mn := resampledMedian(sn, cn, rng)
					want[b] = mn / resampledMedian(sd, cd, rng)
				}
				slices.Sort(want)
				if len(got) != len(want) {
					t.Fatalf("n=%d m=%d: %d replicates, want %d", n, m, len(got), len(want))
				}
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("n=%d m=%d: replicate %d is %v, sorting gives %v", n, m, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestDrawerIntN: the bootstrap's direct draws are rand.Rand.IntN's, from the same stream,
// for small, power-of-two and huge bounds (where the rejection loop runs).
func TestDrawerIntN(t *testing.T) {
	seed := BootstrapSeed("m", "time", "draw", "er")
	src := rand.NewChaCha8(seed)
	d := drawer{src, rand.New(src)}
	ref := rand.New(rand.NewChaCha8(seed))
	for _, n := range []int{1, 2, 3, 5, 7, 8, 9, 100, 1 << 20, 3 << 61, math.MaxInt} {
		for i := range 5000 {
			if got, want := d.intN(n), ref.IntN(n); got != want {
				t.Fatalf("n=%d, draw %d: %d, IntN %d", n, i, got, want)
			}
		}
	}
}

// BenchmarkRatioIntervalFewSamples times one interval on two cells of 5 samples (a seeded
// run's, the fewest a claim check takes).
func BenchmarkRatioIntervalFewSamples(b *testing.B) {
	x, y := noisy(1, 5, 100, 10), noisy(2, 5, 150, 10)
	seed := BootstrapSeed("sha256:m", "time", "X/b", "X/a")
	for b.Loop() {
		RatioInterval(y, x, seed)
	}
}
