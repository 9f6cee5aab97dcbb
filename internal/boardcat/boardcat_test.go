package boardcat_test

import (
	"testing"

	"pqrepro/experiments"
	"pqrepro/internal/boardcat"
)

// TestEveryEmulatedBoardIsCatalogued: each emulated class is a board of the experiments'
// catalogue (boards.csv), and each is unique and boots some machine.
func TestEveryEmulatedBoardIsCatalogued(t *testing.T) {
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range boardcat.EmulatedBoards() {
		if seen[m.Class] {
			t.Errorf("class %s listed twice", m.Class)
		}
		seen[m.Class] = true
		if m.Binary == "" || len(m.Args) == 0 && !m.IsRP2040JS() || m.Counter == "" || m.Toolchain == "" {
			t.Errorf("class %s lacks its emulator, machine, counter or toolchain: %+v", m.Class, m)
		}
		found := false
		for _, b := range cat.Boards {
			found = found || b.Slug == m.Class
		}
		if !found {
			t.Errorf("emulated class %s is not in experiments/boards.csv", m.Class)
		}
		if got, ok := boardcat.LookupEmulated(m.Class); !ok || got.Class != m.Class {
			t.Errorf("boardcat.LookupEmulated(%s) = %v, %v", m.Class, got.Class, ok)
		}
	}
	if len(boardcat.EmulatedClasses()) != len(seen) || !seen["qemu-microbit"] || !seen["rp2040js-picow"] {
		t.Errorf("classes %v", boardcat.EmulatedClasses())
	}
}
