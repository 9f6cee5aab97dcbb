package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/energy"
	"pqrepro/experiments"
)

// CheckClaim tests a claim's checks on one run, measured with the given method. A scoped
// claim is never verdicted; otherwise the claim holds only when every check it rests on (every
// check but the info ones) is testable and holds (see the verdict constants). A claim decided
// from several intervals controls the family-wise error (holm). The reason says what the
// verdict rests on; Compare adds the scope sentence of the paper's setting.
func CheckClaim(cl experiments.Claim, run Run, method artifacts.Method) ClaimResult {
	res := run.Result
	if method == "" {
		method = artifacts.MethodInProcess
	}
	cr := ClaimResult{Claim: cl, Reason: cl.Reason, Board: res.Board, ClassStatus: run.Board.ClassStatus, Assurance: res.Assurance, Method: method,
		Role: tlsRole(run), Implementation: tlsImplementation(run)}
	if cl.Scope != "" {
		cr.Verdict = NotVerdicted
		cr.Reason = strings.TrimSpace(fmt.Sprintf("scope %s: %s", cl.Scope, cl.Reason))
		return cr
	}
	if p := outsidePeer(res); p != nil {
		cr.Verdict = NotVerdicted
		cr.Reason = outsideReason(p) + "; the claim is not verdicted on it"
		return cr
	}
	if len(cl.Checks) == 0 {
		cr.Verdict = Untestable
		if cr.Reason == "" {
			cr.Reason = "the claim has no check a single run can test"
		}
		return cr
	}
	n := map[string]int{}
	total := 0
	for _, ch := range cl.Checks {
		r := runCheck(ch, run, method)
		cr.Checks = append(cr.Checks, r)
	}
	if m := holm(cr.Checks); m > 0 {
		cr.Multiplicity = fmt.Sprintf(MultiplicityHolm, m)
	}
	for _, r := range cr.Checks {
		if !r.Check.Info {
			n[r.Verdict]++
			total++
		}
	}
	if why := notVerdicted(cl, run, cr.Checks); why != "" {
		cr.Verdict, cr.Reason = NotVerdicted, why
		return cr
	}
	testable := total - n[Untestable]
	switch {
	case n[Fails] > 0:
		cr.Verdict = Fails
	case n[Inconclusive] > 0:
		cr.Verdict = Inconclusive
	case testable == 0:
		cr.Verdict = Untestable
		if cr.Reason == "" {
			cr.Reason = "no check could be tested on this run"
			for _, r := range cr.Checks {
				if !r.Check.Info && r.Detail != "" {
					cr.Reason += " (the first: " + r.Detail + ")"
					break
				}
			}
		}
	case testable < total:
		cr.Verdict = PartlyTestable
		cr.Reason = strings.TrimSpace(fmt.Sprintf("%d of %d checks testable on this run, and they hold; the claim as a whole is not shown. %s", testable, total, cl.Reason))
	default:
		cr.Verdict = Holds
	}
	if cr.Verdict == Fails || cr.Verdict == Inconclusive {
		if n[Untestable] > 0 {
			cr.Reason = strings.TrimSpace(fmt.Sprintf("%d of %d checks testable on this run. %s", testable, total, cl.Reason))
		}
	}
	if cl.ByDesign != "" && cr.Verdict != Untestable && cr.Verdict != PartlyTestable {
		met := "met by this run"
		if cr.Verdict != Holds {
			met = "NOT met by this run (" + cr.Verdict + "): the implementation breaks its own design"
		}
		cr.Verdict = ByDesign
		cr.Reason = strings.TrimSpace(fmt.Sprintf("%s; %s. %s", cl.ByDesign, met, cl.Reason))
	}
	return cr
}

// notVerdicted is why a claim whose checks ran gets no verdict on this run, "" when it may
// get one: a run of the other TLS role (the claim is about the side that role does not
// measure), another board than the claim's, a board class not verified, or a run whose timing
// cannot support it (withheld). The checks keep their own verdicts.
func notVerdicted(cl experiments.Claim, run Run, checks []CheckResult) string {
	res := run.Result
	if role := tlsRole(run); cl.Role != "" && role != "" && role != cl.Role {
		return strings.ReplaceAll(cl.OffRole, "{board}", boardPhrase(run)) + measuredSummary(checks)
	}
	if len(cl.Boards) > 0 && !slices.Contains(cl.Boards, res.Board) {
		// The checks are about this board, not the claim's.
		return strings.ReplaceAll(cl.OffBoard, "{board}", boardPhrase(run)) + measuredSummary(checks)
	}
	if boardGated(cl) && run.Board.ClassStatus != artifacts.ClassVerified {
		// A claim about a named board is verdicted only on that board, established: a class an
		// operator declared and nothing could check unlocks no verdict.
		status := run.Board.ClassStatus
		if status == "" {
			status = "of unknown status (the bundle does not say)"
		}
		return fmt.Sprintf("board class %s is %s, not verified: a claim about %s is verdicted only on a board whose class the catalogue or its driver established; the checks are shown as measured",
			res.Board, status, res.Board)
	}
	return withheld(cl, run)
}

// tlsRole is the role a tls-matrix run's cells measured (artifacts.TLSRoles; a bundle from
// before roles measured the client), "" for a run of another kind.
func tlsRole(run Run) string { return resultRole(run.Result) }

// resultRole is tlsRole of a result.
func resultRole(res *artifacts.Result) string {
	for _, c := range res.Cells {
		if c.TLS != nil {
			return artifacts.RoleOf(c.TLS.Role)
		}
	}
	return ""
}

// tlsImplementation names what played the measured side of a tls-matrix run's handshakes:
// the board's own client or server, or the engine on the host; "" for a run of another kind.
func tlsImplementation(run Run) string {
	for _, c := range run.Result.Cells {
		if c.TLS == nil {
			continue
		}
		if m := c.TLS.Measured(); m != "" {
			return m
		}
		if artifacts.RoleOf(c.TLS.Role) == artifacts.TLSRoleServer {
			return "pqrepro's TLS engine (tls13) as the server, in a child process of the runner"
		}
		return "pqrepro's TLS engine (tls13) as the client, in the runner's process"
	}
	return ""
}

// boardPhrase names where a run's checks were measured, for "{board}" in labels and reasons:
// the board class and, for a TLS matrix whose client or server ran on the board, that
// implementation and its role ("qemu-mps2-an505 with the pqrepro C client, client role",
// "... with the pqrepro C server, server role"); a host run in the server role says so ("host,
// server role"), one in the client role, the default, names the board alone.
func boardPhrase(run Run) string {
	role := tlsRole(run)
	for _, c := range run.Result.Cells {
		if c.TLS == nil || c.TLS.Measured() == "" {
			continue
		}
		impl := c.TLS.Measured()
		for _, name := range []string{artifacts.SerialTLSClient, artifacts.SerialTLSServer} {
			if strings.HasPrefix(impl, name) {
				impl = "the " + name
			}
		}
		return run.Result.Board + " with " + impl + ", " + role + " role"
	}
	if role == artifacts.TLSRoleServer {
		return run.Result.Board + ", server role"
	}
	return run.Result.Board
}

// measuredSummary is what a claim that is not verdicted on a run still measured: its first
// testable check's detail, so the paper's page shows each board's figure beside the reason.
func measuredSummary(checks []CheckResult) string {
	for _, r := range checks {
		if r.Verdict != Untestable && !r.Check.Info {
			return ". Measured: " + r.Detail
		}
	}
	return ""
}

// boardGated reports whether a claim's verdict depends on the board class: the claim or one of
// the checks it rests on names the boards it is about.
func boardGated(cl experiments.Claim) bool {
	if len(cl.Boards) > 0 {
		return true
	}
	return slices.ContainsFunc(cl.Checks, func(ch experiments.Check) bool { return !ch.Info && len(ch.Boards) > 0 })
}

// sampled is one cell's samples as a check reads them.
type sampled struct {
	ref    string
	values []float64
	// rounds are each sample's round when the cell was measured in rounds; nil otherwise.
	rounds []int
	unit   artifacts.Unit
	note   string
	// metered is a metered energy's estimate from power.csv (E = ΔP × T_op with its
	// bootstrap replicates); nil for samples.
	metered *energy.Estimate
}

func runCheck(ch experiments.Check, run Run, method artifacts.Method) (cr CheckResult) {
	cr = CheckResult{Check: ch, Verdict: Untestable}
	if ch.Info {
		defer func() { cr.Detail = "information, not part of the verdict: " + cr.Detail }()
	}
	if ch.Method != "" && ch.Method != method {
		cr.Detail = fmt.Sprintf("applies to %s runs; this run was %s", ch.Method, method)
		return cr
	}
	if r, ok := mqttCheck(ch, run); ok {
		return r
	}
	if len(ch.Boards) > 0 && !slices.Contains(ch.Boards, run.Result.Board) {
		cr.Detail = fmt.Sprintf("the published figure is of %s; this run is on %s", strings.Join(ch.Boards, ", "), run.Result.Board)
		return cr
	}
	if ch.Label != "" {
		defer func() { cr.Detail = strings.ReplaceAll(ch.Label, "{board}", boardPhrase(run)) + ": " + cr.Detail }()
	}

	if ch.Kind != "order" && ch.Kind != "ratio" {
		cr = runHandshakeCheck(ch, run)
		return cr
	}
	refs := ch.Cells
	if ch.Kind == "ratio" {
		refs = []string{ch.Num, ch.Den}
	}
	metric := ch.Metric
	if metric == "" {
		metric = "time"
	}
	cells := make([]sampled, len(refs))
	var missing, notes []string
	for i, ref := range refs {
		s, why := samplesOf(run, ref, metric)
		if why != "" {
			missing = append(missing, ref+": "+why)
		}
		if s.note != "" {
			notes = append(notes, s.note)
		}
		cells[i] = s
	}
	if len(missing) > 0 {
		cr.Detail = strings.Join(missing, "; ")
		return cr
	}
	unit := cells[0].unit
	for _, s := range cells[1:] {
		if s.unit != unit {
			cr.Detail = fmt.Sprintf("units differ: %s in %s, %s in %s", cells[0].ref, unit, s.ref, s.unit)
			return cr
		}
	}
	if len(refs) < 2 {
		cr.Detail = "a check needs two cells"
		return cr
	}
	cr.Method, cr.Resamples, cr.Unit = Method, Resamples, string(unit)
	if ch.Kind == "order" {
		cr = checkOrder(cr, run.Result.ManifestID, metric, cells)
	} else {
		cr = checkRatio(cr, ch, run.Result.ManifestID, metric, cells)
	}
	if cr.Verdict == Untestable {
		return cr
	}
	if metric == "time" && unit == artifacts.UnitInstructions {
		notes = append(notes, "tested on emulated instruction counts, not time")
	}
	notes = append(notes, exactness(cr.Intervals, unit)...)
	cr.Method = methodOf(cr.Method, cr.Intervals)
	if len(notes) > 0 {
		cr.Detail += "; " + strings.Join(notes, "; ")
	}
	return cr
}

// checkOrder: each consecutive pair a < b, the interval of median(b)/median(a) against 1.
func checkOrder(cr CheckResult, manifestID, metric string, cells []sampled) CheckResult {
	var parts []string
	cr.Verdict = Holds
	for i := 1; i < len(cells); i++ {
		iv, reps, why := pairInterval(manifestID, metric, cells[i], cells[i-1])
		if why != "" {
			return untestable(cr, why)
		}
		above(1).judge(&iv, reps)
		cr.Verdict = worse(cr.Verdict, iv.Verdict)
		cr.Intervals = append(cr.Intervals, iv)
		parts = append(parts, fmt.Sprintf("%s / %s = %s", iv.Num, iv.Den, fmtInterval(iv)))
	}
	var meds []string
	for _, s := range cells {
		meds = append(meds, s.ref+" "+fmtTime(median(slices.Clone(s.values)), artifacts.Unit(cr.Unit)))
	}
	lead := map[string]string{Holds: "in order", Fails: "out of order", Inconclusive: "cannot tell the order"}[cr.Verdict]
	sep := ", "
	if cr.Verdict == Holds {
		sep = " < "
	}
	cr.Detail = fmt.Sprintf("%s: %s; medians %s (claim: increasing, ratio above 1)", lead, strings.Join(parts, ", "), strings.Join(meds, sep))
	if b := cr.Check.Beside; b != "" && len(cr.Intervals) == 1 {
		cr.Detail += "; " + besidePhrase(cr.Intervals[0].Point, cells[0].ref, b)
	}
	return cr
}

// besidePhrase says what a two-cell order's ratio r = t(second)/t(first) means for the first
// cell, in the words a published "P% faster" uses, beside the paper's figure.
func besidePhrase(r float64, first, published string) string {
	var what string
	if r >= 1 {
		what = fmt.Sprintf("%s takes %.1f%% less (%.1f%% higher speed)", first, 100*(1-1/r), 100*(r-1))
	} else {
		what = fmt.Sprintf("%s takes %.1f%% more (%.1f%% lower speed): the order is reversed", first, 100*(1/r-1), 100*(1-r))
	}
	return fmt.Sprintf("the ratio %.3f: %s, beside the paper's %s (not compared: another board or implementation)", r, what, published)
}

// checkRatio: the interval of median(num)/median(den) against the claim's band.
func checkRatio(cr CheckResult, ch experiments.Check, manifestID, metric string, cells []sampled) CheckResult {
	lo, hi, want := band(ch)
	iv, reps, why := pairInterval(manifestID, metric, cells[0], cells[1])
	if why != "" {
		return untestable(cr, why)
	}
	between(lo, hi).judge(&iv, reps)
	cr.Verdict = iv.Verdict
	cr.Intervals = []Interval{iv}
	cr.Detail = fmt.Sprintf("%s / %s = %s (claim: %s)", iv.Num, iv.Den, fmtInterval(iv), want)
	return cr
}

// untestable turns a check whose interval cannot be drawn into an untestable one, saying why.
func untestable(cr CheckResult, why string) CheckResult {
	cr.Verdict, cr.Detail = Untestable, why
	cr.Method, cr.Resamples, cr.Unit, cr.Intervals = "", 0, "", nil
	return cr
}

// band is the interval a ratio check's claim allows, and how to say it.
func band(ch experiments.Check) (lo, hi float64, want string) {
	lo, hi = math.Inf(-1), math.Inf(1)
	var parts []string
	if ch.Expected > 0 {
		t := ch.Tolerance
		if t == 0 {
			t = artifacts.DefaultTolerance
		}
		lo, hi = ch.Expected*(1-t), ch.Expected*(1+t)
		parts = append(parts, fmt.Sprintf("%.3g ± %.0f%%", ch.Expected, t*100))
	}
	if ch.Min != nil {
		lo = max(lo, *ch.Min)
		parts = append(parts, fmt.Sprintf("≥ %.3g", *ch.Min))
	}
	if ch.Max != nil {
		hi = min(hi, *ch.Max)
		parts = append(parts, fmt.Sprintf("≤ %.3g", *ch.Max))
	}
	want = strings.Join(parts, ", ")
	if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		want += fmt.Sprintf(", i.e. [%.3g, %.3g]", lo, hi)
	}
	return lo, hi, want
}

// worse returns the more damning of two check verdicts: fails over inconclusive over holds.
func worse(a, b string) string {
	rank := map[string]int{Holds: 0, Inconclusive: 1, Fails: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// samplesOf returns the samples a check compares for cell ref ("ALG/op"), or why there are
// none. The cell that ran the manifest's method is preferred; when it did not produce
// samples and a variant of it did, the variant is used and the note says so.
func samplesOf(run Run, ref, metric string) (sampled, string) {
	s := sampled{ref: ref}
	i := strings.LastIndexByte(ref, '/')
	if i < 0 {
		return s, "malformed cell name"
	}
	alg, op := ref[:i], ref[i+1:]
	var matches []artifacts.Cell
	for _, c := range run.Result.Cells {
		if c.Algorithm == alg && c.Operation == op {
			matches = append(matches, c)
		}
	}
	if len(matches) == 0 {
		return s, "not measured in this run"
	}
	slices.SortStableFunc(matches, func(a, b artifacts.Cell) int {
		return strings.Compare(a.Variant, b.Variant) // the manifest's own method ("") first
	})
	c := matches[0]
	if c.Status != artifacts.StatusOK {
		j := slices.IndexFunc(matches, func(c artifacts.Cell) bool { return c.Status == artifacts.StatusOK })
		if j < 0 {
			return s, "cell " + string(c.Status) + ": " + c.Error
		}
		c = matches[j]
		s.note = fmt.Sprintf("%s measured with a variant (%s), as the manifest's command %s", ref, c.Variant, matches[0].Status)
	}
	k := artifacts.KeyOf(c)
	if metric == "energy" && c.Energy != nil && c.Energy.Windows != nil {
		return meteredOf(run, c, s)
	}
	if metric == "energy" {
		v := run.Samples.Energy[k]
		if len(v) == 0 {
			why := "no per-iteration energy samples in the bundle"
			if c.Energy != nil && c.Energy.Absent != "" {
				why += " (energy absent: " + c.Energy.Absent + ")"
			}
			return s, why
		}
		s.values, s.unit = v, artifacts.UnitJoules
	} else {
		s.values, s.unit, s.rounds = run.Samples.Values[k], c.Unit, run.Samples.Rounds[k]
		if len(s.values) == 0 {
			return s, "no samples for this cell in the bundle"
		}
		if c.Stats != nil && c.Stats.N != len(s.values) {
			return s, fmt.Sprintf("samples.csv holds %d samples, result.json says n=%d", len(s.values), c.Stats.N)
		}
		if run.Result.Assurance == artifacts.AssuranceHost && len(s.rounds) == 0 {
			return s, "its samples were not taken in rounds (the cells ran one after another, a bundle from before rounds), so drift of the machine between cells cannot be told from an effect"
		}
	}
	if len(s.values) < MinSamples {
		return s, fmt.Sprintf("too few samples for an interval (%d, need %d)", len(s.values), MinSamples)
	}
	if m := median(slices.Clone(s.values)); !(m > 0) {
		return s, fmt.Sprintf("median %g: a ratio needs a positive median", m)
	}
	return s, ""
}

func fmtInterval(iv Interval) string {
	if iv.Exact {
		return fmt.Sprintf("%.3f exactly (every sample identical)", iv.Point)
	}
	return fmt.Sprintf("%.3f, 95%% interval [%.3f, %.3f]", iv.Point, iv.Lo, iv.Hi)
}

// pairInterval is the interval of median(num)/median(den) with its sorted bootstrap
// replicates, seeded from the manifest, the metric and the two cells; when every sample of
// both cells is identical it is the exact ratio, with no replicates.
//
// Cells measured in rounds are resampled by rounds (roundGroups.blockBootstrap) over the rounds
// they share; with fewer than MinRounds shared the interval is not drawn (why says so).
func pairInterval(manifestID, metric string, num, den sampled) (iv Interval, reps []float64, why string) {
	seed := BootstrapSeed(manifestID, metric, num.ref, den.ref)
	iv = Interval{Num: num.ref, Den: den.ref, Seed: seedHex(seed)}
	if num.metered != nil || den.metered != nil {
		return meteredInterval(iv, num, den)
	}
	if constant(num.values, den.values) {
		iv.Point = num.values[0] / den.values[0]
		iv.Lo, iv.Hi, iv.Exact = iv.Point, iv.Point, true
		return iv, nil, ""
	}
	if num.rounds != nil && den.rounds != nil {
		iv, reps, why = roundsInterval([]sampled{num, den}, seed, func(s [][]float64) float64 { return sortedMedian(s[0]) / sortedMedian(s[1]) })
		iv.Num, iv.Den = num.ref, den.ref
		return iv, reps, why
	}
	p, reps := ratioReplicates(num.values, den.values, seed)
	iv.Point = p
	iv.Lo, iv.Hi = percentiles(reps)
	return iv, reps, ""
}

// roundsInterval is stat's interval over cells measured in rounds, resampling the rounds they
// share in moving blocks; why is set when they share fewer than MinRounds.
func roundsInterval(cells []sampled, seed [32]byte, stat func(sorted [][]float64) float64) (Interval, []float64, string) {
	iv := Interval{Seed: seedHex(seed)}
	values, rounds := make([][]float64, len(cells)), make([][]int, len(cells))
	for i, c := range cells {
		values[i], rounds[i] = c.values, c.rounds
	}
	g := groupRounds(values, rounds)
	if len(g.rounds) < MinRounds {
		var refs []string
		for _, c := range cells {
			refs = append(refs, c.ref)
		}
		return iv, nil, fmt.Sprintf("%s share %d rounds, need %d for an interval over rounds", strings.Join(refs, ", "), len(g.rounds), MinRounds)
	}
	var reps []float64
	iv.Point, reps = g.blockBootstrap(seed, stat)
	iv.Lo, iv.Hi = percentiles(reps)
	iv.Rounds, iv.Block = len(g.rounds), min(blockLength(len(g.rounds)), len(g.rounds))
	return iv, reps, ""
}

// methodOf is a check's method: base, or the rounds version when its intervals resampled rounds.
func methodOf(base string, ivs []Interval) string {
	for _, iv := range ivs {
		if iv.Rounds > 0 {
			if base == Method {
				return MethodRounds
			}
			return base + "; resampling rounds in moving blocks (the cells' samples of a round together)"
		}
	}
	return base
}

// exactness says what a check's intervals describe when the samples come from a deterministic
// counter: nothing to resample (exact), or the variation over the seeded inputs, which
// repeats exactly in every run of the manifest.
func exactness(ivs []Interval, unit artifacts.Unit) []string {
	if len(ivs) == 0 {
		return nil
	}
	exact := 0
	for _, iv := range ivs {
		if iv.Exact {
			exact++
		}
	}
	switch {
	case exact == len(ivs):
		return []string{"every sample of the cells is identical, so the ratio is exact and no interval is drawn"}
	case unit == artifacts.UnitInstructions:
		return []string{"the interval describes how the counts vary with the seeded inputs (messages, randomness), not measurement noise: the same manifest gives the same counts in every run"}
	}
	return nil
}

// fmtVal prints a value with four significant digits in positional notation (never
// "1.552e+04") and its unit.
func fmtVal(v float64, unit artifacts.Unit) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v != 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
		d := 3 - int(math.Floor(math.Log10(math.Abs(v))))
		p := math.Pow(10, float64(-d))
		s = strconv.FormatFloat(math.Round(v/p)*p, 'f', max(d, 0), 64)
	}
	return strings.TrimSpace(s + " " + string(unit))
}

// meteredOf is a metered energy for a claim check: the cell's E = ΔP × T_op recomputed from
// power.csv with its bootstrap replicates (energy.PerOperation, the seed and replicates of the
// recorded figure), or why there is none. A simulated meter's energy is never a measurement.
func meteredOf(run Run, c artifacts.Cell, s sampled) (sampled, string) {
	if c.Energy.Simulated {
		return s, artifacts.SimulatedMeterLabel + ": a replayed capture, not a measurement of this run"
	}
	if run.Power == nil || run.Power.Idle == nil || run.Meter == nil {
		return s, "a metered energy, but the bundle has no power.csv idle window or meter"
	}
	load := run.Power.Load[artifacts.CellKey{Algorithm: c.Algorithm, Operation: c.Operation}]
	if load == nil {
		return s, "a metered energy without its load window in power.csv"
	}
	it, err := energy.WindowTrace(run.Power.Idle, run.Meter.Rate, "idle window")
	if err != nil {
		return s, err.Error()
	}
	lt, err := energy.WindowTrace(load, run.Meter.Rate, "load window")
	if err != nil {
		return s, err.Error()
	}
	e, err := energy.PerOperation(it, lt, c.Energy.Windows.TOp, energy.Options{Seed: energy.PowerSeed, Replicates: energy.PowerReplicates})
	if err != nil {
		return s, err.Error()
	}
	if !(e.Energy.Point > 0) {
		return s, fmt.Sprintf("metered energy %g J: a ratio needs a positive energy", e.Energy.Point)
	}
	s.metered, s.values, s.unit = &e, []float64{e.Energy.Point}, artifacts.UnitJoules
	s.note = s.ref + ": metered energy (ΔP × T_op from power.csv; the ratio's interval pairs the two cells' block-bootstrap replicates over the shared idle window)"
	return s, ""
}

// meteredInterval is the interval of a ratio of two metered energies (energy.RatioInterval:
// the cells' paired replicates); a metered energy is never compared with a RAPL one.
func meteredInterval(iv Interval, num, den sampled) (Interval, []float64, string) {
	if num.metered == nil || den.metered == nil {
		return iv, nil, "one energy is metered (ΔP × T_op), the other per-iteration RAPL: two methods are never compared"
	}
	r, err := energy.RatioInterval(*num.metered, *den.metered, false)
	if err != nil {
		return iv, nil, err.Error()
	}
	reps := make([]float64, len(num.metered.DeltaReplicates))
	for b := range reps {
		reps[b] = num.metered.EnergyReplicate(b) / den.metered.EnergyReplicate(b)
	}
	slices.Sort(reps)
	iv.Point, iv.Lo, iv.Hi = r.Point, r.Lo, r.Hi
	return iv, reps, ""
}
