package kinds

import (
	"testing"

	"pqrepro/artifacts"
)

// TestBoardHasEveryKind: every registered experiment kind has a board executor, and the table
// names no kind that is not registered.
func TestBoardHasEveryKind(t *testing.T) {
	table := Board()
	for _, k := range artifacts.Kinds() {
		if table[k] == nil {
			t.Errorf("kind %s has no board executor", k)
		}
	}
	for k := range table {
		if _, ok := artifacts.LookupKind(k); !ok {
			t.Errorf("the board table has %s, which is not a registered kind", k)
		}
	}
}
