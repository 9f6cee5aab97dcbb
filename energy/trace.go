package energy

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// MaxSamples bounds the samples of one trace: a day at 100 samples per second is 8.6 million.
// Readers refuse a capture that says it holds more before they allocate.
const MaxSamples = 1 << 24

// MaxRate bounds a trace's nominal sample rate (samples per second).
const MaxRate = 1e6

// Trace is one power capture: Power[i] was sampled at Time[i], nominally i/Rate seconds after
// the start. A meter may hold a value for several samples (the FNB58's "50 sps" exports repeat
// each reading for two to four rows); UpdateRate says how often the value actually changes.
type Trace struct {
	// Source names where the trace came from (a file), for errors and pages.
	Source string
	// Rate is the nominal sample rate in samples per second, as the capture states it.
	Rate float64
	// Time is each sample's time in seconds from the start; Power its power in watts.
	Time, Power []float64
}

// Validate checks that the trace can be estimated from: a positive finite rate, at least two
// samples, as many times as powers, finite values, and times on the nominal grid (within a
// tenth of a sample period of i/Rate), so a gap or a different rate is refused, not averaged.
func (t Trace) Validate() error {
	switch {
	case !(t.Rate > 0 && t.Rate <= MaxRate):
		return fmt.Errorf("%s: rate %g samples/s: want (0, %g]", t.Source, t.Rate, float64(MaxRate))
	case len(t.Power) < 2:
		return fmt.Errorf("%s: %d samples: a trace needs two or more", t.Source, len(t.Power))
	case len(t.Power) > MaxSamples:
		return fmt.Errorf("%s: %d samples: more than the limit of %d", t.Source, len(t.Power), MaxSamples)
	case len(t.Time) != len(t.Power):
		return fmt.Errorf("%s: %d times for %d powers", t.Source, len(t.Time), len(t.Power))
	}
	for i, p := range t.Power {
		if math.IsNaN(p) || math.IsInf(p, 0) {
			return fmt.Errorf("%s: sample %d: power %g is not a finite number", t.Source, i, p)
		}
		if err := OnGrid(t.Time[i], i, t.Rate); err != nil {
			return fmt.Errorf("%s: sample %d: %w", t.Source, i, err)
		}
	}
	return nil
}

// OnGrid says whether time t (seconds) is sample i's nominal time i/rate, within a tenth of a
// sample period; otherwise the error names both times.
func OnGrid(t float64, i int, rate float64) error {
	want := float64(i) / rate
	if math.IsNaN(t) || math.Abs(t-want) > 0.1/rate {
		return fmt.Errorf("time %g s, want %g s (sample %d at %g samples/s): a gap, a restart or another rate", t, want, i, rate)
	}
	return nil
}

// Duration is the trace's length in seconds: its samples times the nominal period.
func (t Trace) Duration() float64 { return float64(len(t.Power)) / t.Rate }

// Mean is the mean power in watts (0 for an empty trace).
func (t Trace) Mean() float64 {
	if len(t.Power) == 0 {
		return 0
	}
	return kahanSum(t.Power) / float64(len(t.Power))
}

// Updates counts the distinct readings: the first sample, and every sample whose value
// differs from the one before it.
func (t Trace) Updates() int {
	if len(t.Power) == 0 {
		return 0
	}
	n := 1
	for i := 1; i < len(t.Power); i++ {
		if t.Power[i] != t.Power[i-1] {
			n++
		}
	}
	return n
}

// UpdateRate is the effective update rate: distinct readings per second of the trace. A meter
// that holds its value shows fewer updates than its nominal Rate.
func (t Trace) UpdateRate() float64 {
	if len(t.Power) == 0 {
		return 0
	}
	return float64(t.Updates()) / t.Duration()
}

// Digest is the SHA-256 of the trace's rate and powers (little-endian float64 bits): two
// traces with the same digest are the same capture, and the bootstrap draws the same
// resamples of it wherever it is used (see PerOperation).
func (t Trace) Digest() [32]byte {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(t.Rate))
	h.Write(b[:])
	buf := make([]byte, 0, 8*1024)
	for _, p := range t.Power {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(p))
		if len(buf) == cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	var d [32]byte
	copy(d[:], h.Sum(nil))
	return d
}

// kahanSum adds v with compensated summation, so a mean over millions of samples loses no
// digits to the order of addition.
func kahanSum(v []float64) float64 {
	var s, c float64
	for _, x := range v {
		y := x - c
		t := s + y
		c = (t - s) - y
		s = t
	}
	return s
}
