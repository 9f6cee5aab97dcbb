package templates

import "strings"

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
