package compare

import (
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
	}}
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
		{"same board and method, within tolerance", "rpi4-b", proc, cell("ML-KEM-512", "keygen", 0.0250e9), Reproduced, ""},
		{"same board and method, off by 30%", "rpi4-b", proc, cell("ML-KEM-512", "keygen", 0.0322e9), Deviates, ""},
		{"in-process against CLI processes", "rpi4-b", inproc, cell("ML-KEM-512", "keygen", 0.0248e9), NotComparable, "method differs"},
		{"other board", "host", proc, cell("ML-KEM-512", "keygen", 0.0248e9), NotComparable, "board differs"},
		{"unit converts ms to ns", "esp32c6", inproc, cell("ML-KEM-512", "encaps", 2.1e6), Reproduced, ""},
		{"instructions never compare with seconds", "esp32c6", inproc, func() artifacts.Cell { c := cell("ML-KEM-512", "encaps", 2e6); c.Unit = "instructions"; return c }(), NotComparable, "unit differs"},
		{"lower bound met", "esp32c6", inproc, cell("ML-KEM-512", "decaps", 5e6), Reproduced, ""},
		{"lower bound missed", "esp32c6", inproc, cell("ML-KEM-512", "decaps", 0.5e6), Deviates, ""},
		{"scenario differs", "esp32c6", &artifacts.Manifest{Spec: artifacts.Spec{Method: artifacts.MethodInProcess, Scenario: "workload_ble"}}, cell("ML-KEM-768", "keygen", 2e6), NotComparable, "scenario differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &artifacts.Result{Board: tt.board, Cells: []artifacts.Cell{tt.c}}
			rep := Compare(res, tt.m, paper)
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
	if rep := Compare(res, inproc, paper); len(rep.Cells[0].Rows) != 0 || rep.Cells[0].Note == "" {
		t.Error("a cell without published numbers must say so")
	}
}

func f(v float64) *float64 { return &v }

func spread(c artifacts.Cell, p25, p75 float64) artifacts.Cell {
	c.Stats.P25, c.Stats.P75 = p25, p75
	return c
}

func TestClaims(t *testing.T) {
	res := &artifacts.Result{Board: "host", Cells: []artifacts.Cell{
		cell("A", "sign", 10), cell("A", "verify", 2), cell("B", "sign", 25), {Algorithm: "C", Operation: "sign", Status: artifacts.StatusFailed, Error: "boom"},
		spread(cell("D", "sign", 100), 80, 120), spread(cell("D", "verify", 95), 90, 130),
	}}
	tests := []struct {
		name   string
		claim  experiments.Claim
		method string
		want   string
		detail string
	}{
		{"order holds", experiments.Claim{Checks: []experiments.Check{{Kind: "order", Cells: []string{"A/verify", "A/sign", "B/sign"}}}}, "", Holds, "<"},
		{"order fails", experiments.Claim{Checks: []experiments.Check{{Kind: "order", Cells: []string{"A/sign", "A/verify"}}}}, "", Fails, "not increasing"},
		{"order within the spread", experiments.Claim{Checks: []experiments.Check{{Kind: "order", Cells: []string{"D/sign", "D/verify"}}}}, "", Inconclusive, "overlap"},
		{"ratio within tolerance", experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "B/sign", Den: "A/sign", Expected: 2.5, Tolerance: 0.1}}}, "", Holds, "2.500"},
		{"ratio outside tolerance", experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "B/sign", Den: "A/sign", Expected: 2, Tolerance: 0.1}}}, "", Fails, ""},
		{"ratio bounds", experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "A/sign", Den: "A/verify", Min: f(4), Max: f(6)}}}, "", Holds, ""},
		{"cell not measured", experiments.Claim{Checks: []experiments.Check{{Kind: "order", Cells: []string{"A/sign", "Z/sign"}}}}, "", Untestable, "not measured"},
		{"failed cell", experiments.Claim{Checks: []experiments.Check{{Kind: "order", Cells: []string{"A/sign", "C/sign"}}}}, "", Untestable, "boom"},
		{"method-specific", experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "A/sign", Den: "B/sign", Min: f(0), Method: "process-per-operation"}}}, "in-process", Untestable, "applies to"},
		{"energy absent", experiments.Claim{Checks: []experiments.Check{{Kind: "ratio", Num: "A/sign", Den: "B/sign", Min: f(0), Metric: "energy"}}}, "", Untestable, "energy"},
		{"scoped, no checks", experiments.Claim{Scope: "board-specific", Reason: "needs the ESP32-C6"}, "", Untestable, ""},
		{"one fails, one untestable", experiments.Claim{Checks: []experiments.Check{{Kind: "order", Cells: []string{"A/sign", "A/verify"}}, {Kind: "order", Cells: []string{"Z/sign", "A/sign"}}}}, "", Fails, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CheckClaim(tt.claim, res, tt.method)
			if r.Verdict != tt.want {
				t.Fatalf("verdict %s %+v, want %s", r.Verdict, r.Checks, tt.want)
			}
			if tt.detail != "" && !strings.Contains(r.Checks[0].Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", r.Checks[0].Detail, tt.detail)
			}
		})
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
				for _, ref := range append(append([]string{}, ch.Cells...), ch.Num, ch.Den) {
					if ref != "" && !measured[ref] {
						t.Errorf("%s %s: no manifest of %s measures %s", p.ID, cl.ID, p.ID, ref)
					}
				}
			}
		}
	}
}
