package energy

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"

	"pqrepro/artifacts"
)

// MarkerInput is the meter input a board's marker is wired to: a PPK2's D0.
const MarkerInput = 0

// DirectMethod names the direct integration in every figure.
const DirectMethod = "E_op = mean over the marked operations of the integral of (P - P_idle); " +
	"percentile interval: the operations resampled, P_idle by the circular block bootstrap of its mean"

// span is one complete marked operation of a load window: its samples' power summed and
// their number.
type span struct {
	watts float64 // Σ P over the span's samples
	n     int
}

// markedSpans finds the spans of load during which input was high, leaving out one that runs
// into the window's first or last sample (its true start or end lies outside the window).
func markedSpans(load *artifacts.PowerWindow, input uint) []span {
	p := load.Watts()
	var out []span
	from := -1
	for i, m := range load.Markers {
		high := m&(1<<input) != 0
		switch {
		case high && from < 0:
			from = i
		case !high && from >= 0:
			if from > 0 {
				s := span{n: i - from}
				for _, w := range p[from:i] {
					s.watts += w
				}
				out = append(out, s)
			}
			from = -1
		}
	}
	return out
}

// Direct computes a cell's energy per operation by direct integration over the load window's
// marked operations (load.Markers, input MarkerInput), as the runner records it and verify and
// the portal re-derive it: nil when the window has no markers; a figure with Absent when it
// holds fewer than MinBlocks complete marked operations. A sample is marked when the input was
// high at any moment it covers, so a span may be up to one sample longer at each end than the
// operation: at a PPK2's 100,000 samples/s, 10 µs each.
func Direct(idle, load *artifacts.PowerWindow, rate float64) (*artifacts.EnergyDirect, error) {
	if load.Markers == nil {
		return nil, nil
	}
	d := &artifacts.EnergyDirect{Method: DirectMethod, Input: MarkerInput}
	spans := markedSpans(load, MarkerInput)
	d.Ops = len(spans)
	if d.Ops < MinBlocks {
		d.Absent = fmt.Sprintf("%d complete marked operations in the load window, fewer than %d", d.Ops, MinBlocks)
		return d, nil
	}
	it, err := WindowTrace(idle, rate, "idle window")
	if err != nil {
		return nil, err
	}
	opt := Options{Seed: PowerSeed, Replicates: PowerReplicates}.withDefaults()
	im, idleReps, err := captureMean(it, opt, BlockLength)
	if err != nil {
		return nil, fmt.Errorf("idle window: %w", err)
	}
	var sumW float64
	var sumN int
	for _, s := range spans {
		sumW += s.watts
		sumN += s.n
	}
	k := float64(len(spans))
	point := (sumW - float64(sumN)*im.Mean.Point) / rate / k
	lt, err := WindowTrace(load, rate, "load window")
	if err != nil {
		return nil, err
	}
	dg := lt.Digest()
	seed := sha256.Sum256(append(append([]byte("pqrepro/energy/direct/v1\x00"), PowerSeed[:]...), dg[:]...))
	rng := rand.New(rand.NewChaCha8(seed))
	reps := make([]float64, opt.Replicates)
	for b := range reps {
		var w float64
		var n int
		for range spans {
			s := spans[rng.IntN(len(spans))]
			w += s.watts
			n += s.n
		}
		reps[b] = (w - float64(n)*idleReps[b]) / rate / k
	}
	iv := percentile(point, reps, opt.Confidence)
	d.JoulesPerOp, d.Lo, d.Hi = iv.Point, iv.Lo, iv.Hi
	d.Confidence, d.Replicates = opt.Confidence, opt.Replicates
	d.SecondsPerOp = float64(sumN) / rate / k
	return d, nil
}
