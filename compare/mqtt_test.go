package compare

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// aeadRun builds seal cells whose samples cycle through sizes with the given fixed and
// per-byte costs plus noise, and a telemetry cell with the given counts and overheads.
func aeadRun(perByte map[string]float64, frames artifacts.FrameCounts, overhead []artifacts.SizeOverhead) Run {
	sizes := []int{16, 64, 256, 1024}
	run := Run{Result: &artifacts.Result{ManifestID: "sha256:test", Board: "host", Assurance: artifacts.AssuranceHost},
		Samples: artifacts.Samples{Values: map[artifacts.CellKey][]float64{}, Rounds: map[artifacts.CellKey][]int{}}}
	seed := uint64(1)
	for _, alg := range slices.Sorted(maps.Keys(perByte)) {
		b := perByte[alg]
		noise := noisy(seed, 400, 0, 20)
		seed++
		v := make([]float64, 400)
		for i := range v {
			v[i] = 300 + b*float64(sizes[i%len(sizes)]) + noise[i]
		}
		c := artifacts.Cell{Algorithm: alg, Operation: artifacts.OpSeal, Status: artifacts.StatusOK, Unit: "ns", MQTT: &artifacts.MQTTCell{Sizes: sizes}}
		run.Result.Cells = append(run.Result.Cells, c)
		run.Samples.Values[artifacts.KeyOf(c)] = v
		run.Samples.Rounds[artifacts.KeyOf(c)] = evenRounds(len(v), 20)
	}
	run.Result.Cells = append(run.Result.Cells, artifacts.Cell{Algorithm: artifacts.AEADAscon128Std, Operation: artifacts.OpTelemetry, Status: artifacts.StatusOK, Unit: "ns",
		MQTT: &artifacts.MQTTCell{Sizes: sizes, Frames: &frames, Overhead: overhead}})
	return run
}

func TestMQTTChecks(t *testing.T) {
	good := artifacts.FrameCounts{Sent: 100, Verified: 100, InjectedReplays: 3, InjectedTamperings: 2, Rejected: map[string]int{"replay": 3, "forged": 2, "late": 0}}
	over := []artifacts.SizeOverhead{{Size: 16, Frames: 25, Min: 24, Max: 24}, {Size: 64, Frames: 25, Min: 24, Max: 24}}
	run := aeadRun(map[string]float64{"S": 1.5, "P": 2.25, "Q": 1.52}, good, over)
	lost := good
	lost.Verified = 99
	lost.Missing = 1
	late := good
	late.Rejected = map[string]int{"replay": 2, "duplicate": 1, "forged": 2}
	tests := []struct {
		name  string
		run   Run
		check experiments.Check
		want  string
		in    string
	}{
		{"slope lower", run, experiments.Check{Kind: experiments.CheckSlopeRatio, Num: "S/seal", Den: "P/seal", Max: f(1)}, Holds, "= 0.6"},
		{"slope higher", run, experiments.Check{Kind: experiments.CheckSlopeRatio, Num: "P/seal", Den: "S/seal", Max: f(1)}, Fails, "per-byte slope"},
		{"slope alike", run, experiments.Check{Kind: experiments.CheckSlopeRatio, Num: "S/seal", Den: "Q/seal", Expected: 0.5, Tolerance: 0.05}, Fails, ""},
		{"slope missing", run, experiments.Check{Kind: experiments.CheckSlopeRatio, Num: "S/seal", Den: "X/seal", Max: f(1)}, Untestable, "not measured"},
		{"overhead", run, experiments.Check{Kind: experiments.CheckOverhead, Cells: []string{"Ascon-AEAD128/telemetry"}, Expected: 24}, Holds, "24 B over 25 frames"},
		{"overhead other", run, experiments.Check{Kind: experiments.CheckOverhead, Cells: []string{"Ascon-AEAD128/telemetry"}, Expected: 28}, Fails, ""},
		{"overhead varies", aeadRun(nil, good, []artifacts.SizeOverhead{{Size: 16, Frames: 2, Min: 24, Max: 25}}), experiments.Check{Kind: experiments.CheckOverhead, Cells: []string{"Ascon-AEAD128/telemetry"}, Expected: 24}, Fails, "24-25 B"},
		{"accepted once", run, experiments.Check{Kind: experiments.CheckAcceptedOnce, Cells: []string{"Ascon-AEAD128/telemetry"}}, Holds, "100/100"},
		{"a frame lost", aeadRun(nil, lost, over), experiments.Check{Kind: experiments.CheckAcceptedOnce, Cells: []string{"Ascon-AEAD128/telemetry"}}, Fails, "1 missing"},
		{"a replay taken for a duplicate", aeadRun(nil, late, over), experiments.Check{Kind: experiments.CheckAcceptedOnce, Cells: []string{"Ascon-AEAD128/telemetry"}}, Fails, "2/3 replays"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCheck(tc.check, tc.run, artifacts.MethodInProcess)
			if r.Verdict != tc.want || !strings.Contains(r.Detail, tc.in) {
				t.Fatalf("verdict %s, want %s; detail %q (want %q in it)", r.Verdict, tc.want, r.Detail, tc.in)
			}
		})
	}
	// The same samples give the same interval, bit for bit.
	c := experiments.Check{Kind: experiments.CheckSlopeRatio, Num: "S/seal", Den: "P/seal", Max: f(1)}
	a, b := runCheck(c, run, ""), runCheck(c, run, "")
	if a.Intervals[0] != b.Intervals[0] {
		t.Fatalf("intervals differ: %+v %+v", a.Intervals[0], b.Intervals[0])
	}
}

// TestPaper003Claims: the shipped claims parse and wire to the mqtt-telemetry cells.
func TestPaper003Claims(t *testing.T) {
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	var p *experiments.Paper
	for _, x := range cat.Papers {
		if x.ID == "paper003" {
			p = x
		}
	}
	if p == nil || len(p.Manifests) < 1 {
		t.Fatal("paper003 has no manifest")
	}
	for _, id := range []string{"C003-01", "C003-05", "C003-06"} {
		cl, ok := p.Claim(id)
		if !ok || cl.Scope != "" || len(cl.Checks) == 0 {
			t.Fatalf("%s: %+v", id, cl)
		}
	}
}

// TestAsconDenominator: C003-01 compares Ascon-AEAD128 with its like-for-like predecessor
// Ascon-128a. With a standard slope 10% above 128a's and half of Ascon-128's (the rate alone),
// the claim fails; dividing by Ascon-128 would have made it hold. The Ascon-128 ratio is shown
// as information beside the verdict.
func TestAsconDenominator(t *testing.T) {
	p := paper003(t)
	cl, _ := p.Claim("C003-01")
	run := aeadRun(map[string]float64{artifacts.AEADAscon128Std: 1.1, artifacts.AEADAscon128a: 1.0, artifacts.AEADAscon128: 2.2},
		artifacts.FrameCounts{}, nil)
	// The open cells, as the seal cells.
	for _, c := range slices.Clone(run.Result.Cells) {
		if c.Operation == artifacts.OpSeal {
			o := c
			o.Operation = artifacts.OpOpen
			run.Result.Cells = append(run.Result.Cells, o)
			run.Samples.Values[artifacts.KeyOf(o)] = run.Samples.Values[artifacts.KeyOf(c)]
			run.Samples.Rounds[artifacts.KeyOf(o)] = run.Samples.Rounds[artifacts.KeyOf(c)]
		}
	}
	cr := CheckClaim(cl, run, "")
	if cr.Verdict != Fails {
		t.Fatalf("verdict %s, want fails: %+v", cr.Verdict, cr.Checks)
	}
	var info *CheckResult
	for i, ch := range cr.Checks {
		if ch.Check.Info {
			info = &cr.Checks[i]
			continue
		}
		if ch.Check.Den != artifacts.AEADAscon128a+"/"+ch.Check.Num[len(artifacts.AEADAscon128Std)+1:] {
			t.Errorf("check %s/%s: the verdict must divide by Ascon-128a", ch.Check.Num, ch.Check.Den)
		}
	}
	if info == nil || info.Check.Den != artifacts.AEADAscon128+"/seal" || info.Verdict != Holds || !strings.HasPrefix(info.Detail, "information, not part of the verdict") {
		t.Fatalf("the Ascon-128 ratio must be shown as information: %+v", info)
	}
	if !strings.Contains(cl.Claim, "a run verdicts it on its own board") {
		t.Errorf("claim text %q must say it is verdicted on the run's board", cl.Claim)
	}
	rep := Compare(run, p.Manifests[0], p)
	for _, c := range rep.Claims {
		if c.Claim.ID == "C003-01" && !strings.Contains(c.Reason, "Rests on host") {
			t.Errorf("reason %q: must name the board it was verdicted on", c.Reason)
		}
	}
}

// TestByDesign: properties that hold by construction (the project's frame layout, the
// manifest's counts) are labelled so, never "holds".
func TestByDesign(t *testing.T) {
	p := paper003(t)
	good := artifacts.FrameCounts{Sent: 100, Verified: 100, InjectedReplays: 3, InjectedTamperings: 2, Rejected: map[string]int{"replay": 3, "forged": 2}}
	over := []artifacts.SizeOverhead{{Size: 16, Frames: 25, Min: 24, Max: 24}}
	run := aeadRun(nil, good, over)
	for _, id := range []string{"C003-05", "C003-06"} {
		cl, _ := p.Claim(id)
		cr := CheckClaim(cl, run, "")
		if cr.Verdict != ByDesign || !strings.Contains(cr.Reason, "met by this run") {
			t.Errorf("%s: %s (%s)", id, cr.Verdict, cr.Reason)
		}
	}
	cl, _ := p.Claim("C003-06")
	lost := good
	lost.Verified, lost.Missing = 99, 1
	if cr := CheckClaim(cl, aeadRun(nil, lost, over), ""); cr.Verdict != ByDesign || !strings.Contains(cr.Reason, "NOT met") {
		t.Errorf("a broken implementation: %s (%s)", cr.Verdict, cr.Reason)
	}
}

func paper003(t *testing.T) *experiments.Paper {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Paper("paper003")
	if !ok {
		t.Fatal("no paper003")
	}
	return p
}

// TestPaper003HandshakeNote: a session cell has no published figure of its own operation, and
// its note names the paper's handshake medians and why they do not stand beside it.
func TestPaper003HandshakeNote(t *testing.T) {
	p := paper003(t)
	run := aeadRun(nil, artifacts.FrameCounts{}, nil)
	run.Result.Cells = append(run.Result.Cells, artifacts.Cell{Algorithm: "ML-KEM-512", Operation: artifacts.OpSession, Status: artifacts.StatusOK, Unit: "ns"})
	rep := Compare(run, p.Manifests[0], p)
	for _, cc := range rep.Cells {
		if cc.Operation == artifacts.OpSession {
			for _, want := range []string{"median 210.5 ms on esp32", "median 232.0 ms on esp32c3", "another operation or quantity"} {
				if !strings.Contains(cc.Note, want) {
					t.Errorf("note %q lacks %q", cc.Note, want)
				}
			}
			return
		}
	}
	t.Fatal("no session cell")
}
