package portal

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pqrepro/experiments"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// TestPQM4NeverRatioedWithInstructions renders /schemes for an emulated board measuring
// ML-KEM-768 with two implementations, beside pqm4's rows: every ratio on the page is between
// two implementations on one side (pqm4's silicon cycles, or the board's instructions), equal
// to that ratio, and no ratio of a pqm4 cycle count to an instruction count appears.
func TestPQM4NeverRatioedWithInstructions(t *testing.T) {
	pq, err := experiments.LoadPQM4()
	if err != nil {
		t.Fatal(err)
	}
	rows := []store.SchemeRow{
		{Algorithm: "ML-KEM-768", Operation: "encaps", Unit: "instructions", Method: "counter", ClassStatus: "verified",
			Quantity: store.Quantity{Implementation: "builtin"}, Median: 616680, P25: 616680, P75: 616680, N: 9, Runs: 1, LatestRun: 1},
		{Algorithm: "ML-KEM-768", Operation: "encaps", Unit: "instructions", Method: "counter", ClassStatus: "verified",
			Quantity: store.Quantity{Implementation: "other"}, Median: 500000, P25: 500000, P75: 500000, N: 9, Runs: 1, LatestRun: 2},
	}
	v := templates.SchemesView{Page: templates.Page{Title: "Schemes"}, Level: "emulated", Board: "qemu-mps2-an386"}
	v.Sections = schemeSections(rows, v.Level, v.Board)
	v.PQM4, v.Quantities = pqm4Beside(pq, v.Sections), sectionQuantities(v.Sections)
	var buf bytes.Buffer
	if err := templates.SchemesPage(v).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	body := buf.String()
	mean := map[string]float64{}
	for _, r := range pq {
		if r.Scheme == "ml-kem-768" && r.Operation == "encaps" && r.Section == "speed" && r.Stat == "mean" {
			mean[r.Implementation] = r.Value
		}
	}
	if len(mean) < 2 || mean["clean"] == 0 {
		t.Fatalf("pqm4 has %d ml-kem-768 encaps implementations, want clean and another", len(mean))
	}
	ratioRE := regexp.MustCompile(`<span class="ratio[^"]*" data-side="([a-z]*)"(?: data-of="([^"]*)" data-to="([^"]*)")?>([0-9.]+) × `)
	found := map[string]int{}
	for _, m := range ratioRE.FindAllStringSubmatch(body, -1) {
		found[m[1]]++
		switch m[1] {
		case "silicon":
			if w := strconv.FormatFloat(mean[m[2]]/mean[m[3]], 'f', 3, 64); m[3] != "clean" || m[4] != w {
				t.Errorf("pqm4 ratio %s/%s shown as %s, want %s over clean", m[2], m[3], m[4], w)
			}
		case "emulated":
			if m[4] != "0.811" {
				t.Errorf("emulated ratio %s, want 500000/616680 = 0.811", m[4])
			}
		default:
			t.Errorf("a ratio with no side: %q", m[0])
		}
	}
	if found["silicon"] != len(mean)-1 || found["emulated"] != 1 {
		t.Errorf("ratios shown: %v, want %d silicon and 1 emulated", found, len(mean)-1)
	}
	if n := strings.Count(body, `class="ratio`); n != found["silicon"]+found["emulated"] {
		t.Errorf("%d ratios on the page, %d of them on one side", n, found["silicon"]+found["emulated"])
	}
	for impl, c := range mean {
		for _, e := range []float64{616680, 500000} {
			for _, x := range []float64{c / e, e / c} {
				if s := strconv.FormatFloat(x, 'f', 3, 64) + " ×"; strings.Contains(body, s) {
					t.Errorf("pqm4 %s cycles and %v instructions are ratioed on the page: %s", impl, e, s)
				}
			}
		}
	}
	if !strings.Contains(body, "pqm4 · silicon cycles on a Cortex-M4") || !strings.Contains(body, "(<b>emulated retired instructions per operation (not cycles)</b>)") || !strings.Contains(body, "No ratio is formed between the two") {
		t.Errorf("pqm4's figures are not labelled as silicon cycles apart from the board's")
	}
	for _, r := range pq {
		if r.Section == "memory" && r.Scheme == "ml-kem-768" && r.Operation == "encaps" {
			if _, err := pqm4Ratio(r, r); err == nil {
				t.Errorf("pqm4Ratio accepted stack bytes")
			}
		}
	}
}

// TestPQM4HashingText checks pqm4's hashing share as the run page prints it beside a board's
// share of instructions: every implementation pqm4 measured, labelled as cycles, and "—" for
// a scheme or operation pqm4 does not have.
func TestPQM4HashingText(t *testing.T) {
	rows, err := pqm4Rows()
	if err != nil {
		t.Fatal(err)
	}
	got := pqm4HashingText(rows, "ML-KEM-768", "keygen")
	if got != "clean 48.5 %, m4fspeed 74.5 %, m4fstack 74.4 % of cycles" {
		t.Errorf("ML-KEM-768 keygen: %q", got)
	}
	for _, q := range [][2]string{{"ML-KEM-768", "sign"}, {"X25519", "keygen"}} {
		if got := pqm4HashingText(rows, q[0], q[1]); got != "—" {
			t.Errorf("%s %s: %q, want —", q[0], q[1], got)
		}
	}
}
