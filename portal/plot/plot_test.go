package plot

import (
	"strconv"
	"testing"
)

func TestLayoutScale(t *testing.T) {
	format := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	cases := []struct {
		name    string
		rows    []Row
		wantLog bool
		wantFig bool
	}{
		{"narrow span is linear", []Row{{"a", 10, 11, 12, 13, 14}, {"b", 20, 21, 22, 23, 24}}, false, true},
		{"orders of magnitude are log", []Row{{"fast", 10, 11, 12, 13, 14}, {"slow", 9e4, 1e5, 1.1e5, 1.2e5, 1.3e5}}, true, true},
		{"no positive value draws nothing", []Row{{"none", 0, 0, 0, 0, 0}}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := Layout(tc.rows, "ns", format)
			if (f != nil) != tc.wantFig {
				t.Fatalf("figure %v, want %v", f != nil, tc.wantFig)
			}
			if f == nil {
				return
			}
			if f.Log != tc.wantLog || len(f.Boxes) != len(tc.rows) {
				t.Fatalf("log %v boxes %d", f.Log, len(f.Boxes))
			}
			for i, b := range f.Boxes {
				if !(b.MinX <= b.P25X && b.P25X <= b.MedX && b.MedX <= b.P75X && b.P75X <= b.MaxX) {
					t.Errorf("row %d: box out of order: %+v", i, b)
				}
				if b.MinX < float64(f.PlotLeft) || b.MaxX > float64(f.PlotRight) {
					t.Errorf("row %d outside the axis: %+v", i, b)
				}
			}
			if len(f.Ticks) < 2 {
				t.Errorf("ticks %v", f.Ticks)
			}
		})
	}
}
