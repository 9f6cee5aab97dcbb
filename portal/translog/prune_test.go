package translog_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"pqrepro/portal/translog"
)

// TestCompletedTilesLoseTheirPartials: once a sequencing round completes a tile, its partial
// tiles and partial entry bundles are removed; the last, incomplete tile keeps its partial;
// the whole log still verifies from its files, and a witness that cosigned a checkpoint from
// before the tile was complete (whose partials are gone) proves the newer one consistent.
func TestCompletedTilesLoseTheirPartials(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	w := newCosigner(t, "witness.example/w1")
	wit := &translog.Witnessing{Src: translog.OpenSource(tl.logDir()), LogKey: tl.vkey, Cosigner: w, StateFile: filepath.Join(t.TempDir(), "state.json")}
	for _, n := range []int{100, 50, 120} { // sizes 100, 150, 270: the third round completes tile 0
		tl.publish(n)
		if _, err := tl.log.Sequence(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := wit.Once(ctx); err != nil {
			t.Fatalf("witness at size %d: %v", len(tl.runs), err)
		}
	}
	for _, gone := range []string{"tile/0/000.p", "tile/entries/000.p"} {
		if _, err := os.Stat(filepath.Join(tl.logDir(), gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after tile 0 was completed (%v)", gone, err)
		}
	}
	for _, kept := range []string{"tile/0/000", "tile/entries/000", "tile/0/001.p/14", "tile/entries/001.p/14", "tile/1/000.p/1"} {
		if _, err := os.Stat(filepath.Join(tl.logDir(), kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	tl.checkWhole(270)
}
