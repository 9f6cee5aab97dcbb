package portal

import (
	"encoding/json"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/portal/store"
)

func reportJSON(t *testing.T, rep compare.Report) string {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCompareViewRowsAndPaperFigures builds /compare from stored pair reports: comparable
// cells first with their ratio, interval and verdict, the others counted in one collapsed
// line with each distinct reason, and the paper's figure drawn beside the runs where run A's
// comparison found a comparable one in the same unit.
func TestCompareViewRowsAndPaperFigures(t *testing.T) {
	ref := experiments.Row{Board: "host", Algorithm: "ML-KEM-768", Operation: "encaps", Metric: "latency", Stat: "median", Value: 12000, Text: "12.0", Unit: "ns", Source: "Table 3"}
	ratio := 1.1
	rep := compare.Report{Dataset: "paper002", Cells: []compare.CellComparison{
		{Algorithm: "ML-KEM-768", Operation: "encaps", Status: "ok", Unit: "ns", Stats: &artifacts.Stats{N: 20, P25: 12000, Median: 13200, P75: 14000},
			Rows: []compare.RowComparison{{Ref: ref, Verdict: compare.Reproduced, Ratio: &ratio}, {Ref: ref, Verdict: compare.NotComparable, Reasons: []string{"board differs"}}}},
		{Algorithm: "ML-KEM-768", Operation: "decaps", Status: "ok", Unit: "ns", Stats: &artifacts.Stats{N: 20, Median: 15000}, Note: "no figure"},
	}}
	a := store.Run{ID: 1, Experiment: "paper002/x", Report: reportJSON(t, rep), Method: "in-process", Level: "host", Origin: "community", ClassStatus: "verified"}
	b := store.Run{ID: 2, Experiment: "paper002/x", Report: reportJSON(t, compare.Report{Dataset: "paper002"}), Method: "in-process", Level: "host", Origin: "community"}
	sum := func(med float64) *Summary {
		return &Summary{N: 20, Unit: "ns", Box: [5]float64{med * .9, med * .95, med, med * 1.05, med * 1.1}}
	}
	pair := PairReport{Version: PairCodeVersion, A: 1, B: 2, Cells: []PairCell{
		{Algorithm: "ML-KEM-768", Operation: "encaps", Unit: "ns", A: sum(13200), B: sum(15000), Point: 1.136, Lo: 1.08, Hi: 1.2, Verdict: PairHigher},
		{Algorithm: "ML-KEM-768", Operation: "decaps", Unit: "ns", A: sum(15000), B: sum(15100), Point: 1.007, Lo: 0.95, Hi: 1.06, Verdict: PairWithin},
		{Algorithm: "ML-KEM-768", Operation: "keygen", Unit: "ns", A: sum(9000), Reason: "not measured in run 2"},
		{Algorithm: "ML-KEM-1024", Operation: "keygen", Unit: "ns", Reason: "not measured in run 2"},
		{Algorithm: "ML-KEM-512", Operation: "keygen", Unit: "ns", Reason: "units differ (ns, instructions)"},
	}}
	v, err := compareView([]store.Run{a, b}, []PairReport{pair})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Rows) != 2 || v.Rows[0].Cell != "ML-KEM-768 encaps" || v.Rows[1].Cell != "ML-KEM-768 decaps" {
		t.Fatalf("comparable rows %+v", v.Rows)
	}
	enc := v.Rows[0].Values
	if len(enc) != 2 || !enc[0].Baseline || enc[0].Median != "13.20 µs" || enc[1].Ratio != "1.136" || enc[1].Interval != "95%: 1.080 – 1.200" || enc[1].Verdict != PairHigher {
		t.Errorf("encaps values %+v", enc)
	}
	if v.Rows[1].Values[1].Verdict != PairWithin {
		t.Errorf("decaps %+v", v.Rows[1].Values)
	}
	if v.NotComparable != 3 || len(v.Reasons) != 2 || v.Reasons[0] != "not measured in run 2 (2)" || v.Reasons[1] != "units differ (ns, instructions) (1)" {
		t.Errorf("collapsed line: %d %q", v.NotComparable, v.Reasons)
	}
	if len(v.Charts) != 1 || len(v.Boxes) != 1 {
		t.Fatalf("charts %d boxes %d", len(v.Charts), len(v.Boxes))
	}
	g := v.Charts[0].Groups[0]
	if len(g.Marks) != 3 || !g.Marks[2].Published || !strings.Contains(g.Marks[2].Title, "Table 3") {
		t.Errorf("encaps group should show runs A and B and the paper's figure: %+v", g.Marks)
	}
	if len(v.Charts[0].Groups[1].Marks) != 2 {
		t.Errorf("decaps has no comparable figure: %+v", v.Charts[0].Groups[1].Marks)
	}
	if len(v.Paper) != 2 || len(v.Paper[0].Rows) != 1 || v.Paper[0].Rows[0].Verdict != compare.Reproduced || v.Paper[0].NotComparable != 2 {
		t.Errorf("run A against its paper: %+v", v.Paper[0])
	}
	if len(v.Boxes[0].Boxes) != 4 {
		t.Errorf("box plot rows %d, want two cells × two runs", len(v.Boxes[0].Boxes))
	}

	// One run: its paper's figures only.
	v, err = compareView([]store.Run{a}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Rows) != 0 || len(v.Charts) != 1 || len(v.Charts[0].Groups) != 1 || !v.Charts[0].Groups[0].Marks[1].Published {
		t.Errorf("one-run view: rows %d charts %+v", len(v.Rows), v.Charts)
	}
}

// TestComputePairRefusesWhatCannotCompare checks computePair's reasons and its interval on
// real samples: a cell twice as slow is higher beyond the noise, the same samples are within.
func TestComputePairRefusesWhatCannotCompare(t *testing.T) {
	samples := func(scale float64) []float64 {
		out := make([]float64, 30)
		for i := range out {
			out[i] = scale * (100 + float64(i%7))
		}
		return out
	}
	cell := func(alg, op string, unit artifacts.Unit, status artifacts.Status, n int) artifacts.Cell {
		return artifacts.Cell{Algorithm: alg, Operation: op, Unit: unit, Status: status, Stats: &artifacts.Stats{N: n}}
	}
	mk := func(cells []artifacts.Cell, vals map[string][]float64) compare.Run {
		s := artifacts.Samples{Values: map[artifacts.CellKey][]float64{}}
		for _, c := range cells {
			s.Values[artifacts.KeyOf(c)] = vals[c.Algorithm+"/"+c.Operation]
		}
		return compare.Run{Result: &artifacts.Result{Cells: cells}, Samples: s}
	}
	ra := mk([]artifacts.Cell{cell("K", "a", "ns", "ok", 30), cell("K", "b", "ns", "ok", 30), cell("K", "c", "ns", "ok", 30), cell("K", "d", "ns", "ok", 3), cell("K", "e", "ns", "failed", 0)},
		map[string][]float64{"K/a": samples(1), "K/b": samples(1), "K/c": samples(1), "K/d": samples(1)[:3]})
	rb := mk([]artifacts.Cell{cell("K", "a", "ns", "ok", 30), cell("K", "b", "ns", "ok", 30), cell("K", "c", "instructions", "ok", 30), cell("K", "d", "ns", "ok", 3), cell("K", "e", "ns", "ok", 30), cell("K", "f", "ns", "ok", 30)},
		map[string][]float64{"K/a": samples(2), "K/b": samples(1), "K/c": samples(1), "K/d": samples(1)[:3], "K/e": samples(1), "K/f": samples(1)})
	rep := computePair(store.Run{ID: 1, Method: "in-process", Bundle: "x"}, store.Run{ID: 2, Method: "in-process", Bundle: "y"}, ra, rb, nil, nil)
	want := map[string]string{"a": PairHigher, "b": PairWithin, "c": "units differ (ns, instructions)", "d": "too few samples for an interval (need 5 in each run)",
		"e": "cell failed in run 1", "f": "not measured in run 1"}
	if len(rep.Cells) != len(want) {
		t.Fatalf("%d cells: %+v", len(rep.Cells), rep.Cells)
	}
	for _, pc := range rep.Cells {
		got := pc.Verdict
		if pc.Reason != "" {
			got = pc.Reason
		}
		if got != want[pc.Operation] {
			t.Errorf("cell %s: %q, want %q", pc.Operation, got, want[pc.Operation])
		}
	}
	if a := rep.Cells[0]; !(a.Lo > 1.8 && a.Hi < 2.2 && a.Point == 2) {
		t.Errorf("twice as slow: %v [%v, %v]", a.Point, a.Lo, a.Hi)
	}
	// 5% slower with an interval that excludes 1: within the minimum effect, not "beyond the
	// noise"; the same difference in instructions is called; a loaded run calls nothing.
	small := mk([]artifacts.Cell{cell("K", "a", "ns", "ok", 30), cell("K", "i", "instructions", "ok", 30)}, map[string][]float64{"K/a": samples(1.05), "K/i": samples(1.05)})
	base := mk([]artifacts.Cell{cell("K", "a", "ns", "ok", 30), cell("K", "i", "instructions", "ok", 30)}, map[string][]float64{"K/a": samples(1), "K/i": samples(1)})
	sr := computePair(store.Run{ID: 1, Method: "in-process", Bundle: "x"}, store.Run{ID: 2, Method: "in-process", Bundle: "y"}, base, small, nil, nil)
	if sr.Cells[0].Verdict != PairSmall || !(sr.Cells[0].Lo > 1) || sr.Cells[1].Verdict != PairHigher {
		t.Errorf("5%% apart: %s [%v, %v] in ns, %s in instructions", sr.Cells[0].Verdict, sr.Cells[0].Lo, sr.Cells[0].Hi, sr.Cells[1].Verdict)
	}
	loaded := store.Run{ID: 2, Method: "in-process", Bundle: "y", Level: artifacts.AssuranceHost, Environment: `{"timing":{"external":{"mean":1,"threshold":0.2,"exceeded":true}}}`}
	if lr := computePair(store.Run{ID: 1, Method: "in-process", Bundle: "x"}, loaded, ra, rb, nil, nil); lr.Cells[0].Verdict != PairLoaded {
		t.Errorf("a loaded run: %s", lr.Cells[0].Verdict)
	}
	again := computePair(store.Run{ID: 1, Method: "in-process", Bundle: "x"}, store.Run{ID: 2, Method: "in-process", Bundle: "y"}, ra, rb, nil, nil)
	if again.Cells[0].Lo != rep.Cells[0].Lo || again.Cells[0].Seed != rep.Cells[0].Seed {
		t.Errorf("the interval is not reproducible: %v vs %v", again.Cells[0], rep.Cells[0])
	}
}

// TestComputePairQuantities: two runs' cells of different key forms or message sizes are not
// compared; cells of two implementations are, and the pair names both.
func TestComputePairQuantities(t *testing.T) {
	vals := make([]float64, 30)
	for i := range vals {
		vals[i] = 100 + float64(i%7)
	}
	cell := func(op, keys string, msg int) artifacts.Cell {
		c := artifacts.Cell{Algorithm: "ML-DSA-44", Operation: op, Unit: "ns", Status: "ok", Stats: &artifacts.Stats{N: 30}, Keys: keys}
		if msg > 0 {
			c.Sizes = &artifacts.Sizes{Message: msg}
		}
		return c
	}
	mk := func(cells ...artifacts.Cell) compare.Run {
		s := artifacts.Samples{Values: map[artifacts.CellKey][]float64{}}
		for _, c := range cells {
			s.Values[artifacts.KeyOf(c)] = vals
		}
		return compare.Run{Result: &artifacts.Result{Cells: cells}, Samples: s}
	}
	ra := mk(cell("sign", "encoded", 33), cell("verify", "encoded", 33), cell("keygen", "", 0))
	rb := mk(cell("sign", "encoded", 19600), cell("verify", "parsed", 33), cell("keygen", "", 0))
	filed := func(impl string) []artifacts.Cell {
		return []artifacts.Cell{{Algorithm: "ML-DSA-44", Operation: "keygen", Implementation: &artifacts.Implementation{Name: impl}}}
	}
	rep := computePair(store.Run{ID: 1, Method: "in-process", Bundle: "x"}, store.Run{ID: 2, Method: "in-process", Bundle: "y"}, ra, rb,
		filed("github.com/cloudflare/circl v1.6.1"), filed("pqrepro-fw 0.1.0"))
	got := map[string]PairCell{}
	for _, pc := range rep.Cells {
		got[pc.Operation] = pc
	}
	if r := got["sign"].Reason; r != "message sizes differ (33, 19600 bytes)" {
		t.Errorf("sign: %q", r)
	}
	if r := got["verify"].Reason; r != "key forms differ (encoded, parsed)" {
		t.Errorf("verify: %q", r)
	}
	if k := got["keygen"]; k.Reason != "" || k.Verdict != PairWithin || k.Note != "implementations differ: run 1 github.com/cloudflare/circl v1.6.1; run 2 pqrepro-fw 0.1.0" {
		t.Errorf("keygen: %+v", k)
	}
}
