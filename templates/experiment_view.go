package templates

import (
	"strconv"
	"strings"
)

// batchNote completes the re-run form's iterations label for a TLS matrix whose CPU batch
// is batch handshakes ("" for other kinds): the iteration override lowers the batch, as
// pqrepro run does (artifacts.Manifest.OverrideIterations).
func batchNote(batch int) string {
	if batch <= 1 {
		return ""
	}
	return "; below " + strconv.Itoa(batch) + " iterations the CPU batch of " + strconv.Itoa(batch) + " handshakes is lowered to them"
}

// Note is the one note a board option carries: why it cannot run (which is all a reader needs
// then), or else that it needs a firmware build, and whether it is one of the manifest's boards.
func (b BoardOption) Note() string {
	var notes []string
	switch {
	case b.FirmwareOnly:
		notes = append(notes, "runs only with an uploaded firmware build chosen below ("+b.Reason+")")
	case !b.Available:
		return "unavailable: " + b.Reason
	case b.NeedsFirmware:
		notes = append(notes, "takes a firmware build (the runner's own build unless you choose one)")
	}
	if !b.Intended {
		notes = append(notes, "not one of the manifest's boards: results will not be comparable")
	}
	return strings.Join(notes, "; ")
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
	// Rerun is the re-run form as it was posted when it was refused (zero on a fresh page).
	Rerun RerunForm
}

// boardChecked says whether the re-run form's board option i is selected: the posted board,
// else the first option when it is available.
func (v ExperimentView) boardChecked(i int) bool {
	if v.Rerun.Board != "" {
		return v.Boards[i].Class == v.Rerun.Board
	}
	return i == 0 && v.Boards[i].Available
}

// iterationsValue is the re-run form's iterations: as posted, else the manifest's.
func (v ExperimentView) iterationsValue() string {
	if v.Rerun.Error.Msg != "" {
		return v.Rerun.Iterations
	}
	return strconv.Itoa(v.Iterations)
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
