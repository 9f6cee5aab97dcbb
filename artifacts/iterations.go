package artifacts

import "fmt"

// OverrideIterations sets the iterations of every cell of m to n (n ≥ 1), as `pqrepro run
// --iterations` and the portal's re-run form both do, and returns what else it changed for
// a person to read. The rule: the least iterations of a budgeted cell (spec.minIterations) is
// lowered to n when above it, and a TLS matrix's CPU batch (spec.tls.batch) longer than n is
// lowered to n, since a batch cannot be longer than its cell — the run says so through the
// returned note. Warmup is kept. The manifest's identity changes; call Validate afterwards.
func (m *Manifest) OverrideIterations(n int) (notes []string) {
	m.Spec.Iterations = n
	if m.Spec.MinIterations > n {
		m.Spec.MinIterations = n
	}
	if t := m.Spec.TLS; t != nil && t.Batch > n {
		tls := *t
		tls.Batch = n
		m.Spec.TLS = &tls
		notes = append(notes, fmt.Sprintf("spec.tls.batch lowered to %d to fit %d iterations", n, n))
	}
	return notes
}
