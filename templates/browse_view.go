package templates

import (
	"strconv"
	"unicode/utf8"

	"github.com/a-h/templ"

	"pqrepro/portal/plot"
)

// Filter is a select of a list's filter form.
type Filter struct {
	Name, Label string
	Options     []Option
}

// RunListRow is a run in /runs.
type RunListRow struct {
	ID                                     int64
	Paper, Experiment, Kind, Method, Board string
	Declared                               bool
	// OwnManifest: the run ran its own manifest, not the catalogue's experiment of its name.
	OwnManifest         bool
	Assurance           Assurance
	Published, By       string
	CellsOK, CellsTotal int
}

// RunsView is /runs: the filter form, one page of runs, the next page's link.
type RunsView struct {
	Page
	Filters                        []Filter
	Algorithms                     []string
	Algorithm, Submitter, From, To string
	Runs                           []RunListRow
	Next, FirstLink, JSON, CSV     string
	First, Filtered                bool
	// CapNote says a capped search stopped before the page was full.
	CapNote string
	// Error is why the filters were refused (the form shows them again, and no list).
	Error FormError
}

// JobListRow is a job in /jobs.
type JobListRow struct {
	ID                                      int64
	Paper, Experiment, Board, Method, State string
	Created, Error                          string
	RunID                                   int64
}

// JobsView is /jobs.
type JobsView struct {
	Page
	Filters                    []Filter
	From, To                   string
	Jobs                       []JobListRow
	Next, FirstLink, JSON, CSV string
	First                      bool
	CapNote                    string
	// Error is why the filters were refused (the form shows them again, and no list).
	Error FormError
}

// SchemeCell is one scheme x operation of the scheme table.
type SchemeCell struct {
	Algorithm, Operation string
	// Implementation is the code the row's cells timed (digests abbreviated).
	Implementation string
	Median, Spread string
	N, Runs        int
	RunsLink       string
	LatestRun      int64
	// First is true on a scheme's first row (its name is shown once).
	First bool
	// Ratio is this median over RatioBase's, the first implementation of the same scheme and
	// operation in the same table (same unit and method); empty for that first one.
	Ratio, RatioBase string
	// Hashing is the latest run's share of instructions in SHA-2/SHA-3 ("–" when it measured
	// none, "not measured" with HashingWhy for an implementation with its own hash).
	Hashing, HashingWhy string
}

// SchemeSection is one unit, method and class status of the scheme table, with its chart.
type SchemeSection struct {
	Title    string
	Declared bool
	// Hashing is set when a row has a hashing figure (the column is shown).
	Hashing bool
	Rows    []SchemeCell
	Chart   *plot.Chart
}

// SchemesView is /schemes.
type SchemesView struct {
	Page
	Choices      []Option
	Level, Board string
	Sections     []SchemeSection
	// PQM4 is pqm4's silicon figures for the schemes and operations of Sections, shown beside
	// them and never ratioed with them.
	PQM4 []PQM4Beside
	// Quantities are what the board's tables measure, each once (named beside pqm4's).
	Quantities []string
}

// CompareRun is a run on /compare.
type CompareRun struct {
	ID                                          int64
	Label, Experiment, Board, Method, Published string
	Assurance                                   Assurance
	Declared                                    bool
}

// CompareValue is one run's side of a compared cell: its median and, for every run after
// the first, the ratio to the first with its bootstrap interval and verdict.
type CompareValue struct {
	Median                string
	Ratio, Interval       string
	Verdict, VerdictClass string
	Note                  string
	Baseline              bool
}

// CompareCellRow is a cell compared across the runs.
type CompareCellRow struct {
	Cell, Unit string
	Values     []CompareValue
}

// CompareView is /compare.
type CompareView struct {
	Page
	Runs []CompareRun
	// Rows are the comparable cells; NotComparable the number of the others and Reasons
	// their distinct reasons, shown collapsed in one line.
	Rows          []CompareCellRow
	NotComparable int
	Reasons       []string
	Method        string
	Charts        []*plot.Chart
	Boxes         []*plot.Figure
	// Paper is each run's comparison with its paper's figures (comparable rows only).
	Paper []ComparePaper
	// Picker adds a run to the comparison: the ids compared now and the latest other runs of
	// run A's experiment, each a link to the comparison with it added.
	Picker ComparePicker
}

// ComparePicker is the compare page's way to add a run (at most three are compared).
type ComparePicker struct {
	// IDs are the runs compared now, "4,7"; Full says three already are.
	IDs  string
	Full bool
	// Candidates are other runs of run A's experiment, newest first.
	Candidates []CompareCandidate
}

// CompareCandidate is a run that can be added: its id, its board and assurance, and the
// comparison's address with it added.
type CompareCandidate struct {
	ID          int64
	Board, Link string
	Assurance   Assurance
}

// ComparePaper is one run against its paper's published figures.
type ComparePaper struct {
	RunID         int64
	Dataset       string
	Rows          []CompareRow
	NotComparable int
}

// joinReasons is the collapsed line's text: the reasons, "; "-separated, cut after 160 bytes.
func joinReasons(rs []string) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += "; "
		}
		s += r
		if n := 160; len(s) > n {
			for n > 0 && !utf8.RuneStart(s[n]) {
				n--
			}
			return s[:n] + "…"
		}
	}
	return s
}

// OptGroup is a labelled group of options in a select.
type OptGroup struct {
	Label   string
	Options []Option
}

// ExperimentLink is where a run's experiment name leads: the catalogue's experiment, or the
// run's own manifest.yaml when it ran its own manifest.
func ExperimentLink(id int64, experiment string, own bool) templ.SafeURL {
	if own {
		return templ.SafeURL("/runs/" + strconv.FormatInt(id, 10) + "/manifest.yaml")
	}
	return templ.URL("/experiments/" + experiment)
}
