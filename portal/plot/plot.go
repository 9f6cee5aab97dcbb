// Package plot draws the portal's figures as SVG on the server: horizontal box plots (min,
// quartiles, median, max) with a log axis when the values span orders of magnitude, as the
// papers' figures do.
package plot

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Row is one box: a label and a distribution summary. Min and Max may equal the quartiles
// when only a spread is known.
type Row struct {
	Label                      string
	Min, P25, Median, P75, Max float64
}

// LogThreshold is the max/min ratio beyond which the axis is logarithmic.
const LogThreshold = 20

// Box returns an SVG box plot of rows on one axis labelled unit, and whether the axis is
// logarithmic. format renders axis tick values. It returns "" when no row has a positive value.
func Box(rows []Row, unit string, format func(float64) string) (svg string, logScale bool) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		for _, v := range []float64{r.Min, r.P25, r.Median, r.P75, r.Max} {
			if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return "", false
	}
	logScale = hi/lo > LogThreshold
	const (
		labelW = 210
		plotW  = 560
		rowH   = 22
		top    = 10
		right  = 50
	)
	height := top + rowH*len(rows) + 40
	var a, b float64 // axis range
	if logScale {
		a, b = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	} else {
		a, b = 0, niceCeil(hi*1.05)
	}
	x := func(v float64) float64 {
		if v <= 0 {
			v = a
		}
		var f float64
		if logScale {
			f = (math.Log10(v) - math.Log10(a)) / (math.Log10(b) - math.Log10(a))
		} else {
			f = (v - a) / (b - a)
		}
		return labelW + math.Max(0, math.Min(1, f))*plotW
	}
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" font-family="sans-serif" font-size="11">`,
		labelW+plotW+right, height, labelW+plotW+right, height)
	axisY := top + rowH*len(rows)
	// Ticks and grid.
	for _, t := range ticks(a, b, logScale) {
		tx := x(t)
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e3e7ee"/>`, tx, top, tx, axisY)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" text-anchor="middle" fill="#667085">%s</text>`, tx, axisY+14, html.EscapeString(format(t)))
	}
	scale := "linear axis"
	if logScale {
		scale = "log axis"
	}
	fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="middle" fill="#1d2330">%s (%s)</text>`, labelW+plotW/2, axisY+32, html.EscapeString(unit), scale)
	for i, r := range rows {
		cy := top + i*rowH + rowH/2
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`, labelW-8, cy, html.EscapeString(r.Label))
		if r.Median <= 0 {
			continue
		}
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#667085"/>`, x(r.Min), cy, x(r.Max), cy)
		x1, x2 := x(r.P25), x(r.P75)
		fmt.Fprintf(&s, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#c9d8fb" stroke="#2251c7"/>`, x1, cy-7, math.Max(1, x2-x1), 14)
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#1d2330" stroke-width="2"><title>%s: median %s</title></line>`,
			x(r.Median), cy-8, x(r.Median), cy+8, html.EscapeString(r.Label), html.EscapeString(format(r.Median)))
	}
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#1d2330"/>`, labelW, axisY, labelW+plotW, axisY)
	s.WriteString(`</svg>`)
	return s.String(), logScale
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
