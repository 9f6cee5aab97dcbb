package translog_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/portal/blob"
	"pqrepro/portal/postgres"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/store"
	"pqrepro/portal/translog"
)

const origin = "pqrepro.example/log"

// testLog is a log over a real SQLite file (or, with PQREPRO_TEST_DATABASE=postgres, a real
// PostgreSQL database) and a real blob folder.
type testLog struct {
	t     testing.TB
	dir   string
	db    *sqlstore.DB
	files *blob.FS
	skey  string
	vkey  string
	log   *translog.Log
	runs  []string // bundle digests published, by run
}

func newTestLog(t testing.TB) *testLog {
	t.Helper()
	dir := t.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	tl := &testLog{t: t, dir: dir, skey: skey, vkey: vkey}
	tl.db = openDB(t, filepath.Join(dir, "portal.db"))
	tl.files, err = blob.OpenFS(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	tl.log = tl.newLog(tl.db)
	return tl
}

// openDB opens the store whose SQLite file is file; on PostgreSQL a fresh database is made
// the first time and its DSN kept beside file, so opening file again (in this process or a
// child) opens the same database.
func openDB(t testing.TB, file string) *sqlstore.DB {
	t.Helper()
	db, err := openStore(file, func() string { return pgtest.DSN(t) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openStore(file string, fresh func() string) (*sqlstore.DB, error) {
	ctx := context.Background()
	if os.Getenv("PQREPRO_TEST_DATABASE") != "postgres" {
		st, err := sqlite.Open(ctx, file)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	dsnFile := file + ".dsn"
	dsn, err := os.ReadFile(dsnFile)
	if errors.Is(err, fs.ErrNotExist) {
		dsn = []byte(fresh())
		err = os.WriteFile(dsnFile, dsn, 0o600)
	}
	if err != nil {
		return nil, err
	}
	st, err := postgres.Open(ctx, string(dsn))
	if err != nil {
		return nil, err
	}
	return st, nil
}

func TestMain(m *testing.M) { pgtest.Main(m) }

func (tl *testLog) newLog(db *sqlstore.DB) *translog.Log {
	tl.t.Helper()
	l, err := translog.New(translog.Config{Origin: origin, SKey: tl.skey, Batch: 100}, db, db, db, tl.files, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tl.t.Fatal(err)
	}
	return l
}

// logDir is the copy of the log's files a reader verifies offline.
func (tl *testLog) logDir() string { return filepath.Join(tl.dir, "blobs", "files") }

func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

func (tl *testLog) publish(n int) {
	tl.t.Helper()
	for range n {
		d := digestOf(fmt.Sprintf("bundle %d %s", len(tl.runs), tl.dir))
		if _, err := tl.db.Publish(context.Background(), store.Publication{Run: store.Run{Experiment: "demo/x", Level: "host", Origin: "community", Bundle: d, BundleSize: 1}}); err != nil {
			tl.t.Fatal(err)
		}
		tl.runs = append(tl.runs, d)
	}
}

// checkWhole verifies the published log from its files alone: the checkpoint's signature,
// size, and every published run found once at its own index with a proof that holds.
func (tl *testLog) checkWhole(want int) {
	tl.t.Helper()
	ctx := context.Background()
	src := translog.OpenSource(tl.logDir())
	msg, err := src.Get(ctx, translog.CheckpointFile)
	if err != nil {
		tl.t.Fatal(err)
	}
	vc, err := translog.VerifyCheckpoint(msg, translog.Trust{LogKey: tl.vkey})
	if err != nil {
		tl.t.Fatal(err)
	}
	if vc.Size != int64(want) {
		tl.t.Fatalf("checkpoint size %d, want %d", vc.Size, want)
	}
	st, err := tl.db.LogState(ctx)
	if err != nil || st.Size != int64(want) || st.Published != int64(want) {
		tl.t.Fatalf("state %+v (%v), want size and published %d", st, err, want)
	}
	seen := map[int64]bool{}
	for i, d := range tl.runs[:want] {
		f, err := translog.ProveBundle(ctx, src, vc.Checkpoint, d)
		if err != nil {
			tl.t.Fatalf("run %d: %v", i+1, err)
		}
		if seen[f.Index] || f.Leaf.RunID != int64(i+1) {
			tl.t.Fatalf("run %d: index %d (seen %v), leaf run %d", i+1, f.Index, seen[f.Index], f.Leaf.RunID)
		}
		seen[f.Index] = true
		e, err := tl.db.LogEntry(ctx, int64(i+1))
		if err != nil || e.Index != f.Index {
			tl.t.Fatalf("run %d: store index %d (%v), file index %d", i+1, e.Index, err, f.Index)
		}
	}
}

func TestPublishPendingSequencedProved(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	tl.publish(300) // more than one full tile, and a partial one
	inc, err := tl.log.Inclusion(ctx, 1)
	if err != nil || !inc.Pending {
		t.Fatalf("before sequencing: %+v, %v; want pending", inc, err)
	}
	if _, err := tl.log.Checkpoint(ctx); err == nil {
		t.Fatal("an empty log served a checkpoint")
	}
	size, err := tl.log.Sequence(ctx)
	if err != nil || size != 300 {
		t.Fatalf("Sequence = %d, %v; want 300", size, err)
	}
	for _, id := range []int64{1, 256, 257, 300} {
		inc, err := tl.log.Inclusion(ctx, id)
		if err != nil || inc.Pending {
			t.Fatalf("run %d: %+v, %v", id, inc, err)
		}
		vc, err := translog.VerifyCheckpoint([]byte(inc.Checkpoint), translog.Trust{LogKey: tl.vkey})
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(inc.Proof, vc.Size, vc.Hash, inc.Index, tlog.RecordHash([]byte(inc.Leaf))); err != nil {
			t.Fatalf("run %d: proof does not verify: %v", id, err)
		}
		l, err := translog.ParseLeaf([]byte(inc.Leaf))
		if err != nil || l.RunID != id || l.Bundle != tl.runs[id-1] {
			t.Fatalf("run %d: leaf %+v, %v", id, l, err)
		}
	}
	tl.checkWhole(300)
	for _, p := range []string{"tile/0/000", "tile/0/001.p/44", "tile/1/000.p/1", "tile/entries/000", "tile/entries/001.p/44"} {
		if _, err := os.Stat(filepath.Join(tl.logDir(), p)); err != nil {
			t.Errorf("tile %s: %v", p, err)
		}
	}
	// More runs later: the tree grows and the earlier checkpoint stays consistent with it.
	first := readCheckpoint(t, tl)
	tl.publish(5)
	if _, err := tl.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	second := readCheckpoint(t, tl)
	seen := &translog.SeenState{Origin: origin, Size: first.Size, Hash: first.Hash}
	if err := translog.CheckConsistent(ctx, translog.OpenSource(tl.logDir()), seen, second.Checkpoint); err != nil {
		t.Fatal(err)
	}
	tl.checkWhole(305)
}

func readCheckpoint(t testing.TB, tl *testLog) translog.VerifiedCheckpoint {
	t.Helper()
	msg, err := os.ReadFile(filepath.Join(tl.logDir(), "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	vc, err := translog.VerifyCheckpoint(msg, translog.Trust{LogKey: tl.vkey})
	if err != nil {
		t.Fatal(err)
	}
	return vc
}

// clock is a settable time shared by the store and the logs (to expire a crashed
// sequencer's lock).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestCrashAtEachStep stops a sequencer after each step (by an error, and by a panic that
// leaves its lock behind as a killed process would) and shows the next sequencer finishes
// the log: every run once, at one index, with no gap, proofs and checkpoint holding.
func TestCrashAtEachStep(t *testing.T) {
	steps := []translog.Step{translog.StepHashesStored, translog.StepTilesWritten, translog.StepCheckpointWritten}
	for _, step := range steps {
		for _, how := range []string{"error", "panic"} {
			t.Run(string(step)+"/"+how, func(t *testing.T) {
				ctx := context.Background()
				tl := newTestLog(t)
				clk := &clock{t: time.Now()}
				tl.db.Now = clk.now
				tl.publish(10)
				if _, err := tl.log.Sequence(ctx); err != nil {
					t.Fatal(err)
				}
				tl.publish(290)
				crashing := tl.newLog(tl.db)
				crashing.Now = clk.now
				crashing.Hook = func(s translog.Step) error {
					if s != step {
						return nil
					}
					if how == "panic" {
						panic("killed at " + string(s))
					}
					return errors.New("killed")
				}
				func() {
					defer func() { recover() }()
					_, err := crashing.Sequence(ctx)
					if how == "error" && err == nil {
						t.Fatal("the crashing sequencer did not stop")
					}
				}()
				if how == "panic" {
					// A killed process never unlocks: re-take the lock as the dead holder
					// would have it (the deferred unlock ran during the panic).
					ok, err := tl.db.LockSequencer(ctx, "dead-sequencer", clk.now().Add(30*time.Second))
					if err != nil || !ok {
						t.Fatal("could not leave a stale lock", err)
					}
					next := tl.newLog(tl.db)
					next.Now = clk.now
					if n, err := next.Sequence(ctx); err != nil || n != 0 {
						t.Fatalf("a sequencer ran while another held the lock: %d, %v", n, err)
					}
					clk.add(31 * time.Second)
				}
				tl.publish(7)
				next := tl.newLog(tl.db)
				next.Now = clk.now
				if _, err := next.Sequence(ctx); err != nil {
					t.Fatal(err)
				}
				tl.checkWhole(307)
			})
		}
	}
}

func TestFailedPublishQueuesNothing(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	// A publication answering a job whose lease is not held is refused in its transaction.
	_, err := tl.db.Publish(ctx, store.Publication{Run: store.Run{Experiment: "demo/x", Level: "host", Origin: "community", Bundle: digestOf("x")}, JobID: 12345, RunnerID: 1, LeaseID: "nope"})
	if err == nil {
		t.Fatal("publication without a lease was accepted")
	}
	n, err := tl.db.PendingLogEntries(ctx)
	if err != nil || n != 0 {
		t.Fatalf("pending entries after a failed publication: %d, %v", n, err)
	}
	// A duplicate bundle is refused too and queues no second leaf.
	tl.publish(1)
	if _, err := tl.db.Publish(ctx, store.Publication{Run: store.Run{Experiment: "demo/x", Level: "host", Origin: "community", Bundle: tl.runs[0]}}); err == nil {
		t.Fatal("duplicate accepted")
	}
	if n, _ := tl.db.PendingLogEntries(ctx); n != 1 {
		t.Fatalf("pending entries = %d, want 1", n)
	}
	if _, err := tl.db.LogEntry(ctx, 2); err == nil {
		t.Fatal("an entry for a run that was never published")
	}
}

// TestConcurrentSequencers runs two sequencers on two connections to one file: every run
// is integrated exactly once.
func TestConcurrentSequencers(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	db2 := openDB(t, filepath.Join(tl.dir, "portal.db"))
	a, b := tl.log, tl.newLog(db2)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for _, l := range []*translog.Log{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := l.Sequence(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	tl.publish(600)
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, err := tl.db.LogState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Published == 600 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tl.checkWhole(600)
}

func TestTamperRefused(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	tl.publish(40)
	if _, err := tl.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	cp := readCheckpoint(t, tl)
	src := translog.OpenSource(tl.logDir())
	// A tampered tile: one hash byte flipped.
	tile := filepath.Join(tl.logDir(), "tile/0/000.p/40")
	orig, err := os.ReadFile(tile)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), orig...)
	bad[100] ^= 1
	os.WriteFile(tile, bad, 0o644)
	if _, err := translog.ProveBundle(ctx, src, cp.Checkpoint, tl.runs[7]); err == nil || !strings.Contains(err.Error(), "tiles do not match") {
		t.Fatalf("tampered tile: %v", err)
	}
	os.WriteFile(tile, orig, 0o644)
	// A tampered entry bundle: another run's digest in leaf 3.
	eb := filepath.Join(tl.logDir(), "tile/entries/000.p/40")
	entries, _ := os.ReadFile(eb)
	forged := strings.Replace(string(entries), tl.runs[3], digestOf("forged"), 1)
	os.WriteFile(eb, []byte(forged), 0o644)
	if _, err := translog.ProveBundle(ctx, src, cp.Checkpoint, digestOf("forged")); err == nil || !strings.Contains(err.Error(), "tampered entry") {
		t.Fatalf("tampered entry bundle: %v", err)
	}
	os.WriteFile(eb, entries, 0o644)
	// A tampered checkpoint: its size changed.
	msg, _ := os.ReadFile(filepath.Join(tl.logDir(), "checkpoint"))
	forgedCP := strings.Replace(string(msg), "\n40\n", "\n41\n", 1)
	if _, err := translog.VerifyCheckpoint([]byte(forgedCP), translog.Trust{LogKey: tl.vkey}); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("tampered checkpoint: %v", err)
	}
	// A checkpoint signed by another key.
	_, other, _ := note.GenerateKey(rand.Reader, origin)
	if _, err := translog.VerifyCheckpoint(msg, translog.Trust{LogKey: other}); err == nil {
		t.Fatal("checkpoint verified under another log key")
	}
}
