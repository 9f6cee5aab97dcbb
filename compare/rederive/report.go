package rederive

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"pqrepro/energy"
)

// Caveat is what every re-derived interval leaves out, said wherever one is shown.
const Caveat = "Each interval is the sampling uncertainty of the two capture means given the paper's time per operation (which has no spread of its own); it does not cover drift between the idle and the load capture, taken minutes apart, nor where in an operation a capture that spans only a few operations started and stopped."

// Note is a cell's short remark: why it is outside, why it was not re-derived, or what to
// keep in mind inside.
func (c Cell) Note() string {
	var n []string
	switch c.Verdict {
	case Outside:
		n = append(n, c.Reason)
	case NoCapture, NoTiming:
		n = append(n, c.Detail)
	case Inside:
		if c.Disagreement != "" {
			n = append(n, "published from other powers than the captures', inside anyway")
		}
	}
	if e := c.Estimate; e != nil && e.FewOps() {
		n = append(n, fmt.Sprintf("the load capture spans %s operations", ops(e.LoadOps)))
	}
	return strings.Join(n, "; ")
}

func ops(v float64) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// Sig formats v with n significant digits in positional notation.
func Sig(v float64, n int) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	d := n - 1 - int(math.Floor(math.Log10(math.Abs(v))))
	return strconv.FormatFloat(v, 'f', max(d, 0), 64)
}

// Percent formats a fraction as a percentage with two significant digits.
func Percent(f float64) string { return Sig(100*f, 2) + "%" }

// Write prints the table for a terminal: how the numbers were made, every cell of the boards
// named (all when none), the summary, the cells outside their interval with the reason, the
// claims checked on the traces and the unused captures.
func (t *Table) Write(w io.Writer, boards ...string) error {
	fmt.Fprintf(w, "%s: published energies %s (the authors' FNB58 captures; nothing re-run).\n", t.Paper, Label)
	fmt.Fprintf(w, "E_op = (P_load - P_idle) x T_op. 95%% intervals: %s, %d replicates, seed %s.\n", t.EnergyMethod, t.Replicates, t.Seed)
	fmt.Fprintln(w, Caveat)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BOARD\tALGORITHM\tOP\tPUBLISHED J\tIN\tRE-DERIVED J\t95% INTERVAL\tWIDTH\tVERDICT\tNOTE")
	for _, c := range t.Cells {
		if len(boards) > 0 && !contains(boards, c.Board) {
			continue
		}
		e := "-"
		iv, width := "-", "-"
		if c.Estimate != nil {
			e = Sig(c.Estimate.Energy.Point, 5)
			iv = "[" + Sig(c.Estimate.Energy.Lo, 4) + ", " + Sig(c.Estimate.Energy.Hi, 4) + "]"
			width = Percent(c.Estimate.Energy.Width() / c.Estimate.Energy.Point)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Board, c.Algorithm, c.Operation, c.Published.Text,
			sourceShort(c.Sources), e, iv, width, c.Verdict, c.Note())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := t.Summarize()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d published energies: %d re-derived, %d inside their interval, %d outside, %d without a capture, %d without a timing.\n",
		s.All.Cells, s.All.Rederived, s.All.Inside, s.All.Outside, s.All.NoCapture, s.All.NoTiming)
	for _, src := range []string{SourceTable4, SourceAppendix, SourceRepoOnly} {
		b := s.BySource[src]
		fmt.Fprintf(w, "  %s: %d cells, %d re-derived, %d inside, %d outside\n", src, b.Cells, b.Rederived, b.Inside, b.Outside)
	}
	if s.All.Rederived > 0 {
		fmt.Fprintf(w, "Interval widths, relative to the energy: smallest %s, median %s, largest %s.\n", Percent(s.WidthMin), Percent(s.WidthMedian), Percent(s.WidthMax))
	}
	if s.FewOps > 0 {
		fmt.Fprintf(w, "%d cells' load capture spans fewer than %d operations: its mean depends on where the capture cut the operations, which the interval does not cover.\n", s.FewOps, energy.MinBlocks)
	}
	if s.Disagreements > 0 {
		fmt.Fprintf(w, "%d published energies were computed from powers that are not their captures' means (PROVENANCE caveat 4); each interval is from the captures.\n", s.Disagreements)
	}
	if s.All.Outside > 0 {
		fmt.Fprintln(w, "\nOutside their interval:")
		for _, c := range t.Cells {
			if c.Verdict == Outside && (len(boards) == 0 || contains(boards, c.Board)) {
				fmt.Fprintf(w, "  %s: %s: %s\n", c.Ref(), c.Reason, c.Detail)
			}
		}
	}
	if len(t.Claims) > 0 {
		fmt.Fprintf(w, "\nClaims checked on the energies %s:\n", Label)
		for _, cl := range t.Claims {
			fmt.Fprintf(w, "  %s %s: %s\n", cl.ID, cl.Verdict, cl.Claim)
			if cl.Reason != "" {
				fmt.Fprintf(w, "      %s\n", cl.Reason)
			}
			for _, ch := range cl.Checks {
				fmt.Fprintf(w, "      %s\n", ch.Line())
			}
		}
	}
	if len(t.Unused) > 0 {
		fmt.Fprintf(w, "\n%s\n", t.Unused[0])
	}
	return nil
}

// Line says a check in one line.
func (ch CheckResult) Line() string {
	what := "energy"
	if ch.Metric == "delta-power" {
		what = "power above idle"
	}
	if ch.Detail != "" {
		return fmt.Sprintf("%s: %s / %s (%s): %s", ch.Verdict, ch.Num, ch.Den, what, ch.Detail)
	}
	s := fmt.Sprintf("%s: %s / %s (%s) = %s [%s, %s], claim %s", ch.Verdict, ch.Num, ch.Den, what,
		Sig(ch.Ratio.Point, 4), Sig(ch.Ratio.Lo, 4), Sig(ch.Ratio.Hi, 4), ch.Band)
	if ch.Published != "" {
		s += fmt.Sprintf("; the paper's %s is %s", ch.Published, ch.PublishedVerdict)
	}
	return s
}

func sourceShort(s []string) string {
	switch {
	case contains(s, SourceTable4):
		return "T4"
	case contains(s, SourceAppendix):
		return "App"
	}
	return "repo"
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
