package compare

import (
	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// PreviewTarget is a board a manifest could run on, with the unit its samples would have
// (ns for the host and Linux boards, instructions for an emulated board).
type PreviewTarget struct {
	Board string
	Unit  artifacts.Unit
}

// PreviewBoard says, before any run, how many of the paper's published figures for the
// manifest's cells a run on Board could stand beside, and why the others could not.
type PreviewBoard struct {
	Board               string
	Comparable, Figures int
	// Reasons are the distinct reasons the other figures are not comparable, as Compare
	// would give them, collapsed as on a run's page.
	Reasons []string
}

// Preview applies Compare's rules (rowReasons) to the manifest's cells as they would be
// measured on each target: only the measurement is missing, so every figure a preview calls
// comparable gets a verdict once a run exists, and no other does.
func Preview(m *artifacts.Manifest, paper *experiments.Paper, targets []PreviewTarget) []PreviewBoard {
	var out []PreviewBoard
	for _, t := range targets {
		pb := PreviewBoard{Board: t.Board}
		var rows []RowComparison
		for _, ref := range m.Cells() {
			c := artifacts.Cell{Algorithm: ref.Algorithm, Operation: ref.Operation, Unit: t.Unit, Status: artifacts.StatusOK}
			if ref.Operation != artifacts.OpKeygen {
				c.Keys = m.Spec.Keys
			}
			for _, row := range paper.Reference {
				if !rowMatches(row, c) {
					continue
				}
				pb.Figures++
				if r := rowReasons(row, c, t.Board, m); len(r) > 0 {
					rows = append(rows, RowComparison{Ref: row, Verdict: NotComparable, Reasons: r})
				} else {
					pb.Comparable++
				}
			}
		}
		pb.Reasons = CollapseReasons(rows)
		out = append(out, pb)
	}
	return out
}
