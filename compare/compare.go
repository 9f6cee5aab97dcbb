// Package compare sets a run's measurements beside a paper's published numbers and checks
// the paper's claims on the board that ran. A measured cell is compared with a published one
// only when board class, unit, statistic and method allow it; otherwise the verdict is
// "not comparable" with every reason, and the ratio is shown for context only.
package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// Cell verdicts.
const (
	Reproduced    = "reproduced"
	Deviates      = "deviates"
	NotComparable = "not comparable"
)

// Claim verdicts.
const (
	Holds      = "holds"
	Fails      = "fails"
	Untestable = "untestable"
	// Inconclusive: the medians are out of the claimed order but the interquartile ranges
	// overlap, so the run cannot tell the two apart.
	Inconclusive = "inconclusive"
)

// Report is the comparison of one result with one reference dataset.
type Report struct {
	// Dataset is the reference dataset's id; Board the board class measured.
	Dataset string `json:"dataset"`
	Board   string `json:"board"`
	// Tolerance is the manifest's relative tolerance for "reproduced".
	Tolerance float64          `json:"tolerance"`
	Cells     []CellComparison `json:"cells"`
	Claims    []ClaimResult    `json:"claims"`
}

// CellComparison is one measured cell and every published number for the same algorithm
// and operation.
type CellComparison struct {
	Algorithm string           `json:"algorithm"`
	Operation string           `json:"operation"`
	Status    string           `json:"status"`
	Unit      string           `json:"unit"`
	Stats     *artifacts.Stats `json:"stats,omitempty"`
	// Rows are the published numbers; empty when the dataset has none (Note says so).
	Rows []RowComparison `json:"rows"`
	Note string          `json:"note,omitempty"`
}

// RowComparison is the verdict on one published number.
type RowComparison struct {
	Ref experiments.Row `json:"ref"`
	// Measured is the run's value for the same statistic, in the published unit; nil when the
	// units cannot be converted.
	Measured *float64 `json:"measured,omitempty"`
	// Ratio is measured / published; nil when not computable.
	Ratio   *float64 `json:"ratio,omitempty"`
	Verdict string   `json:"verdict"`
	// Reasons explain "not comparable" (board, unit, statistic, method, scenario differ).
	Reasons []string `json:"reasons,omitempty"`
	// Caveats qualify the published number itself (from the dataset's caveats).
	Caveats []string `json:"caveats,omitempty"`
}

// ClaimResult is a claim checked on the measured board.
type ClaimResult struct {
	Claim   experiments.Claim `json:"claim"`
	Verdict string            `json:"verdict"`
	Reason  string            `json:"reason,omitempty"`
	Checks  []CheckResult     `json:"checks"`
}

// CheckResult is one check of a claim.
type CheckResult struct {
	Check   experiments.Check `json:"check"`
	Verdict string            `json:"verdict"`
	Detail  string            `json:"detail"`
}

// Compare compares res (measured with manifest m on board class board) with paper's data.
func Compare(res *artifacts.Result, m *artifacts.Manifest, paper *experiments.Paper) Report {
	tol := m.Spec.Reference.Tolerance
	if tol == 0 {
		tol = artifacts.DefaultTolerance
	}
	rep := Report{Dataset: paper.ID, Board: res.Board, Tolerance: tol}
	for _, c := range res.Cells {
		cc := CellComparison{Algorithm: c.Algorithm, Operation: c.Operation, Status: c.Status, Unit: c.Unit, Stats: c.Stats}
		for _, row := range paper.Reference {
			if !rowMatches(row, c) {
				continue
			}
			rc := compareRow(row, c, res, m, tol)
			rc.Caveats = paper.CaveatsFor(row)
			cc.Rows = append(cc.Rows, rc)
		}
		if len(cc.Rows) == 0 {
			cc.Note = fmt.Sprintf("%s publishes no latency figure for %s %s", paper.ID, c.Algorithm, c.Operation)
			if paper.ID == "paper001" {
				cc.Note += " (its per-operation Tables 5, 7, 10 and 11 are missing from the reference data)"
			}
		}
		rep.Cells = append(rep.Cells, cc)
	}
	for _, id := range m.Spec.Reference.Claims {
		if cl, ok := paper.Claim(id); ok {
			rep.Claims = append(rep.Claims, CheckClaim(cl, res, m.Spec.Method))
		}
	}
	return rep
}

// rowMatches selects published latency figures for the cell's algorithm and operation.
func rowMatches(row experiments.Row, c artifacts.Cell) bool {
	if row.Metric != "latency" || row.Algorithm != c.Algorithm {
		return false
	}
	if c.Operation == artifacts.OpSequence {
		return strings.Contains(row.Operation, "then") // paper001's combined-sequence rows
	}
	return row.Operation == c.Operation
}

var timeUnits = map[string]float64{"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1}

// convert returns v in unit from, expressed in unit to, when both are time units.
func convert(v float64, from, to string) (float64, bool) {
	f, ok1 := timeUnits[from]
	t, ok2 := timeUnits[to]
	if !ok1 || !ok2 {
		return 0, false
	}
	return v * f / t, true
}

func compareRow(row experiments.Row, c artifacts.Cell, res *artifacts.Result, m *artifacts.Manifest, tol float64) RowComparison {
	rc := RowComparison{Ref: row, Verdict: NotComparable}
	if c.Status != artifacts.StatusOK || c.Stats == nil {
		rc.Reasons = append(rc.Reasons, "the cell was not measured ("+c.Status+")")
		return rc
	}
	stat, statName, bound := pick(c.Stats, row.Stat)
	if statName == "" {
		rc.Reasons = append(rc.Reasons, fmt.Sprintf("statistic differs: the paper gives %q", row.Stat))
	}
	if v, ok := convert(stat, c.Unit, row.Unit); ok && statName != "" {
		rc.Measured = &v
		r := v / row.Value
		rc.Ratio = &r
	} else if !ok {
		rc.Reasons = append(rc.Reasons, fmt.Sprintf("unit differs: measured %s, published %s", c.Unit, row.Unit))
	}
	switch {
	case row.Board == "":
		rc.Reasons = append(rc.Reasons, "the published number is not tied to a board")
	case row.Board != res.Board:
		rc.Reasons = append(rc.Reasons, fmt.Sprintf("board differs: measured on %s, published on %s", res.Board, row.Board))
	}
	cli := row.Scenario == "openssl_cli"
	switch {
	case cli && m.Spec.Method != artifacts.MethodProcessPerOperation:
		rc.Reasons = append(rc.Reasons, "method differs: the paper timed whole openssl processes, this run timed in-process")
	case !cli && m.Spec.Method == artifacts.MethodProcessPerOperation:
		rc.Reasons = append(rc.Reasons, "method differs: this run timed whole processes, the paper in-process")
	case !cli && row.Scenario != "" && m.Spec.Scenario != "" && row.Scenario != m.Spec.Scenario:
		rc.Reasons = append(rc.Reasons, fmt.Sprintf("scenario differs: measured %s, published %s", m.Spec.Scenario, row.Scenario))
	}
	if len(rc.Reasons) > 0 || rc.Ratio == nil {
		return rc
	}
	r := *rc.Ratio
	switch bound {
	case "lower":
		rc.Verdict = verdictIf(r >= 1-tol)
	case "upper":
		rc.Verdict = verdictIf(r <= 1+tol)
	default:
		rc.Verdict = verdictIf(math.Abs(r-1) <= tol)
	}
	return rc
}

func verdictIf(ok bool) string {
	if ok {
		return Reproduced
	}
	return Deviates
}

// pick returns the measured statistic matching a published one. "approx" and "value" figures
// are compared with the mean, since the papers report means; bounds say which side passes.
func pick(s *artifacts.Stats, stat string) (v float64, name, bound string) {
	switch stat {
	case "mean", "approx", "value":
		return s.Mean, "mean", ""
	case "median":
		return s.Median, "median", ""
	case "min":
		return s.Min, "min", ""
	case "max":
		return s.Max, "max", ""
	case "lower_bound":
		return s.Mean, "mean", "lower"
	case "upper_bound":
		return s.Mean, "mean", "upper"
	}
	return 0, "", ""
}

// CheckClaim tests a claim's checks on one result, measured with the given method.
func CheckClaim(cl experiments.Claim, res *artifacts.Result, method string) ClaimResult {
	cr := ClaimResult{Claim: cl, Reason: cl.Reason}
	if len(cl.Checks) == 0 {
		cr.Verdict = Untestable
		if cr.Reason == "" {
			cr.Reason = "the claim has no check a single run can test"
		}
		return cr
	}
	holds, fails, unsure := 0, 0, 0
	for _, ch := range cl.Checks {
		r := runCheck(ch, res, method)
		switch r.Verdict {
		case Holds:
			holds++
		case Fails:
			fails++
		case Inconclusive:
			unsure++
		}
		cr.Checks = append(cr.Checks, r)
	}
	switch {
	case fails > 0:
		cr.Verdict = Fails
	case unsure > 0:
		cr.Verdict = Inconclusive
	case holds > 0:
		cr.Verdict = Holds
		if holds < len(cl.Checks) {
			cr.Reason = strings.TrimSpace(fmt.Sprintf("%d of %d checks testable on this run. %s", holds, len(cl.Checks), cl.Reason))
		}
	default:
		cr.Verdict = Untestable
		if cr.Reason == "" {
			cr.Reason = "no check could be tested on this run"
		}
	}
	return cr
}

func runCheck(ch experiments.Check, res *artifacts.Result, method string) CheckResult {
	cr := CheckResult{Check: ch, Verdict: Untestable}
	if ch.Method != "" && ch.Method != method {
		cr.Detail = fmt.Sprintf("applies to %s runs; this run was %s", ch.Method, method)
		return cr
	}
	cells := ch.Cells
	if ch.Kind == "ratio" {
		cells = []string{ch.Num, ch.Den}
	}
	vals := make([]float64, len(cells))
	spread := make([][2]float64, len(cells))
	var missing []string
	units := ""
	for i, ref := range cells {
		v, q, unit, why := value(res, ref, ch.Metric)
		if why != "" {
			missing = append(missing, ref+": "+why)
		}
		vals[i], spread[i] = v, q
		units = unit
	}
	if len(missing) > 0 {
		cr.Detail = strings.Join(missing, "; ")
		return cr
	}
	if ch.Kind == "order" {
		var parts []string
		cr.Verdict = Holds
		for i, ref := range cells {
			parts = append(parts, fmt.Sprintf("%s %s", ref, fmtVal(vals[i], units)))
			if i == 0 || vals[i-1] < vals[i] {
				continue
			}
			// Out of order: a failure only when the interquartile ranges are apart.
			if spread[i][1] >= spread[i-1][0] && cr.Verdict == Holds {
				cr.Verdict = Inconclusive
			} else if spread[i][1] < spread[i-1][0] {
				cr.Verdict = Fails
			}
		}
		switch cr.Verdict {
		case Holds:
			cr.Detail = strings.Join(parts, " < ")
		case Inconclusive:
			cr.Detail = "medians out of order but the interquartile ranges overlap: " + strings.Join(parts, ", ")
		default:
			cr.Detail = "not increasing: " + strings.Join(parts, ", ")
		}
		return cr
	}
	r := vals[0] / vals[1]
	ok := true
	var want []string
	if ch.Expected > 0 {
		t := ch.Tolerance
		if t == 0 {
			t = artifacts.DefaultTolerance
		}
		ok = ok && math.Abs(r/ch.Expected-1) <= t
		want = append(want, fmt.Sprintf("%.3g ± %.0f%%", ch.Expected, t*100))
	}
	if ch.Min != nil {
		ok = ok && r >= *ch.Min
		want = append(want, fmt.Sprintf("≥ %.3g", *ch.Min))
	}
	if ch.Max != nil {
		ok = ok && r <= *ch.Max
		want = append(want, fmt.Sprintf("≤ %.3g", *ch.Max))
	}
	cr.Verdict = holdsIf(ok)
	cr.Detail = fmt.Sprintf("%s / %s = %.3f (claim: %s)", ch.Num, ch.Den, r, strings.Join(want, ", "))
	return cr
}

func holdsIf(ok bool) string {
	if ok {
		return Holds
	}
	return Fails
}

// value is a cell's median time (or median energy per operation), its interquartile range
// and its unit, or why there is none.
func value(res *artifacts.Result, ref, metric string) (float64, [2]float64, string, string) {
	var q [2]float64
	i := strings.LastIndexByte(ref, '/')
	if i < 0 {
		return 0, q, "", "malformed cell name"
	}
	alg, op := ref[:i], ref[i+1:]
	j := slices.IndexFunc(res.Cells, func(c artifacts.Cell) bool { return c.Algorithm == alg && c.Operation == op })
	if j < 0 {
		return 0, q, "", "not measured in this run"
	}
	c := res.Cells[j]
	if c.Status != artifacts.StatusOK || c.Stats == nil {
		return 0, q, "", "cell " + c.Status + ": " + c.Error
	}
	if metric == "energy" {
		if c.Energy == nil || c.Energy.JoulesPerOp == nil {
			why := "no energy figure"
			if c.Energy != nil && c.Energy.Absent != "" {
				why = "energy absent: " + c.Energy.Absent
			}
			return 0, q, "", why
		}
		e := c.Energy.JoulesPerOp
		return e.Median, [2]float64{e.P25, e.P75}, "J", ""
	}
	return c.Stats.Median, [2]float64{c.Stats.P25, c.Stats.P75}, c.Unit, ""
}

func fmtVal(v float64, unit string) string {
	return fmt.Sprintf("%.4g %s", v, unit)
}
