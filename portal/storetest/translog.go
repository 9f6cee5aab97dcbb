package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/portal/fault"
	"pqrepro/portal/translog"
)

// integrate is an IntegrateFunc as translog.Log's: the stored hashes of each pending leaf
// in turn, earlier hashes read through r, and the new root.
func integrate(size int64, pending []translog.Pending, r tlog.HashReader) ([]tlog.Hash, tlog.Hash, error) {
	var all []tlog.Hash
	base := tlog.StoredHashCount(size)
	rr := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x >= base {
				out[i] = all[x-base]
				continue
			}
			hs, err := r.ReadHashes([]int64{x})
			if err != nil {
				return nil, err
			}
			out[i] = hs[0]
		}
		return out, nil
	})
	for i, p := range pending {
		hs, err := tlog.StoredHashes(size+int64(i), p.Leaf, rr)
		if err != nil {
			return nil, tlog.Hash{}, err
		}
		all = append(all, hs...)
	}
	root, err := tlog.TreeHash(size+int64(len(pending)), rr)
	return all, root, err
}

// reader reads the store's stored hashes.
func (e *env) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) { return e.st.ReadHashes(e.ctx, idx) })
}

// testLogQueue: publishing a run queues its leaf, pending until integrated.
func testLogQueue(e *env) {
	id := e.publish(e.pub("host", "host", 1))
	r, _ := e.st.Run(e.ctx, id)
	ent, err := e.st.LogEntry(e.ctx, id)
	e.must(err, "log entry")
	want, err := translog.Leaf{RunID: id, Bundle: r.Bundle, Published: r.PublishedAt}.Encode()
	e.must(err, "leaf")
	if ent.RunID != id || ent.Index != -1 || !bytes.Equal(ent.Leaf, want) {
		e.Fatalf("log entry %+v (leaf %q), want pending with leaf %q", ent, ent.Leaf, want)
	}
	if n, err := e.st.PendingLogEntries(e.ctx); err != nil || n != 1 {
		e.Fatalf("%d pending (%v), want 1", n, err)
	}
	_, err = e.st.LogEntry(e.ctx, 987654)
	e.wantKind(err, fault.NotFound, "log entry of an unknown run")
	if st, err := e.st.LogState(e.ctx); err != nil || st.Size != 0 || st.Published != 0 {
		e.Fatalf("state of an empty log %+v, %v", st, err)
	}
}

// testSequencer: the sequencer lock is held by one holder at a time until it expires or is
// released; extending it keeps it.
func testSequencer(e *env) {
	lock := func(holder string, until time.Time) bool {
		e.Helper()
		ok, err := e.st.LockSequencer(e.ctx, holder, until)
		e.must(err, "lock "+holder)
		return ok
	}
	later := time.Now().Add(time.Minute)
	if !lock("a", later) {
		e.Fatal("a could not take a free lock")
	}
	if lock("b", later) {
		e.Fatal("b took a's live lock")
	}
	if !lock("a", later.Add(time.Minute)) {
		e.Fatal("a could not extend its lock")
	}
	e.must(e.st.UnlockSequencer(e.ctx, "b"), "unlock by a non-holder")
	if lock("b", later) {
		e.Fatal("b's unlock released a's lock")
	}
	e.must(e.st.UnlockSequencer(e.ctx, "a"), "unlock")
	if !lock("b", later) {
		e.Fatal("b could not take the released lock")
	}
	if !lock("b", time.Now().Add(-time.Second)) {
		e.Fatal("b could not shorten its lock")
	}
	if !lock("c", later) {
		e.Fatal("c could not take b's expired lock")
	}
	_, err := e.st.Integrate(e.ctx, "b", 10, integrate)
	e.wantKind(err, fault.Conflict, "integrating after losing the lock")
	e.wantKind(e.st.MarkPublished(e.ctx, "b", 0, nil), fault.Conflict, "marking after losing the lock")
}

// testSequencerExclusive: two holders racing for the lock: exactly one wins each round.
func testSequencerExclusive(e *env) {
	for round := range 20 {
		var wg sync.WaitGroup
		won := make([]bool, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				won[i], errs[i] = e.st.LockSequencer(e.ctx, fmt.Sprint("holder-", i), time.Now().Add(time.Minute))
			}()
		}
		wg.Wait()
		e.must(errors.Join(errs...), "lock")
		if won[0] == won[1] {
			e.Fatalf("round %d: holders won %v, want exactly one", round, won)
		}
		winner := 0
		if won[1] {
			winner = 1
		}
		e.must(e.st.UnlockSequencer(e.ctx, fmt.Sprint("holder-", winner)), "unlock")
	}
}

// testIntegrate: integration gives pending leaves indexes in queue order and stores hashes
// from which proofs verify; a failing IntegrateFunc changes nothing; checkpoints are marked
// published only between the published and integrated sizes.
func testIntegrate(e *env) {
	var runs []int64
	for range 5 {
		runs = append(runs, e.publish(e.pub("host", "host", 1)))
	}
	if ok, err := e.st.LockSequencer(e.ctx, "seq", time.Now().Add(time.Minute)); err != nil || !ok {
		e.Fatalf("lock: %v, %v", ok, err)
	}
	_, err := e.st.Integrate(e.ctx, "seq", 10, func(int64, []translog.Pending, tlog.HashReader) ([]tlog.Hash, tlog.Hash, error) {
		return nil, tlog.Hash{}, errors.New("the tiles could not be computed")
	})
	if err == nil {
		e.Fatal("an IntegrateFunc error was not returned")
	}
	_, err = e.st.Integrate(e.ctx, "seq", 10, func(size int64, p []translog.Pending, r tlog.HashReader) ([]tlog.Hash, tlog.Hash, error) {
		hs, root, err := integrate(size, p, r)
		return hs[:len(hs)-1], root, err
	})
	if err == nil {
		e.Fatal("an IntegrateFunc giving too few hashes was accepted")
	}
	if st, _ := e.st.LogState(e.ctx); st.Size != 0 {
		e.Fatalf("a failed integration left size %d", st.Size)
	}
	if n, _ := e.st.PendingLogEntries(e.ctx); n != 5 {
		e.Fatalf("%d pending after failed integrations, want 5", n)
	}
	var gotPending []int64
	n, err := e.st.Integrate(e.ctx, "seq", 3, func(size int64, p []translog.Pending, r tlog.HashReader) ([]tlog.Hash, tlog.Hash, error) {
		for _, x := range p {
			gotPending = append(gotPending, x.RunID)
		}
		if size != 0 {
			return nil, tlog.Hash{}, fmt.Errorf("size %d, want 0", size)
		}
		return integrate(size, p, r)
	})
	e.must(err, "integrate 3")
	if n != 3 || fmt.Sprint(gotPending) != fmt.Sprint(runs[:3]) {
		e.Fatalf("integrated %d: %v, want the first 3 runs %v", n, gotPending, runs[:3])
	}
	n, err = e.st.Integrate(e.ctx, "seq", 10, integrate)
	e.must(err, "integrate the rest")
	if n != 2 {
		e.Fatalf("integrated %d, want 2", n)
	}
	if n, err = e.st.Integrate(e.ctx, "seq", 10, integrate); err != nil || n != 0 {
		e.Fatalf("integrating nothing: %d, %v", n, err)
	}
	st, err := e.st.LogState(e.ctx)
	e.must(err, "state")
	root, err := tlog.TreeHash(5, e.reader())
	e.must(err, "tree hash from the stored hashes")
	if st.Size != 5 || st.Root != root || st.Published != 0 {
		e.Fatalf("state %+v, want size 5 and root %v", st, root)
	}
	var leaves [][]byte
	for i, id := range runs {
		ent, err := e.st.LogEntry(e.ctx, id)
		e.must(err, "entry")
		if ent.Index != int64(i) {
			e.Fatalf("run %d has index %d, want %d", id, ent.Index, i)
		}
		leaves = append(leaves, ent.Leaf)
		p, err := tlog.ProveRecord(5, int64(i), e.reader())
		e.must(err, "prove")
		e.must(tlog.CheckRecord(p, 5, root, int64(i), tlog.RecordHash(ent.Leaf)), "check inclusion")
	}
	got, err := e.st.Leaves(e.ctx, 1, 4)
	e.must(err, "leaves")
	if len(got) != 3 || !bytes.Equal(got[0], leaves[1]) || !bytes.Equal(got[2], leaves[3]) {
		e.Fatalf("leaves 1-4 %q", got)
	}
	if _, err := e.st.Leaves(e.ctx, 3, 6); err == nil {
		e.Fatal("leaves beyond the tree were returned")
	}
	if _, err := e.st.ReadHashes(e.ctx, []int64{tlog.StoredHashCount(5) + 10}); err == nil {
		e.Fatal("a hash never stored was returned")
	}
	if n, _ := e.st.PendingLogEntries(e.ctx); n != 0 {
		e.Fatalf("%d pending after integration", n)
	}

	e.wantKind(e.st.MarkPublished(e.ctx, "seq", 6, []byte("cp6")), fault.Conflict, "marking beyond the integrated size")
	e.must(e.st.MarkPublished(e.ctx, "seq", 3, []byte("cp3")), "mark 3")
	e.must(e.st.MarkPublished(e.ctx, "seq", 5, []byte("cp5")), "mark 5")
	e.wantKind(e.st.MarkPublished(e.ctx, "seq", 4, []byte("cp4")), fault.Conflict, "marking below the published size")
	e.wantKind(e.st.MarkPublished(e.ctx, "other", 5, []byte("cp5")), fault.Conflict, "marking without the lock")
	st, _ = e.st.LogState(e.ctx)
	if st.Published != 5 || string(st.Checkpoint) != "cp5" || st.Size != 5 || st.Root != root {
		e.Fatalf("state after marking %+v", st)
	}
}

// testWitnesses: witnesses are kept by name (re-adding replaces the keys); cosignatures by
// checkpoint size, name and key, in a stable order.
func testWitnesses(e *env) {
	at := time.UnixMilli(1764590000123).UTC()
	e.must(e.st.AddWitness(e.ctx, translog.Witness{Name: "w2", Ed25519: "w2+ed", MLDSA44: "w2+ml", Added: at}), "add w2")
	e.must(e.st.AddWitness(e.ctx, translog.Witness{Name: "w1", Ed25519: "old", MLDSA44: "old", Added: at}), "add w1")
	e.must(e.st.AddWitness(e.ctx, translog.Witness{Name: "w1", Ed25519: "w1+ed", MLDSA44: "w1+ml", Added: at.Add(time.Second)}), "replace w1")
	ws, err := e.st.Witnesses(e.ctx)
	e.must(err, "witnesses")
	want := []translog.Witness{{Name: "w1", Ed25519: "w1+ed", MLDSA44: "w1+ml", Added: at.Add(time.Second)}, {Name: "w2", Ed25519: "w2+ed", MLDSA44: "w2+ml", Added: at}}
	if len(ws) != 2 || ws[0] != want[0] || ws[1] != want[1] || !ws[0].Added.Equal(want[0].Added) {
		e.Fatalf("witnesses %+v, want %+v", ws, want)
	}
	for _, c := range []struct {
		size int64
		name string
		key  uint32
		line string
	}{{5, "w2", 7, "— w2 AAA"}, {5, "w1", 0xffffffff, "— w1 BBB"}, {5, "w1", 3, "— w1 CCC"}, {6, "w1", 3, "— w1 six"}, {5, "w1", 0xffffffff, "— w1 DDD"}} {
		e.must(e.st.AddCosignature(e.ctx, c.size, c.name, c.key, c.line), "add cosignature")
	}
	got, err := e.st.Cosignatures(e.ctx, 5)
	e.must(err, "cosignatures")
	if fmt.Sprint(got) != fmt.Sprint([]string{"— w1 CCC", "— w1 DDD", "— w2 AAA"}) {
		e.Fatalf("cosignatures of 5: %q", got)
	}
	if got, _ := e.st.Cosignatures(e.ctx, 7); len(got) != 0 {
		e.Fatalf("cosignatures of 7: %q", got)
	}
}
