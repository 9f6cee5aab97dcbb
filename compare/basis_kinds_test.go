package compare

import (
	"testing"

	"pqrepro/artifacts"
)

// TestHostImplementationsComplete: every experiment kind names the code its host runs measure,
// so a new kind cannot reach a comparison without saying what it compared.
func TestHostImplementationsComplete(t *testing.T) {
	for _, k := range artifacts.Kinds() {
		if hostImplementations[k] == "" {
			t.Errorf("kind %s has no host implementation phrase", k)
		}
	}
	if len(hostImplementations) != len(artifacts.Kinds()) {
		t.Errorf("%d phrases for %d kinds: one names no kind", len(hostImplementations), len(artifacts.Kinds()))
	}
}
