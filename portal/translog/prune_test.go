package translog_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/portal/translog"
)

// TestPartialTilesKeptForTheirRetention: when a sequencing round completes a tile, its partial
// tiles and partial entry bundles stay for the retention window, so a reader holding a
// checkpoint from before (whose tree's right edge is a partial tile) still proves a bundle
// against it from the files; once the window has passed the next round removes them, the last,
// incomplete tile keeps its partial, and the whole log still verifies from its files.
func TestPartialTilesKeptForTheirRetention(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	now := time.Now()
	tl.log.Now = func() time.Time { return now }
	w := newCosigner(t, "witness.example/w1")
	wit := &translog.Witnessing{Src: translog.OpenSource(tl.logDir()), LogKey: tl.vkey, Cosigner: w, StateFile: filepath.Join(t.TempDir(), "state.json")}
	var old translog.VerifiedCheckpoint
	for _, n := range []int{100, 50, 120} { // sizes 100, 150, 270: the third round completes tile 0
		tl.publish(n)
		if _, err := tl.log.Sequence(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := wit.Once(ctx); err != nil {
			t.Fatalf("witness at size %d: %v", len(tl.runs), err)
		}
		if len(tl.runs) == 150 {
			old = readCheckpoint(t, tl)
		}
	}
	partials := []string{"tile/0/000.p/100", "tile/0/000.p/150", "tile/entries/000.p/150"}
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(tl.logDir(), p)); return err == nil }
	for _, p := range partials {
		if !exists(p) {
			t.Errorf("%s was removed as soon as tile 0 completed", p)
		}
	}
	// A reader at the old checkpoint (size 150) proves the 120th run from the partial tiles.
	if f, err := translog.ProveBundle(ctx, translog.OpenSource(tl.logDir()), old.Checkpoint, tl.runs[120]); err != nil || f.Index != 120 {
		t.Fatalf("proof against the older checkpoint: %+v %v", f, err)
	}

	now = now.Add(translog.DefaultPartialRetention + time.Minute)
	if _, err := tl.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(partials, "tile/0/000.p", "tile/entries/000.p") {
		if exists(p) {
			t.Errorf("%s is still there after the retention window", p)
		}
	}
	for _, kept := range []string{"tile/0/000", "tile/entries/000", "tile/0/001.p/14", "tile/entries/001.p/14", "tile/1/000.p/1"} {
		if !exists(kept) {
			t.Errorf("%s was removed", kept)
		}
	}
	tl.checkWhole(270)
}
