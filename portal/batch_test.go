package portal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/store"
)

// batchPub is a community publication of one ML-KEM-768 keygen cell under bundle name.
func batchPub(name string) store.Publication {
	h := sha256.Sum256([]byte(name))
	at := time.UnixMilli(1764590000000).UTC()
	return store.Publication{
		Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:m", Kind: "kem-bench", Method: artifacts.MethodInProcess,
			BoardClass: "host", BoardName: "host-1", Level: "host", ClassStatus: artifacts.ClassVerified, Origin: attest.OriginCommunity,
			Binding: store.BindingUnbound, Signer: "signer", Bundle: "sha256:" + hex.EncodeToString(h[:]), BundleSize: 1000,
			StartedAt: at, FinishedAt: at, Environment: `{}`, Report: `{}`, Checks: `[]`, CellsTotal: 1, CellsOK: 1},
		Cells: []artifacts.Cell{{Algorithm: "ML-KEM-768", Operation: "keygen", Status: artifacts.StatusOK, Unit: "ns", Requested: 5,
			Stats: &artifacts.Stats{N: 5, Min: 8, P25: 9, Median: 10, P75: 11, Max: 12, Mean: 10, Stddev: 0.5}}},
	}
}

// batchStore is a new SQLite store in the test's folder, closed when the test ends.
func batchStore(t *testing.T) *sqlstore.DB {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "portal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestCommitterBatchesWhatWaits: publications waiting together are committed in one
// transaction, each answered with its own run; a batch holding a refused publication (a
// bundle published before) is published one by one, so only that one is refused.
func TestCommitterBatchesWhatWaits(t *testing.T) {
	ctx := context.Background()
	st := batchStore(t)
	var singles int
	st.Hook = func(point string) {
		if point == "publish:committed" {
			singles++ // Publish alone; a batch's publications do not reach this point
		}
	}
	published, err := st.Publish(ctx, batchPub("before"))
	if err != nil {
		t.Fatal(err)
	}
	singles = 0

	for round, names := range [][]string{{"a", "b", "c", "d", "e"}, {"f", "before", "g"}} {
		c := &committer{st: st, max: 8, queue: make(chan *pendingRun, 8), stop: make(chan struct{}), done: make(chan struct{})}
		var ws []*pendingRun
		for _, n := range names {
			w := &pendingRun{ctx: ctx, pub: batchPub(n), done: make(chan struct{})}
			c.queue <- w // all waiting before the committer starts: one batch
			ws = append(ws, w)
		}
		before := singles
		go func() { c.run(); close(c.done) }()
		ids := map[int64]bool{}
		for i, w := range ws {
			<-w.done
			var dup *store.DuplicateBundleError
			switch {
			case names[i] == "before":
				if !errors.As(w.err, &dup) || dup.RunID != published {
					t.Fatalf("round %d: the bundle published before: run %d, %v; want a duplicate of run %d", round, w.id, w.err, published)
				}
			case w.err != nil || w.id <= 0 || ids[w.id]:
				t.Fatalf("round %d, %s: run %d, %v", round, names[i], w.id, w.err)
			default:
				ids[w.id] = true
				run, err := st.Run(ctx, w.id)
				if err != nil || run.Bundle != w.pub.Run.Bundle {
					t.Fatalf("round %d, %s: run %d is %s (%v)", round, names[i], w.id, run.Bundle, err)
				}
			}
		}
		c.close()
		switch round {
		case 0:
			if singles != before {
				t.Fatalf("five waiting publications took %d transactions of their own, want one batch", singles-before)
			}
		case 1:
			if singles-before != len(names)-1 {
				t.Fatalf("a refused batch of %d left %d runs published alone, want the %d that are not duplicates", len(names), singles-before, len(names)-1)
			}
		}
	}
	if n, _ := st.CountCells(ctx); n != 1+5+2 {
		t.Fatalf("%d cells stored, want 8", n)
	}
}

// TestCommitterLingers: with a linger, publications that arrive one after another within it
// are committed in one transaction; without one, each that finds nothing waiting is alone.
func TestCommitterLingers(t *testing.T) {
	ctx := context.Background()
	st := batchStore(t)
	var singles int
	st.Hook = func(point string) {
		if point == "publish:committed" {
			singles++
		}
	}
	for _, linger := range []time.Duration{0, time.Minute} {
		c := newCommitter(st, 3, linger, 1)
		before := singles
		var ws []*pendingRun
		for i := range 3 {
			w := &pendingRun{ctx: ctx, pub: batchPub(fmt.Sprintf("linger %v %d", linger, i)), done: make(chan struct{})}
			c.queue <- w
			ws = append(ws, w)
			if linger == 0 {
				<-w.done // the committer found it alone
			} else {
				time.Sleep(20 * time.Millisecond) // arrives while the batch lingers
			}
		}
		for _, w := range ws {
			<-w.done
			if w.err != nil || w.id <= 0 {
				t.Fatalf("linger %v: run %d, %v", linger, w.id, w.err)
			}
		}
		c.close()
		want := 0 // one batch of three
		if linger == 0 {
			want = 3
		}
		if got := singles - before; got != want {
			t.Fatalf("linger %v: %d publications committed alone, want %d", linger, got, want)
		}
	}
}

// TestCommitterLines: with three commit lines, publications handed over from many goroutines
// at once are each published exactly once, with their own run, and close waits for all
// three lines.
func TestCommitterLines(t *testing.T) {
	ctx := context.Background()
	st := batchStore(t)
	c := newCommitter(st, 4, time.Millisecond, 3)
	const n = 24
	ids := make([]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ids[i], errs[i] = c.publish(ctx, batchPub(fmt.Sprintf("line %d", i))) })
	}
	wg.Wait()
	c.close()
	seen := map[int64]bool{}
	for i := range n {
		if errs[i] != nil || ids[i] <= 0 || seen[ids[i]] {
			t.Fatalf("publication %d: run %d, %v", i, ids[i], errs[i])
		}
		seen[ids[i]] = true
		run, err := st.Run(ctx, ids[i])
		if err != nil || run.Bundle != batchPub(fmt.Sprintf("line %d", i)).Run.Bundle {
			t.Fatalf("publication %d: run %d is %s (%v)", i, ids[i], run.Bundle, err)
		}
	}
	if got, _ := st.CountCells(ctx); got != n {
		t.Fatalf("%d cells stored, want %d", got, n)
	}
}
