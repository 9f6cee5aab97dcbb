// Package plot lays out the portal's figures, drawn as SVG on the server: horizontal box plots
// (min, quartiles, median, max) with a log axis when the values span orders of magnitude, as
// the papers' figures do. It computes geometry only; templates/plot.templ renders the
// Figure, so every label goes through the template engine's escaping.
package plot

import (
	"math"
)

// Row is one box: a label and a distribution summary. Min and Max may equal the quartiles
// when only a spread is known.
type Row struct {
	Label                      string
	Min, P25, Median, P75, Max float64
}

// LogThreshold is the max/min ratio beyond which the axis is logarithmic.
const LogThreshold = 20

// Figure is a laid-out box plot in SVG user units.
type Figure struct {
	Width, Height int
	// PlotLeft and PlotRight bound the value axis; AxisY is its baseline; Top is the first row.
	PlotLeft, PlotRight, AxisY, Top int
	// Log is true for a logarithmic axis.
	Log bool
	// AxisTitle names the unit and the scale.
	AxisTitle string
	Ticks     []Tick
	Boxes     []Box
}

// Tick is a labelled grid line.
type Tick struct {
	X     float64
	Label string
}

// Box is one row's geometry. HasValue is false for a row with nothing to draw.
type Box struct {
	Label                        string
	CY                           int
	MinX, MaxX, P25X, P75X, MedX float64
	HasValue                     bool
	// Title is the tooltip: the label and its median.
	Title string
}

// Layout lays out rows on one axis labelled unit. format renders axis values. It returns nil
// when no row has a positive value.
func Layout(rows []Row, unit string, format func(float64) string) *Figure {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		for _, v := range []float64{r.Min, r.P25, r.Median, r.P75, r.Max} {
			if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return nil
	}
	const (
		labelW = 210
		plotW  = 560
		rowH   = 22
		top    = 10
		right  = 50
	)
	f := &Figure{Width: labelW + plotW + right, Height: top + rowH*len(rows) + 40, PlotLeft: labelW, PlotRight: labelW + plotW,
		AxisY: top + rowH*len(rows), Top: top, Log: hi/lo > LogThreshold}
	var a, b float64 // axis range
	if f.Log {
		a, b = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	} else {
		a, b = 0, niceCeil(hi*1.05)
	}
	x := func(v float64) float64 {
		if v <= 0 {
			v = a
		}
		var t float64
		if f.Log {
			t = (math.Log10(v) - math.Log10(a)) / (math.Log10(b) - math.Log10(a))
		} else {
			t = (v - a) / (b - a)
		}
		return labelW + math.Max(0, math.Min(1, t))*plotW
	}
	for _, t := range ticks(a, b, f.Log) {
		f.Ticks = append(f.Ticks, Tick{X: x(t), Label: format(t)})
	}
	f.AxisTitle = unit + " (linear axis)"
	if f.Log {
		f.AxisTitle = unit + " (log axis)"
	}
	for i, r := range rows {
		bx := Box{Label: r.Label, CY: top + i*rowH + rowH/2, HasValue: r.Median > 0}
		if bx.HasValue {
			bx.MinX, bx.MaxX, bx.P25X, bx.P75X, bx.MedX = x(r.Min), x(r.Max), x(r.P25), x(r.P75), x(r.Median)
			if bx.P75X-bx.P25X < 1 {
				bx.P75X = bx.P25X + 1
			}
			bx.Title = r.Label + ": median " + format(r.Median)
		}
		f.Boxes = append(f.Boxes, bx)
	}
	return f
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func ticks(a, b float64, logScale bool) []float64 {
	var out []float64
	if logScale {
		for v := a; v <= b*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	step := niceCeil(b / 5)
	for v := a; v <= b*1.0001; v += step {
		out = append(out, v)
	}
	return out
}
