package portal

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// TestPaperPageTalliesPerBoard renders a paper page from tallies of host, emulated and
// declared runs and checks each board class and assurance level gets its own row.
func TestPaperPageTalliesPerBoard(t *testing.T) {
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Paper("paper002")
	tallies := []store.ClaimTally{
		{ClaimID: "C002-07", BoardClass: "qemu-mps2-an386", Level: "emulated", Verdict: compare.Holds, Runs: 3},
		{ClaimID: "C002-07", BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: compare.Holds, Runs: 2},
		{ClaimID: "C002-07", BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: compare.Inconclusive, Runs: 1},
		{ClaimID: "C002-07", BoardClass: "rpi4-b", Level: "host", ClassStatus: "declared", Verdict: compare.Fails, Runs: 4},
	}
	views := claimViews(p, nil, tallies)
	var c07 templates.ClaimView
	for _, v := range views {
		if v.ID == "C002-07" {
			c07 = v
		}
	}
	if len(c07.Tallies) != 3 {
		t.Fatalf("tallies %+v, want one per board, level and class status", c07.Tallies)
	}
	for _, tl := range c07.Tallies {
		switch tl.Board {
		case "host":
			if tl.Holds != 2 || tl.Inconclusive != 1 || tl.Level != "host" {
				t.Errorf("host tally %+v", tl)
			}
		case "qemu-mps2-an386":
			if tl.Holds != 3 || tl.Level != "emulated" {
				t.Errorf("emulated tally %+v", tl)
			}
		case "rpi4-b":
			if tl.Fails != 4 || tl.ClassStatus != "declared" {
				t.Errorf("declared tally %+v", tl)
			}
		}
	}
	// Verdicts must exist for the tally table to render.
	c07.Verdicts = []templates.VerdictRow{{RunID: 1, Verdict: compare.Holds, Board: "host"}}
	for i := range views {
		if views[i].ID == "C002-07" {
			views[i] = c07
		}
	}
	var buf bytes.Buffer
	parts, err := templates.NewPaperParts(templates.PaperStatic{ID: p.ID, Title: p.Title, Figures: inTextFigures(p)})
	if err != nil {
		t.Fatal(err)
	}
	v := templates.PaperView{Parts: parts, Claims: views}
	if err := templates.PaperPage(v).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	rows := regexp.MustCompile(`(?s)<table class="tallies">.*?</table>`).FindString(html)
	if n := strings.Count(rows, "<tr>") - 1; n != 3 {
		t.Errorf("rendered %d tally rows, want 3:\n%s", n, rows)
	}
	for _, want := range []string{"class declared, not verified", "level-emulated", "never added up",
		"energy overhead", "power delta ratio", "6.6 ×", "17 %"} {
		if !strings.Contains(html, want) {
			t.Errorf("paper page lacks %q", want)
		}
	}
	if strings.Contains(html, "_ratio_x") || strings.Contains(html, "_pct") {
		t.Errorf("the figures table shows a data file's raw metric key")
	}
	p3, _ := cat.Paper("paper003")
	found := false
	for _, f := range inTextFigures(p3) {
		found = found || (f.Metric == "per byte cost reduction ratio" && f.Unit == "×" && f.Value == "2.5")
	}
	if !found {
		t.Errorf("paper003's 2.5x per-byte cost reduction ratio is not among its figures")
	}
}

// TestComparisonCollapsesNotComparable checks comparable rows come first and the others are
// one line per cell with their reasons.
func TestComparisonCollapsesNotComparable(t *testing.T) {
	ratio, measured := 1.01, 0.025
	rep := compare.Report{Cells: []compare.CellComparison{{Algorithm: "ML-KEM-512", Operation: "keygen", Unit: "ns",
		Stats: &artifacts.Stats{Median: 2.5e7},
		Rows: []compare.RowComparison{
			{Ref: experiments.Row{Board: "rpi1-b"}, Verdict: compare.NotComparable, Reasons: []string{"board differs: measured on rpi4-b, published on rpi1-b", "x"}},
			{Ref: experiments.Row{Board: "rpi4-b", Stat: "mean", Text: "0.0248", Unit: "s"}, Verdict: compare.Reproduced, Ratio: &ratio, Measured: &measured,
				Notes: []string{"board class declared, not verified"}},
			{Ref: experiments.Row{Board: "rpi3-a-plus", Stat: "mean", Text: "0.031", Unit: "s", Source: "Table 4"}, Verdict: compare.NotComparable,
				Reasons: []string{"board differs: measured on rpi4-b, published on rpi3-a-plus"}},
		}}}}
	rows, other := comparisonView(rep)
	if len(rows) != 1 || rows[0].Verdict != compare.Reproduced || !strings.Contains(rows[0].Reasons, "declared") {
		t.Errorf("comparable rows %+v", rows)
	}
	if len(other) != 1 || other[0].Figures != 2 || other[0].Why() != "board differs: measured on rpi4-b, published on rpi1-b, rpi3-a-plus; x" {
		t.Errorf("collapsed %+v (%q)", other, other[0].Why())
	}
	// "Not comparable" shows each figure with its board, source and reason.
	if len(other) != 1 || len(other[0].Published) != 2 {
		t.Fatalf("published figures %+v", other)
	}
	want := templates.PublishedFigure{Value: "mean 0.031 s", Board: "rpi3-a-plus", Source: "Table 4", Why: "board differs: measured on rpi4-b, published on rpi3-a-plus"}
	if got := other[0].Published[1]; got != want {
		t.Errorf("published figure %+v, want %+v", got, want)
	}
	var page bytes.Buffer
	if err := templates.RunPage(templates.RunView{NotComparable: other}).Render(context.Background(), &page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "mean 0.031 s</span> on rpi3-a-plus <span class=\"muted\">(Table 4)</span>") {
		t.Errorf("the run page does not show the non-comparable figure with its board and source")
	}
}
