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

// MethodSlope is how a slope-ratio check is decided.
const MethodSlope = "stratified percentile bootstrap of the ratio of per-byte slopes (least squares through the per-size medians)"

// mqttCheck decides the checks of the mqtt-telemetry kind's recorded fields; ok is false for
// any other check kind.
func mqttCheck(ch experiments.Check, run Run) (CheckResult, bool) {
	cr := CheckResult{Check: ch, Verdict: Untestable}
	switch ch.Kind {
	case experiments.CheckSlopeRatio:
		return slopeRatio(ch, run, cr), true
	case experiments.CheckOverhead:
		c, why := mqttCellOf(run, ch.Cells[0])
		if why != "" {
			cr.Detail = why
			return cr, true
		}
		if len(c.MQTT.Overhead) == 0 {
			cr.Detail = ch.Cells[0] + ": no overhead recorded"
			return cr, true
		}
		want := int(ch.Expected)
		cr.Verdict, cr.Unit = Holds, "B"
		var parts []string
		for _, o := range c.MQTT.Overhead {
			if o.Min != want || o.Max != want || o.Frames == 0 {
				cr.Verdict = Fails
			}
			if o.Min == o.Max {
				parts = append(parts, fmt.Sprintf("%d B payloads: %d B over %d frames", o.Size, o.Min, o.Frames))
			} else {
				parts = append(parts, fmt.Sprintf("%d B payloads: %d-%d B over %d frames", o.Size, o.Min, o.Max, o.Frames))
			}
		}
		cr.Detail = fmt.Sprintf("%s (claim: %d B for every frame of every size)", strings.Join(parts, "; "), want)
		return cr, true
	case experiments.CheckAcceptedOnce:
		c, why := mqttCellOf(run, ch.Cells[0])
		if why != "" {
			cr.Detail = why
			return cr, true
		}
		f := c.MQTT.Frames
		if f == nil {
			cr.Detail = ch.Cells[0] + ": no frame counts recorded"
			return cr, true
		}
		others := 0
		for r, n := range f.Rejected {
			if r != "replay" && r != "forged" {
				others += n
			}
		}
		ok := f.Verified == f.Sent && f.Duplicated == 0 && f.Missing == 0 &&
			f.Rejected["replay"] == f.InjectedReplays && f.Rejected["forged"] == f.InjectedTamperings && others == 0
		cr.Verdict = Fails
		if ok {
			cr.Verdict = Holds
		}
		cr.Detail = fmt.Sprintf("%d/%d genuine frames verified, %d delivered twice, %d missing; %d/%d replays refused as replays, %d/%d tampered copies refused as forged; %d other refusals",
			f.Verified, f.Sent, f.Duplicated, f.Missing, f.Rejected["replay"], f.InjectedReplays, f.Rejected["forged"], f.InjectedTamperings, others)
		return cr, true
	}
	return cr, false
}

// mqttCellOf finds an ok cell with mqtt fields.
func mqttCellOf(run Run, ref string) (artifacts.Cell, string) {
	i := strings.LastIndexByte(ref, '/')
	if i < 0 {
		return artifacts.Cell{}, ref + ": malformed cell name"
	}
	for _, c := range run.Result.Cells {
		if c.Algorithm == ref[:i] && c.Operation == ref[i+1:] && c.Variant == "" {
			switch {
			case c.Status != artifacts.StatusOK:
				return c, ref + ": cell " + string(c.Status) + ": " + c.Error
			case c.MQTT == nil:
				return c, ref + ": the cell records no mqtt-telemetry fields"
			}
			return c, ""
		}
	}
	return artifacts.Cell{}, ref + ": not measured in this run"
}

// slopeRatio is the ratio of two cells' fitted per-byte slopes with a bootstrap interval:
// each round resamples every payload size's samples with replacement (keeping the design),
// refits both lines, and takes the ratio of the slopes.
func slopeRatio(ch experiments.Check, run Run, cr CheckResult) CheckResult {
	type side struct {
		ref    string
		sizes  []int
		groups [][]float64
		vals   []float64
		rounds []int
	}
	var sides [2]side
	for j, ref := range []string{ch.Num, ch.Den} {
		c, why := mqttCellOf(run, ref)
		if why != "" {
			cr.Detail = why
			return cr
		}
		vals := run.Samples.Values[artifacts.KeyOf(c)]
		sizes := c.MQTT.Sizes
		if len(sizes) < 2 || len(vals) < MinSamples*len(sizes) {
			cr.Detail = fmt.Sprintf("%s: %d samples over %d sizes, need %d per size", ref, len(vals), len(sizes), MinSamples)
			return cr
		}
		sides[j] = side{ref: ref, sizes: sizes, groups: artifacts.GroupBySize(sizes, vals), vals: vals, rounds: run.Samples.Rounds[artifacts.KeyOf(c)]}
		if run.Result.Assurance == artifacts.AssuranceHost && len(sides[j].rounds) == 0 {
			cr.Detail = ref + ": its samples were not taken in rounds (the cells ran one after another, a bundle from before rounds), so drift of the machine between cells cannot be told from an effect"
			return cr
		}
		if c.Unit != "" {
			if cr.Unit != "" && cr.Unit != string(c.Unit) {
				cr.Detail = fmt.Sprintf("units differ: %s and %s", cr.Unit, c.Unit)
				return cr
			}
			cr.Unit = string(c.Unit)
		}
	}
	slope := func(s side, pick func(g []float64) []float64) (float64, error) {
		gs := make([][]float64, len(s.groups))
		for k, g := range s.groups {
			gs[k] = slices.Clone(pick(g))
		}
		f, err := artifacts.FitMedians(s.sizes, gs)
		return f.PerByte, err
	}
	id := func(g []float64) []float64 { return g }
	num, err1 := slope(sides[0], id)
	den, err2 := slope(sides[1], id)
	if err1 != nil || err2 != nil || !(den > 0) {
		cr.Detail = fmt.Sprintf("no positive per-byte slope to divide by (%s: %v, %v)", ch.Den, den, err2)
		return cr
	}
	seed := BootstrapSeed(run.Result.ManifestID, "per-byte", ch.Num, ch.Den)
	if sides[0].rounds != nil && sides[1].rounds != nil {
		// Resample the rounds the two cells share, in moving blocks; a sample keeps its
		// payload size (its iteration modulo the sizes).
		idx := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(i)
			}
			return v
		}
		g := groupRounds([][]float64{idx(len(sides[0].vals)), idx(len(sides[1].vals))}, [][]int{sides[0].rounds, sides[1].rounds})
		if len(g.rounds) < MinRounds {
			cr.Detail = fmt.Sprintf("%s and %s share %d rounds, need %d for an interval over rounds", ch.Num, ch.Den, len(g.rounds), MinRounds)
			return cr
		}
		fit := func(sd side, picked []float64) (float64, error) {
			gs := make([][]float64, len(sd.sizes))
			for _, i := range picked {
				k := int(i) % len(sd.sizes)
				gs[k] = append(gs[k], sd.vals[int(i)])
			}
			for _, gk := range gs {
				if len(gk) == 0 {
					return 0, fmt.Errorf("a size without samples")
				}
			}
			f, err := artifacts.FitMedians(sd.sizes, gs)
			return f.PerByte, err
		}
		stat := func(sorted [][]float64) float64 {
			n, err1 := fit(sides[0], sorted[0])
			d, err2 := fit(sides[1], sorted[1])
			if err1 != nil || err2 != nil || !(d > 0) {
				return math.NaN()
			}
			return n / d
		}
		point, reps := g.blockBootstrap(seed, stat)
		reps = slices.DeleteFunc(reps, math.IsNaN)
		if len(reps) < Resamples/2 || math.IsNaN(point) {
			cr.Detail = "the denominator's slope is not positive in most resamples over rounds"
			return cr
		}
		iv := Interval{Num: ch.Num, Den: ch.Den, Point: point, Seed: seedHex(seed), Rounds: len(g.rounds), Block: min(blockLength(len(g.rounds)), len(g.rounds))}
		iv.Lo, iv.Hi = percentiles(reps)
		lo, hi, want := band(ch)
		between(lo, hi).judge(&iv, reps)
		cr.Verdict, cr.Intervals, cr.Method, cr.Resamples = iv.Verdict, []Interval{iv}, MethodSlope+"; resampling rounds in moving blocks (the cells' samples of a round together)", Resamples
		cr.Unit += "/B"
		cr.Detail = fmt.Sprintf("per-byte slope %s / %s over %d shared rounds = %s (claim: %s)", ch.Num, ch.Den, len(g.rounds), fmtInterval(iv), want)
		if ch.Note != "" {
			cr.Detail += "; " + strings.Join(strings.Fields(ch.Note), " ")
		}
		return cr
	}
	rng := rand.New(rand.NewChaCha8(seed))
	buf := []float64{}
	resample := func(g []float64) []float64 {
		buf = buf[:0]
		for range g {
			buf = append(buf, g[rng.IntN(len(g))])
		}
		return buf
	}
	ratios := make([]float64, 0, Resamples)
	for range Resamples {
		n, _ := slope(sides[0], resample)
		d, _ := slope(sides[1], resample)
		if d > 0 {
			ratios = append(ratios, n/d)
		}
	}
	if len(ratios) < Resamples/2 {
		cr.Detail = "the denominator's slope is not positive in most resamples"
		return cr
	}
	slices.Sort(ratios)
	iv := Interval{Num: ch.Num, Den: ch.Den, Point: num / den, Seed: seedHex(seed)}
	if constant(sides[0].groups...) && constant(sides[1].groups...) {
		// Every size's samples identical (emulated counts): the slopes are exact.
		iv.Lo, iv.Hi, iv.Exact, ratios = iv.Point, iv.Point, true, nil
	} else {
		iv.Lo, iv.Hi = percentiles(ratios)
	}
	lo, hi, want := band(ch)
	between(lo, hi).judge(&iv, ratios)
	cr.Verdict, cr.Intervals, cr.Method, cr.Resamples = iv.Verdict, []Interval{iv}, MethodSlope, Resamples
	cr.Unit += "/B"
	cr.Detail = fmt.Sprintf("per-byte slope %s / %s = %.4g / %.4g = %s (claim: %s)", ch.Num, ch.Den, num, den, fmtInterval(iv), want)
	if ch.Note != "" {
		cr.Detail += "; " + strings.Join(strings.Fields(ch.Note), " ")
	}
	if notes := exactness(cr.Intervals, artifacts.Unit(strings.TrimSuffix(cr.Unit, "/B"))); len(notes) > 0 {
		cr.Detail += "; " + strings.Join(notes, "; ")
	}
	return cr
}
