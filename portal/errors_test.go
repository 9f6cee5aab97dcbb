package portal

import (
	"testing"

	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
)

// TestEveryKindHasAStatus: every kind a portal error can carry, but internal, has its status
// in the one table, a client error; internal is absent (a 500).
func TestEveryKindHasAStatus(t *testing.T) {
	var kinds []fault.Kind
	for _, k := range protocol.ErrorKinds() {
		if k != protocol.KindInternal && k != protocol.KindUnavailable { // a 500; the client's own
			kinds = append(kinds, k)
		}
	}
	for _, k := range kinds {
		if st, ok := statusOf[k]; !ok || st < 400 || st >= 500 {
			t.Errorf("kind %q: status %d (listed %v), want a 4xx", k, st, ok)
		}
	}
	if len(statusOf) != len(kinds) {
		t.Errorf("the table has %d kinds, the portal's errors %d", len(statusOf), len(kinds))
	}
	if _, ok := statusOf[fault.Internal]; ok {
		t.Error("internal has a status of its own in the table")
	}
}
