package translog_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"pqrepro/portal/blob"
	"pqrepro/portal/translog"
)

// TestKilledSequencerProcess runs a sequencer in a child process that SIGKILLs itself after
// each step of sequencing (no deferred unlock, no cleanup: its lock stays behind), then
// shows a sequencer in this process, once the lock expires, finishes the log.
func TestKilledSequencerProcess(t *testing.T) {
	if os.Getenv("PQREPRO_TLOG_CHILD") != "" {
		t.Skip("child")
	}
	for _, step := range []translog.Step{translog.StepHashesStored, translog.StepTilesWritten, translog.StepCheckpointWritten} {
		t.Run(string(step), func(t *testing.T) {
			ctx := context.Background()
			tl := newTestLog(t)
			tl.publish(20)
			if _, err := tl.log.Sequence(ctx); err != nil {
				t.Fatal(err)
			}
			tl.publish(280)
			cmd := exec.Command(os.Args[0], "-test.run=^TestSequencerChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "PQREPRO_TLOG_CHILD="+string(step), "PQREPRO_TLOG_DIR="+tl.dir, "PQREPRO_TLOG_SKEY="+tl.skey)
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the child was not killed: %v\n%s", err, out)
			}
			st, _ := tl.db.LogState(ctx)
			if st.Size <= 20 || st.Published >= st.Size {
				t.Fatalf("after the kill at %s: size %d, published %d", step, st.Size, st.Published)
			}
			// The dead child's lock holds until it expires.
			if n, err := tl.log.Sequence(ctx); err != nil || n != 0 {
				t.Fatalf("sequenced under a live foreign lock: %d, %v", n, err)
			}
			later := func() time.Time { return time.Now().Add(time.Minute) }
			tl.db.Now = later
			next := tl.newLog(tl.db)
			next.Now = later
			tl.publish(3)
			if _, err := next.Sequence(ctx); err != nil {
				t.Fatal(err)
			}
			tl.checkWhole(303)
		})
	}
}

// TestSequencerChild is the child of TestKilledSequencerProcess.
func TestSequencerChild(t *testing.T) {
	step := translog.Step(os.Getenv("PQREPRO_TLOG_CHILD"))
	if step == "" {
		t.Skip("only as TestKilledSequencerProcess's child")
	}
	dir := os.Getenv("PQREPRO_TLOG_DIR")
	db, err := openStore(filepath.Join(dir, "portal.db"), func() string { t.Fatal("the parent made no database"); return "" })
	if err != nil {
		t.Fatal(err)
	}
	files, err := blob.OpenFS(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := translog.New(translog.Config{Origin: origin, SKey: os.Getenv("PQREPRO_TLOG_SKEY"), Batch: 100}, db, db, db, files, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	l.Hook = func(s translog.Step) error {
		if s == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
		return nil
	}
	l.Sequence(context.Background())
	t.Fatal("the sequencer finished without reaching", step)
}
