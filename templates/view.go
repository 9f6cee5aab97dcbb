// Package templates holds the portal's pages as templ components, one file per page plus the
// layout, each taking a typed view model from this file. Components make no database calls;
// the portal builds the view model and renders it into a buffer. Numbers arrive formatted.
//
// Regenerate the _templ.go files with `go tool templ generate` after editing a .templ file.
package templates

import (
	"strconv"
	"strings"

	"pqrepro/portal/plot"
)

// Page is what every page's layout needs.
type Page struct {
	Title string
	// User is the signed-in account's name, "" when browsing anonymously.
	User  string
	Admin bool
	// CSRF is the token every form carries.
	CSRF string
	// Refresh, when > 0, reloads the page after that many seconds (pages work without JS),
	// or goes to RefreshURL when set.
	Refresh    int
	RefreshURL string
	// Flash is a one-line message shown at the top; FlashKind is "ok" or "error".
	Flash, FlashKind string
	// Path is the current path, for the sign-in link's return address.
	Path string
}

// Assurance is shown beside every number: level (host/emulated/hardware) and origin
// (portal-runner/community/published).
type Assurance struct {
	Level, Origin string
}

// PaperCard summarises a paper on the home page.
type PaperCard struct {
	ID, Title, Citation string
	Experiments, Runs   int
	Measured            string
	// Runnable lists the board classes connected runners offer for at least one of the
	// paper's experiments; empty when nothing of it can be re-run now.
	Runnable []string
}

// RunRow is a run in a listing.
type RunRow struct {
	ID                      int64
	Experiment, Board, When string
	// OwnManifest: the run ran its own manifest, not the catalogue's experiment of its name.
	OwnManifest         bool
	Assurance           Assurance
	CellsOK, CellsTotal int
	Signer, By          string
}

// JobRow is a job in a listing.
type JobRow struct {
	ID                             int64
	Experiment, Board, State, When string
	RunID                          int64
}

// Highlight is a small leaderboard on the home page: one ranking (one unit, assurance,
// method and class status).
type Highlight struct {
	Algorithm, Operation, Link string
	// Ranking names the ranking ("host time · host · in-process"); empty with no rows.
	Ranking  string
	Declared bool
	Rows     []LeaderRow
}

// Home is the home page.
type Home struct {
	Page
	Papers []PaperCard
	Runs   []RunRow
	Jobs   []JobRow
	// RunsMore and JobsMore link to the filtered lists when a list shows one page of more.
	RunsMore   []MoreLink
	JobsMore   []MoreLink
	Highlights []Highlight
	Runners    int
}

// MoreLink leads from a page's bounded list to the rest of it on /runs or /jobs.
type MoreLink struct {
	Href, Label string
}

// ExperimentRow lists an experiment on a paper page.
type ExperimentRow struct {
	Ref, Name, Title, Kind, Method string
	Cells                          int
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

// PaperView is a paper's page.
type PaperView struct {
	Page
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
	Claims     []ClaimView
	Runs       []RunRow
	RunsMore   []MoreLink
	Provenance string
	// Energy is the paper's energies re-derived from its traces; nil when the project holds
	// no traces of the paper.
	Energy *EnergyView
}

// BoardOption is a board class a connected runner offers.
type BoardOption struct {
	Class, Label, Runner, Reason string
	Available, NeedsFirmware     bool
	// FirmwareOnly: the board runs only with an uploaded firmware build chosen here.
	FirmwareOnly bool
	Intended     bool
}

// FirmwareOption is a firmware build that can be chosen for a board class.
type FirmwareOption struct {
	Digest, Label, BoardClass string
}

// ExperimentView is an experiment's page.
type ExperimentView struct {
	Page
	Ref, Paper, PaperTitle, Name, Title, Description string
	Kind, Method, ManifestYAML, ManifestID           string
	Iterations                                       int
	// Batch is a TLS matrix's handshakes per CPU batch (0 for other kinds): a re-run with
	// fewer iterations lowers it to them.
	Batch              int
	Cells              []string
	IntendedBoards     []string
	Boards             []BoardOption
	Firmware           []FirmwareOption
	SignedIn           bool
	Jobs               []JobRow
	Runs               []RunRow
	JobsMore, RunsMore []MoreLink
	// HeatMap is the latest run's matrix of a tls-matrix experiment; nil otherwise.
	HeatMap *HeatMap
	// Comparable says, before any run, which of the paper's figures a run on each board
	// could stand beside, and Claims which of the manifest's claims a run can judge.
	Comparable []ComparablePreview
	Claims     []ClaimPreview
}

// ComparablePreview is one board's answer: Comparable of Figures published numbers, and why
// not the rest.
type ComparablePreview struct {
	Board, Unit         string
	Comparable, Figures int
	Reasons             []string
}

// ClaimPreview is one claim the manifest checks: whether a run gives it a verdict, or why not.
type ClaimPreview struct {
	ID, Claim, Judged string
}

// JobView is a job's page: live progress and the log tail.
type JobView struct {
	Page
	ID                                         int64
	Experiment, Board, State, Runner, Firmware string
	Attempt                                    int
	Note, Error                                string
	RunID                                      int64
	// Detail is the progress in words (never "0 of 0 cells" before the runner reported).
	Detail, ETA, Elapsed string
	Percent              int
	// Steps are the states the job went through, each done, current, todo or failed.
	Steps []JobStep
	// Redirecting: the page goes on to the published run by itself.
	Redirecting bool
	// Log is the raw log; HumanLog the same with protocol frames as readable lines, when
	// Framed (the raw one then sits behind a toggle).
	Log      string
	HumanLog string
	Framed   bool
	// LogEnd and LogAttempt say where the page's log ends, so its script asks only for what
	// is new.
	LogEnd                     int64
	LogAttempt                 int
	Created, Started, Finished string
	Terminal                   bool
}

// JobStep is one state of a job's life.
type JobStep struct {
	Name, State, When string
}

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
}

// CellColumns says which optional columns the cells table shows: those some cell has.
type CellColumns struct {
	Keys, Heap, Stack, Energy bool
}

// Span is how many columns follow a row's status: the statistics and the optional columns.
func (c CellColumns) Span() int {
	n := 9
	for _, on := range []bool{c.Keys, c.Heap, c.Stack, c.Energy} {
		if on {
			n++
		}
	}
	return n
}

// KV is a labelled value.
type KV struct{ Key, Value string }

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
	// OwnManifest marks a run of a manifest that is not the catalogue's experiment of that
	// name: its experiment link is its own manifest.yaml, and its claims are not counted.
	OwnManifest bool
	// BindingNote says how the signed bundle is bound: "" for a bundle bound to the job it
	// answered, else why not (a community submission, a legacy v1 bundle).
	BindingNote                                             string
	Runner, Submitter, Signer, Bundle, BundleSize, Firmware string
	ManifestID, Started, Finished, Published, Duration      string
	Cells                                                   []CellRow
	Columns                                                 CellColumns
	Plot                                                    *plot.Figure
	PlotNote                                                string
	Environment                                             []KV
	Checks                                                  []string
	Dataset, Tolerance                                      string
	Comparison                                              []CompareRow
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
}

// RunTiming is a run's board class check (verified or declared, with why) and the timing
// context its host timings were taken in.
type RunTiming struct {
	ClassStatus, ClassNote string
	// Present is false for runs recorded before the timing context existed.
	Present bool
	// Scope says whose timings the context concerns (the host board's, or the host only).
	Scope           string
	Virtual, Loaded bool
	Warnings        []string
	Facts           []KV
}

func (t RunTiming) classNoteSuffix() string {
	if t.ClassNote == "" {
		return ""
	}
	return ": " + t.ClassNote
}

// LeaderRow is a board's standing in a leaderboard.
type LeaderRow struct {
	Rank      int
	Board     string
	Assurance Assurance
	// Implementation is the code the row's cells timed (digests abbreviated).
	Implementation         string
	Median, P25, P75, Unit string
	N, Runs                int
	RunID                  int64
}

// LeaderGroup is one ranking: one unit, one assurance kind, one timing method and one board
// class status, never mixed.
type LeaderGroup struct {
	Title, Unit, Method string
	// Declared marks a ranking of declared (unverified) board classes.
	Declared bool
	Rows     []LeaderRow
	Plot     *plot.Figure
}

// PublishedRow is a published reference number, labelled as such.
type PublishedRow struct {
	Paper, Board, Value, Unit, Stat, N, Scenario, Source, Library string
}

// Option is a select option.
type Option struct {
	Value, Label string
	Selected     bool
}

// LeaderboardView is the leaderboards page.
type LeaderboardView struct {
	Page
	Algorithms, Operations, Metrics []Option
	// Pairs offers every (algorithm, operation) that exists, grouped by algorithm.
	Pairs                        []OptGroup
	Algorithm, Operation, Metric string
	Groups                       []LeaderGroup
	Published                    []PublishedRow
	CSV, JSON                    string
}

// BoardRow is a board class on the boards page.
type BoardRow struct {
	Class, Name, CPU, Arch, Clock, Memory, Papers string
	Runs                                          int
	Runners                                       string
}

// Spec is the board's CPU, architecture, clock and memory, the ones the catalogue gives,
// comma-separated ("" when it gives none).
func (b BoardRow) Spec() string {
	var parts []string
	for _, p := range []string{b.CPU, b.Arch, b.Clock, b.Memory} {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// RunnerRow is a connected or known runner.
type RunnerRow struct {
	ID                                   int64
	Name, Fingerprint, Version, LastSeen string
	Boards                               string
	Connected                            bool
	// Revoked is when the administrator revoked the runner ("" if not); Released says it may
	// re-enrol once without its current token.
	Revoked  string
	Released bool
}

// BoardsView is the boards page.
type BoardsView struct {
	Page
	Boards  []BoardRow
	Runners []RunnerRow
}

// BoardView is one board class with its runs.
type BoardView struct {
	Page
	Board    BoardRow
	Runs     []RunRow
	RunsMore []MoreLink
}

// FirmwareRow is a stored firmware build.
type FirmwareRow struct {
	Digest, Filename, Size, BoardClass, Toolchain, Libraries, SourceURL, SourceCommit, UploadedBy, When string
}

// FirmwareView is the firmware page.
type FirmwareView struct {
	Page
	Builds   []FirmwareRow
	Classes  []string
	SignedIn bool
	MaxBytes string
}

// KeyRow is a registered key pair.
type KeyRow struct {
	ID                              int64
	Fingerprint, Label, Owner, When string
	// Revoked is when the keys were revoked ("" if not).
	Revoked string
}

// SubmitView is the submit page.
type SubmitView struct {
	Page
	SignedIn bool
	Keys     []KeyRow
	MaxBytes string
	// Challenge is a fresh proof-of-possession challenge for registering keys.
	Challenge string
	// Outcome is the result of the last submission, if any.
	Refused string
	RunID   int64
}

// SigninView is the sign-in page.
type SigninView struct {
	Page
	Next, Error string
}

// TokenRow is an enrolment token's record.
type TokenRow struct {
	ID          int64
	Label, When string
	Revoked     bool
	Runners     int
	// Uses is "k of n"; Expires a time or "never"; Unusable why it cannot enrol ("" if it can).
	Uses, Expires, Unusable string
}

// UserRow is an account.
type UserRow struct {
	ID               int64
	Name, Role, When string
	// Revoked is when the account was revoked ("" if not).
	Revoked string
}

// AdminView is the administration page.
type AdminView struct {
	Page
	// NewToken is a token just created, shown once; NewTokenKind says what it is for.
	NewToken, NewTokenKind string
	Tokens                 []TokenRow
	Users                  []UserRow
	Runners                []RunnerRow
	Keys                   []KeyRow
	// ListNote says which lists are at their bound and show only their newest rows.
	ListNote string
}

// ErrorView is an error page. Message is safe to show.
type ErrorView struct {
	Page
	Status  int
	Message string
}

// plural says "1 run" or "3 runs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// orDash shows an empty value as "–", so an unknown specification reads as unknown rather
// than as a blank or a bare unit.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "–"
	}
	return s
}

// originText names whose runs a tally counts.
func originText(origin string) string {
	switch origin {
	case "portal-runner":
		return "the portal's runners"
	case "community":
		return "community submissions"
	case "":
		return "not recorded"
	}
	return origin
}

// RunLogView is a run's log page: the bundle's log.txt as human lines, the raw log behind a
// toggle when it holds a board's frames.
type RunLogView struct {
	Page
	ID                int64
	Experiment, Board string
	// Log is the raw log and HumanLog its human reading (artifacts/logtext), both bounded to
	// the log's head, every summary line and its tail; Omitted counts the bytes left out.
	Log, HumanLog string
	Framed        bool
	Omitted       int64
	// Size is the whole log's size in words; Trouble what the link did to recover lost or
	// damaged lines, counted in the whole log ("" when nothing).
	Size, Trouble string
}
