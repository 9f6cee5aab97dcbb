package plot

import (
	"math"
	"strconv"
	"strings"
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
		{"narrow span is linear", []Row{{Label: "a", Min: 10, P25: 11, Median: 12, P75: 13, Max: 14}, {Label: "b", Min: 20, P25: 21, Median: 22, P75: 23, Max: 24}}, false, true},
		{"orders of magnitude are log", []Row{{Label: "fast", Min: 10, P25: 11, Median: 12, P75: 13, Max: 14}, {Label: "slow", Min: 9e4, P25: 1e5, Median: 1.1e5, P75: 1.2e5, Max: 1.3e5}}, true, true},
		{"no positive value draws nothing", []Row{{Label: "none"}}, false, false},
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

func TestTukeyWhiskersAndOutliers(t *testing.T) {
	// 1..10 and one far sample: q1 = 3.5, q3 = 8.5 (type 7 over 11 values), IQR 5, fences
	// -4 and 16, so 100 is an outlier and the upper whisker ends at 10, not at 100.
	samples := []float64{5, 3, 100, 1, 2, 4, 6, 7, 8, 9, 10}
	r, ok := Tukey("x", samples)
	if !ok {
		t.Fatal("no row")
	}
	if r.P25 != 3.5 || r.Median != 6 || r.P75 != 8.5 {
		t.Fatalf("quartiles %v %v %v", r.P25, r.Median, r.P75)
	}
	if r.Min != 1 || r.Max != 10 || len(r.Outliers) != 1 || r.Outliers[0] != 100 {
		t.Fatalf("whiskers %v..%v outliers %v, want 1..10 and [100]", r.Min, r.Max, r.Outliers)
	}
	// A sample exactly on the fence is inside: 16 = 8.5 + 1.5*5.
	if r, _ := Tukey("fence", []float64{5, 3, 16, 1, 2, 4, 6, 7, 8, 9, 10}); len(r.Outliers) != 0 || r.Max != 16 {
		t.Errorf("sample on the fence: outliers %v max %v", r.Outliers, r.Max)
	}
	if _, ok := Tukey("empty", []float64{math.NaN()}); ok {
		t.Error("no finite sample still gave a row")
	}
	f := Layout([]Row{r}, "ns", func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) })
	b := f.Boxes[0]
	if len(b.Outliers) != 1 || b.Outliers[0].X <= b.MaxX {
		t.Fatalf("outlier dot %+v not drawn beyond the whisker end %v", b.Outliers, b.MaxX)
	}
	if b.MaxX >= float64(f.PlotRight)-1 {
		t.Errorf("whisker reaches the axis end %v: it should stop at the last sample within 1.5×IQR", b.MaxX)
	}
}

func TestLogAxisTicksAreDecades(t *testing.T) {
	format := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	f := Layout([]Row{{Label: "a", Min: 12, P25: 12, Median: 15, P75: 18, Max: 20}, {Label: "b", Min: 3e5, P25: 3e5, Median: 4e5, P75: 5e5, Max: 6e5}}, "ns", format)
	if !f.Log {
		t.Fatal("a span of four decades should use a log axis")
	}
	// 12 .. 6e5: bounds 10 and 1e6 (1-2-5 steps); more than six 1-2-5 ticks: only decades.
	want := []string{"10", "100", "1e+03", "1e+04", "1e+05", "1e+06"}
	if len(f.Ticks) != len(want) {
		t.Fatalf("ticks %+v, want %v", f.Ticks, want)
	}
	step := f.Ticks[1].X - f.Ticks[0].X
	for i, tk := range f.Ticks {
		if tk.Label != want[i] {
			t.Errorf("tick %d %q, want %q", i, tk.Label, want[i])
		}
		if i > 0 && math.Abs(tk.X-f.Ticks[i-1].X-step) > 0.01 {
			t.Errorf("decades not evenly spaced: %+v", f.Ticks)
		}
	}
	if f.Ticks[0].X != float64(f.PlotLeft) || f.Ticks[len(f.Ticks)-1].X != float64(f.PlotRight) {
		t.Errorf("the axis should run from its first to its last tick: %+v", f.Ticks)
	}
	// 8 .. 170: the axis runs 5 .. 200, ticked at every 1, 2 and 5 (six labels),
	// and each tick sits at its logarithm.
	f = Layout([]Row{{Label: "a", Min: 8, P25: 9, Median: 10, P75: 11, Max: 12}, {Label: "b", Min: 150, P25: 160, Median: 165, P75: 168, Max: 170}}, "ns", format)
	want = []string{"5", "10", "20", "50", "100", "200"}
	if !f.Log || len(f.Ticks) != len(want) {
		t.Fatalf("ticks %+v, want %v", f.Ticks, want)
	}
	span := math.Log10(200.0 / 5)
	for i, tk := range f.Ticks {
		v, _ := strconv.ParseFloat(tk.Label, 64)
		wantX := float64(f.PlotLeft) + math.Log10(v/5)/span*float64(f.PlotRight-f.PlotLeft)
		if tk.Label != want[i] || math.Abs(tk.X-wantX) > 0.01 {
			t.Errorf("tick %d %q at %v, want %q at %v", i, tk.Label, tk.X, want[i], wantX)
		}
	}
	if f.AxisTitle != "ns (log axis)" {
		t.Errorf("axis title %q", f.AxisTitle)
	}
}

func TestIntervalsGroupsAndSeries(t *testing.T) {
	format := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	c := Intervals([]Group{
		{Label: "ML-KEM-512 encaps", Points: []Point{{Name: "run 1", Value: 10, Lo: 9, Hi: 11, Series: 0}, {Name: "run 2", Value: 20, Lo: 18, Hi: 22, Series: 1},
			{Name: "paper", Value: 12, Lo: 12, Hi: 12, Series: 2, Published: true}}},
		{Label: "ML-KEM-1024 encaps", Points: []Point{{Name: "run 1", Value: 30, Lo: 28, Hi: 32}, {Name: "run 2", Series: 1}}},
	}, "ns", format)
	if c == nil || len(c.Groups) != 2 || len(c.Series) != 3 {
		t.Fatalf("chart %+v", c)
	}
	g := c.Groups[0]
	if !(g.Marks[0].LoX < g.Marks[0].X && g.Marks[0].X < g.Marks[0].HiX) || g.Marks[0].X >= g.Marks[1].X {
		t.Errorf("marks out of order: %+v", g.Marks)
	}
	if g.Marks[2].HasInterval || !g.Marks[2].Published || g.Marks[2].Class != "s2 published" {
		t.Errorf("published figure mark %+v", g.Marks[2])
	}
	if c.Groups[1].Marks[1].HasValue {
		t.Errorf("a point without a value got a mark")
	}
	if c.Log {
		t.Errorf("10..32 should be linear")
	}
	// Series names drawn at PhoneFontSize (a text box is about 1.16 em high) never overlap.
	if d := g.Marks[1].Y - g.Marks[0].Y; float64(d) < 1.16*PhoneFontSize {
		t.Errorf("rows %d units apart: names at %d units overlap", d, PhoneFontSize)
	}
}

func TestTraces(t *testing.T) {
	format := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	idle := make([]float64, 15000) // 300 s at 50 samples/s, one spike
	for i := range idle {
		idle[i] = 2.28 + 0.01*float64(i%5)
	}
	idle[7000] = 2.6
	load := make([]float64, 1500)
	for i := range load {
		load[i] = 2.5
	}
	f := Traces([]Capture{
		{Label: "idle", Rate: 50, Power: idle, Mean: 2.3, Lo: 2.29, Hi: 2.31},
		{Label: "load", Rate: 50, Power: load, Mean: 2.5, Lo: 2.49, Hi: 2.51},
		{Label: "empty", Rate: 50},
	}, format)
	if f == nil || len(f.Panels) != 2 {
		t.Fatalf("figure of %d panels, want 2", len(f.Panels))
	}
	a, b := f.Panels[0], f.Panels[1]
	if len(a.YTicks) == 0 || len(a.YTicks) != len(b.YTicks) || a.YTicks[0].Label != b.YTicks[0].Label {
		t.Errorf("the panels do not share the power axis: %v, %v", a.YTicks, b.YTicks)
	}
	if a.Bottom >= b.Top || f.Height <= b.Bottom {
		t.Errorf("panels overlap: %d-%d and %d-%d, height %d", a.Top, a.Bottom, b.Top, b.Bottom, f.Height)
	}
	// The spike is the figure's highest sample: the band reaches the top of the axis's range,
	// 5% below the panel's top.
	top := float64(a.Top) + 0.05/1.1*float64(a.Bottom-a.Top)
	if !strings.Contains(a.Envelope, " "+strconv.FormatFloat(top, 'f', 1, 64)+"L") {
		t.Errorf("the spike at %.1f is not in the band: %.120s…", top, a.Envelope)
	}
	if !strings.HasPrefix(a.Envelope, "M56.5 ") || !strings.HasSuffix(a.Envelope, "Z") || strings.Count(a.Envelope, "L") != 2*(f.PlotRight-f.PlotLeft)-1 {
		t.Errorf("envelope of %d columns: %d segments", f.PlotRight-f.PlotLeft, strings.Count(a.Envelope, "L"))
	}
	if !(a.HiY < a.MeanY && a.MeanY < a.LoY) || !(b.HiY < b.MeanY && b.MeanY < b.LoY) || b.MeanY-float64(b.Top) >= a.MeanY-float64(a.Top) {
		t.Errorf("mean lines: idle %.1f in [%.1f, %.1f], load %.1f in [%.1f, %.1f]", a.MeanY, a.HiY, a.LoY, b.MeanY, b.HiY, b.LoY)
	}
	if last := a.XTicks[len(a.XTicks)-1]; last.Label != "300" || b.XTicks[len(b.XTicks)-1].Label != "30" {
		t.Errorf("time ticks end at %s and %s, want 300 and 30", last.Label, b.XTicks[len(b.XTicks)-1].Label)
	}
	if Traces(nil, format) != nil || Traces([]Capture{{Rate: 50, Power: []float64{1}}}, format) != nil {
		t.Error("a figure of nothing")
	}
}

// TestTickLabelsNeverCollide lays out emulated instruction counts, whose labels carry their
// unit ("1.5 M instructions", six of them 84 units apart, overlapped and the first was cut at
// the left edge): the unit goes to the axis title once, the origin is "0", and no two labels'
// boxes touch or cross the figure's edges.
func TestTickLabelsNeverCollide(t *testing.T) {
	format := func(v float64) string {
		switch {
		case v >= 1e6:
			return strconv.FormatFloat(v/1e6, 'g', 4, 64) + " M instructions"
		case v >= 1e3:
			return strconv.FormatFloat(v/1e3, 'g', 4, 64) + " k instructions"
		}
		return strconv.FormatFloat(v, 'f', 0, 64) + " instructions"
	}
	f := Layout([]Row{{Label: "a", Min: 616640, P25: 616640, Median: 616640, P75: 616640, Max: 616640},
		{Label: "b", Min: 2.3e6, P25: 2.3e6, Median: 2.3e6, P75: 2.3e6, Max: 2.3e6}}, "emulated retired instructions per operation", format)
	if f.Log {
		t.Fatal("want a linear axis")
	}
	if f.Ticks[0].Label != "0" || !strings.HasSuffix(f.Ticks[len(f.Ticks)-1].Label, " M") {
		t.Errorf("ticks %+v: want 0 at the origin and the unit off the labels", f.Ticks)
	}
	if f.AxisTitle != "emulated retired instructions per operation (linear axis)" {
		t.Errorf("axis title %q", f.AxisTitle)
	}
	checkTicksApart(t, f.Ticks)

	// Times whose labels share µs: the unit goes to the title, "0 ns" becomes "0".
	us := func(v float64) string {
		if v == 0 {
			return "0 ns"
		}
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + " µs"
	}
	f = Layout([]Row{{Label: "a", Min: 9e3, P25: 1e4, Median: 1.1e4, P75: 1.2e4, Max: 9.3e4}}, "time per operation", us)
	if f.Ticks[0].Label != "0" || f.AxisTitle != "time per operation (µs, linear axis)" {
		t.Errorf("ticks %+v, title %q", f.Ticks, f.AxisTitle)
	}
	checkTicksApart(t, f.Ticks)
}

// checkTicksApart fails when two tick labels' estimated boxes touch or one crosses an edge.
func checkTicksApart(t *testing.T, ticks []Tick) {
	t.Helper()
	span := func(tk Tick) (float64, float64) {
		w := labelWidth(tk.Label)
		switch tk.TextAnchor() {
		case "start":
			return tk.X, tk.X + w
		case "end":
			return tk.X - w, tk.X
		}
		return tk.X - w/2, tk.X + w/2
	}
	for i, tk := range ticks {
		l, r := span(tk)
		if l < 0 || r > Width {
			t.Errorf("tick %q spans %.0f..%.0f, outside 0..%d", tk.Label, l, r, Width)
		}
		if i > 0 {
			_, pr := span(ticks[i-1])
			if l < pr+tickGap {
				t.Errorf("ticks %q and %q collide (%.0f < %.0f)", ticks[i-1].Label, tk.Label, l, pr+tickGap)
			}
		}
	}
}
