package templates

import (
	"bytes"
	"context"
	"io"
	"pqrepro/portal/plot"

	"github.com/a-h/templ"
)

// ExperimentRow lists an experiment on a paper page.
type ExperimentRow struct {
	Ref, Name, Title, Kind, Method string
	Cells                          int
	// Role is a tls-matrix's role (the side of the handshake it measures), "" for other kinds.
	Role string
}

// RefRow is one published number with its source.
type RefRow struct {
	Board, Library, Algorithm, Operation, Scenario, Metric, Stat, Value, Unit, N, Source, Note string
}

// RefGroup is one group of a paper's reference numbers (a board and library, or one
// algorithm of them).
type RefGroup struct {
	Board, Library string
	Algorithms     []string
	Rows           int
	Link           string
	Refs           []RefRow
}

// Title names the group.
func (g RefGroup) Title() string {
	t := g.Board
	if t == "" {
		t = "any board"
	}
	if g.Library != "" {
		t += " · " + g.Library
	}
	return t
}

// PaperReferenceView is one group of a paper's reference numbers, per algorithm.
type PaperReferenceView struct {
	Page
	ID, Title, Board, Library string
	Algorithms                []RefGroup
}

// VerdictRow is the verdict one run gave a claim.
type VerdictRow struct {
	RunID                  int64
	Verdict, Reason, Board string
	Assurance              Assurance
}

// ClaimTally is how many runs on one board class, assurance level and class status gave a
// claim each verdict. Tallies from different boards or levels are never summed.
type ClaimTally struct {
	// Origin is whose runs gave the verdicts: the portal's own runners or community members.
	Origin                                                                         string
	Board, Level, ClassStatus                                                      string
	Holds, Fails, Inconclusive, PartlyTestable, Untestable, NotVerdicted, ByDesign int
}

// ClaimView is a paper's claim with the verdicts runs gave it.
type ClaimView struct {
	ID, Claim, Published, Source, Scope, Reason string
	Checks                                      int
	// Tallies are per origin, board class, assurance level and class status.
	Tallies  []ClaimTally
	Verdicts []VerdictRow
}

// FigureRow is one of a paper's in-text figures (a percentage or a ratio), with its unit.
type FigureRow struct {
	Board, Algorithm, Operation, Scenario, Metric, Stat, Value, Unit, Source, Note string
}

// EnergyView is a paper's published energies re-derived from its authors' own power traces
// (nothing re-run), with what they leave out.
type EnergyView struct {
	// Paper is the paper's id.
	Paper string
	// Label says what the numbers are; Method, Replicates and Seed how the intervals were
	// drawn; Caveat what they leave out.
	Label, Method, Caveat, Seed string
	Replicates                  int
	// Error replaces everything below when the re-derivation failed.
	Error string
	// All tallies every published energy; BySource each published table's.
	All      EnergyTally
	BySource []EnergyTally
	// Widths are the intervals' relative widths: smallest, median, largest.
	WidthMin, WidthMedian, WidthMax string
	// FewOps counts cells whose load capture spans few operations; Disagreements the
	// published energies computed from powers that are not their captures' means.
	FewOps, Disagreements, MinOps int
	Outside                       []EnergyOutside
	Boards                        []EnergyBoard
	Claims                        []EnergyClaim
	// Plot draws one cell's idle and load captures; PlotCaption says which.
	Plot        *plot.TraceFigure
	PlotCaption string
	// Unused says which captures no published energy uses, and why.
	Unused string
}

// PaperEnergyView is a page of a paper's energies re-derived from its traces: one board's
// (Board), or all.
type PaperEnergyView struct {
	Page
	Board  string
	Energy EnergyView
}

// EnergyTally counts a group of published energies by verdict.
type EnergyTally struct {
	Source                                                 string
	Cells, Rederived, Inside, Outside, NoCapture, NoTiming int
}

// EnergyOutside is a published energy outside its re-derived interval, and why.
type EnergyOutside struct {
	Ref, Reason, Detail string
}

// EnergyBoard is one board's published energies and their re-derivations.
type EnergyBoard struct {
	Board                  string
	Cells, Inside, Outside int
	Rows                   []EnergyRow
}

// EnergyRow is one published energy beside its re-derivation (J per operation).
type EnergyRow struct {
	Algorithm, Operation, Published, Sources, Rederived, Interval, Width, Verdict, Note string
}

// EnergyClaim is a claim checked on the re-derived energies.
type EnergyClaim struct {
	ID, Claim, Published, Verdict, Reason string
	Checks                                []EnergyCheck
}

// EnergyCheck is one ratio of a claim's check, said in a line.
type EnergyCheck struct {
	Verdict, Text string
}

// PaperView is a paper's page: its claims and runs, which change with every publication,
// between the parts that do not (Parts).
type PaperView struct {
	Page
	Parts    PaperParts
	Claims   []ClaimView
	Runs     []RunRow
	RunsMore []MoreLink
}

// PaperParts are the parts of a paper's page that are the same on every request while the
// server runs (the catalogue, its reference numbers and the energies re-derived from its
// traces are loaded at start), rendered once by templ (Prerender) and replayed.
type PaperParts struct {
	Head, Middle, Foot templ.Component
}

// PaperStatic is what a paper's page shows that no publication changes.
type PaperStatic struct {
	ID, Title, Citation, Summary string
	Measured, Boards             []string
	Experiments                  []ExperimentRow
	// RefGroups are the reference numbers grouped by board and library, with their rows when
	// RefInline (a small table); else each group links to its own page. RefTotal counts rows.
	RefGroups []RefGroup
	RefInline bool
	RefTotal  int
	// Figures are the reference rows that are in-text percentages and ratios.
	Figures    []FigureRow
	Provenance string
	// Energy is the paper's energies re-derived from its traces; nil when the project holds
	// no traces of the paper.
	Energy *EnergyView
}

// NewPaperParts renders a paper's unchanging parts once.
func NewPaperParts(v PaperStatic) (PaperParts, error) {
	var p PaperParts
	var err error
	if p.Head, err = Prerender(PaperHead(v)); err != nil {
		return p, err
	}
	if p.Middle, err = Prerender(PaperMiddle(v)); err != nil {
		return p, err
	}
	p.Foot, err = Prerender(PaperFoot(v))
	return p, err
}

// Prerendered is a component's HTML as templ rendered (and escaped) it, written as it is on
// every later render: for parts of a page that cannot change while the server runs.
type Prerendered []byte

// Render writes the kept HTML.
func (p Prerendered) Render(_ context.Context, w io.Writer) error {
	_, err := w.Write(p)
	return err
}

// Prerender renders c once, through templ, for Prerendered to replay.
func Prerender(c templ.Component) (Prerendered, error) {
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		return nil, err
	}
	return Prerendered(b.Bytes()), nil
}
