package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// allowed is what a claim allows an interval's statistic: the band [lo, hi], each bound
// inclusive unless open (an ordering needs a ratio strictly above 1). An infinite bound is no
// bound.
type allowed struct {
	lo, hi         float64
	loOpen, hiOpen bool
}

func above(lo float64) allowed  { return allowed{lo: lo, hi: math.Inf(1), loOpen: true} }
func atMost(hi float64) allowed { return allowed{lo: math.Inf(-1), hi: hi} }
func between(lo, hi float64) allowed {
	return allowed{lo: lo, hi: hi}
}

// judge sets iv's verdict from its 95% interval and its PFail from the bootstrap replicates
// (sorted; nil for an exact interval, whose statistic has no spread): holds when the interval
// lies inside the band, fails when it lies wholly outside, inconclusive otherwise.
func (a allowed) judge(iv *Interval, reps []float64) {
	inLo := iv.Lo >= a.lo
	if a.loOpen {
		inLo = iv.Lo > a.lo
	}
	inHi := iv.Hi <= a.hi
	if a.hiOpen {
		inHi = iv.Hi < a.hi
	}
	switch {
	case inLo && inHi:
		iv.Verdict = Holds
	case iv.Hi < a.lo || iv.Lo > a.hi || (a.loOpen && iv.Hi == a.lo && iv.Exact) || (a.hiOpen && iv.Lo == a.hi && iv.Exact):
		iv.Verdict = Fails
	default:
		iv.Verdict = Inconclusive
	}
	iv.PFail = a.pFail(iv, reps)
}

// pFail is the bootstrap p-value of "the statistic lies outside the band": the smallest
// two-sided level at which the central interval of the replicates lies wholly below lo or
// wholly above hi (twice the share of replicates on the band's side of that bound), capped at
// 1. An exact interval has p 0 when it lies outside the band and 1 otherwise.
func (a allowed) pFail(iv *Interval, reps []float64) float64 {
	if iv.Exact || len(reps) == 0 {
		if iv.Verdict == Fails {
			return 0
		}
		return 1
	}
	p := 1.0
	n := float64(len(reps))
	if !math.IsInf(a.hi, 1) {
		// Wholly above hi: few replicates at or below it.
		k := sortSearch(reps, func(v float64) bool { return v > a.hi })
		p = min(p, 2*float64(k)/n)
	}
	if !math.IsInf(a.lo, -1) {
		k := len(reps) - sortSearch(reps, func(v float64) bool { return v >= a.lo })
		p = min(p, 2*float64(k)/n)
	}
	return min(p, 1)
}

// sortSearch is the first index of sorted v where ok turns true (len(v) when never).
func sortSearch(v []float64, ok func(float64) bool) int {
	lo, hi := 0, len(v)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ok(v[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// Family-wise error control of a claim decided from several intervals (see docs/DECISIONS.md,
// "Comparison"). A claim holds only when every interval lies inside its band: that is an
// intersection-union test, whose error rate is that of each interval (5%) without correction.
// A claim fails when some interval lies outside its band: a union of m tests, so each
// "fails" must survive Holm's step-down at 5% over the claim's m intervals, on the intervals'
// bootstrap p-values (PFail); one that does not is reported inconclusive, and says so.
const (
	// MultiplicityHolm names the rule in every claim result it applies to.
	MultiplicityHolm = "family-wise 5%%: \"fails\" needs Holm's step-down over the claim's %d intervals (bootstrap p-values); \"holds\" needs every interval inside its band (an intersection-union test, no correction)"
	// holmNote is added to an interval that fails alone but not under Holm.
	holmNote = "outside the band at 95%% alone (p = %.3g), not under Holm's correction for %d intervals (needs p ≤ %.3g)"
)

// holm applies the step-down to the intervals of a claim's counted checks and returns how
// many intervals it considered (0 when fewer than two: a single interval needs no control).
// A check whose failing intervals are all demoted becomes inconclusive.
func holm(checks []CheckResult) int {
	type ref struct{ c, i int }
	var fam []ref
	for c, ch := range checks {
		if ch.Check.Info || ch.Verdict == Untestable {
			continue
		}
		for i := range ch.Intervals {
			fam = append(fam, ref{c, i})
		}
	}
	m := len(fam)
	if m < 2 {
		return 0
	}
	slices.SortStableFunc(fam, func(a, b ref) int {
		pa, pb := checks[a.c].Intervals[a.i].PFail, checks[b.c].Intervals[b.i].PFail
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	const alpha = 1 - Confidence
	rejecting := true
	for k, r := range fam {
		iv := &checks[r.c].Intervals[r.i]
		limit := alpha / float64(m-k)
		if rejecting && iv.PFail <= limit {
			continue
		}
		rejecting = false
		if iv.Verdict == Fails {
			iv.Verdict = Inconclusive
			iv.Note = fmt.Sprintf(holmNote, iv.PFail, m, limit)
		}
	}
	for c := range checks {
		ch := &checks[c]
		if ch.Check.Info || ch.Verdict != Fails || len(ch.Intervals) == 0 {
			continue
		}
		v := Holds
		for _, iv := range ch.Intervals {
			v = worse(v, iv.Verdict)
		}
		if v != Fails {
			ch.Verdict = v
			var notes []string
			for _, iv := range ch.Intervals {
				if iv.Note != "" {
					notes = append(notes, iv.Num+" / "+iv.Den+": "+iv.Note)
				}
			}
			ch.Detail += "; after Holm's correction: " + strings.Join(notes, "; ")
		}
	}
	return m
}
