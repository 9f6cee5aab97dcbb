package portal

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/portal/fault"
	"pqrepro/portal/plot"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// PairCodeVersion names the code that computes a pair of runs' intervals: a stored pair
// report of another version is not read (it is computed again and kept beside the old one).
//
// pair-v3: cells of different key forms or message sizes are not compared; different
// implementations are, and each pair says whose they are.
var PairCodeVersion = fmt.Sprintf("pair-v3 %s, %d resamples, %.0f%%, minimum effect %.0f%%", compare.MethodRuns, compare.Resamples, compare.Confidence*100, MinEffect*100)

// MinEffect is the smallest difference /compare calls beyond the noise in timed cells: two
// runs cannot show the variance between runs (a neighbour's load, a frequency step, the
// layout of one process against another), and identical host runs of this project have
// differed by more than their own intervals. A ratio whose interval lies beyond 1 but within
// ±MinEffect is "within the minimum effect". Emulated instruction counts repeat exactly, so
// any difference in them is called.
const MinEffect = 0.10

// PairNoise is what /compare says of its intervals.
var PairNoise = fmt.Sprintf("Each run is resampled on its own (its rounds in moving blocks where it ran in rounds, so its drift is in the interval); the variance between runs cannot be estimated from two runs, so a timed difference is called only beyond ±%.0f%% and never for a run during which other processes used the CPU. Emulated instruction counts repeat exactly and are called at any difference.", MinEffect*100)

// PairReport is run B against run A, cell by cell: what /compare shows, computed once from
// both bundles' samples and stored (run_pair_intervals), never per request.
type PairReport struct {
	Version string     `json:"version"`
	A       int64      `json:"a"`
	B       int64      `json:"b"`
	Cells   []PairCell `json:"cells"`
}

// PairCell is one cell (algorithm, operation, variant) in A and B. Comparable cells carry
// the ratio of B's median to A's with its bootstrap interval; the others say why not.
type PairCell struct {
	Algorithm string         `json:"algorithm"`
	Operation string         `json:"operation"`
	Variant   string         `json:"variant,omitempty"`
	Unit      artifacts.Unit `json:"unit,omitempty"`
	// A and B summarise each run's samples (nil when the cell is missing or has none).
	A *Summary `json:"a,omitempty"`
	B *Summary `json:"b,omitempty"`
	// Reason says why the cell is not comparable; empty when it is.
	Reason string `json:"reason,omitempty"`
	// Note says what differs between two comparable cells: their implementations (the ratio
	// then compares two implementations, as well as two runs).
	Note  string  `json:"note,omitempty"`
	Point float64 `json:"point,omitempty"`
	Lo    float64 `json:"lo,omitempty"`
	Hi    float64 `json:"hi,omitempty"`
	Seed  string  `json:"seed,omitempty"`
	// Verdict is higher, lower (the interval excludes 1) or within the noise.
	Verdict string `json:"verdict,omitempty"`
}

// Summary is a cell's samples as a box plot: quartiles, 1.5×IQR whiskers, outliers (at most
// plot.MaxOutlierDots kept, Outliers counts them all) and n.
type Summary struct {
	N    int            `json:"n"`
	Unit artifacts.Unit `json:"unit"`
	// Box is the whisker's low end, p25, median, p75 and the whisker's high end.
	Box          [5]float64 `json:"box"`
	Outliers     []float64  `json:"outliers,omitempty"`
	OutlierCount int        `json:"outlierCount,omitempty"`
}

// Pair verdicts.
const (
	PairHigher = "higher, beyond the noise"
	PairLower  = "lower, beyond the noise"
	PairWithin = "within the noise"
	// PairSmall: the interval excludes 1 but the difference is within MinEffect.
	PairSmall = "within the minimum effect"
	// PairLoaded: a run was loaded (other processes used the CPU); no difference is called.
	PairLoaded = "not called: a run was loaded"
)

// runLoaded reports whether a stored run's environment says other processes used the CPU
// above the runner's threshold while it measured.
func runLoaded(r store.Run) bool {
	var env artifacts.Environment
	if json.Unmarshal([]byte(r.Environment), &env) != nil || env.Timing == nil || env.Timing.External == nil {
		return false
	}
	return r.Level == artifacts.AssuranceHost && env.Timing.External.Exceeded
}

func (c PairCell) name() string {
	n := c.Algorithm + " " + c.Operation
	if c.Variant != "" {
		n += " [" + c.Variant + "]"
	}
	return n
}

// loadRun reads a run's stored bundle for its result and samples.
func (s *Server) loadRun(ctx context.Context, r store.Run) (compare.Run, error) {
	rc, err := s.blobs.Open(ctx, r.Bundle)
	if err != nil {
		return compare.Run{}, fmt.Errorf("open bundle of run %d: %w", r.ID, err)
	}
	defer rc.Close()
	b, err := artifacts.ReadTarGz(rc, s.cfg.MaxBundleBytes)
	if err != nil {
		return compare.Run{}, fmt.Errorf("read bundle of run %d: %w", r.ID, err)
	}
	run, err := compare.RunFromBundle(b)
	if err != nil {
		return compare.Run{}, fmt.Errorf("run %d: %w", r.ID, err)
	}
	return run, nil
}

func summarise(samples []float64, unit artifacts.Unit) *Summary {
	row, ok := plot.Tukey("", samples)
	if !ok {
		return nil
	}
	sm := &Summary{N: len(samples), Unit: unit, Box: [5]float64{row.Min, row.P25, row.Median, row.P75, row.Max}, OutlierCount: len(row.Outliers)}
	sm.Outliers = row.Outliers[:min(len(row.Outliers), plot.MaxOutlierDots)]
	return sm
}

// computePair compares run b with run a cell by cell. Cells compare when both ran them ok,
// in the same unit and timing method, with the same key form and message size, with at least
// compare.MinSamples samples each; qa and qb are the runs' stored cells (their
// implementations and message sizes as the portal filed them; nil when not at hand), and a
// pair of cells of two implementations says so.
func computePair(a, b store.Run, ra, rb compare.Run, qa, qb []artifacts.Cell) PairReport {
	rep := PairReport{Version: PairCodeVersion, A: a.ID, B: b.ID}
	ca, cb := cellsByKey(ra.Result.Cells), cellsByKey(rb.Result.Cells)
	fa, fb := cellsByKey(qa), cellsByKey(qb)
	var keys []artifacts.CellKey
	for _, c := range ra.Result.Cells {
		keys = append(keys, artifacts.KeyOf(c))
	}
	for _, c := range rb.Result.Cells {
		if _, ok := ca[artifacts.KeyOf(c)]; !ok {
			keys = append(keys, artifacts.KeyOf(c))
		}
	}
	for _, k := range keys {
		pc := PairCell{Algorithm: k.Algorithm, Operation: k.Operation, Variant: k.Variant}
		x, okA := ca[k]
		y, okB := cb[k]
		if okA && x.Status == artifacts.StatusOK {
			pc.A = summarise(ra.Samples.Values[k], x.Unit)
		}
		if okB && y.Status == artifacts.StatusOK {
			pc.B = summarise(rb.Samples.Values[k], y.Unit)
		}
		pc.Reason = pairReason(a, b, x, y, okA, okB, fa[k], fb[k], pc.A, pc.B)
		pc.Unit = x.Unit
		if !okA {
			pc.Unit = y.Unit
		}
		if ia, ib := storedImplementation(fa[k]), storedImplementation(fb[k]); pc.Reason == "" && ia != ib {
			pc.Note = fmt.Sprintf("implementations differ: run %d %s; run %d %s", a.ID, implementationText(ia), b.ID, implementationText(ib))
		}
		if pc.Reason == "" {
			num, den := fmt.Sprintf("run %d %s", b.ID, pc.name()), fmt.Sprintf("run %d %s", a.ID, pc.name())
			seed := compare.BootstrapSeed("compare/"+a.Bundle+"/"+b.Bundle, "time", num, den)
			pc.Point, pc.Lo, pc.Hi = compare.RunsRatio(rb.Samples.Values[k], rb.Samples.Rounds[k], ra.Samples.Values[k], ra.Samples.Rounds[k], seed)
			pc.Seed = fmt.Sprintf("%x", seed)
			pc.Verdict = pairVerdict(pc, x.Unit, runLoaded(a) || runLoaded(b))
		}
		rep.Cells = append(rep.Cells, pc)
	}
	return rep
}

// cellsByKey indexes cells by their key.
func cellsByKey(cells []artifacts.Cell) map[artifacts.CellKey]artifacts.Cell {
	m := map[artifacts.CellKey]artifacts.Cell{}
	for _, c := range cells {
		m[artifacts.KeyOf(c)] = c
	}
	return m
}

// pairReason says why cell x of run a and cell y of run b do not compare ("" when they do);
// okA and okB say whether each run has the cell, fx and fy are the cells as the portal filed
// them, sa and sb the cells' summaries.
func pairReason(a, b store.Run, x, y artifacts.Cell, okA, okB bool, fx, fy artifacts.Cell, sa, sb *Summary) string {
	switch {
	case !okA:
		return fmt.Sprintf("not measured in run %d", a.ID)
	case !okB:
		return fmt.Sprintf("not measured in run %d", b.ID)
	case x.Status != artifacts.StatusOK:
		return fmt.Sprintf("cell %s in run %d", x.Status, a.ID)
	case y.Status != artifacts.StatusOK:
		return fmt.Sprintf("cell %s in run %d", y.Status, b.ID)
	case x.Unit != y.Unit:
		return fmt.Sprintf("units differ (%s, %s)", x.Unit, y.Unit)
	case a.Method != b.Method:
		return fmt.Sprintf("timing methods differ (%s, %s)", a.Method, b.Method)
	case x.Keys != y.Keys:
		return fmt.Sprintf("key forms differ (%s, %s)", cmp.Or(x.Keys, "not recorded"), cmp.Or(y.Keys, "not recorded"))
	case messageBytes(x, fx) != messageBytes(y, fy):
		return fmt.Sprintf("message sizes differ (%d, %d bytes)", messageBytes(x, fx), messageBytes(y, fy))
	case sa == nil || sb == nil || sa.N < compare.MinSamples || sb.N < compare.MinSamples:
		return fmt.Sprintf("too few samples for an interval (need %d in each run)", compare.MinSamples)
	case !(sa.Box[2] > 0):
		return "run A's median is not positive: no ratio"
	}
	return ""
}

// messageBytes is the size of the message cell c signed: as filed (stored), else as recorded.
func messageBytes(c, stored artifacts.Cell) int {
	if stored.Sizes != nil && stored.Sizes.Message > 0 {
		return stored.Sizes.Message
	}
	if c.Sizes != nil {
		return c.Sizes.Message
	}
	return 0
}

// pairVerdict calls a comparable pair's ratio: beyond the minimum effect (none for
// instruction counts) either way, within it, or within the noise; never for a loaded run.
func pairVerdict(pc PairCell, unit artifacts.Unit, loaded bool) string {
	eff := MinEffect
	if unit == artifacts.UnitInstructions {
		eff = 0
	}
	switch {
	case loaded:
		return PairLoaded
	case pc.Lo > 1+eff:
		return PairHigher
	case pc.Hi < 1/(1+eff):
		return PairLower
	case pc.Lo > 1 || pc.Hi < 1:
		return PairSmall
	}
	return PairWithin
}

// pairReport returns run b against run a: the stored report for this code version, or one
// computed from both bundles now and stored for every later request.
func (s *Server) pairReport(ctx context.Context, a, b store.Run) (PairReport, error) {
	var rep PairReport
	stored, ok, err := s.store.PairReport(ctx, a.ID, b.ID, PairCodeVersion)
	if err != nil {
		return rep, err
	}
	if ok {
		if err := json.Unmarshal([]byte(stored), &rep); err != nil {
			return rep, fmt.Errorf("stored pair report %d/%d: %w", a.ID, b.ID, err)
		}
		return rep, nil
	}
	ra, err := s.loadRun(ctx, a)
	if err != nil {
		return rep, err
	}
	rb, err := s.loadRun(ctx, b)
	if err != nil {
		return rep, err
	}
	qa, err := s.store.Cells(ctx, a.ID)
	if err != nil {
		return rep, err
	}
	qb, err := s.store.Cells(ctx, b.ID)
	if err != nil {
		return rep, err
	}
	rep = computePair(a, b, ra, rb, qa, qb)
	data, err := json.Marshal(rep)
	if err != nil {
		return rep, fmt.Errorf("encode pair report %d/%d: %w", a.ID, b.ID, err)
	}
	if err := s.store.SavePairReport(ctx, a.ID, b.ID, PairCodeVersion, string(data)); err != nil {
		return rep, err
	}
	s.log.Info("pair intervals computed", "a", a.ID, "b", b.ID, "cells", len(rep.Cells))
	return rep, nil
}

// compareIDs reads ?runs=A,B[,C] (or repeated ?run= from the run list's checkboxes).
func compareIDs(c echo.Context) ([]int64, error) {
	var parts []string
	for _, v := range c.QueryParams()["runs"] {
		parts = append(parts, strings.Split(v, ",")...)
	}
	parts = append(parts, c.QueryParams()["run"]...)
	var ids []int64
	for _, p := range parts {
		p = strings.TrimPrefix(strings.TrimSpace(p), "#")
		if p == "" {
			continue
		}
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil || id <= 0 {
			return nil, fault.New(fault.Invalid, "runs: %q is not a run id", p)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || len(ids) > 3 {
		return nil, fault.New(fault.Invalid, "runs: give one to three run ids, e.g. /compare?runs=12,15 (one run is compared with its paper's figures only)")
	}
	return ids, nil
}

func (s *Server) comparePage(c echo.Context) error {
	ids, err := compareIDs(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var runs []store.Run
	for _, id := range ids {
		r, err := s.store.Run(ctx, id)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	var pairs []PairReport
	for _, r := range runs[1:] {
		p, err := s.pairReport(ctx, runs[0], r)
		if err != nil {
			return err
		}
		pairs = append(pairs, p)
	}
	v, err := compareView(runs, pairs)
	if err != nil {
		return err
	}
	v.Page = s.page(c, "Compare runs")
	if v.Picker, err = s.comparePicker(ctx, runs); err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.ComparePage(v))
}

// comparePicker offers the runs that can be added to a comparison: the ten latest other runs
// of run A's experiment, each with the address of the comparison with it added.
func (s *Server) comparePicker(ctx context.Context, runs []store.Run) (templates.ComparePicker, error) {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = strconv.FormatInt(r.ID, 10)
	}
	p := templates.ComparePicker{IDs: strings.Join(ids, ","), Full: len(runs) >= 3}
	if p.Full {
		return p, nil
	}
	others, err := s.store.Runs(ctx, store.RunFilter{Experiment: runs[0].Experiment, Limit: 10 + len(runs)})
	if err != nil {
		return p, err
	}
	for _, o := range others {
		if slices.ContainsFunc(runs, func(r store.Run) bool { return r.ID == o.ID }) || len(p.Candidates) == 10 {
			continue
		}
		p.Candidates = append(p.Candidates, templates.CompareCandidate{ID: o.ID, Board: o.BoardClass,
			Assurance: assurance(o.BoardClass, string(o.Level), o.Origin), Link: "/compare?runs=" + p.IDs + "," + strconv.FormatInt(o.ID, 10)})
	}
	return p, nil
}

// apiCompare is /api/v1/compare?runs=A,B[,C]: the stored pair reports of every run after
// the first against it (computed once, as for the page).
func (s *Server) apiCompare(c echo.Context) error {
	ids, err := compareIDs(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var runs []store.Run
	for _, id := range ids {
		r, err := s.store.Run(ctx, id)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	out := struct {
		Runs   []int64          `json:"runs"`
		Method artifacts.Method `json:"method"`
		Pairs  []PairReport     `json:"pairs"`
		Noise  string           `json:"noise"`
	}{Runs: ids, Method: compare.MethodRuns, Noise: PairNoise, Pairs: []PairReport{}}
	for _, r := range runs[1:] {
		p, err := s.pairReport(ctx, runs[0], r)
		if err != nil {
			return err
		}
		out.Pairs = append(out.Pairs, p)
	}
	return c.JSON(http.StatusOK, out)
}

// compareView builds /compare from the runs (the first is A) and the stored pair reports of
// every other run against A.
func compareView(runs []store.Run, pairs []PairReport) (templates.CompareView, error) {
	v := templates.CompareView{Method: compare.MethodRuns + ". " + PairNoise}
	for i, r := range runs {
		v.Runs = append(v.Runs, templates.CompareRun{ID: r.ID, Label: string(rune('A' + i)), Experiment: r.Experiment, Board: r.BoardClass, Method: string(r.Method),
			Published: when(r.PublishedAt), Assurance: assurance(r.BoardClass, string(r.Level), r.Origin), Declared: r.ClassStatus == artifacts.ClassDeclared})
	}
	reports := make([]compare.Report, len(runs))
	for i, r := range runs {
		if err := json.Unmarshal([]byte(r.Report), &reports[i]); err != nil {
			return v, fmt.Errorf("run %d report: %w", r.ID, err)
		}
		v.Paper = append(v.Paper, comparePaper(r.ID, reports[i]))
	}
	if len(pairs) == 0 {
		v.Charts = paperCharts(runs[0], reports[0])
		return v, nil
	}
	cb := compareBuilder{v: &v, paper: reports[0], runs: len(runs), reasons: map[string]int{}, units: map[string][]plot.Group{}, boxes: map[string][]plot.Row{}}
	order, cells := pairCells(pairs)
	for _, k := range order {
		cb.cell(k, cells[k])
	}
	cb.finish()
	return v, nil
}

// comparePaper is one run's comparable rows against its paper, and how many were not.
func comparePaper(id int64, rep compare.Report) templates.ComparePaper {
	rows, other := comparisonView(rep)
	cp := templates.ComparePaper{RunID: id, Dataset: rep.Dataset, NotComparable: len(other)}
	for _, row := range rows {
		if row.Verdict != compare.NotComparable {
			cp.Rows = append(cp.Rows, row)
		}
	}
	return cp
}

// pairCellKey names a cell across the pair reports of /compare.
type pairCellKey struct{ alg, op, variant string }

// pairCells gathers the pair reports' cells by cell, each with one entry per pair (nil where
// that pair lacks it), in A's cell order and then the cells only later runs have.
func pairCells(pairs []PairReport) ([]pairCellKey, map[pairCellKey][]*PairCell) {
	var order []pairCellKey
	cells := map[pairCellKey][]*PairCell{}
	for pi := range pairs {
		for ci := range pairs[pi].Cells {
			pc := &pairs[pi].Cells[ci]
			k := pairCellKey{pc.Algorithm, pc.Operation, pc.Variant}
			if _, ok := cells[k]; !ok {
				order = append(order, k)
				cells[k] = make([]*PairCell, len(pairs))
			}
			cells[k][pi] = pc
		}
	}
	return order, cells
}

// compareBuilder fills /compare's rows, reasons and charts cell by cell.
type compareBuilder struct {
	v *templates.CompareView
	// paper is run A's comparison with its paper, for the paper's figure beside each cell.
	paper compare.Report
	runs  int
	// reasons counts why cells are not comparable, in reasonOrder.
	reasons     map[string]int
	reasonOrder []string
	// units and boxes are the charts' groups and box rows per unit, in unitOrder.
	units     map[string][]plot.Group
	boxes     map[string][]plot.Row
	unitOrder []string
}

// cell adds one cell: a row and chart group when it compares with A in at least one pair,
// else its reasons.
func (cb *compareBuilder) cell(k pairCellKey, ps []*PairCell) {
	var any, a *PairCell
	comparable := false
	for _, pc := range ps {
		if pc != nil {
			any = pc
			comparable = comparable || pc.Reason == ""
			if pc.A != nil {
				a = pc
			}
		}
	}
	if !comparable {
		for _, pc := range ps {
			if pc != nil {
				if cb.reasons[pc.Reason] == 0 {
					cb.reasonOrder = append(cb.reasonOrder, pc.Reason)
				}
				cb.reasons[pc.Reason]++
			}
		}
		cb.v.NotComparable++
		return
	}
	unit := string(any.Unit)
	row := templates.CompareCellRow{Cell: any.name(), Unit: unit}
	var sa *Summary
	if a != nil {
		sa = a.A
	}
	row.Values = append(row.Values, templates.CompareValue{Median: pairMedian(sa), Baseline: true})
	g := plot.Group{Label: any.name()}
	cb.point(&g, unit, any.name(), 0, sa)
	for pi, pc := range ps {
		var b *Summary
		if pc != nil {
			b = pc.B
		}
		row.Values = append(row.Values, pairValue(pc))
		cb.point(&g, unit, any.name(), pi+1, b)
	}
	if pt, ok := paperPoint(cb.paper, k, unit, cb.runs); ok {
		g.Points = append(g.Points, pt)
	}
	if _, ok := cb.units[unit]; !ok {
		cb.unitOrder = append(cb.unitOrder, unit)
	}
	cb.units[unit] = append(cb.units[unit], g)
	cb.v.Rows = append(cb.v.Rows, row)
}

// point adds run i's median (with p25–p75) to g and its box to the unit's box plot; a run
// without the cell is an empty point.
func (cb *compareBuilder) point(g *plot.Group, unit, name string, i int, sm *Summary) {
	label := "run " + cb.v.Runs[i].Label
	if sm == nil {
		g.Points = append(g.Points, plot.Point{Name: label, Series: i})
		return
	}
	g.Points = append(g.Points, plot.Point{Name: label, Value: sm.Box[2], Lo: sm.Box[1], Hi: sm.Box[3], Series: i,
		Text: "median " + human(sm.Box[2], sm.Unit) + " (p25 " + human(sm.Box[1], sm.Unit) + ", p75 " + human(sm.Box[3], sm.Unit) + ", n " + strconv.Itoa(sm.N) + ")"})
	cb.boxes[unit] = append(cb.boxes[unit], plot.Row{Label: name + " · " + label, Min: sm.Box[0], P25: sm.Box[1], Median: sm.Box[2],
		P75: sm.Box[3], Max: sm.Box[4], Outliers: sm.Outliers, Whiskers: "1.5×IQR"})
}

// finish lists the reasons and draws one interval chart and one box plot per unit.
func (cb *compareBuilder) finish() {
	for _, r := range cb.reasonOrder {
		cb.v.Reasons = append(cb.v.Reasons, fmt.Sprintf("%s (%d)", r, cb.reasons[r]))
	}
	for _, u := range cb.unitOrder {
		format := func(x float64) string { return axisLabel(x, u) }
		cb.v.Charts = append(cb.v.Charts, plot.Intervals(cb.units[u], unitTitle(u), format))
		cb.v.Boxes = append(cb.v.Boxes, plot.Layout(cb.boxes[u], unitTitle(u), format))
	}
}

// pairMedian is a summary's median in its unit, "–" for none.
func pairMedian(sm *Summary) string {
	if sm == nil {
		return "–"
	}
	return human(sm.Box[2], sm.Unit)
}

// pairValue is run B's column of a cell: its median, and its ratio to A with the interval
// and verdict, or why it does not compare (nil: the pair lacks the cell).
func pairValue(pc *PairCell) templates.CompareValue {
	val := templates.CompareValue{Median: "–", Ratio: "–", VerdictClass: "neutral"}
	if pc == nil {
		val.Verdict = "not measured"
		return val
	}
	val.Median = pairMedian(pc.B)
	if pc.Reason != "" {
		val.Verdict, val.Note = "not comparable", pc.Reason
		return val
	}
	val.Note = pc.Note
	val.Ratio = fmt.Sprintf("%.3f", pc.Point)
	val.Interval = fmt.Sprintf("95%%: %.3f – %.3f", pc.Lo, pc.Hi)
	val.Verdict = pc.Verdict
	switch pc.Verdict {
	case PairHigher:
		val.VerdictClass = "bad"
	case PairLower:
		val.VerdictClass = "good"
	}
	return val
}

// paperPoint is the paper's figure for cell k in unit, where run A's comparison found a
// comparable one; series is the paper's series (after the runs').
func paperPoint(rep compare.Report, k pairCellKey, unit string, series int) (plot.Point, bool) {
	for _, cc := range rep.Cells {
		if cc.Algorithm != k.alg || cc.Operation != k.op || cc.Variant != k.variant {
			continue
		}
		comp, _ := cc.Split()
		for _, rc := range comp {
			if rc.Ref.Unit == unit && rc.Ref.Value > 0 {
				return plot.Point{Name: "paper (" + rc.Ref.Stat + ")", Value: rc.Ref.Value, Lo: rc.Ref.Value, Hi: rc.Ref.Value,
					Series: series, Published: true, Text: rc.Ref.Stat + " " + rc.Ref.Text + " " + rc.Ref.Unit + ", " + rc.Ref.Source}, true
			}
		}
	}
	return plot.Point{}, false
}

// paperCharts is one run against its paper's figures: per comparable cell, the run's median
// with p25-p75 and the published figure in the same unit.
func paperCharts(r store.Run, rep compare.Report) []*plot.Chart {
	units := map[string][]plot.Group{}
	var order []string
	for _, cc := range rep.Cells {
		if cc.Stats == nil {
			continue
		}
		comp, _ := cc.Split()
		var pub []plot.Point
		for _, rc := range comp {
			if rc.Ref.Unit == string(cc.Unit) && rc.Ref.Value > 0 {
				pub = append(pub, plot.Point{Name: "paper (" + rc.Ref.Stat + ")", Value: rc.Ref.Value, Lo: rc.Ref.Value, Hi: rc.Ref.Value, Series: 1, Published: true,
					Text: rc.Ref.Stat + " " + rc.Ref.Text + " " + rc.Ref.Unit + ", " + rc.Ref.Source})
			}
		}
		if len(pub) == 0 {
			continue
		}
		st := cc.Stats
		g := plot.Group{Label: cc.Name(), Points: append([]plot.Point{{Name: "run #" + strconv.FormatInt(r.ID, 10), Value: st.Median, Lo: st.P25, Hi: st.P75,
			Text: "median " + human(st.Median, cc.Unit)}}, pub...)}
		if _, ok := units[string(cc.Unit)]; !ok {
			order = append(order, string(cc.Unit))
		}
		units[string(cc.Unit)] = append(units[string(cc.Unit)], g)
	}
	var out []*plot.Chart
	for _, u := range order {
		out = append(out, plot.Intervals(units[u], unitTitle(u), func(x float64) string { return axisLabel(x, u) }))
	}
	return out
}

// RunSampleBoxPlot is a run's cells as box plots drawn from the bundle's samples (whiskers
// at 1.5×IQR, outliers as dots), one figure per unit and quantity in cell order (never two
// units on one axis), for the run page. It
// reads the stored bundle the first time (the figures are then kept, by bundle digest: a
// bundle never changes); the figures returned are shared and must not be modified.
func (s *Server) RunSampleBoxPlot(ctx context.Context, r store.Run) ([]*plot.Figure, error) {
	if figs, ok := s.boxPlots.get(r.Bundle); ok {
		return figs, nil
	}
	figs, err := s.drawSampleBoxPlot(ctx, r)
	if err == nil {
		s.boxPlots.put(r.Bundle, figs)
	}
	return figs, err
}

// drawSampleBoxPlot draws RunSampleBoxPlot's figures from the run's stored bundle.
func (s *Server) drawSampleBoxPlot(ctx context.Context, r store.Run) ([]*plot.Figure, error) {
	run, err := s.loadRun(ctx, r)
	if err != nil {
		return nil, err
	}
	var groups plotGroups
	for _, c := range run.Result.Cells {
		if c.Status != artifacts.StatusOK {
			continue
		}
		label := c.Algorithm + " " + c.Operation
		if c.Variant != "" {
			label += " [" + c.Variant + "]"
		}
		row, ok := plot.Tukey(label, run.Samples.Values[artifacts.KeyOf(c)])
		if !ok {
			continue
		}
		groups.add(c, row)
	}
	return groups.figures(), nil
}

// storedImplementation is the implementation key a stored cell is filed under ("" when none).
func storedImplementation(c artifacts.Cell) string {
	if c.Implementation == nil {
		return ""
	}
	return c.Implementation.Name // a stored cell's Implementation holds its key (sqlstore Cells)
}
