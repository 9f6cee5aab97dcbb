package compare

import (
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

func cell(alg, op string, median float64) artifacts.Cell {
	return artifacts.Cell{Algorithm: alg, Operation: op, Status: artifacts.StatusOK, Unit: "ns",
		Stats: &artifacts.Stats{N: 10, Min: median, P25: median, Median: median, P75: median, Max: median, Mean: median}}
}

func TestCellVerdicts(t *testing.T) {
	paper := &experiments.Paper{ID: "px", Reference: []experiments.Row{
		{Board: "rpi4-b", Algorithm: "ML-KEM-512", Operation: "keygen", Scenario: "openssl_cli", Metric: "latency", Stat: "mean", Value: 0.0248, Text: "0.0248", Unit: "s", Source: "Table 5"},
		{Board: "esp32c6", Algorithm: "ML-KEM-512", Operation: "encaps", Scenario: "baseline", Metric: "latency", Stat: "mean", Value: 2, Text: "2", Unit: "ms", Source: "T"},
		{Board: "esp32c6", Algorithm: "ML-KEM-512", Operation: "decaps", Scenario: "baseline", Metric: "latency", Stat: "lower_bound", Value: 1, Text: "1", Unit: "ms", Source: "T"},
		{Board: "esp32c6", Algorithm: "ML-KEM-768", Operation: "keygen", Scenario: "baseline", Metric: "latency", Stat: "mean", Value: 2, Text: "2", Unit: "ms", Source: "T"},
		{Board: "esp32c6", Library: "liboqs 0.14.0", Algorithm: "ML-KEM-768", Operation: "encaps", Scenario: "baseline", Metric: "latency", Stat: "mean", Value: 2, Text: "2", Unit: "ms", Source: "T"},
	}}
	cliM := &artifacts.Manifest{Spec: artifacts.Spec{Method: artifacts.MethodOpenSSLCLI, Reference: artifacts.Reference{Tolerance: 0.1}}}
	proc := &artifacts.Manifest{Spec: artifacts.Spec{Method: artifacts.MethodProcessPerOperation, Reference: artifacts.Reference{Tolerance: 0.1}}}
	inproc := &artifacts.Manifest{Spec: artifacts.Spec{Method: artifacts.MethodInProcess, Scenario: "baseline", Reference: artifacts.Reference{Tolerance: 0.1}}}
	tests := []struct {
		name    string
		board   string
		m       *artifacts.Manifest
		c       artifacts.Cell
		verdict string
		reason  string
	}{
		{"same board and method, within tolerance", "rpi4-b", cliM, cell("ML-KEM-512", "keygen", 0.0250e9), Reproduced, ""},
		{"same board and method, off by 30%", "rpi4-b", cliM, cell("ML-KEM-512", "keygen", 0.0322e9), Deviates, ""},
		{"process-per-operation is not the paper's openssl commands", "rpi4-b", proc, cell("ML-KEM-512", "keygen", 0.0248e9), NotComparable, "pqrepro's own binary one process per operation; the paper timed openssl commands"},
		{"in-process against CLI processes", "rpi4-b", inproc, cell("ML-KEM-512", "keygen", 0.0248e9), NotComparable, "method differs"},
		{"a corrected command is not the paper's method", "rpi4-b", cliM, func() artifacts.Cell {
			c := cell("ML-KEM-512", "keygen", 0.0248e9)
			c.Variant = "pkeyutl -sign -rawin -digest sha256"
			return c
		}(), NotComparable, "not the paper's method: pkeyutl -sign -rawin"},
		{"openssl-cli against in-process numbers", "esp32c6", cliM, cell("ML-KEM-512", "encaps", 2e6), NotComparable, "this run timed openssl commands"},
		{"parsed keys against liboqs", "esp32c6", inproc, func() artifacts.Cell { c := cell("ML-KEM-768", "encaps", 2e6); c.Keys = artifacts.KeysParsed; return c }(), NotComparable, "reused parsed keys"},
		{"encoded keys against liboqs", "esp32c6", inproc, func() artifacts.Cell {
			c := cell("ML-KEM-768", "encaps", 2e6)
			c.Keys = artifacts.KeysEncoded
			return c
		}(), Reproduced, ""},
		{"other board", "host", cliM, cell("ML-KEM-512", "keygen", 0.0248e9), NotComparable, "board differs"},
		{"unit converts ms to ns", "esp32c6", inproc, cell("ML-KEM-512", "encaps", 2.1e6), Reproduced, ""},
		{"instructions never compare with seconds", "esp32c6", inproc, func() artifacts.Cell { c := cell("ML-KEM-512", "encaps", 2e6); c.Unit = "instructions"; return c }(), NotComparable, "unit differs"},
		{"lower bound met", "esp32c6", inproc, cell("ML-KEM-512", "decaps", 5e6), Reproduced, ""},
		{"lower bound missed", "esp32c6", inproc, cell("ML-KEM-512", "decaps", 0.5e6), Deviates, ""},
		{"scenario differs", "esp32c6", &artifacts.Manifest{Spec: artifacts.Spec{Method: artifacts.MethodInProcess, Scenario: "workload_ble"}}, cell("ML-KEM-768", "keygen", 2e6), NotComparable, "scenario differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &artifacts.Result{Board: tt.board, Cells: []artifacts.Cell{tt.c}}
			rep := Compare(Run{Result: res}, tt.m, paper)
			rows := rep.Cells[0].Rows
			if len(rows) != 1 {
				t.Fatalf("%d rows matched, want 1", len(rows))
			}
			if rows[0].Verdict != tt.verdict {
				t.Fatalf("verdict %s (%v), want %s", rows[0].Verdict, rows[0].Reasons, tt.verdict)
			}
			if tt.reason != "" && !strings.Contains(strings.Join(rows[0].Reasons, ";"), tt.reason) {
				t.Errorf("reasons %v lack %q", rows[0].Reasons, tt.reason)
			}
		})
	}
	res := &artifacts.Result{Board: "host", Cells: []artifacts.Cell{cell("ML-DSA-44", "sign", 1)}}
	if rep := Compare(Run{Result: res}, inproc, paper); len(rep.Cells[0].Rows) != 0 || rep.Cells[0].Note == "" {
		t.Error("a cell without published numbers must say so")
	}
}

// TestPaperClaimsResolve checks every check in the shipped claims names cells that a shipped
// manifest of the same paper measures, so no claim is silently untestable by a typo.
func TestPaperClaimsResolve(t *testing.T) {
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cat.Papers {
		measured := map[string]bool{}
		for _, m := range p.Manifests {
			for _, c := range m.Cells() {
				measured[c.Algorithm+"/"+c.Operation] = true
			}
		}
		for _, cl := range p.Claims {
			for _, ch := range cl.Checks {
				for _, ref := range append(append(append([]string{}, ch.Cells...), ch.Than...), ch.Num, ch.Den) {
					if ref != "" && !measured[ref] {
						t.Errorf("%s %s: no manifest of %s measures %s", p.ID, cl.ID, p.ID, ref)
					}
				}
			}
		}
	}
}

func TestDeclaredClassAndCollapsedReasons(t *testing.T) {
	paper := &experiments.Paper{ID: "px", Reference: []experiments.Row{
		{Board: "rpi4-b", Algorithm: "ML-KEM-512", Operation: "keygen", Scenario: "openssl_cli", Metric: "latency", Stat: "mean", Value: 0.0248, Text: "0.0248", Unit: "s"},
		{Board: "rpi1-b", Algorithm: "ML-KEM-512", Operation: "keygen", Scenario: "openssl_cli", Metric: "latency", Stat: "mean", Value: 0.2, Text: "0.2", Unit: "s"},
		{Board: "rpi3-a-plus", Algorithm: "ML-KEM-512", Operation: "keygen", Scenario: "openssl_cli", Metric: "latency", Stat: "mean", Value: 0.03, Text: "0.03", Unit: "s"},
	}}
	m := &artifacts.Manifest{Spec: artifacts.Spec{Method: artifacts.MethodOpenSSLCLI, Reference: artifacts.Reference{Tolerance: 0.1}}}
	run := Run{Result: &artifacts.Result{Board: "rpi4-b", Cells: []artifacts.Cell{cell("ML-KEM-512", "keygen", 0.0250e9)}},
		Board: artifacts.BoardIdentity{Class: "rpi4-b", ClassStatus: artifacts.ClassDeclared}}
	rep := Compare(run, m, paper)
	rows := rep.Cells[0].Rows
	if rows[0].Verdict != Reproduced || !slices.Contains(rows[0].Notes, "board class declared, not verified") {
		t.Errorf("declared class: verdict %s notes %v", rows[0].Verdict, rows[0].Notes)
	}
	if rep.ClassStatus != artifacts.ClassDeclared {
		t.Errorf("report class status %q", rep.ClassStatus)
	}
	got := CollapseReasons(rows)
	want := []string{"board differs: measured on rpi4-b, published on rpi1-b, rpi3-a-plus"}
	if !slices.Equal(got, want) {
		t.Errorf("collapsed %q, want %q", got, want)
	}
}

// TestEveryVerdictSaysWhy: every claim of a report carries a reason that names the board,
// the implementation and, off the paper's setting, the scope sentence.
func TestEveryVerdictSaysWhy(t *testing.T) {
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Paper("paper001")
	m, err := cat.Manifest("paper001/mlkem")
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string][]float64{}
	for i, c := range m.Cells() {
		cells[c.Algorithm+"/"+c.Operation] = noisy(uint64(i+1), 50, float64(100*(i+1)), 5)
	}
	run := sampledRun("ns", cells)
	run.Board.ClassStatus = artifacts.ClassVerified
	rep := Compare(run, m, p)
	if len(rep.Claims) == 0 {
		t.Fatal("no claims")
	}
	for _, cr := range rep.Claims {
		if cr.Claim.Scope != "" {
			continue
		}
		for _, want := range []string{"Rests on host (verified, host)", "pqrepro's Go implementations", "liboqs 0.14.0 built at -Og on an ESP32-C6", "not a reproduction"} {
			if !strings.Contains(cr.Reason, want) {
				t.Errorf("%s %s: reason %q lacks %q", cr.Claim.ID, cr.Verdict, cr.Reason, want)
			}
		}
	}
}

// TestCellVerdictFromTheRunsInterval: a published mean is compared with the bootstrap interval
// of the run's own mean: inside the tolerance reproduced, straddling it inconclusive; and a
// mean pulled outside the run's own p25-p75 by a few slow samples says so.
func TestCellVerdictFromTheRunsInterval(t *testing.T) {
	paper := &experiments.Paper{ID: "px", Reference: []experiments.Row{
		{Board: "rpi4-b", Algorithm: "ML-KEM-512", Operation: "keygen", Scenario: "openssl_cli", Metric: "latency", Stat: "mean", Value: 0.025, Text: "0.025", Unit: "s"},
	}}
	m := &artifacts.Manifest{Spec: artifacts.Spec{Method: artifacts.MethodOpenSSLCLI, Reference: artifacts.Reference{Tolerance: 0.1}}}
	verdict := func(vals []float64) RowComparison {
		st := artifacts.Summarize(vals)
		c := artifacts.Cell{Algorithm: "ML-KEM-512", Operation: "keygen", Status: artifacts.StatusOK, Unit: "ns", Stats: st}
		run := Run{Result: &artifacts.Result{Board: "rpi4-b", ManifestID: "sha256:m", Cells: []artifacts.Cell{c}},
			Samples: artifacts.Samples{Values: map[artifacts.CellKey][]float64{artifacts.KeyOf(c): vals}, Rounds: map[artifacts.CellKey][]int{artifacts.KeyOf(c): evenRounds(len(vals), 20)}}}
		return Compare(run, m, paper).Cells[0].Rows[0]
	}
	tight := verdict(noisy(1, 100, 25.2e6, 0.3e6))
	if tight.Verdict != Reproduced || tight.RatioLo == nil || !strings.Contains(tight.Interval, "over rounds of the run's mean") {
		t.Errorf("tight: %s %+v", tight.Verdict, tight)
	}
	// Mostly 26 ms, ten samples at 60 ms: the mean's interval straddles 1.1, and the mean lies
	// above the run's p75.
	vals := noisy(2, 100, 26e6, 0.2e6)
	for i := 0; i < 100; i += 10 {
		vals[i] = 60e6
	}
	wide := verdict(vals)
	if wide.Verdict != Inconclusive && wide.Verdict != Deviates {
		t.Errorf("skewed: %s [%v, %v]", wide.Verdict, *wide.RatioLo, *wide.RatioHi)
	}
	if !slices.ContainsFunc(wide.Notes, func(n string) bool { return strings.Contains(n, "outside its own p25-p75") }) {
		t.Errorf("notes %v: the mean outside the run's own p25-p75 must be said", wide.Notes)
	}
}

// TestImplementationDiffers: a published figure stands beside a cell of the same library
// (another version is a reproduction) and is not comparable with another library's, the reason
// naming both.
func TestImplementationDiffers(t *testing.T) {
	m := &artifacts.Manifest{Kind: artifacts.KindKEMBench}
	row := experiments.Row{Board: "esp32c6", Library: "liboqs 0.14.0 (ESP-IDF 5.5.1, -Og debug profile)", Algorithm: "ML-KEM-768", Operation: "encaps", Metric: "latency", Stat: "mean", Unit: "ms"}
	for _, tc := range []struct {
		im   *artifacts.Implementation
		want string
	}{
		{&artifacts.Implementation{Name: "pqrepro-fw", Version: "0.1.0"}, "implementation differs: measured pqrepro-fw 0.1.0, published liboqs 0.14.0"},
		{&artifacts.Implementation{Name: "liboqs", Version: "0.15.0"}, ""},
		{nil, ""},
	} {
		c := artifacts.Cell{Algorithm: "ML-KEM-768", Operation: "encaps", Unit: "ns", Implementation: tc.im}
		got := strings.Join(rowReasons(row, c, "esp32c6", m), "; ")
		if tc.want == "" && strings.Contains(got, "implementation") || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%+v: reasons %q, want %q", tc.im, got, tc.want)
		}
	}
	if !sameImplementation(artifacts.ImplOpenSSL, "OpenSSL 3.5 (openssl CLI)") || sameImplementation(artifacts.CirclModule, "liboqs 0.14.0") {
		t.Error("sameImplementation")
	}
}
