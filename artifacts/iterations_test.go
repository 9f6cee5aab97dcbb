package artifacts

import (
	"strings"
	"testing"
)

func TestOverrideIterations(t *testing.T) {
	const tls = `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: m}
spec:
  tls: {groups: [X25519], signatures: [Ed25519], batch: 10}
  warmup: 3
  iterations: 100
  seed: s
`
	const budgeted = `apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: paper001, name: k}
spec:
  algorithms: [ML-KEM-512]
  operations: [keygen]
  warmup: 3
  iterations: 100
  budget: 8s
  minIterations: 20
  seed: s
`
	for _, tc := range []struct {
		src             string
		n, batch, least int
		note            string
	}{
		{tls, 5, 5, 0, "spec.tls.batch lowered to 5 to fit 5 iterations"},
		{tls, 10, 10, 0, ""},
		{tls, 200, 10, 0, ""},
		{budgeted, 5, 0, 5, ""},
		{budgeted, 50, 0, 20, ""},
	} {
		m, err := ParseManifest([]byte(tc.src), "m")
		if err != nil {
			t.Fatal(err)
		}
		notes := m.OverrideIterations(tc.n)
		batch := 0
		if m.Spec.TLS != nil {
			batch = m.Spec.TLS.Batch
		}
		if m.Spec.Iterations != tc.n || batch != tc.batch || m.Spec.MinIterations != tc.least || m.Spec.Warmup != 3 {
			t.Errorf("%s n=%d: iterations %d batch %d min %d warmup %d", m.Kind, tc.n, m.Spec.Iterations, batch, m.Spec.MinIterations, m.Spec.Warmup)
		}
		if got := strings.Join(notes, "; "); got != tc.note {
			t.Errorf("%s n=%d: notes %q, want %q", m.Kind, tc.n, got, tc.note)
		}
		if err := m.Validate(); err != nil {
			t.Errorf("%s n=%d: %v", m.Kind, tc.n, err)
		}
	}
}
