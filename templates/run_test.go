package templates

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// A matrix run's page was 15,000 px tall: its 36 cells twice (heat map and table) and every
// claim's interval table open. The table, box plot and long interval tables now fold into
// details elements, with every row still in the page (nothing hidden from a reader or a
// search, only collapsed); a short run's page is unchanged.
func TestLongRunPageFolds(t *testing.T) {
	render := func(v RunView) string {
		var b bytes.Buffer
		if err := RunPage(v).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	var cells []CellRow
	for i := range 36 {
		cells = append(cells, CellRow{Algorithm: fmt.Sprintf("G%d+S%d", i/6, i%6), Operation: "handshake", Status: "error", Error: "x"})
	}
	var ivs []IntervalRow
	for i := range 6 {
		ivs = append(ivs, IntervalRow{Ratio: fmt.Sprintf("ratio-%d", i), Verdict: "holds", Seed: "s", ShortSeed: "s"})
	}
	v := RunView{Cells: cells, HeatMap: &HeatMap{}, Claims: []ClaimResultRow{{ID: "C1", Checks: []CheckRow{{Verdict: "holds", Intervals: ivs}, {Verdict: "holds", Intervals: ivs[:2]}}}}}
	page := render(v)
	for _, want := range []string{`<details class="cells-all" id="cells-all"><summary>All 36 cells`, `<details class="intervals"><summary>6 ratios of medians`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<th scope="row">`); n != 36 {
		t.Errorf("%d cell rows in the page, want all 36", n)
	}
	if n := strings.Count(page, "ratio-"); n != 8 {
		t.Errorf("%d interval rows in the page, want all 8", n)
	}
	if strings.Count(page, `<details class="intervals">`) != 1 {
		t.Error("a check of two intervals is folded too")
	}
	v.HeatMap = nil
	if page := render(v); strings.Contains(page, "cells-all") {
		t.Error("a run without a heat map has its only cells table folded")
	}
}
