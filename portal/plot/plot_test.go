package plot

import (
	"strconv"
	"strings"
	"testing"
)

func TestBoxScale(t *testing.T) {
	format := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	cases := []struct {
		name    string
		rows    []Row
		wantLog bool
		wantSVG bool
	}{
		{"narrow span is linear", []Row{{"a", 10, 11, 12, 13, 14}, {"b", 20, 21, 22, 23, 24}}, false, true},
		{"orders of magnitude are log", []Row{{"fast", 10, 11, 12, 13, 14}, {"slow", 9e4, 1e5, 1.1e5, 1.2e5, 1.3e5}}, true, true},
		{"no positive value draws nothing", []Row{{"none", 0, 0, 0, 0, 0}}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svg, logScale := Box(tc.rows, "ns", format)
			if logScale != tc.wantLog || (svg != "") != tc.wantSVG {
				t.Fatalf("log %v svg %v", logScale, svg != "")
			}
			if tc.wantSVG && (!strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<rect") != len(tc.rows)) {
				t.Errorf("want one box per row: %s", svg)
			}
		})
	}
	if svg, _ := Box([]Row{{`<script>`, 1, 2, 3, 4, 5}}, "ns", format); strings.Contains(svg, "<script>") {
		t.Error("labels are not escaped")
	}
}
