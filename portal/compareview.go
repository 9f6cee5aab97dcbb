package portal

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// comparisonView splits a report's cells into the comparable rows (every published figure
// the run compares with, with its verdict) and one collapsed line per cell for the figures it
// cannot be compared with, with every distinct reason.
func comparisonView(rep compare.Report) ([]templates.CompareRow, []templates.NotComparableRow) {
	var rows []templates.CompareRow
	var other []templates.NotComparableRow
	for _, cc := range rep.Cells {
		name := cc.Name()
		measured := "–"
		if cc.Stats != nil {
			measured = "median " + human(cc.Stats.Median, cc.Unit)
		}
		if len(cc.Rows) == 0 {
			other = append(other, templates.NotComparableRow{Cell: name, Measured: measured, Reasons: []string{cc.Note}})
			continue
		}
		comparable, n := cc.Split()
		for _, rc := range comparable {
			row := templates.CompareRow{Algorithm: cc.Algorithm, Operation: cc.Operation, Measured: measured,
				Published: rc.Ref.Stat + " " + rc.Ref.Text + " " + rc.Ref.Unit, RefBoard: rc.Ref.Board, Source: rc.Ref.Source,
				Verdict: rc.Verdict, Reasons: strings.Join(append(append([]string{}, rc.Notes...), rc.Caveats...), "; ")}
			if cc.Variant != "" {
				row.Operation += " [" + cc.Variant + "]"
			}
			if rc.Measured != nil {
				row.Measured = inUnit(*rc.Measured, rc.Ref.Unit)
			}
			if rc.Ratio != nil {
				row.Ratio = fmt.Sprintf("%.3f", *rc.Ratio)
				if rc.RatioLo != nil && rc.RatioHi != nil {
					row.Ratio += fmt.Sprintf(" [%.3f, %.3f]", *rc.RatioLo, *rc.RatioHi)
				}
			}
			rows = append(rows, row)
		}
		if n > 0 {
			other = append(other, templates.NotComparableRow{Cell: name, Figures: n, Measured: measured, Reasons: compare.CollapseReasons(cc.Rows),
				Published: publishedFigures(cc.Rows)})
		}
	}
	return rows, other
}

// publishedFigures are the figures of rows that are not comparable, each as published with its
// board, source and reasons.
func publishedFigures(rows []compare.RowComparison) []templates.PublishedFigure {
	var out []templates.PublishedFigure
	for _, r := range rows {
		if r.Verdict != compare.NotComparable {
			continue
		}
		out = append(out, templates.PublishedFigure{Value: strings.TrimSpace(r.Ref.Stat + " " + r.Ref.Text + " " + r.Ref.Unit),
			Board: cmp.Or(r.Ref.Board, "a board the paper does not name"), Source: r.Ref.Source, Why: strings.Join(r.Reasons, "; ")})
	}
	return out
}

// claimResultRows shows a report's claim verdicts with the board, class status and
// assurance they were obtained on, and every check's bootstrap intervals.
func claimResultRows(rep compare.Report, origin string) []templates.ClaimResultRow {
	var out []templates.ClaimResultRow
	for _, cr := range rep.Claims {
		board, level := cr.Board, cr.Assurance
		if board == "" {
			board, level = rep.Board, rep.Assurance // reports published before verdicts carried them
		}
		row := templates.ClaimResultRow{ID: cr.Claim.ID, Claim: cr.Claim.Claim, Verdict: cr.Verdict, Reason: cr.Reason, Multiplicity: cr.Multiplicity,
			Board: board, ClassStatus: cr.ClassStatus, Assurance: assurance(board, string(level), origin)}
		for _, ch := range cr.Checks {
			cv := templates.CheckRow{Verdict: ch.Verdict, Detail: ch.Detail, Method: string(ch.Method), Resamples: ch.Resamples}
			for _, iv := range ch.Intervals {
				cv.Intervals = append(cv.Intervals, templates.IntervalRow{Ratio: iv.Num + " / " + iv.Den, Point: fmt.Sprintf("%.3f", iv.Point),
					Lo: fmt.Sprintf("%.3f", iv.Lo), Hi: fmt.Sprintf("%.3f", iv.Hi), Verdict: iv.Verdict, Seed: iv.Seed, ShortSeed: shortSeed(iv.Seed),
					Exact: iv.Exact, Note: iv.Note})
			}
			row.Checks = append(row.Checks, cv)
		}
		out = append(out, row)
	}
	return out
}

// claimViews builds a paper's claims with their verdict tallies, one per origin, board class,
// assurance level and class status (never one tally across host and emulated boards, or
// across the portal's runners and community submissions), and
// the latest verdicts.
func claimViews(p *experiments.Paper, verdicts []store.ClaimVerdict, tallies []store.ClaimTally) []templates.ClaimView {
	var out []templates.ClaimView
	for _, cl := range p.Claims {
		cv := templates.ClaimView{ID: cl.ID, Claim: cl.Claim, Published: cl.Published, Source: cl.Source, Scope: cl.Scope, Reason: cl.Reason, Checks: len(cl.Checks)}
		for _, t := range tallies {
			if t.ClaimID != cl.ID {
				continue
			}
			i := len(cv.Tallies) - 1
			if i < 0 || cv.Tallies[i].Origin != t.Origin || cv.Tallies[i].Board != t.BoardClass || cv.Tallies[i].Level != t.Level || cv.Tallies[i].ClassStatus != t.ClassStatus {
				cv.Tallies = append(cv.Tallies, templates.ClaimTally{Origin: t.Origin, Board: t.BoardClass, Level: t.Level, ClassStatus: t.ClassStatus})
				i++
			}
			ct := &cv.Tallies[i]
			switch t.Verdict {
			case compare.Holds:
				ct.Holds += t.Runs
			case compare.Fails:
				ct.Fails += t.Runs
			case compare.Inconclusive:
				ct.Inconclusive += t.Runs
			case compare.PartlyTestable:
				ct.PartlyTestable += t.Runs
			case compare.NotVerdicted:
				ct.NotVerdicted += t.Runs
			case compare.ByDesign:
				ct.ByDesign += t.Runs
			default:
				ct.Untestable += t.Runs
			}
		}
		for _, vd := range verdicts {
			if vd.ClaimID != cl.ID {
				continue
			}
			if len(cv.Verdicts) < 20 {
				board := vd.BoardClass
				if vd.ClassStatus == artifacts.ClassDeclared {
					board += " (declared)"
				}
				cv.Verdicts = append(cv.Verdicts, templates.VerdictRow{RunID: vd.RunID, Verdict: vd.Verdict, Reason: vd.Reason, Board: board,
					Assurance: assurance(vd.BoardClass, string(vd.Level), vd.Origin)})
			}
		}
		out = append(out, cv)
	}
	return out
}

// inTextFigures are a paper's published percentages and ratios (units % and x), the figures
// its text states beside the tables.
func inTextFigures(p *experiments.Paper) []templates.FigureRow {
	var out []templates.FigureRow
	for _, r := range p.Reference {
		if r.Unit != "%" && r.Unit != "x" {
			continue
		}
		unit := r.Unit
		if unit == "x" {
			unit = "×"
		}
		if r.N > 0 {
			unit += " (n=" + strconv.Itoa(r.N) + ")"
		}
		out = append(out, templates.FigureRow{Board: r.Board, Algorithm: r.Algorithm, Operation: r.Operation, Scenario: r.Scenario,
			Metric: metricName(r.Metric), Stat: r.Stat, Value: r.Text, Unit: unit, Source: r.Source, Note: r.Note})
	}
	return out
}

// metricName is a reference metric's key as words: the unit suffix the key carries (the
// figure's unit column says it) dropped and underscores as spaces, "latency_ratio_x" →
// "latency ratio".
func metricName(key string) string {
	for _, suffix := range []string{"_x", "_pct", "_percent"} {
		key = strings.TrimSuffix(key, suffix)
	}
	return strings.ReplaceAll(key, "_", " ")
}

// shortSeed is a seed's first 16 hex digits followed by an ellipsis.
func shortSeed(s string) string {
	if len(s) <= 16 {
		return s
	}
	return s[:16] + "…"
}
