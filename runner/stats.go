package runner

import "pqrepro/artifacts"

// Summarize computes the statistics of samples with artifacts.Summarize, the one function
// the runner and every verifier (pqrepro verify, the portal's ingest) share.
func Summarize(samples []float64) *artifacts.Stats { return artifacts.Summarize(samples) }
