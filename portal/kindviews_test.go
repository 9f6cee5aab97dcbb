package portal

import (
	"testing"

	"pqrepro/artifacts"
)

// TestKindViewsComplete: every experiment kind has an entry in the portal's kind table.
func TestKindViewsComplete(t *testing.T) {
	for _, k := range artifacts.Kinds() {
		if _, ok := kindViews[k]; !ok {
			t.Errorf("kind %s has no entry in kindViews", k)
		}
	}
	if len(kindViews) != len(artifacts.Kinds()) {
		t.Errorf("%d entries for %d kinds: one names no kind", len(kindViews), len(artifacts.Kinds()))
	}
}
