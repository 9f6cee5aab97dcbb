package artifacts

import (
	"fmt"
	"math"
	"slices"
)

// Re-derivation: a signed result.json is not trusted on its word. Rederive recomputes what
// the bundle's own files determine and checks what they cannot determine for plausibility.
//
// Re-derived (must match):
//   - every cell's Stats from its samples.csv rows with Summarize (type-7 quantiles, sample
//     standard deviation, n): exactly for integer units (instructions, cycles), within
//     StatsRelTolerance for the others (ns, us), so a writer summing in another order is not
//     refused;
//   - the cells themselves: each one the manifest asks for (Manifest.Cells), at most once
//     per variant; a variant only for openssl-cli, right after a cell of the same algorithm
//     and operation; no samples for a cell the result does not hold;
//   - a tls-matrix cell's CPU per batch and phases per handshake (Cell.TLS) from tls.csv,
//     as Stats are from samples.csv; its group, scheme, stack, suite and batch from the cell
//     and the manifest, and its bytes against the key-share sizes the group fixes;
//   - n: equal to the cell's samples, at most Requested (which is the manifest's iterations)
//     and MaxSamplesPerCell; at most MaxCells cells.
//
// Checked for plausibility only (signed, but no file in the bundle determines them): heap
// and allocations per operation (measured in a separate pass), stack high-water marks,
// energy (a meter's per-iteration readings, which the runner does not write to samples.csv;
// re-derived when J rows are present), the sizes of
// produced objects (KindDef.CheckCell: the algorithm's fixed sizes, the manifest's message),
// and per-command timings of openssl-cli cells. They must be finite and non-negative, and
// statistics ordered.

// StatsRelTolerance is the relative difference allowed between a floating-point statistic in
// result.json and the one recomputed from samples.csv.
const StatsRelTolerance = 1e-9

// RederiveError names what did not re-derive: the file (result.json or samples.csv), the cell
// (empty for the result as a whole) and the field ("stats.median", "unit", "cells").
type RederiveError struct {
	File  string
	Index int // the cell's index in result.json, -1 when the problem is not one cell's
	Cell  CellKey
	Field string
	Err   error
}

// Error reads like `result.json cells[3] (ML-DSA-65 sign) stats.median: 1 ns, samples.csv gives 204331`.
func (e *RederiveError) Error() string {
	s := e.File
	if e.Index >= 0 {
		s += fmt.Sprintf(" cells[%d]", e.Index)
	}
	if e.Cell.Algorithm != "" {
		s += " (" + e.Cell.Algorithm + " " + e.Cell.Operation
		if e.Cell.Variant != "" {
			s += " [" + e.Cell.Variant + "]"
		}
		s += ")"
	}
	if e.Field != "" {
		s += " " + e.Field
	}
	return s + ": " + e.Err.Error()
}

func (e *RederiveError) Unwrap() error { return e.Err }

func rederiveErr(file string, i int, k CellKey, field, format string, args ...any) *RederiveError {
	return &RederiveError{File: file, Index: i, Cell: k, Field: field, Err: fmt.Errorf(format, args...)}
}

// knownUnits are the units a cell may be timed in.
var knownUnits = []Unit{UnitNanoseconds, UnitMicroseconds, UnitInstructions, UnitCycles}

// IntegerUnit reports whether samples in unit are counts (instructions, cycles), which are
// re-derived exactly.
func IntegerUnit(unit Unit) bool { return unit == UnitInstructions || unit == UnitCycles }

// Rederive checks res against the manifest m it claims to have run and the samples it was
// summarised from. It returns nil or a *RederiveError for the first problem found. m must be
// a parsed (normalised) manifest; res must have passed Result.Validate.
func Rederive(m *Manifest, res *Result, samples Samples) error {
	r := &rederiver{m: m, res: res, samples: samples, seen: map[CellKey]bool{}, variants: map[CellRef]int{}, asked: map[CellRef]bool{}}
	if err := r.checkWhole(); err != nil {
		return err
	}
	for _, c := range m.Cells() {
		r.asked[c] = true
	}
	for i, c := range res.Cells {
		bad := func(field, format string, args ...any) error {
			return rederiveErr(FileResult, i, KeyOf(c), field, format, args...)
		}
		if err := r.checkPlace(c, bad); err != nil {
			return err
		}
		if c.Status != StatusOK {
			if c.Stats != nil {
				return bad("stats", "a %s cell carries statistics", c.Status)
			}
			continue
		}
		if err := r.checkCell(i, bad); err != nil {
			return err
		}
	}
	return r.checkStrays()
}

// rederiver is one Rederive call's state: the cells seen so far and where variants stand.
type rederiver struct {
	m        *Manifest
	res      *Result
	samples  Samples
	kind     *KindDef
	asked    map[CellRef]bool // the cells the manifest asks for
	seen     map[CellKey]bool
	variants map[CellRef]int
	last     CellRef // the latest cell run as written, which a variant may follow
}

// checkWhole checks what the result says as a whole: its size, manifest, kind, level and schedule.
func (r *rederiver) checkWhole() error {
	m, res := r.m, r.res
	whole := func(field, format string, args ...any) error {
		return rederiveErr(FileResult, -1, CellKey{}, field, format, args...)
	}
	if len(res.Cells) > MaxCells {
		return whole("cells", "%d cells, more than the limit of %d", len(res.Cells), MaxCells)
	}
	if res.ManifestID != m.ID() || res.Experiment != m.Ref() {
		return whole("manifestId", "names %s (%s), the bundle's manifest is %s (%s)", res.ManifestID, res.Experiment, m.ID(), m.Ref())
	}
	if res.Kind != m.Kind || res.Method != m.Spec.Method {
		return whole("kind", "says %s / %s, the manifest is %s / %s", res.Kind, res.Method, m.Kind, m.Spec.Method)
	}
	kind, ok := LookupKind(m.Kind)
	if !ok {
		return whole("kind", "unknown experiment kind %q", m.Kind)
	}
	r.kind = kind
	if !slices.Contains([]Level{AssuranceHost, AssuranceEmulated, AssuranceHardware}, res.Assurance) {
		return whole("assurance", "%q is not host, emulated or hardware", res.Assurance)
	}
	if sc := res.Schedule; sc != nil {
		switch {
		case res.Assurance != AssuranceHost:
			return whole("schedule", "a %s run's cells are never interleaved (its counts do not drift with the host)", res.Assurance)
		case sc.Rounds < 1 || sc.Rounds > MaxSamplesPerCell:
			return whole("schedule.rounds", "%d, want 1..%d", sc.Rounds, MaxSamplesPerCell)
		}
	}
	return nil
}

// checkPlace checks that the manifest asks for cell c, that it is listed once, and that a
// variant follows the cell it varies.
func (r *rederiver) checkPlace(c Cell, bad func(field, format string, args ...any) error) error {
	k := KeyOf(c)
	ref := CellRef{Algorithm: c.Algorithm, Operation: c.Operation}
	if !r.asked[ref] {
		return bad("", "the manifest does not ask for this cell")
	}
	if r.seen[k] {
		return bad("", "listed twice")
	}
	r.seen[k] = true
	if c.Variant == "" {
		r.last = ref
		return nil
	}
	if r.kind.variant != nil {
		if err := r.kind.variant(r.m, c.Variant); err != nil {
			return bad("variant", "%v", err)
		}
	} else if r.m.Spec.Method != MethodOpenSSLCLI {
		return bad("variant", "only openssl-cli cells have variants (method is %s)", r.m.Spec.Method)
	}
	if r.last != ref {
		return bad("variant", "a variant must follow the cell it varies (%s %s)", c.Algorithm, c.Operation)
	}
	if r.variants[ref]++; r.variants[ref] > MaxVariants {
		return bad("variant", "more than %d variant of %s %s", MaxVariants, c.Algorithm, c.Operation)
	}
	return nil
}

// checkCell re-derives ok cell i from its samples: unit, statistics, signing rounds, energy,
// the kind's own checks, and its place in the schedule.
func (r *rederiver) checkCell(i int, bad func(field, format string, args ...any) error) error {
	m, res, samples := r.m, r.res, r.samples
	c := res.Cells[i]
	k := KeyOf(c)
	vals := samples.Values[k]
	if c.Requested != m.Spec.Iterations {
		return bad("requested", "%d, the manifest asks for %d iterations", c.Requested, m.Spec.Iterations)
	}
	if err := rederiveUnit(c.Unit, res.Assurance); err != nil {
		return bad("unit", "%v", err)
	}
	if u, ok := samples.Units[k]; ok && u != c.Unit {
		return rederiveErr(FileSamples, i, k, "unit", "%q, result.json says %q", u, c.Unit)
	}
	st := c.Stats
	if st.N > c.Requested {
		return bad("stats.n", "%d samples, more than the %d requested", st.N, c.Requested)
	}
	if st.N > MaxSamplesPerCell {
		return bad("stats.n", "%d samples, more than the limit of %d", st.N, MaxSamplesPerCell)
	}
	if err := plausibleStats(st); err != nil {
		return bad("stats", "%v", err)
	}
	if len(vals) != st.N {
		return rederiveErr(FileSamples, i, k, "n", "%d samples, result.json says n = %d", len(vals), st.N)
	}
	exact := IntegerUnit(c.Unit)
	if exact {
		for j, v := range vals {
			if v != math.Trunc(v) || v < 0 {
				return rederiveErr(FileSamples, i, k, "value", "iteration %d is %v, not a count of %s", j, v, c.Unit)
			}
		}
	}
	if err := matchStats(Summarize(vals), st, exact); err != nil {
		return bad("stats."+err.field, "%v, %s gives %v", err.got, FileSamples, err.want)
	}
	if err := plausibleExtras(c); err != nil {
		return bad(err.field, "%v", err.err)
	}
	if err := checkSigningRounds(c, bad); err != nil {
		return err
	}
	if err := r.checkEnergyAndKind(i, bad); err != nil {
		return err
	}
	if err := r.checkKindRecords(i, bad); err != nil {
		return err
	}
	if err := checkKindSamples(m, &res.Cells[i], vals); err != nil {
		return bad("mqtt", "%v", err)
	}
	return nil
}

// checkSigningRounds re-derives a signing cell's rejection-sampling rounds from their counts.
func checkSigningRounds(c Cell, bad func(field, format string, args ...any) error) error {
	if c.Rounds == nil {
		return nil
	}
	if c.Operation != OpSign {
		return bad("rounds", "a %s cell carries signing rounds", c.Operation)
	}
	rv, err := c.Rounds.expand()
	if err != nil {
		return bad("rounds.counts", "%v", err)
	}
	if len(rv) != c.Stats.N {
		return bad("rounds.counts", "count %d signatures, the cell has n = %d", len(rv), c.Stats.N)
	}
	if c.Rounds.Stats == nil {
		return bad("rounds.stats", "missing")
	}
	if err := matchStats(Summarize(rv), c.Rounds.Stats, false); err != nil {
		return bad("rounds.stats."+err.field, "%v, rounds.counts give %v", err.got, err.want)
	}
	return nil
}

// checkEnergyAndKind re-derives cell i's energy from its energy samples and applies the kind's
// size checks.
func (r *rederiver) checkEnergyAndKind(i int, bad func(field, format string, args ...any) error) error {
	c := r.res.Cells[i]
	k := KeyOf(c)
	if ev := r.samples.Energy[k]; len(ev) > 0 {
		if c.Energy == nil || c.Energy.JoulesPerOp == nil {
			return rederiveErr(FileSamples, i, k, "energy", "%d energy samples, result.json records no energy", len(ev))
		}
		if err := matchStats(Summarize(ev), c.Energy.JoulesPerOp, false); err != nil {
			return bad("energy.joulesPerOp."+err.field, "%v, %s gives %v", err.got, FileSamples, err.want)
		}
	}
	if err := r.kind.CheckCell(r.m, &r.res.Cells[i]); err != nil {
		return bad("sizes", "%v", err)
	}
	return nil
}

// checkKindRecords checks cell i's rounds against the schedule and its kind's own records
// (a TLS cell's phases and series) against the bundle's other samples.
func (r *rederiver) checkKindRecords(i int, bad func(field, format string, args ...any) error) error {
	c := r.res.Cells[i]
	k := KeyOf(c)
	if rs := r.samples.Rounds[k]; len(rs) > 0 {
		switch {
		case r.res.Schedule == nil:
			return rederiveErr(FileSamples, i, k, "round", "samples in rounds, result.json records no schedule")
		case rs[len(rs)-1] >= r.res.Schedule.Rounds:
			return rederiveErr(FileSamples, i, k, "round", "round %d, the schedule has %d", rs[len(rs)-1], r.res.Schedule.Rounds)
		case c.Block < 1:
			return bad("block", "%d iterations a turn for a cell in rounds", c.Block)
		}
	}
	if r.kind.rederive != nil {
		if file, field, err := r.kind.rederive(r.m, &r.res.Cells[i], r.samples); err != nil {
			return &RederiveError{File: file, Index: i, Cell: k, Field: field, Err: err}
		}
	} else if c.TLS != nil {
		return bad("tls", "a %s cell carries a TLS record", r.m.Kind)
	}
	return nil
}

// checkStrays refuses samples, TLS rows and energy samples for cells result.json does not hold.
func (r *rederiver) checkStrays() error {
	for k := range r.samples.Values {
		if !r.seen[k] {
			return rederiveErr(FileSamples, -1, k, "", "samples for a cell result.json does not hold")
		}
	}
	for k := range r.samples.TLS {
		if i := slices.IndexFunc(r.res.Cells, func(c Cell) bool { return KeyOf(c) == k }); i < 0 || r.res.Cells[i].Status != StatusOK {
			return rederiveErr(FileTLS, -1, k, "", "rows for a cell result.json does not hold as ok")
		}
	}
	for k := range r.samples.Energy {
		if !r.seen[k] {
			return rederiveErr(FileSamples, -1, k, "", "energy samples for a cell result.json does not hold")
		}
	}
	return nil
}

// rederiveUnit checks a timed cell's unit against the board's assurance level.
func rederiveUnit(unit Unit, assurance Level) error {
	if !slices.Contains(knownUnits, unit) {
		return fmt.Errorf("%q is not one of %v", unit, knownUnits)
	}
	if unit == UnitInstructions && assurance != AssuranceEmulated {
		return fmt.Errorf("instructions are counted only on emulated boards, this one is %s", assurance)
	}
	return nil
}

// plausibleStats checks that statistics are finite, non-negative and ordered.
func plausibleStats(st *Stats) error {
	vals := []struct {
		name string
		v    float64
	}{{"min", st.Min}, {"p25", st.P25}, {"median", st.Median}, {"p75", st.P75}, {"max", st.Max}, {"mean", st.Mean}, {"stddev", st.Stddev}}
	for _, f := range vals {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s is %v, not a finite non-negative number", f.name, f.v)
		}
	}
	if st.N <= 0 {
		return fmt.Errorf("n is %d", st.N)
	}
	if !(st.Min <= st.P25 && st.P25 <= st.Median && st.Median <= st.P75 && st.P75 <= st.Max) {
		return fmt.Errorf("not ordered: min %v, p25 %v, median %v, p75 %v, max %v", st.Min, st.P25, st.Median, st.P75, st.Max)
	}
	if st.Mean < st.Min || st.Mean > st.Max {
		return fmt.Errorf("mean %v outside [min %v, max %v]", st.Mean, st.Min, st.Max)
	}
	return nil
}

type statsMismatch struct {
	field     string
	got, want float64
}

// matchStats compares recorded statistics with recomputed ones.
func matchStats(want, got *Stats, exact bool) *statsMismatch {
	pairs := []struct {
		name   string
		g, w   float64
		always bool // compared exactly whatever the unit
	}{
		{"min", got.Min, want.Min, true}, {"max", got.Max, want.Max, true},
		{"p25", got.P25, want.P25, false}, {"median", got.Median, want.Median, false}, {"p75", got.P75, want.P75, false},
		{"mean", got.Mean, want.Mean, false}, {"stddev", got.Stddev, want.Stddev, false},
	}
	for _, p := range pairs {
		if p.g == p.w {
			continue
		}
		if exact || p.always || math.Abs(p.g-p.w) > StatsRelTolerance*math.Max(math.Abs(p.g), math.Abs(p.w)) {
			return &statsMismatch{field: p.name, got: p.g, want: p.w}
		}
	}
	return nil
}

type fieldErr struct {
	field string
	err   error
}

// plausibleExtras checks the signed figures nothing in the bundle re-derives: memory, energy
// and per-command timings.
func plausibleExtras(c Cell) *fieldErr {
	nonNeg := func(field string, v float64) *fieldErr {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return &fieldErr{field, fmt.Errorf("%v, not a finite non-negative number", v)}
		}
		return nil
	}
	if mem := c.Memory; mem != nil {
		if mem.HeapBytesPerOp != nil {
			if err := nonNeg("memory.heapBytesPerOp", *mem.HeapBytesPerOp); err != nil {
				return err
			}
		}
		if mem.AllocsPerOp != nil {
			if err := nonNeg("memory.allocsPerOp", *mem.AllocsPerOp); err != nil {
				return err
			}
		}
		if mem.StackBytes != nil && *mem.StackBytes < 0 {
			return &fieldErr{"memory.stackBytes", fmt.Errorf("%d, negative", *mem.StackBytes)}
		}
	}
	if e := c.Energy; e != nil && e.JoulesPerOp != nil {
		if err := plausibleStats(e.JoulesPerOp); err != nil {
			return &fieldErr{"energy.joulesPerOp", err}
		}
	}
	if c.Hashing != nil {
		if err := c.Hashing.Validate(); err != nil {
			return &fieldErr{"hashing", err}
		}
	}
	for j, cmd := range c.Commands {
		if cmd.Stats == nil {
			continue
		}
		if err := plausibleStats(cmd.Stats); err != nil {
			return &fieldErr{fmt.Sprintf("commands[%d].stats", j), err}
		}
	}
	return nil
}

// RederiveBundle parses a bundle's manifest.yaml, result.json and samples.csv and re-derives
// the result from them (Rederive). Errors name the file. It does not verify signatures;
// Verify does.
func RederiveBundle(b *Bundle) (*Manifest, *Result, error) {
	m, err := ParseManifest(b.Files[FileManifest], FileManifest)
	if err != nil {
		return nil, nil, err
	}
	res, err := ParseResult(b.Files[FileResult])
	if err != nil {
		return nil, nil, err
	}
	samples, err := ParseBundleSamples(b)
	if err != nil {
		return nil, nil, err
	}
	if err := Rederive(m, res, samples); err != nil {
		return nil, nil, err
	}
	return m, res, nil
}
