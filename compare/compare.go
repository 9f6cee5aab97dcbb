// Package compare sets a run's measurements beside a paper's published numbers and checks
// the paper's claims on the board that ran. A measured cell is compared with a published one
// only when board class, unit, statistic and method allow it; otherwise the verdict is
// "not comparable" with every reason, and the ratio is shown for context only.
package compare

import (
	"encoding/json"
	"fmt"
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

// Claim and check verdicts.
const (
	// Holds: every check's bootstrap interval lies on the claimed side of 1 (an ordering) or
	// inside the claimed band (a ratio), and every check was testable.
	Holds = "holds"
	// Fails: some check's interval lies wholly on the wrong side of 1 or wholly outside the
	// band.
	Fails = "fails"
	// Inconclusive: no check fails, but some interval straddles 1 or a bound of the band, so
	// the run cannot tell.
	Inconclusive = "inconclusive"
	// PartlyTestable: the testable checks hold, but some checks could not be tested on this
	// run; the claim as a whole is not shown to hold.
	PartlyTestable = "partly testable"
	// Untestable: no check could be tested on this run (or the claim has none).
	Untestable = "untestable"
	// NotVerdicted: the claim is scoped (board-specific, cross-board, caveat, kind,
	// firmware), about a board this run is not (or a class only declared), or the run was
	// loaded: it is shown with its reason, and its checks where they ran, but given no
	// verdict by this run.
	NotVerdicted = "not verdicted"
	// ByDesign: the claim holds by construction in this project (a layout it chose, counts
	// its manifest sets); the checks show whether the implementation meets its design, and
	// the result is no evidence about the paper.
	ByDesign = "implementation property (by design)"
)

// Verdicts lists the claim verdicts in the order pages tally them.
func Verdicts() []string {
	return []string{Holds, Fails, Inconclusive, PartlyTestable, Untestable, NotVerdicted, ByDesign}
}

// Report is the comparison of one result with one reference dataset.
type Report struct {
	// Dataset is the reference dataset's id; Board the board class measured, Assurance the
	// run's assurance level and ClassStatus how the class was established (verified or
	// declared; empty when the bundle does not say).
	Dataset     string          `json:"dataset"`
	Board       string          `json:"board"`
	Assurance   artifacts.Level `json:"assurance,omitempty"`
	ClassStatus string          `json:"classStatus,omitempty"`
	// Tolerance is the manifest's relative tolerance for "reproduced".
	Tolerance float64          `json:"tolerance"`
	Cells     []CellComparison `json:"cells"`
	Claims    []ClaimResult    `json:"claims"`
}

// CellComparison is one measured cell and every published number for the same algorithm
// and operation.
type CellComparison struct {
	Algorithm string `json:"algorithm"`
	Operation string `json:"operation"`
	// Variant names a change from the manifest's method (see artifacts.Cell.Variant).
	Variant string           `json:"variant,omitempty"`
	Status  artifacts.Status `json:"status"`
	Unit    artifacts.Unit   `json:"unit"`
	Stats   *artifacts.Stats `json:"stats,omitempty"`
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
	Ratio *float64 `json:"ratio,omitempty"`
	// RatioLo and RatioHi bound the 95% bootstrap interval of the same statistic from the
	// run's samples, over the published value (Interval says how it was drawn); nil for a
	// statistic with no interval (min, max) or a report made before intervals.
	RatioLo  *float64 `json:"ratioLo,omitempty"`
	RatioHi  *float64 `json:"ratioHi,omitempty"`
	Interval string   `json:"interval,omitempty"`
	Verdict  string   `json:"verdict"`
	// Reasons explain "not comparable" (board, unit, statistic, method, scenario, key form,
	// variant differ).
	Reasons []string `json:"reasons,omitempty"`
	// Notes qualify a verdict on the measured side ("board class declared, not verified").
	Notes []string `json:"notes,omitempty"`
	// Caveats qualify the published number itself (from the dataset's caveats).
	Caveats []string `json:"caveats,omitempty"`
}

// ClaimResult is a claim checked on the measured board.
type ClaimResult struct {
	Claim   experiments.Claim `json:"claim"`
	Verdict string            `json:"verdict"`
	Reason  string            `json:"reason,omitempty"`
	Checks  []CheckResult     `json:"checks"`
	// Board is the board class the verdict was obtained on, ClassStatus how that class was
	// established (verified, declared, or empty when unknown), Assurance the run's level
	// (host, emulated, hardware) and Method its timing method.
	Board       string           `json:"board"`
	ClassStatus string           `json:"classStatus,omitempty"`
	Assurance   artifacts.Level  `json:"assurance"`
	Method      artifacts.Method `json:"method,omitempty"`
	// Role and Implementation say, for a tls-matrix run, which side of the handshake its
	// samples are (client or server) and what played that side (the board's own client or
	// server, or the engine on the host); empty for other kinds.
	Role           string `json:"role,omitempty"`
	Implementation string `json:"implementation,omitempty"`
	// Multiplicity says how the family-wise error of a claim decided from several intervals
	// is controlled; empty for a claim decided from one interval.
	Multiplicity string `json:"multiplicity,omitempty"`
}

// CheckResult is one check of a claim.
type CheckResult struct {
	Check   experiments.Check `json:"check"`
	Verdict string            `json:"verdict"`
	Detail  string            `json:"detail"`
	// Method, Resamples and Intervals record how a tested check was decided: one interval
	// for a ratio, one per consecutive pair for an ordering. Empty when untestable.
	Method    string     `json:"method,omitempty"`
	Resamples int        `json:"resamples,omitempty"`
	Intervals []Interval `json:"intervals,omitempty"`
	// Unit is the unit of the samples compared (ns, instructions, J, ns/B): a statistic's
	// unit, which may be derived from a counter's.
	Unit string `json:"unit,omitempty"`
}

// Run is what a comparison reads from a bundle: the result, every cell's raw samples and the
// board's identity.
type Run struct {
	Result  *artifacts.Result
	Samples artifacts.Samples
	// Board is environment.json's board identity; the zero value when the bundle has none.
	Board artifacts.BoardIdentity
	// Timing is environment.json's timing context (virtualization, other processes' load);
	// nil when the bundle has none.
	Timing *artifacts.TimingContext
	// Power is power.csv and Meter environment.json's meter, for a metered run's energy
	// claims; nil when the run had no meter.
	Power *artifacts.Power
	Meter *artifacts.MeterInfo
}

// RunFromBundle reads a bundle's result.json, samples.csv and environment.json. Errors name
// the file that could not be read.
func RunFromBundle(b *artifacts.Bundle) (Run, error) {
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		return Run{}, fmt.Errorf("read %s: %w", artifacts.FileResult, err)
	}
	s, err := artifacts.ParseSamples(b.Files[artifacts.FileSamples])
	if err != nil {
		return Run{}, fmt.Errorf("read samples: %w", err)
	}
	run := Run{Result: res, Samples: s}
	if data, ok := b.Files[artifacts.FileEnvironment]; ok {
		var env artifacts.Environment
		if err := json.Unmarshal(data, &env); err != nil {
			return Run{}, fmt.Errorf("read %s: %w", artifacts.FileEnvironment, err)
		}
		run.Board, run.Timing, run.Meter = env.Board, env.Timing, env.Meter
	}
	if data, ok := b.Files[artifacts.FilePower]; ok {
		if run.Power, err = artifacts.ParsePower(data); err != nil {
			return Run{}, err
		}
	}
	return run, nil
}

// Compare compares a run (measured with manifest m) with paper's data.
func Compare(run Run, m *artifacts.Manifest, paper *experiments.Paper) Report {
	res := run.Result
	tol := m.Spec.Reference.Tolerance
	if tol == 0 {
		tol = artifacts.DefaultTolerance
	}
	rep := Report{Dataset: paper.ID, Board: res.Board, Assurance: res.Assurance, ClassStatus: run.Board.ClassStatus, Tolerance: tol}
	for _, c := range res.Cells {
		cc := CellComparison{Algorithm: c.Algorithm, Operation: c.Operation, Variant: c.Variant, Status: c.Status, Unit: c.Unit, Stats: c.Stats}
		for _, row := range paper.Reference {
			if !rowMatches(row, c) {
				continue
			}
			rc := compareRow(row, c, run, m, tol)
			rc.Caveats = paper.CaveatsFor(row)
			cc.Rows = append(cc.Rows, rc)
		}
		if len(cc.Rows) == 0 {
			cc.Note = fmt.Sprintf("%s publishes no latency figure for %s %s", paper.ID, c.Algorithm, c.Operation)
			if other := otherLatencies(paper, c); other != "" {
				cc.Note = other
			}
			if c.Operation == artifacts.OpHandshake {
				cc.Note = fmt.Sprintf("%s publishes no latency figure for %s: its figures are relative (41%% faster on the Pico W, 8.9x on the ESP32) and are checked as claims", paper.ID, c.Algorithm)
			}
			if paper.ID == "paper001" {
				cc.Note += " (its per-operation Tables 5, 7, 10 and 11 are missing from the reference data)"
			}
		}
		rep.Cells = append(rep.Cells, cc)
	}
	for _, id := range m.Spec.Reference.Claims {
		if cl, ok := paper.Claim(id); ok {
			cr := CheckClaim(cl, run, m.Spec.Method)
			withBasis(&cr, run, paper)
			rep.Claims = append(rep.Claims, cr)
		}
	}
	return rep
}

// otherLatencies says which latency figures a paper publishes for the cell's algorithm when none
// is of the cell's operation (paper003's handshake medians beside a session cell): they exist,
// but are another operation or quantity, on the paper's boards. "" when there are none.
func otherLatencies(paper *experiments.Paper, c artifacts.Cell) string {
	var figs []string
	var ops []string
	for _, row := range paper.Reference {
		if row.Metric != "latency" || row.Algorithm != c.Algorithm {
			continue
		}
		figs = append(figs, fmt.Sprintf("%s %s %s on %s", row.Stat, row.Text, row.Unit, cmpOr(row.Board, "an unnamed board")))
		if !slices.Contains(ops, row.Operation) {
			ops = append(ops, row.Operation)
		}
	}
	if len(figs) == 0 {
		return ""
	}
	return fmt.Sprintf("%s's latency figures for %s are of %s (%s): another operation or quantity than this cell's %s, on the paper's boards, so none stands beside it",
		paper.ID, c.Algorithm, strings.Join(ops, ", "), strings.Join(figs, "; "), c.Operation)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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

// Reasons a published openssl_cli number is not this run's method.
const (
	reasonProcessVsCLI = "method differs: this run timed pqrepro's own binary one process per operation; the paper timed openssl commands (two per key generation)"
	reasonInProcVsCLI  = "method differs: this run timed in-process calls; the paper timed openssl commands (two per key generation)"
	reasonCLIVsInProc  = "method differs: this run timed openssl commands, the paper in-process"
	reasonProcVsInProc = "method differs: this run timed whole processes, the paper in-process"
	reasonParsedKeys   = "the run reused parsed keys; liboqs and openssl start from encoded keys"
	noteDeclaredClass  = "board class declared, not verified"
)

func compareRow(row experiments.Row, c artifacts.Cell, run Run, m *artifacts.Manifest, tol float64) RowComparison {
	rc := RowComparison{Ref: row, Verdict: NotComparable}
	if c.Status != artifacts.StatusOK || c.Stats == nil {
		rc.Reasons = append(rc.Reasons, "the cell was not measured ("+string(c.Status)+")")
		return rc
	}
	stat, statName, bound := pick(c.Stats, row.Stat)
	if v, ok := convert(stat, string(c.Unit), row.Unit); ok && statName != "" {
		rc.Measured = &v
		r := v / row.Value
		rc.Ratio = &r
	}
	rc.Reasons = append(rc.Reasons, rowReasons(row, c, run.Result.Board, m)...)
	if len(rc.Reasons) > 0 || rc.Ratio == nil {
		return rc
	}
	if run.Board.ClassStatus == artifacts.ClassDeclared {
		rc.Notes = append(rc.Notes, noteDeclaredClass)
	}
	if c.Stats.Mean < c.Stats.P25 || c.Stats.Mean > c.Stats.P75 {
		rc.Notes = append(rc.Notes, fmt.Sprintf("the run's mean %s lies outside its own p25-p75 [%s, %s]: a few slow samples pull it", fmtTime(c.Stats.Mean, c.Unit), fmtTime(c.Stats.P25, c.Unit), fmtTime(c.Stats.P75, c.Unit)))
	}
	r := *rc.Ratio
	lo, hi := r, r
	if l, h, how, ok := statInterval(run, c, statName, row.Value, string(c.Unit), row.Unit); ok {
		lo, hi = l, h
		rc.RatioLo, rc.RatioHi, rc.Interval = &l, &h, how
	}
	switch bound {
	case "lower":
		rc.Verdict = judgeCell(lo >= 1-tol, hi < 1-tol)
	case "upper":
		rc.Verdict = judgeCell(hi <= 1+tol, lo > 1+tol)
	default:
		rc.Verdict = judgeCell(lo >= 1-tol && hi <= 1+tol, hi < 1-tol || lo > 1+tol)
	}
	return rc
}

// judgeCell is a published figure's verdict from the run's interval of the same statistic:
// reproduced when it lies within the tolerance, deviates when wholly outside, inconclusive
// when it straddles a bound.
func judgeCell(inside, outside bool) string {
	switch {
	case inside:
		return Reproduced
	case outside:
		return Deviates
	}
	return Inconclusive
}

// statInterval is the 95% bootstrap interval of the run's statistic (mean or median) of cell
// c, in the published unit, over the published value: over the cell's rounds in moving blocks
// when it was measured in rounds, else its samples resampled. ok is false for min and max, or
// without samples.
func statInterval(run Run, c artifacts.Cell, statName string, published float64, from, to string) (lo, hi float64, how string, ok bool) {
	var stat func(sorted []float64) float64
	switch statName {
	case "mean":
		stat = func(s []float64) float64 {
			var sum float64
			for _, v := range s {
				sum += v
			}
			return sum / float64(len(s))
		}
	case "median":
		stat = sortedMedian
	default:
		return 0, 0, "", false
	}
	k := artifacts.KeyOf(c)
	vals := run.Samples.Values[k]
	if len(vals) < MinSamples || !(published > 0) {
		return 0, 0, "", false
	}
	f, okc := convert(1, from, to)
	if !okc {
		return 0, 0, "", false
	}
	seed := BootstrapSeed(run.Result.ManifestID, "published/"+statName, k.Algorithm+"/"+k.Operation+"/"+k.Variant, "")
	var reps []float64
	how = "percentile bootstrap of the run's " + statName
	if rs := run.Samples.Rounds[k]; len(rs) > 0 {
		g := groupRounds([][]float64{vals}, [][]int{rs})
		if len(g.rounds) >= MinRounds {
			_, reps = g.blockBootstrap(seed, func(s [][]float64) float64 { return stat(s[0]) })
			how = "moving-block bootstrap over rounds of the run's " + statName
		}
	}
	if reps == nil {
		_, reps = bootstrap([][]float64{vals}, seed, func(s [][]float64) float64 { return stat(s[0]) })
	}
	l, h := percentiles(reps)
	return l * f / published, h * f / published, how + ", 95%", true
}

// rowReasons are the reasons a published row cannot stand beside cell c measured on board
// under manifest m, from what they are rather than from the numbers: the statistic, the unit,
// the board, the method and scenario, a variant, the key form. Compare and Preview share them.
func rowReasons(row experiments.Row, c artifacts.Cell, board string, m *artifacts.Manifest) []string {
	var reasons []string
	if _, statName, _ := pick(&artifacts.Stats{}, row.Stat); statName == "" {
		reasons = append(reasons, fmt.Sprintf("statistic differs: the paper gives %q", row.Stat))
	}
	if _, ok := convert(1, string(c.Unit), row.Unit); !ok {
		reasons = append(reasons, fmt.Sprintf("unit differs: measured %s, published %s", c.Unit, row.Unit))
	}
	switch {
	case row.Board == "":
		reasons = append(reasons, "the published number is not tied to a board")
	case row.Board != board:
		reasons = append(reasons, fmt.Sprintf("board differs: measured on %s, published on %s", board, row.Board))
	}
	cli := row.Scenario == "openssl_cli"
	method := m.Spec.Method
	switch {
	case cli && method == artifacts.MethodProcessPerOperation:
		reasons = append(reasons, reasonProcessVsCLI)
	case cli && method != artifacts.MethodOpenSSLCLI:
		reasons = append(reasons, reasonInProcVsCLI)
	case !cli && method == artifacts.MethodOpenSSLCLI:
		reasons = append(reasons, reasonCLIVsInProc)
	case !cli && method == artifacts.MethodProcessPerOperation:
		reasons = append(reasons, reasonProcVsInProc)
	case !cli && row.Scenario != "" && m.Spec.Scenario != "" && row.Scenario != m.Spec.Scenario:
		reasons = append(reasons, fmt.Sprintf("scenario differs: measured %s, published %s", m.Spec.Scenario, row.Scenario))
	}
	if c.Variant != "" {
		reasons = append(reasons, "not the paper's method: "+c.Variant)
	}
	if c.TLS != nil && c.TLS.Server != nil {
		reasons = append(reasons, outsideReason(c.TLS.Server))
	}
	if c.Keys == artifacts.KeysParsed && startsFromEncodedKeys(row.Library) {
		reasons = append(reasons, reasonParsedKeys)
	}
	if im := c.Implementation; im != nil && row.Library != "" && !sameImplementation(im.Name, row.Library) {
		reasons = append(reasons, fmt.Sprintf("implementation differs: measured %s, published %s", artifacts.ShortImplementation(im.Key()), row.Library))
	}
	return reasons
}

// sameImplementation reports whether a cell's implementation (its name) is the library a
// published row names: the same project, whatever its version ("openssl" and "OpenSSL 3.5
// (openssl CLI)" are; circl and liboqs, or the project's firmware and a board SDK whose
// implementation the paper does not name, are not). A re-run of the same library at another
// version is a reproduction; another library is another quantity.
func sameImplementation(name, library string) bool {
	family := func(s string) string {
		s = strings.ToLower(strings.TrimSpace(s))
		s = s[strings.LastIndexByte(s, '/')+1:] // github.com/cloudflare/circl is circl
		if i := strings.IndexAny(s, " (,"); i >= 0 {
			s = s[:i]
		}
		return s
	}
	a, b := family(name), family(library)
	return a != "" && a == b
}

// startsFromEncodedKeys reports whether a published row's library starts every operation
// from the encoded key (liboqs and the openssl command line do).
func startsFromEncodedKeys(library string) bool {
	l := strings.ToLower(library)
	return strings.Contains(l, "liboqs") || strings.Contains(l, "openssl")
}

// CollapseReasons summarises why a cell's published figures are not comparable, in one list:
// every distinct reason once, in first-seen order, with the "board differs" reasons merged
// into one that lists the published boards.
func CollapseReasons(rows []RowComparison) []string {
	var out []string
	seen := map[string]bool{}
	var boards []string
	boardAt, measuredOn := -1, ""
	for _, r := range rows {
		if r.Verdict != NotComparable {
			continue
		}
		for _, why := range r.Reasons {
			if rest, ok := strings.CutPrefix(why, "board differs: measured on "); ok {
				on, _, _ := strings.Cut(rest, ", published on ")
				measuredOn = on
				if boardAt < 0 {
					boardAt = len(out)
					out = append(out, "")
				}
				if !slices.Contains(boards, r.Ref.Board) {
					boards = append(boards, r.Ref.Board)
				}
				continue
			}
			if !seen[why] {
				seen[why] = true
				out = append(out, why)
			}
		}
	}
	if boardAt >= 0 {
		out[boardAt] = fmt.Sprintf("board differs: measured on %s, published on %s", measuredOn, strings.Join(boards, ", "))
	}
	return out
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

// Name is the cell as shown beside its figures: "ALG op", with its variant in brackets.
func (cc CellComparison) Name() string {
	name := cc.Algorithm + " " + cc.Operation
	if cc.Variant != "" {
		name += " [" + cc.Variant + "]"
	}
	return name
}

// Split returns the published figures the cell is compared with (any verdict but not
// comparable), in order, and how many it cannot be compared with (CollapseReasons says why).
func (cc CellComparison) Split() (comparable []RowComparison, notComparable int) {
	for _, r := range cc.Rows {
		if r.Verdict == NotComparable {
			notComparable++
			continue
		}
		comparable = append(comparable, r)
	}
	return comparable, notComparable
}
