package portal

import (
	"strings"
	"testing"

	"pqrepro/experiments"
	"pqrepro/portal/fault"
)

// TestRerunManifest: the re-run form's manifest follows pqrepro run's iteration rule on the
// catalogue's TLS matrix (batch 10): fewer iterations lower the batch and say so, the
// manifest's own count or none keeps its identity, and a count outside 1..its own is refused.
func TestRerunManifest(t *testing.T) {
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	base, err := cat.Manifest("paper000/matrix-stacks")
	if err != nil {
		t.Fatal(err)
	}
	if base.Spec.TLS == nil || base.Spec.TLS.Batch != 10 || base.Spec.Iterations != 100 {
		t.Fatalf("the catalogue's matrix changed: %d iterations, tls %+v", base.Spec.Iterations, base.Spec.TLS)
	}
	m, notes, err := rerunManifest(base, "5")
	if err != nil || m.Spec.Iterations != 5 || m.Spec.TLS.Batch != 5 || len(notes) != 1 || !strings.Contains(notes[0], "spec.tls.batch lowered to 5") {
		t.Errorf("5 iterations: %v, notes %q", err, notes)
	}
	if base.Spec.TLS.Batch != 10 || base.Spec.Iterations != 100 {
		t.Error("the catalogue's manifest was changed")
	}
	for _, it := range []string{"", "100"} {
		m, notes, err := rerunManifest(base, it)
		if err != nil || m.ID() != base.ID() || len(notes) != 0 {
			t.Errorf("iterations %q: %v, id changed %v, notes %q", it, err, m != nil && m.ID() != base.ID(), notes)
		}
	}
	for _, it := range []string{"0", "101", "ten"} {
		if _, _, err := rerunManifest(base, it); !fault.Is(err, fault.Invalid) {
			t.Errorf("iterations %q: %v, want invalid", it, err)
		}
	}
}
