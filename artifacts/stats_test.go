package artifacts

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		want    Stats
	}{
		// Hand-computed: type-7 quantiles h=(n-1)q; sample stddev with n-1.
		{"four", []float64{1, 2, 3, 4}, Stats{N: 4, Min: 1, P25: 1.75, Median: 2.5, P75: 3.25, Max: 4, Mean: 2.5, Stddev: math.Sqrt(5.0 / 3.0)}},
		{"one", []float64{5}, Stats{N: 1, Min: 5, P25: 5, Median: 5, P75: 5, Max: 5, Mean: 5, Stddev: 0}},
		{"unsorted three", []float64{10, 1, 7}, Stats{N: 3, Min: 1, P25: 4, Median: 7, P75: 8.5, Max: 10, Mean: 6, Stddev: math.Sqrt(21)}},
		{"five with outlier", []float64{2, 4, 4, 4, 100}, Stats{N: 5, Min: 2, P25: 4, Median: 4, P75: 4, Max: 100, Mean: 22.8, Stddev: math.Sqrt(7452.8 / 4)}},
		{"large close values", []float64{1e12 + 1, 1e12 + 2, 1e12 + 3}, Stats{N: 3, Min: 1e12 + 1, P25: 1e12 + 1.5, Median: 1e12 + 2, P75: 1e12 + 2.5, Max: 1e12 + 3, Mean: 1e12 + 2, Stddev: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.samples...)
			got := Summarize(tt.samples)
			for i := range in {
				if in[i] != tt.samples[i] {
					t.Fatal("Summarize modified its input")
				}
			}
			check := func(name string, g, w float64) {
				if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
					t.Errorf("%s = %v, want %v", name, g, w)
				}
			}
			if got.N != tt.want.N {
				t.Errorf("N = %d, want %d", got.N, tt.want.N)
			}
			check("min", got.Min, tt.want.Min)
			check("p25", got.P25, tt.want.P25)
			check("median", got.Median, tt.want.Median)
			check("p75", got.P75, tt.want.P75)
			check("max", got.Max, tt.want.Max)
			check("mean", got.Mean, tt.want.Mean)
			check("stddev", got.Stddev, tt.want.Stddev)
		})
	}
	if Summarize(nil) != nil {
		t.Error("no samples must give no statistics")
	}
}
