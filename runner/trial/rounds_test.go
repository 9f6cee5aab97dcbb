package trial

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/experiments"
)

// TestSchedulerRounds: every round visits every cell still running exactly once, in an order
// drawn from the seed (the same seed, the same order); one cell runs at a time.
func TestSchedulerRounds(t *testing.T) {
	run := func(seed string) ([]string, int) {
		s := NewScheduler(seed, time.Now())
		var visits []string
		running := 0
		for c := range 4 {
			s.Add(func(tt *Turns) {
				for turn := 0; ; turn++ {
					running++
					if running != 1 {
						t.Errorf("%d cells running at once", running)
					}
					r, _ := tt.Now()
					visits = append(visits, fmt.Sprintf("%d:%d", r, c))
					running--
					if turn == c+1 { // cell c takes c+2 turns
						return
					}
					if err := tt.Yield(context.Background()); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		rounds, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return visits, rounds
	}
	a, rounds := run("seed-1")
	if rounds != 5 || len(a) != 2+3+4+5 {
		t.Fatalf("%d rounds, %d turns: %v", rounds, len(a), a)
	}
	for r := range rounds {
		var cells []string
		for _, v := range a {
			if strings.HasPrefix(v, fmt.Sprint(r)+":") {
				cells = append(cells, v)
			}
		}
		if want := 4 - max(0, r-1); len(cells) != want { // cell c takes rounds 0..c+1
			t.Errorf("round %d visited %v", r, cells)
		}
	}
	if b, _ := run("seed-1"); !slices.Equal(a, b) {
		t.Errorf("the same seed gave another schedule:\n%v\n%v", a, b)
	}
	if c, _ := run("seed-2"); slices.Equal(a, c) {
		t.Errorf("another seed gave the same schedule: %v", a)
	}
}

// TestSchedulerCancel: cancelling a run releases every cell waiting for its turn.
func TestSchedulerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := NewScheduler("x", time.Now())
	returned := 0
	for c := range 3 {
		s.Add(func(tt *Turns) {
			defer func() { returned++ }()
			for turn := 0; ; turn++ {
				if c == 1 && turn == 2 {
					cancel()
				}
				if err := tt.Yield(ctx); err != nil {
					return
				}
			}
		})
	}
	if _, err := s.Run(ctx); err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if returned != 3 {
		t.Errorf("%d of 3 cells returned", returned)
	}
}

// driftTrial is a cell whose operation costs base × the machine's slowness when it runs: the
// machine slows linearly from 1 to 2 over total operations (the clock is the operation count,
// shared by every cell of the run), as a neighbour's load would make it. It reports that cost
// as its sample (trial.self), so the schedule, not the timer, decides what each cell sees.
func driftTrial(base float64, clock *int, total int) Trial[int, float64] {
	return Trial[int, float64]{
		Prep: func(i int) (int, error) { return i, nil },
		Op: func(int) (float64, error) {
			*clock++
			return base * (1 + float64(*clock)/float64(total)), nil
		},
		Check: func(int, float64) error { return nil },
		Self:  func(v float64) float64 { return v },
	}
}

// TestDriftInRounds: two cells of equal cost on a machine that slows down during the run.
// Run one after another (the block order runs had before rounds), the later cell looks 40%
// slower, and the independent bootstrap's interval excludes a band [0.9, 1.15] around equal
// cost: a false "fails". Run in rounds, the same drift falls on both cells alike, and the
// moving-block bootstrap over rounds puts the ratio inside the band: the claim holds. A
// host run whose cells were not taken in rounds is never verdicted.
func TestDriftInRounds(t *testing.T) {
	const n = 100
	plan := Plan{Warmup: 1, Iterations: n, NoPasses: true}
	claim := experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "B/keygen", Den: "A/keygen", Min: ptr(0.9), Max: ptr(1.15)}}}
	runOf := func(a, b Outcome) compare.Run {
		run := compare.Run{Result: &artifacts.Result{ManifestID: "sha256:drift", Board: "host", Assurance: artifacts.AssuranceHost},
			Samples: artifacts.Samples{Values: map[artifacts.CellKey][]float64{}, Rounds: map[artifacts.CellKey][]int{}}}
		for _, c := range []struct {
			alg string
			r   Outcome
		}{{"A", a}, {"B", b}} {
			cell := artifacts.Cell{Algorithm: c.alg, Operation: artifacts.OpKeygen, Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds, Stats: artifacts.Summarize(c.r.Samples)}
			run.Result.Cells = append(run.Result.Cells, cell)
			run.Samples.Values[artifacts.KeyOf(cell)] = c.r.Samples
			if c.r.Rounds != nil {
				run.Samples.Rounds[artifacts.KeyOf(cell)] = c.r.Rounds
			}
		}
		return run
	}

	// Block order: A's iterations, then B's.
	clock := 0
	total := 2 * (n + plan.Warmup)
	a, _ := Run(context.Background(), driftTrial(1e6, &clock, total), plan)
	b, _ := Run(context.Background(), driftTrial(1e6, &clock, total), plan)
	p, lo, hi := compare.RatioInterval(b.Samples, a.Samples, compare.BootstrapSeed("sha256:drift", "time", "B/keygen", "A/keygen"))
	if !(lo > 1.15) {
		t.Fatalf("block order: B/A = %.3f [%.3f, %.3f]; the fixture must make the old bootstrap fail the claim", p, lo, hi)
	}
	if cr := compare.CheckClaim(claim, runOf(a, b), ""); cr.Verdict != compare.Untestable {
		t.Errorf("a host run without rounds: %s (%s), want untestable", cr.Verdict, cr.Checks[0].Detail)
	}

	// Rounds: the real scheduler, the real trial loop.
	clock = 0
	var ra, rb Outcome
	s := NewScheduler("drift", time.Now())
	for i, out := range []*Outcome{&ra, &rb} {
		s.Add(func(tt *Turns) {
			pl := plan
			pl.Turns = tt
			r, err := Run(context.Background(), driftTrial(1e6, &clock, total), pl)
			if err != nil {
				t.Errorf("cell %d: %v", i, err)
			}
			*out = r
		})
	}
	rounds, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rounds < 10 || ra.Cell.Block != 5 || len(ra.Rounds) != n || len(rb.Rounds) != n {
		t.Fatalf("%d rounds, block %d, %d and %d samples in rounds", rounds, ra.Cell.Block, len(ra.Rounds), len(rb.Rounds))
	}
	cr := compare.CheckClaim(claim, runOf(ra, rb), "")
	if cr.Verdict != compare.Holds {
		t.Fatalf("rounds: %s: %s", cr.Verdict, cr.Checks[0].Detail)
	}
	if iv := cr.Checks[0].Intervals[0]; iv.Rounds < 10 || cr.Checks[0].Method != compare.MethodRounds {
		t.Errorf("interval %+v, method %q: want the moving-block bootstrap over rounds", iv, cr.Checks[0].Method)
	}
}

func ptr(v float64) *float64 { return &v }
