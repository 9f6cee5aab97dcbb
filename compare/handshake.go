package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// Criteria of the handshake checks (paper000), named in every check result they decide.
const (
	MethodSpread   = "percentile bootstrap of the ratio of spreads, spread = (p75 - p25) / median"
	MethodAdditive = "percentile bootstrap of t(hybrid) / [t(part 1) + t(part 2) - base], medians; key-exchange phase medians held fixed"
	MethodRange    = "percentile bootstrap of max/min of the cells' medians"
)

// runHandshakeCheck decides the check kinds beyond order and ratio: faster, notslower,
// additive, spread and range. Every one reads the cells' raw samples (samplesOf), so a cell
// that failed, was skipped or has too few samples makes the check untestable with the reason.
func runHandshakeCheck(ch experiments.Check, run Run) CheckResult {
	cr := CheckResult{Check: ch, Verdict: Untestable}
	refs, why := handshakeRefs(ch, run)
	if why != "" {
		cr.Detail = why
		return cr
	}
	cells, unit, why := handshakeCells(run, refs)
	if why != "" {
		cr.Detail = why
		return cr
	}
	tol := ch.Tolerance
	if tol == 0 {
		tol = artifacts.DefaultTolerance
	}
	seed := func(parts ...string) [32]byte {
		return BootstrapSeed(run.Result.ManifestID, "time/"+ch.Kind, strings.Join(parts, ","), "")
	}
	cr.Resamples, cr.Unit = Resamples, string(unit)
	switch ch.Kind {
	case "faster":
		checkFaster(&cr, cells[ch.Num], cells[ch.Den], tol, run.Result.ManifestID)
	case "notslower":
		cr = checkNotSlower(cr, ch, run.Result.ManifestID, cells, refs, tol)
	case "spread":
		cr = checkSpread(cr, ch, cells, refs, seed)
		if cr.Verdict != Untestable {
			cr.Detail += signatureRounds(run, ch.Cells)
		}
	case "additive":
		checkAdditive(&cr, run, ch, cells, tol, seed(refs...))
	case "range":
		cr = checkRange(cr, ch, cells, refs, seed(ch.Operation))
	}
	if cr.Verdict != Untestable {
		cr.Method = methodOf(cr.Method, cr.Intervals)
	}
	return cr
}

// handshakeRefs are the cells a check reads, or why it cannot run.
func handshakeRefs(ch experiments.Check, run Run) ([]string, string) {
	switch ch.Kind {
	case "faster":
		return []string{ch.Num, ch.Den}, ""
	case "notslower", "spread":
		return append(slices.Clone(ch.Cells), ch.Than...), ""
	case "additive":
		return append([]string{ch.Num}, ch.Cells...), ""
	case "range":
		return rangeCells(run, ch)
	}
	return nil, "unknown check kind " + ch.Kind
}

// handshakeCells reads the raw samples of every ref in one unit, or says why not.
func handshakeCells(run Run, refs []string) (map[string]sampled, artifacts.Unit, string) {
	cells := map[string]sampled{}
	var missing []string
	for _, ref := range refs {
		s, why := samplesOf(run, ref, "time")
		if why == "" && s.note != "" {
			why = "measured only with a variant, not the manifest's method"
		}
		if why != "" {
			missing = append(missing, ref+": "+why)
			continue
		}
		cells[ref] = s
	}
	if len(missing) > 0 {
		return nil, "", strings.Join(missing, "; ")
	}
	unit := cells[refs[0]].unit
	for _, ref := range refs[1:] {
		if u := cells[ref].unit; u != unit {
			return nil, "", fmt.Sprintf("units differ: %s in %s, %s in %s", refs[0], unit, ref, u)
		}
	}
	return cells, unit, ""
}

// checkNotSlower: every cell is at most 1 + tol times as slow as every "than" cell.
func checkNotSlower(cr CheckResult, ch experiments.Check, manifestID string, cells map[string]sampled, refs []string, tol float64) CheckResult {
	cr.Method = Method
	cr.Verdict = Holds
	var worst []string
	for _, a := range ch.Cells {
		for _, b := range ch.Than {
			iv, reps, why := pairInterval(manifestID, "time", cells[a], cells[b])
			if why != "" {
				return untestable(cr, why)
			}
			atMost(1+tol).judge(&iv, reps)
			if iv.Verdict == Fails {
				worst = append(worst, fmt.Sprintf("%s is slower than %s (%s)", a, b, fmtInterval(iv)))
			}
			cr.Verdict = worse(cr.Verdict, iv.Verdict)
			cr.Intervals = append(cr.Intervals, iv)
		}
	}
	lead := map[string]string{Holds: "not slower", Fails: "slower", Inconclusive: "cannot tell"}[cr.Verdict]
	cr.Detail = fmt.Sprintf("%s: %d pairs t(cell)/t(than), claim: every interval at most %.3g (1 + %.0f%% tolerance); medians %s",
		lead, len(cr.Intervals), 1+tol, tol*100, medians(cells, refs, artifacts.Unit(cr.Unit)))
	if len(worst) > 0 {
		cr.Detail += "; " + strings.Join(worst, "; ")
	}
	return cr
}

// checkSpread: every cell's samples vary more (relative interquartile range) than every
// "than" cell's.
func checkSpread(cr CheckResult, ch experiments.Check, cells map[string]sampled, refs []string, seed func(parts ...string) [32]byte) CheckResult {
	cr.Method = MethodSpread
	cr.Verdict = Holds
	for _, a := range ch.Cells {
		for _, b := range ch.Than {
			iv, reps, why := bootstrapInterval([]sampled{cells[a], cells[b]}, seed(a, b), func(s [][]float64) float64 {
				return spread(s[0]) / spread(s[1])
			})
			if why != "" {
				return untestable(cr, why)
			}
			iv.Num, iv.Den = "spread "+a, "spread "+b
			above(1).judge(&iv, reps)
			cr.Verdict = worse(cr.Verdict, iv.Verdict)
			cr.Intervals = append(cr.Intervals, iv)
		}
	}
	var sp []string
	for _, ref := range refs {
		v := slices.Sorted(slices.Values(cells[ref].values))
		sp = append(sp, fmt.Sprintf("%s %.3f", ref, spread(v)))
	}
	lead := map[string]string{Holds: "varies more", Fails: "varies less", Inconclusive: "cannot tell"}[cr.Verdict]
	cr.Detail = fmt.Sprintf("%s: %d pairs spread(cell)/spread(than), claim: every interval above 1; spreads (p75 - p25) / median: %s",
		lead, len(cr.Intervals), strings.Join(sp, ", "))
	return cr
}

// signatureRounds shows beside a spread the rejection rounds of the cells' CertificateVerify
// signatures, min/median/max per handshake where the signer reported them, and otherwise why
// they are absent (once per reason), so a spread can be read against the signing loop that
// may cause it. "" when no cell says anything about rounds.
func signatureRounds(run Run, refs []string) string {
	var measured, absent []string
	seen := map[string]bool{}
	for _, ref := range refs {
		c := cellOf(run, ref)
		switch {
		case c == nil || c.TLS == nil:
		case c.TLS.Rounds != nil:
			r := c.TLS.Rounds
			measured = append(measured, fmt.Sprintf("%s %g/%g/%g", ref, r.Min, r.Median, r.Max))
		case c.TLS.RoundsAbsent != "" && !seen[c.TLS.RoundsAbsent]:
			seen[c.TLS.RoundsAbsent] = true
			absent = append(absent, c.TLS.RoundsAbsent)
		}
	}
	out := ""
	if len(measured) > 0 {
		out += "; rejection rounds per signature (min/median/max over the handshakes): " + strings.Join(measured, ", ")
	}
	if len(absent) > 0 {
		out += "; rejection rounds not measured: " + strings.Join(absent, "; ")
	}
	return out
}

// cellOf is the cell "<algorithm>/<operation>" measured with the manifest's method, nil when
// the run has none.
func cellOf(run Run, ref string) *artifacts.Cell {
	alg, op, _ := strings.Cut(ref, "/")
	for i, c := range run.Result.Cells {
		if c.Algorithm == alg && c.Operation == op && c.Variant == "" {
			return &run.Result.Cells[i]
		}
	}
	return nil
}

// checkRange: the cells' medians are "similar", read as max/min of the medians at most
// ch.Max.
func checkRange(cr CheckResult, ch experiments.Check, cells map[string]sampled, refs []string, seed [32]byte) CheckResult {
	cr.Method = MethodRange
	vals := make([]sampled, len(refs))
	for i, ref := range refs {
		vals[i] = cells[ref]
	}
	maxMin := func(s [][]float64) float64 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range s {
			m := sortedMedian(v)
			lo, hi = min(lo, m), max(hi, m)
		}
		return hi / lo
	}
	iv, reps, why := bootstrapInterval(vals, seed, maxMin)
	if why != "" {
		return untestable(cr, why)
	}
	iv.Num, iv.Den = "max median", "min median"
	limit := *ch.Max
	atMost(limit).judge(&iv, reps)
	cr.Verdict, cr.Intervals = iv.Verdict, []Interval{iv}
	fastest, slowest := extremes(cells, refs)
	cr.Detail = fmt.Sprintf("%d cells: max/min of medians = %s (claim \"similar\", read as max/min ≤ %.3g); fastest %s %s, slowest %s %s",
		len(refs), fmtInterval(iv), limit, fastest, fmtTime(median(slices.Clone(cells[fastest].values)), artifacts.Unit(cr.Unit)),
		slowest, fmtTime(median(slices.Clone(cells[slowest].values)), artifacts.Unit(cr.Unit)))
	return cr
}

// checkFaster decides a published "P% faster" (C000-01): the ratio R = t(slower)/t(faster)
// of medians, read both ways the words allow: "P% lower time" (R = 1/(1 - P/100)) and "P%
// higher speed" (R = 1 + P/100). It holds when R's interval lies inside either reading's
// band (expected × (1 ± tolerance)), fails when it misses both, and says which reading fits.
func checkFaster(cr *CheckResult, slow, fast sampled, tol float64, manifestID string) {
	cr.Method = Method
	p := cr.Check.Percent / 100
	iv, reps, why := pairInterval(manifestID, "time", slow, fast)
	if why != "" {
		*cr = untestable(*cr, why)
		return
	}
	readings := []struct {
		name string
		r    float64
	}{
		{fmt.Sprintf("%.3g%% lower time", cr.Check.Percent), 1 / (1 - p)},
		{fmt.Sprintf("%.3g%% higher speed (%.3gx)", cr.Check.Percent, 1+p), 1 + p},
	}
	verdict, pFail := Fails, 0.0
	var fits, parts []string
	for _, rd := range readings {
		lo, hi := rd.r*(1-tol), rd.r*(1+tol)
		one := iv
		between(lo, hi).judge(&one, reps)
		v := one.Verdict
		if v == Holds {
			fits = append(fits, rd.name)
		}
		if v == Holds || (v == Inconclusive && verdict == Fails) {
			verdict = v
		}
		// The check fails only when it misses both readings: at the larger of the two levels.
		pFail = max(pFail, one.PFail)
		parts = append(parts, fmt.Sprintf("as %s the ratio would be %.3f, band [%.3f, %.3f]: %s", rd.name, rd.r, lo, hi, v))
	}
	iv.Verdict, iv.PFail = verdict, pFail
	cr.Verdict, cr.Intervals = iv.Verdict, []Interval{iv}
	lower := func(r float64) float64 { return 100 * (1 - 1/r) }
	cr.Detail = fmt.Sprintf("%s / %s = %s; measured: %.1f%% lower time [%.1f, %.1f], %.1f%% higher speed [%.1f, %.1f]; %s",
		iv.Num, iv.Den, fmtInterval(iv), lower(iv.Point), lower(iv.Lo), lower(iv.Hi),
		100*(iv.Point-1), 100*(iv.Lo-1), 100*(iv.Hi-1), strings.Join(parts, "; "))
	if len(fits) > 0 {
		cr.Detail += "; matches the reading " + strings.Join(fits, " and ")
	} else {
		cr.Detail += "; matches neither reading"
	}
}

// checkAdditive decides the additive model of a hybrid group (C000-05) for one
// authentication algorithm: t(H) - base ≈ [t(X) - base] + [t(K) - base], i.e.
// t(H) ≈ t(X) + t(K) - base, where base is the handshake without its key-exchange work.
// base cannot be measured as a cell (no handshake runs without a key exchange), so it is
// estimated from the two parts' own phase records: base = ½[(t(X) - kx(X)) + (t(K) -
// kx(K))], with kx the cell's key-exchange time (client key share + client decapsulation
// + server encapsulation, medians per handshake). The prediction is then
// ½[t(X) + t(K)] + ½[kx(X) + kx(K)]; the check holds when the interval of
// t(H)/prediction lies within 1 ± tolerance.
func checkAdditive(cr *CheckResult, run Run, ch experiments.Check, cells map[string]sampled, tol float64, seed [32]byte) {
	kx := make([]float64, 2)
	for i, ref := range ch.Cells {
		v, why := keyExchangeNS(run, ref)
		if why != "" {
			cr.Verdict, cr.Detail, cr.Resamples, cr.Unit = Untestable, ref+": "+why, 0, ""
			return
		}
		kx[i] = v
	}
	h, x, k := cells[ch.Num], cells[ch.Cells[0]], cells[ch.Cells[1]]
	predict := func(mx, mk float64) float64 { return (mx+mk)/2 + (kx[0]+kx[1])/2 }
	iv, reps, why := bootstrapInterval([]sampled{h, x, k}, seed, func(s [][]float64) float64 {
		return sortedMedian(s[0]) / predict(sortedMedian(s[1]), sortedMedian(s[2]))
	})
	if why != "" {
		*cr = untestable(*cr, why)
		return
	}
	iv.Num, iv.Den = "t("+ch.Num+")", "t("+ch.Cells[0]+") + t("+ch.Cells[1]+") - base"
	between(1-tol, 1+tol).judge(&iv, reps)
	cr.Method, cr.Verdict, cr.Intervals = MethodAdditive, iv.Verdict, []Interval{iv}
	mh, mx, mk := median(slices.Clone(h.values)), median(slices.Clone(x.values)), median(slices.Clone(k.values))
	base := ((mx - kx[0]) + (mk - kx[1])) / 2
	u := h.unit
	cr.Detail = fmt.Sprintf("measured / additive prediction = %s (claim: within 1 ± %.0f%%); t(hybrid) %s, predicted %s = t(X) %s + t(K) %s - base %s; base = handshake without key exchange, ½[(t(X) - kx(X)) + (t(K) - kx(K))], kx(X) %s, kx(K) %s (%s)",
		fmtInterval(iv), tol*100, fmtTime(mh, u), fmtTime(predict(mx, mk), u), fmtTime(mx, u), fmtTime(mk, u), fmtTime(base, u), fmtTime(kx[0], u), fmtTime(kx[1], u), keyExchangeWhat(run))
}

// rangeCells returns the refs of every cell of the check's operation run with the
// manifest's method, or why the range cannot be taken (fewer than Count measured).
func rangeCells(run Run, ch experiments.Check) ([]string, string) {
	var refs, bad []string
	for _, c := range run.Result.Cells {
		if c.Operation != ch.Operation || c.Variant != "" {
			continue
		}
		if c.Status != artifacts.StatusOK {
			bad = append(bad, fmt.Sprintf("%s %s", c.Algorithm, c.Status))
			continue
		}
		refs = append(refs, c.Algorithm+"/"+c.Operation)
	}
	if len(refs) < ch.Count {
		why := fmt.Sprintf("%d of the %d %s cells measured", len(refs), ch.Count, ch.Operation)
		if len(bad) > 0 {
			why += " (" + strings.Join(bad, ", ") + ")"
		}
		return nil, why + "; the claim is about all of them"
	}
	return refs, ""
}

// bootstrapInterval is stat's interval over the cells' samples with its sorted replicates:
// over the rounds they share when every cell was measured in rounds (roundsInterval), else
// each cell resampled on its own (bootstrap); when every sample is identical it is exact,
// with no replicates. why says why no interval could be drawn.
func bootstrapInterval(cells []sampled, seed [32]byte, stat func(sorted [][]float64) float64) (Interval, []float64, string) {
	iv := Interval{Seed: seedHex(seed)}
	samples := make([][]float64, len(cells))
	inRounds := true
	for i, c := range cells {
		samples[i] = c.values
		inRounds = inRounds && c.rounds != nil
	}
	if constant(samples...) {
		sorted := make([][]float64, len(samples))
		for i, s := range samples {
			sorted[i] = slices.Clone(s)
		}
		iv.Point = stat(sorted)
		iv.Lo, iv.Hi, iv.Exact = iv.Point, iv.Point, true
		return iv, nil, ""
	}
	if inRounds {
		return roundsInterval(cells, seed, stat)
	}
	var reps []float64
	iv.Point, reps = bootstrap(samples, seed, stat)
	iv.Lo, iv.Hi = percentiles(reps)
	return iv, reps, ""
}

// bootstrap returns stat of the observed samples and its Resamples percentile bootstrap
// replicates, sorted: each round draws every slice anew, independently and with replacement
// (len values each, from a ChaCha8 stream seeded with seed), sorts the draws and evaluates
// stat on them. stat receives sorted slices it must not keep; samples are not modified.
func bootstrap(samples [][]float64, seed [32]byte, stat func(sorted [][]float64) float64) (point float64, reps []float64) {
	sorted := make([][]float64, len(samples))
	draw := make([][]float64, len(samples))
	for i, s := range samples {
		sorted[i] = slices.Sorted(slices.Values(s))
		draw[i] = make([]float64, len(s))
	}
	point = stat(sorted)
	rng := rand.New(rand.NewChaCha8(seed))
	vals := make([]float64, Resamples)
	for b := range vals {
		for i, s := range sorted {
			for j := range draw[i] {
				draw[i][j] = s[rng.IntN(len(s))]
			}
			slices.Sort(draw[i])
		}
		vals[b] = stat(draw)
	}
	slices.Sort(vals)
	return point, vals
}

// spread is (p75 - p25) / median of sorted values (type 7 quantiles): a dispersion that
// does not grow with the handshake's own length, so slow and fast cells compare fairly.
func spread(sorted []float64) float64 {
	return (artifacts.Quantile(sorted, 0.75) - artifacts.Quantile(sorted, 0.25)) / sortedMedian(sorted)
}

func medians(cells map[string]sampled, refs []string, unit artifacts.Unit) string {
	var out []string
	for _, ref := range refs {
		out = append(out, ref+" "+fmtTime(median(slices.Clone(cells[ref].values)), unit))
	}
	return strings.Join(out, ", ")
}

func extremes(cells map[string]sampled, refs []string) (fastest, slowest string) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, ref := range refs {
		m := median(slices.Clone(cells[ref].values))
		if m < lo {
			lo, fastest = m, ref
		}
		if m > hi {
			hi, slowest = m, ref
		}
	}
	return fastest, slowest
}

// fmtTime prints a time in ns in a readable time unit; any other unit as it is.
func fmtTime(v float64, unit artifacts.Unit) string {
	if unit != artifacts.UnitNanoseconds {
		return fmtVal(v, unit)
	}
	return artifacts.FormatNanoseconds(v)
}
