package templates

import (
	"pqrepro/portal/plot"
	"strings"
)

// CellRow is a run's cell with its statistics.
type CellRow struct {
	Algorithm, Operation, Status, Error, Unit string
	// Implementation is the code the cell timed, with its version and digest (abbreviated).
	Implementation                                 string
	N                                              int
	Min, P25, Median, P75, Max, Mean, Stddev, Heap string
	// Stack is the firmware's stack high-water mark, "–" when the board does not report one.
	Stack string
	// Keys is the key form the timed operation received (encoded, parsed), "–" for keygen or
	// when the result does not record it.
	Keys string
	// NOf is "of 20" (with " (time budget)" when the budget stopped it) when n is below the
	// iterations requested; "" when every requested iteration ran.
	NOf string
	// Energy is the median energy per operation, "–" when not measured.
	Energy string
	// Hashing is the share of the operation's instructions spent in the firmware's SHA-2 and
	// SHA-3 (an untimed pass), with its bound on a coarse counter; "not measured" with
	// HashingWhy when the pass could not see the hashing (an implementation with its own);
	// "–" when no pass ran.
	Hashing, HashingWhy string
	// PQM4Hashing is pqm4's share of silicon cycles for the same scheme and operation, per
	// implementation ("—" when pqm4 has none): beside Hashing, never ratioed with it.
	PQM4Hashing string
}

// CellColumns says which optional columns the cells table shows: those some cell has.
type CellColumns struct {
	Keys, Heap, Stack, Energy, Hashing bool
}

// Span is how many columns follow a row's status: the statistics and the optional columns.
func (c CellColumns) Span() int {
	n := 9
	for _, on := range []bool{c.Keys, c.Heap, c.Stack, c.Energy} {
		if on {
			n++
		}
	}
	if c.Hashing {
		n += 2 // the board's share of instructions and pqm4's share of cycles
	}
	return n
}

// CompareRow is a measured cell beside one published number.
type CompareRow struct {
	Algorithm, Operation, Measured, Published, RefBoard, Source, Verdict, Ratio, Reasons, Note string
}

// NotComparableRow collapses one cell's published figures that cannot be compared with the
// run into one line: how many, and every distinct reason.
type NotComparableRow struct {
	Cell     string
	Figures  int
	Reasons  []string
	Measured string
	// Published are the figures themselves, each with its board, source and reason, so
	// "not comparable" never hides the number a reader came to see.
	Published []PublishedFigure
}

// PublishedFigure is one published number a measured cell cannot stand beside: its value as
// written ("median 1.23 ms"), the board it was measured on, where the paper gives it, and why
// it is not comparable.
type PublishedFigure struct {
	Value, Board, Source, Why string
}

// Why is the row's reasons as one line.
func (n NotComparableRow) Why() string { return strings.Join(n.Reasons, "; ") }

// IntervalRow is one bootstrap interval of a check: the ratio of medians and its bounds.
type IntervalRow struct {
	Ratio, Point, Lo, Hi, Verdict string
	// Exact: every sample identical, Point is the exact ratio (Lo and Hi are not shown).
	Exact bool
	// Note qualifies the verdict (a "fails" Holm's correction did not confirm).
	Note string
	// Seed is the full hex seed; ShortSeed its first 16 digits, for display.
	Seed, ShortSeed string
}

// CheckRow is one check of a claim on a run.
type CheckRow struct {
	Verdict, Detail string
	// Method and Resamples say how the intervals were obtained; empty when untestable.
	Method    string
	Resamples int
	Intervals []IntervalRow
}

// ClaimResultRow is a claim's verdict on a run, with the board it was obtained on.
type ClaimResultRow struct {
	ID, Claim, Verdict, Reason string
	// Multiplicity says how a claim decided from several intervals controls its family-wise
	// error; empty for one interval.
	Multiplicity       string
	Board, ClassStatus string
	Assurance          Assurance
	Checks             []CheckRow
}

// RunView is a run's page.
type RunView struct {
	Page
	// Log is the run's place in the transparency log (pending, or its index and proof).
	Log                                               LogStatusView
	ID                                                int64
	JobID                                             int64
	Experiment, Paper, Kind, Method, Board, BoardName string
	Assurance                                         Assurance
	// CountModel says what an emulated board's counts are a model of where the unit alone
	// would mislead (the rp2040js board's cycles are its cycle model's, not silicon's); ""
	// for other boards.
	CountModel string
	// OwnManifest marks a run of a manifest that is not the catalogue's experiment of that
	// name: its experiment link is its own manifest.yaml, and its claims are not counted.
	OwnManifest bool
	// BindingNote says how the signed bundle is bound: "" for a bundle bound to the job it
	// answered, else why not (a community submission, a legacy v1 bundle).
	BindingNote                                             string
	Runner, Submitter, Signer, Bundle, BundleSize, Firmware string
	// FirmwareLink is the page of the run's firmware build when this portal stores it.
	FirmwareLink                                       string
	ManifestID, Started, Finished, Published, Duration string
	Cells                                              []CellRow
	Columns                                            CellColumns
	// Plots are the cells' box plots, one per unit and quantity (never two units on one axis).
	Plots              []RunPlot
	Environment        []KV
	Checks             []string
	Dataset, Tolerance string
	Comparison         []CompareRow
	// NotComparable lists, per cell, the published figures the run cannot be compared with.
	NotComparable []NotComparableRow
	// ReportNote says the stored comparison is older than the portal's ("" when current).
	ReportNote string
	Claims     []ClaimResultRow
	// Timing is the run's board class check and timing context.
	Timing RunTiming
	// SignerRevoked is when the keys that signed the run were revoked ("" if they were not):
	// the run stays published, flagged.
	SignerRevoked string
	// HeatMap is a tls-matrix run's matrix; nil for other kinds.
	HeatMap *HeatMap
	// Energy is a metered run's energy per operation beside time, with the meter, its rate
	// and each method named, and the power trace; nil for a run without a meter.
	Energy *RunEnergy
}

// RunEnergy is a metered run's energy section.
type RunEnergy struct {
	// Meter names the meter, its device and rate; Method the ΔP × T_op computation.
	Meter, Method string
	// DirectMethod names the direct integration ("" when the meter has no markers).
	DirectMethod string
	Rows         []RunEnergyRow
	// Plot is the idle window and one cell's load window; PlotCaption says what it shows.
	Plot        *plot.TraceFigure
	PlotCaption string
}

// RunEnergyRow is one metered cell: its time per operation beside its energy per operation by
// each method (never ranked together), or why it has none.
type RunEnergyRow struct {
	Algorithm, Operation string
	TOp                  string
	Energy, Interval     string
	Direct               string
	Absent               string
}

// RunPlot is one box plot of a run page, with its caption.
type RunPlot struct {
	Figure *plot.Figure
	Note   string
}
