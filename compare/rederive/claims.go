package rederive

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"pqrepro/compare"
	"pqrepro/energy"
	"pqrepro/experiments"
)

// ClaimResult is a claim checked on the paper's traces.
type ClaimResult struct {
	ID, Claim, Published, Source string
	// Verdict is compare's claim vocabulary: holds, fails, inconclusive, partly testable,
	// untestable, or not verdicted (a claim scoped as a caveat: its checks are shown, but the
	// numbers they compare are not what the claim is about).
	Verdict, Reason string
	Checks          []CheckResult
}

// CheckResult is one ratio of two re-derived cells.
type CheckResult struct {
	// Num and Den name the cells ("BOARD ALGORITHM/operation"); Metric is energy or
	// delta-power.
	Num, Den, Metric string
	// Ratio is the ratio of the two point estimates with its interval from the paired
	// bootstrap replicates (a board's one idle capture resampled once for both).
	Ratio energy.Interval
	// Band is the claim's allowed range in words.
	Band string
	// Verdict is holds (the interval inside the band), fails (outside it), inconclusive
	// (straddling a bound) or untestable (a cell not re-derived; Detail says which).
	Verdict, Detail string
	// Published is the paper's own figure for this ratio, if stated; PublishedVerdict is
	// Inside or Outside the ratio's interval (within the figure's rounding).
	Published, PublishedVerdict string
	Note                        string
}

// checkClaims tests every claim that has trace checks.
func checkClaims(p *experiments.Paper, tab *Table) []ClaimResult {
	cells := map[string]*Cell{}
	var boards []string
	for i := range tab.Cells {
		c := &tab.Cells[i]
		cells[c.Ref()] = c
		if c.Estimate != nil && !slices.Contains(boards, c.Board) {
			boards = append(boards, c.Board)
		}
	}
	var out []ClaimResult
	for _, cl := range p.Claims {
		if len(cl.Traces) == 0 {
			continue
		}
		cr := ClaimResult{ID: cl.ID, Claim: cl.Claim, Published: cl.Published, Source: cl.Source}
		n := map[string]int{}
		for _, tc := range cl.Traces {
			for _, r := range expand(tc, boards) {
				res := check(tc, r[0], r[1], cells)
				n[res.Verdict]++
				cr.Checks = append(cr.Checks, res)
			}
		}
		total := len(cr.Checks)
		switch {
		case cl.Scope == "caveat":
			cr.Verdict, cr.Reason = compare.NotVerdicted, "scope caveat: "+cl.Reason
		case n[compare.Fails] > 0:
			cr.Verdict = compare.Fails
		case n[compare.Inconclusive] > 0:
			cr.Verdict = compare.Inconclusive
		case n[compare.Untestable] == total:
			cr.Verdict, cr.Reason = compare.Untestable, "no check's cells were re-derived"
		case n[compare.Untestable] > 0:
			cr.Verdict = compare.PartlyTestable
			cr.Reason = fmt.Sprintf("%d of %d checks testable, and they hold", total-n[compare.Untestable], total)
		default:
			cr.Verdict = compare.Holds
		}
		if cr.Reason == "" && n[compare.Untestable] > 0 {
			cr.Reason = fmt.Sprintf("%d of %d checks untestable", n[compare.Untestable], total)
		}
		out = append(out, cr)
	}
	return out
}

// expand turns a check's cells into pairs, one per board for "*".
func expand(tc experiments.TraceCheck, all []string) [][2]string {
	nb, nc, _ := strings.Cut(tc.Num, " ")
	_, dc, _ := strings.Cut(tc.Den, " ")
	if nb != "*" {
		return [][2]string{{tc.Num, tc.Den}}
	}
	boards := tc.Boards
	if len(boards) == 0 {
		boards = all
	}
	var out [][2]string
	for _, b := range boards {
		out = append(out, [2]string{b + " " + nc, b + " " + dc})
	}
	return out
}

func check(tc experiments.TraceCheck, num, den string, cells map[string]*Cell) CheckResult {
	res := CheckResult{Num: num, Den: den, Metric: tc.Metric, Band: band(tc), Published: tc.Published, Note: tc.Note, Verdict: compare.Untestable}
	if res.Metric == "" {
		res.Metric = "energy"
	}
	var missing []string
	for _, ref := range []string{num, den} {
		c, ok := cells[ref]
		switch {
		case !ok:
			missing = append(missing, ref+": no published energy")
		case c.Estimate == nil:
			missing = append(missing, ref+": "+c.Verdict)
		}
	}
	if len(missing) > 0 {
		res.Detail = strings.Join(missing, "; ")
		return res
	}
	iv, err := energy.RatioInterval(*cells[num].Estimate, *cells[den].Estimate, res.Metric == "delta-power")
	if err != nil {
		res.Detail = err.Error()
		return res
	}
	res.Ratio = iv
	lo, hi := math.Inf(-1), math.Inf(1)
	if tc.Min != nil {
		lo = *tc.Min
	}
	if tc.Max != nil {
		hi = *tc.Max
	}
	switch {
	case iv.Lo >= lo && iv.Hi <= hi:
		res.Verdict = compare.Holds
	case iv.Hi < lo || iv.Lo > hi:
		res.Verdict = compare.Fails
	default:
		res.Verdict = compare.Inconclusive
	}
	if tc.Published != "" {
		v, _ := strconv.ParseFloat(tc.Published, 64)
		h := halfUnit(tc.Published)
		res.PublishedVerdict = Outside
		if v+h >= iv.Lo && v-h <= iv.Hi {
			res.PublishedVerdict = Inside
		}
	}
	return res
}

// band says a check's allowed range.
func band(tc experiments.TraceCheck) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case tc.Min != nil && tc.Max != nil:
		return "[" + f(*tc.Min) + ", " + f(*tc.Max) + "]"
	case tc.Min != nil:
		return "≥ " + f(*tc.Min)
	case tc.Max != nil:
		return "≤ " + f(*tc.Max)
	}
	return "any"
}
