package plot

// Group is one parameter set (a cell, an operation) of a dot-and-interval chart, with one
// point per series (a run, a scheme, the paper's figure).
type Group struct {
	Label  string
	Points []Point
}

// Point is one series' value in a group: Value is the dot (a median, a published figure),
// Lo and Hi the interval drawn around it (p25 and p75; equal to Value when none is known).
// Series numbers the series for its colour (class "s<n>"); Published marks a paper's
// figure, drawn as a hollow diamond.
type Point struct {
	Name          string
	Value, Lo, Hi float64
	Series        int
	Published     bool
	// Text is the hover text's value as formatted for the reader.
	Text string
}

// Chart is a laid-out dot-and-interval chart: groups stacked, their label above, one row
// per point with the series name at the left of the plot.
type Chart struct {
	Width, Height                   int
	PlotLeft, PlotRight, AxisY, Top int
	Log                             bool
	AxisTitle                       string
	Ticks                           []Tick
	Groups                          []ChartGroup
	// Series are the legend's entries in order.
	Series []Legend
}

// ChartGroup is a group's geometry.
type ChartGroup struct {
	Label  string
	LabelY int
	Marks  []Mark
}

// Mark is one point's geometry. Class is "s<n>" (and "published" for a paper's figure).
type Mark struct {
	Name        string
	Y           int
	X, LoX, HiX float64
	HasValue    bool
	HasInterval bool
	Class       string
	Published   bool
	Title       string
}

// Legend is one series' name and class.
type Legend struct {
	Name, Class string
	Published   bool
}

// Series classes cycle through this many colours (CSS variables --series-0 ...).
const SeriesColours = 6

// Intervals lays out groups on one axis labelled unit; format renders axis values. Rows
// whose value is not positive are listed without a mark (their name says "no value"). It
// returns nil when no point has a positive value.
func Intervals(groups []Group, unit string, format func(float64) string) *Chart {
	var vals []float64
	rows := 0
	for _, g := range groups {
		for _, p := range g.Points {
			vals = append(vals, p.Value, p.Lo, p.Hi)
			rows++
		}
	}
	const nameW = 128
	ax, ok := newAxis(vals, Left+nameW, Left+PlotWidth)
	if !ok {
		return nil
	}
	// A row is tall enough for a series name at PhoneFontSize (its box is about 1.16 em:
	// 19.8 units), so names never overlap on a phone.
	const labelH, rowH, top = 20, 21, 6
	c := &Chart{Width: Width, PlotLeft: Left + nameW, PlotRight: Left + PlotWidth, Top: top, Log: ax.log}
	y := top
	seen := map[string]bool{}
	for _, g := range groups {
		cg := ChartGroup{Label: g.Label, LabelY: y + 14}
		y += labelH
		for _, p := range g.Points {
			cls := "s" + itoa(p.Series%SeriesColours)
			m := Mark{Name: p.Name, Y: y + rowH/2, Class: cls, Published: p.Published, HasValue: p.Value > 0}
			if p.Published {
				m.Class += " published"
			}
			if m.HasValue {
				m.X = ax.x(p.Value)
				m.LoX, m.HiX = ax.x(p.Lo), ax.x(p.Hi)
				m.HasInterval = p.Hi > p.Lo && p.Lo > 0
				m.Title = g.Label + ", " + p.Name + ": " + p.Text
			}
			if !seen[p.Name] {
				seen[p.Name] = true
				c.Series = append(c.Series, Legend{Name: p.Name, Class: m.Class, Published: p.Published})
			}
			cg.Marks = append(cg.Marks, m)
			y += rowH
		}
		c.Groups = append(c.Groups, cg)
	}
	c.AxisY = y + 4
	c.Height = c.AxisY + 44
	var tickUnit string
	c.Ticks, tickUnit = ax.ticks(format)
	c.AxisTitle = ax.title(unit, tickUnit)
	return c
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
