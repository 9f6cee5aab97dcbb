package plot

import (
	"math"
	"strconv"
	"strings"
)

// Capture is one power capture to draw: its samples at a fixed rate, and its mean with the
// mean's interval.
type Capture struct {
	Label string
	// Rate is the samples per second; Power the samples in watts.
	Rate  float64
	Power []float64
	// Mean, Lo and Hi are the capture's mean power and its interval.
	Mean, Lo, Hi float64
}

// TraceFigure is a laid-out figure of power captures, one panel each, stacked on a shared
// power axis. A panel draws its samples as a band from the smallest to the largest sample of
// each column of the plot, so every sample lies inside the band however long the capture (a
// 5-minute capture has 15,000 samples for about 400 columns), its mean as a line and the
// mean's interval as a shaded band.
type TraceFigure struct {
	Width, Height       int
	PlotLeft, PlotRight int
	// AxisTitle names the power axis; XTitle the time axis.
	AxisTitle, XTitle string
	Panels            []TracePanel
}

// TracePanel is one capture's geometry.
type TracePanel struct {
	Label string
	// LabelY is the label's baseline; Top and Bottom bound the plot area.
	LabelY, Top, Bottom int
	YTicks              []YTick
	XTicks              []Tick
	// Envelope is the SVG path of the band between each column's smallest and largest
	// sample.
	Envelope string
	// MeanY is the mean's line; LoY and HiY bound its interval (HiY above LoY on screen).
	MeanY, LoY, HiY float64
	// Title is the hover text: the capture, its mean and interval.
	Title string
}

// YTick is a labelled horizontal grid line.
type YTick struct {
	Y     float64
	Label string
}

// Traces lays out captures as stacked panels on one power axis (watts, linear, not from
// zero: the captures differ by tenths of a watt on top of watts). format renders powers. It
// returns nil when no capture has two or more samples.
func Traces(caps []Capture, format func(float64) string) *TraceFigure {
	lo, hi := math.Inf(1), math.Inf(-1)
	var drawn []Capture
	for _, c := range caps {
		if len(c.Power) < 2 || !(c.Rate > 0) {
			continue
		}
		for _, p := range c.Power {
			if !math.IsNaN(p) && !math.IsInf(p, 0) {
				lo, hi = math.Min(lo, p), math.Max(hi, p)
			}
		}
		drawn = append(drawn, c)
	}
	if len(drawn) == 0 || math.IsInf(lo, 0) {
		return nil
	}
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	const (
		plotLeft, plotRight = 56, Left + PlotWidth + 16
		panelH, labelH      = 150, 18
		xAxisH              = 40
	)
	step := niceStep((hi - lo) / 4)
	f := &TraceFigure{Width: Width, PlotLeft: plotLeft, PlotRight: plotRight, AxisTitle: "W", XTitle: "seconds from the capture's start"}
	y := 0
	for _, c := range drawn {
		p := TracePanel{Label: c.Label, LabelY: y + 13, Top: y + labelH, Bottom: y + labelH + panelH}
		py := func(v float64) float64 {
			return float64(p.Bottom) - (v-lo)/(hi-lo)*float64(panelH)
		}
		for v := math.Ceil(lo/step) * step; v <= hi; v += step {
			p.YTicks = append(p.YTicks, YTick{Y: py(v), Label: format(v)})
		}
		n := len(c.Power)
		secs := float64(n) / c.Rate
		px := func(t float64) float64 { return plotLeft + t/secs*float64(plotRight-plotLeft) }
		ts := niceStep(secs / 5)
		for t := 0.0; t <= secs*1.0001; t += ts {
			p.XTicks = append(p.XTicks, Tick{X: px(t), Label: strconv.FormatFloat(t, 'f', -1, 64)})
		}
		cols := plotRight - plotLeft
		tops := make([]string, 0, cols)
		bottoms := make([]string, 0, cols)
		for col := range cols {
			a, b := col*n/cols, (col+1)*n/cols
			if b <= a {
				b = a + 1
			}
			mn, mx := math.Inf(1), math.Inf(-1)
			for _, v := range c.Power[a:min(b, n)] {
				mn, mx = math.Min(mn, v), math.Max(mx, v)
			}
			x := fmtPt(float64(plotLeft+col) + 0.5)
			tops = append(tops, x+" "+fmtPt(py(mx)))
			bottoms = append(bottoms, x+" "+fmtPt(py(mn)))
		}
		for i, j := 0, len(bottoms)-1; i < j; i, j = i+1, j-1 {
			bottoms[i], bottoms[j] = bottoms[j], bottoms[i]
		}
		p.Envelope = "M" + strings.Join(tops, "L") + "L" + strings.Join(bottoms, "L") + "Z"
		p.MeanY, p.LoY, p.HiY = py(c.Mean), py(c.Lo), py(c.Hi)
		p.Title = c.Label + ": mean " + format(c.Mean) + " W, 95% interval [" + format(c.Lo) + ", " + format(c.Hi) + "] W, " +
			strconv.Itoa(n) + " samples over " + strconv.FormatFloat(secs, 'f', 1, 64) + " s"
		f.Panels = append(f.Panels, p)
		y = p.Bottom + xAxisH
	}
	f.Height = y
	return f
}

// niceStep is the 1, 2, 2.5 or 5 x 10^k at or above v.
func niceStep(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	return niceCeil(v)
}

func fmtPt(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
