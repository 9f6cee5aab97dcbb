package runner

import (
	"math"
	"slices"

	"pqrepro/artifacts"
)

// Summarize computes the statistics of samples. It returns nil for no samples. Quantiles use
// linear interpolation between order statistics (Hyndman-Fan type 7); the standard deviation
// is the sample one (n-1), 0 for a single sample. The input is not modified.
func Summarize(samples []float64) *artifacts.Stats {
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
	return &artifacts.Stats{
		N: n, Min: s[0], Max: s[n-1],
		P25: quantile(s, 0.25), Median: quantile(s, 0.5), P75: quantile(s, 0.75),
		Mean: mean, Stddev: sd,
	}
}

// quantile of sorted s at q in [0,1], type 7.
func quantile(s []float64, q float64) float64 {
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}
