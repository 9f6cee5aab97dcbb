package artifacts

import (
	"math"
	"slices"
)

// Summarize computes the statistics of samples, as the runner records them in result.json and
// as Rederive recomputes them from samples.csv (both sides call this one function). It
// returns nil for no samples. Quantiles use linear interpolation between order statistics
// (Hyndman-Fan type 7); the standard deviation is the sample one (n-1), 0 for a single
// sample. The input is not modified.
func Summarize(samples []float64) *Stats {
	n := len(samples)
	if n == 0 {
		return nil
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	// Welford's update keeps the variance accurate for large, close values (ns timings).
	var mean, m2 float64
	for i, x := range s {
		d := x - mean
		mean += d / float64(i+1)
		m2 += d * (x - mean)
	}
	sd := 0.0
	if n > 1 {
		sd = math.Sqrt(m2 / float64(n-1))
	}
	return &Stats{
		N: n, Min: s[0], Max: s[n-1],
		P25: statsQuantile(s, 0.25), Median: statsQuantile(s, 0.5), P75: statsQuantile(s, 0.75),
		Mean: mean, Stddev: sd,
	}
}

// Quantile is the type 7 quantile of sorted s (non-empty) at q in [0, 1], as Summarize's.
func Quantile(s []float64, q float64) float64 { return statsQuantile(s, q) }

// quantile of sorted s at q in [0,1], type 7.
func statsQuantile(s []float64, q float64) float64 {
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}
