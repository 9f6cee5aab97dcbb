// Package plot lays out the portal's figures, drawn as SVG on the server: horizontal box plots
// (quartiles and median; whiskers at 1.5 x IQR with the outliers as dots when built from
// samples by Tukey, else min to max) and dot-and-interval charts grouped per parameter set
// (Intervals), with a log axis when the values span orders of magnitude, as the papers'
// figures do. It computes geometry only; templates/plot.templ renders the figures, styled
// by classes (the content security policy forbids inline styles), so every label goes
// through the template engine's escaping. Figures are 480 units wide with labels above
// their rows; on a phone the text is drawn larger (PhoneFontSize) so it stays legible scaled
// down to the screen's width.
package plot

import (
	"cmp"
	"math"
	"pqrepro/artifacts"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Row is one box: a label and a distribution summary. Min and Max may equal the quartiles
// when only a spread is known.
type Row struct {
	Label                      string
	Min, P25, Median, P75, Max float64
	// Outliers are drawn as dots beyond the whiskers (see Tukey).
	Outliers []float64
	// Whiskers says what Min and Max are ("1.5×IQR" from Tukey; "" for min to max).
	Whiskers string
}

// MaxOutlierDots bounds the dots drawn per box; the box's title counts the rest.
const MaxOutlierDots = 40

// Tukey summarises samples as a box plot row: quartiles (type 7, as the run statistics),
// whiskers reaching the most extreme samples within 1.5 x IQR of the box, and every sample
// beyond them as an outlier. It returns false for no samples.
func Tukey(label string, samples []float64) (Row, bool) {
	var v []float64
	for _, x := range samples {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Row{}, false
	}
	slices.Sort(v)
	q1, med, q3 := artifacts.Quantile(v, 0.25), artifacts.Quantile(v, 0.5), artifacts.Quantile(v, 0.75)
	lo, hi := q1-1.5*(q3-q1), q3+1.5*(q3-q1)
	r := Row{Label: label, P25: q1, Median: med, P75: q3, Min: q1, Max: q3, Whiskers: "1.5×IQR"}
	for _, x := range v {
		switch {
		case x < lo || x > hi:
			r.Outliers = append(r.Outliers, x)
		default:
			r.Min, r.Max = math.Min(r.Min, x), math.Max(r.Max, x)
		}
	}
	return r, true
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

// Tick is a labelled grid line. Anchor is the label's text-anchor: "" (middle), or "start" or
// "end" for a label that would otherwise cross the figure's edge.
type Tick struct {
	X      float64
	Label  string
	Anchor string
}

// TextAnchor is the tick label's SVG text-anchor.
func (t Tick) TextAnchor() string { return cmp.Or(t.Anchor, "middle") }

// Box is one row's geometry. HasValue is false for a row with nothing to draw.
type Box struct {
	Label                        string
	CY                           int
	MinX, MaxX, P25X, P75X, MedX float64
	HasValue                     bool
	// Title is the tooltip: the label and its median.
	Title string
	// LabelY is the baseline of the label, drawn above the box.
	LabelY int
	// Outliers are the dots beyond the whiskers (at most MaxOutlierDots).
	Outliers []Dot
}

// Dot is a marker with its hover text.
type Dot struct {
	X     float64
	Title string
}

// Layout lays out rows on one axis labelled unit. format renders axis values. It returns nil
// when no row has a positive value.
func Layout(rows []Row, unit string, format func(float64) string) *Figure {
	var vals []float64
	for _, r := range rows {
		vals = append(append(vals, r.Min, r.P25, r.Median, r.P75, r.Max), r.Outliers...)
	}
	// The axis starts a little in, so its first tick's label is not cut at the edge.
	const plotLeft = Left + 20
	ax, ok := newAxis(vals, plotLeft, Left+PlotWidth)
	if !ok {
		return nil
	}
	const rowH, top = 36, 6
	f := &Figure{Width: Width, Height: top + rowH*len(rows) + 44, PlotLeft: plotLeft, PlotRight: Left + PlotWidth,
		AxisY: top + rowH*len(rows), Top: top, Log: ax.log}
	var tickUnit string
	f.Ticks, tickUnit = ax.ticks(format)
	f.AxisTitle = ax.title(unit, tickUnit)
	for i, r := range rows {
		bx := Box{Label: r.Label, CY: top + i*rowH + 24, LabelY: top + i*rowH + 11, HasValue: r.Median > 0}
		if bx.HasValue {
			bx.MinX, bx.MaxX, bx.P25X, bx.P75X, bx.MedX = ax.x(r.Min), ax.x(r.Max), ax.x(r.P25), ax.x(r.P75), ax.x(r.Median)
			if bx.P75X-bx.P25X < 1 {
				bx.P75X = bx.P25X + 1
			}
			whiskers := "whiskers min to max"
			if r.Whiskers != "" {
				whiskers = "whiskers at " + r.Whiskers
			}
			bx.Title = r.Label + ": median " + format(r.Median) + ", p25 " + format(r.P25) + ", p75 " + format(r.P75) + "; " + whiskers
			if len(r.Outliers) > 0 {
				bx.Title += "; " + strconv.Itoa(len(r.Outliers)) + " outlier(s)"
			}
			for k, o := range r.Outliers {
				if k == MaxOutlierDots {
					break
				}
				bx.Outliers = append(bx.Outliers, Dot{X: ax.x(o), Title: r.Label + ": outlier " + format(o)})
			}
		}
		f.Boxes = append(f.Boxes, bx)
	}
	return f
}

// Figure geometry, in SVG user units: 480 wide, so a phone shows the 13-unit labels at
// about 10 px.
const (
	Width     = 480
	Left      = 12
	PlotWidth = 440
)

// axis maps values to x on a linear axis from 0, or a log axis from decade to decade when
// the positive values span more than LogThreshold.
type axis struct {
	log         bool
	a, b        float64
	left, right float64
}

func newAxis(vals []float64, left, right int) (axis, bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return axis{}, false
	}
	ax := axis{log: hi/lo > LogThreshold, left: float64(left), right: float64(right)}
	if ax.log {
		ax.a, ax.b = logFloor(lo), logCeil(hi)
	} else {
		ax.a, ax.b = 0, niceCeil(hi*1.05)
	}
	return ax, true
}

func (ax axis) x(v float64) float64 {
	if v <= 0 {
		v = ax.a
	}
	var t float64
	if ax.log {
		t = (math.Log10(v) - math.Log10(ax.a)) / (math.Log10(ax.b) - math.Log10(ax.a))
	} else {
		t = (v - ax.a) / (ax.b - ax.a)
	}
	return ax.left + math.Max(0, math.Min(1, t))*(ax.right-ax.left)
}

// ticks labels the axis: the origin is "0" (never "0 ns" under microseconds), a unit every
// label shares is taken off the labels (the axis title names it once), and a tick whose label
// would touch its neighbour's at the figure's width is left out, so labels never collide.
func (ax axis) ticks(format func(float64) string) (out []Tick, unit string) {
	vals := ticks(ax.a, ax.b, ax.log)
	labels := make([]string, len(vals))
	for i, v := range vals {
		labels[i] = "0"
		if v != 0 {
			labels[i] = format(v)
		}
	}
	unit = commonUnit(labels)
	for i, v := range vals {
		out = append(out, Tick{X: ax.x(v), Label: strings.TrimSuffix(labels[i], " "+unit)})
	}
	return spaceTicks(out), unit
}

// commonUnit is the last word every label but "0" ends with ("instructions" of "500 k
// instructions" and "1 M instructions"), or "" when they differ or a label has one word.
func commonUnit(labels []string) string {
	unit := ""
	for _, l := range labels {
		if l == "0" {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 || (unit != "" && l[i+1:] != unit) {
			return ""
		}
		unit = l[i+1:]
	}
	return unit
}

// FontSize is the figures' text size in user units (the SVG's font-size), and PhoneFontSize
// the size static/browse.css gives it on a narrow screen (at most 640 px wide), where a
// figure is scaled down to the screen: at 390 px a figure is about 364 px wide, so 17 units
// are drawn about 12.9 px high, where 13 would be under 10 px. Labels are spaced for the
// larger size, so they never collide at either.
const (
	FontSize      = 13
	PhoneFontSize = 17
)

// labelWidth estimates a tick label's width in user units at PhoneFontSize: sans-serif text
// averages about 0.62 em a character.
func labelWidth(s string) float64 { return float64(utf8.RuneCountInString(s)) * PhoneFontSize * 0.62 }

// tickGap is the least space between two tick labels, in user units.
const tickGap = 8

// spaceTicks keeps the first tick and each next one whose label clears the last kept label by
// tickGap; the last tick replaces a kept one it would touch (the axis end is labelled). A label
// that would cross the figure's left or right edge is anchored at its tick instead of centred.
func spaceTicks(ts []Tick) []Tick {
	var out []Tick
	clears := func(a, b Tick) bool { return b.X-a.X >= (labelWidth(a.Label)+labelWidth(b.Label))/2+tickGap }
	for i, t := range ts {
		switch {
		case len(out) == 0 || clears(out[len(out)-1], t):
			out = append(out, t)
		case i == len(ts)-1 && len(out) > 1:
			out[len(out)-1] = t
		}
	}
	for i := range out {
		w := labelWidth(out[i].Label)
		switch {
		case out[i].X-w/2 < 0:
			out[i].Anchor = "start"
		case out[i].X+w/2 > Width:
			out[i].Anchor = "end"
		}
	}
	return out
}

// title is the axis title: the quantity, the unit taken off the tick labels (unless the
// quantity already names it), and the scale.
func (ax axis) title(quantity, unit string) string {
	scale := "linear axis"
	if ax.log {
		scale = "log axis"
	}
	if unit != "" && !strings.Contains(quantity, unit) {
		return quantity + " (" + unit + ", " + scale + ")"
	}
	return quantity + " (" + scale + ")"
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

// logSteps are the log axis's bounds and ticks within a decade: 1, 2, 5 (as the papers'
// log axes are labelled).
var logSteps = []float64{1, 2, 5}

// logFloor is the largest 1, 2 or 5 x 10^k at or below v; logCeil the smallest at or above.
func logFloor(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for i := len(logSteps) - 1; i >= 0; i-- {
		if logSteps[i]*p <= v*1.0000001 {
			return logSteps[i] * p
		}
	}
	return p
}

func logCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range append(logSteps, 10) {
		if m*p >= v*0.9999999 {
			return m * p
		}
	}
	return 10 * p
}

func ticks(a, b float64, logScale bool) []float64 {
	var out []float64
	if logScale {
		// Every 1, 2 and 5 between the bounds; when that is more than six labels (they would
		// overlap on a phone), the decades and the bounds.
		var decades []float64
		for p := math.Pow(10, math.Floor(math.Log10(a))); p <= b*1.0001; p *= 10 {
			for _, m := range logSteps {
				v := m * p
				if v < a*0.9999 || v > b*1.0001 {
					continue
				}
				out = append(out, v)
				if m == 1 || v == a || v == b {
					decades = append(decades, v)
				}
			}
		}
		if len(out) > 6 {
			out = decades
		}
		return out
	}
	step := niceCeil(b / 5)
	for v := a; v <= b*1.0001; v += step {
		out = append(out, v)
	}
	return out
}
