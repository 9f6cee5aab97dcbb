package rederive

import (
	"math"
	"pqrepro/artifacts"
	"slices"
)

// Tally counts a group of cells' verdicts.
type Tally struct {
	Cells, Rederived, Inside, Outside, NoCapture, NoTiming int
}

func (t *Tally) add(c Cell) {
	t.Cells++
	switch c.Verdict {
	case Inside:
		t.Inside++
	case Outside:
		t.Outside++
	case NoCapture:
		t.NoCapture++
	case NoTiming:
		t.NoTiming++
	}
	if c.Estimate != nil {
		t.Rederived++
	}
}

// Summary is what the re-derivation found, in numbers.
type Summary struct {
	// All counts every published energy; BySource the cells of each published table (a Table
	// 4 cell is also in Appendix A and the repository; "repository only" are the cells no
	// table of the paper prints).
	All      Tally
	BySource map[string]*Tally
	// OutsideByReason counts the cells outside their interval by reason.
	OutsideByReason map[string]int
	// Width* are the energy intervals' widths relative to their point (Hi-Lo)/Point over the
	// re-derived cells: smallest, median and largest.
	WidthMin, WidthMedian, WidthMax float64
	// FewOps counts cells whose load capture spans fewer than energy.MinBlocks operations.
	FewOps int
	// Disagreements counts cells whose repository powers disagree with their captures.
	Disagreements int
}

// SourceTable4, SourceAppendix and SourceRepoOnly key Summary.BySource.
const (
	SourceTable4   = "Table 4"
	SourceAppendix = "Appendix A"
	SourceRepoOnly = "repository only"
)

// Summarize counts the table's verdicts and measures its interval widths.
func (t *Table) Summarize() Summary {
	s := Summary{BySource: map[string]*Tally{SourceTable4: {}, SourceAppendix: {}, SourceRepoOnly: {}}, OutsideByReason: map[string]int{}}
	var widths []float64
	for _, c := range t.Cells {
		s.All.add(c)
		for _, src := range c.Sources {
			if src == SourceTable4 || src == SourceAppendix {
				s.BySource[src].add(c)
			}
		}
		if len(c.Sources) == 1 {
			s.BySource[SourceRepoOnly].add(c)
		}
		if c.Verdict == Outside {
			s.OutsideByReason[c.Reason]++
		}
		if c.Disagreement != "" {
			s.Disagreements++
		}
		if e := c.Estimate; e != nil {
			widths = append(widths, e.Energy.Width()/math.Abs(e.Energy.Point))
			if e.FewOps() {
				s.FewOps++
			}
		}
	}
	if len(widths) > 0 {
		slices.Sort(widths)
		s.WidthMin, s.WidthMax = widths[0], widths[len(widths)-1]
		s.WidthMedian = artifacts.Quantile(widths, 0.5)
	}
	return s
}
