package translog_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/portal/translog"
)

func newCosigner(t *testing.T, name string) *translog.Cosigner {
	t.Helper()
	seed := make([]byte, translog.CosignerSeedSize)
	rand.Read(seed)
	c, err := translog.NewCosigner(name, seed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWitnessCosignsAndReaderVerifies(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	tl.publish(20)
	if _, err := tl.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	w := newCosigner(t, "witness.example/w1")
	ed, ml := w.VKeys()
	wit := &translog.Witnessing{Src: translog.OpenSource(tl.logDir()), LogKey: tl.vkey, Cosigner: w, StateFile: filepath.Join(t.TempDir(), "state.json")}
	_, cosigned, err := wit.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Before registration, the log refuses the witness's cosignatures.
	if _, err := tl.log.AcceptCosignature(ctx, cosigned); err == nil || !strings.Contains(err.Error(), "not a registered witness") {
		t.Fatalf("unregistered witness: %v", err)
	}
	// Registration needs a proof made with both keys.
	logSigned, _ := os.ReadFile(filepath.Join(tl.logDir(), "checkpoint"))
	if _, err := tl.log.RegisterWitness(ctx, ed, ml, logSigned, time.Minute); err == nil || !strings.Contains(err.Error(), "no Ed25519 cosignature") {
		t.Fatalf("registration without the witness's signatures: %v", err)
	}
	other := newCosigner(t, "witness.example/w1")
	_, otherML := other.VKeys()
	if _, err := tl.log.RegisterWitness(ctx, ed, otherML, cosigned, time.Minute); err == nil || !strings.Contains(err.Error(), "ML-DSA-44") {
		t.Fatalf("registration with a key the proof was not made with: %v", err)
	}
	later := tl.newLog(tl.db)
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	if _, err := later.RegisterWitness(ctx, ed, ml, cosigned, 5*time.Minute); err == nil || !strings.Contains(err.Error(), "older") {
		t.Fatalf("stale proof: %v", err)
	}
	if _, err := tl.log.RegisterWitness(ctx, ed, ml, cosigned, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := tl.log.AcceptCosignature(ctx, cosigned); err != nil || n != 2 {
		t.Fatalf("AcceptCosignature = %d, %v; want 2", n, err)
	}
	if _, err := tl.log.Sequence(ctx); err != nil { // writes the cosignatures into the file
		t.Fatal(err)
	}
	msg, err := os.ReadFile(filepath.Join(tl.logDir(), "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	trust := translog.Trust{LogKey: tl.vkey, Witnesses: []string{ed, ml}}
	vc, err := translog.VerifyCheckpoint(msg, trust)
	if err != nil || len(vc.Witnessed) != 1 {
		t.Fatalf("witnessed checkpoint: %+v, %v", vc.Witnessed, err)
	}
	served, _ := tl.log.Checkpoint(ctx)
	if string(served) != string(msg) {
		t.Fatal("the served checkpoint differs from the file")
	}
	// A tampered cosignature (one byte of the ML-DSA-44 signature) is refused, named.
	lines := strings.Split(strings.TrimSuffix(string(msg), "\n"), "\n")
	mlLine := -1
	var name string
	var raw []byte
	for i, l := range lines {
		n, b64, _ := strings.Cut(strings.TrimPrefix(l, "— "), " ")
		if r, err := base64.StdEncoding.DecodeString(b64); err == nil && strings.HasPrefix(l, "— ") && len(r) == 4+8+2420 {
			mlLine, name, raw = i, n, r
		}
	}
	if mlLine < 0 {
		t.Fatalf("no ML-DSA-44 cosignature in\n%s", msg)
	}
	raw[50] ^= 1
	lines[mlLine] = "— " + name + " " + base64.StdEncoding.EncodeToString(raw)
	if _, err := translog.VerifyCheckpoint([]byte(strings.Join(lines, "\n")+"\n"), trust); err == nil || !strings.Contains(err.Error(), "witness.example/w1 does not verify") {
		t.Fatalf("tampered cosignature: %v", err)
	}
	// Without any cosignature the pinned witness is missing.
	logOnly := strings.Join(lines[:len(lines)-2], "\n") + "\n"
	if _, err := translog.VerifyCheckpoint([]byte(logOnly), trust); err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("unwitnessed checkpoint with a witness pinned: %v", err)
	}
	// A cosignature for an old checkpoint is refused once the log has grown.
	tl.publish(1)
	if _, err := tl.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.log.AcceptCosignature(ctx, cosigned); err == nil {
		t.Fatal("a cosignature of an old checkpoint was accepted")
	}
}

// TestWitnessRefusesFork shows a witness that saw one history refuse a checkpoint of
// another, signed by the same log key (the operator forking the log), and a rollback.
func TestWitnessRefusesFork(t *testing.T) {
	ctx := context.Background()
	a := newTestLog(t)
	b := newTestLog(t)
	b.skey, b.vkey = a.skey, a.vkey
	b.log = b.newLog(b.db)
	a.publish(5)
	b.publish(8) // other bundles: another history under the same key
	for _, l := range []*testLog{a, b} {
		if _, err := l.log.Sequence(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w := newCosigner(t, "witness.example/w1")
	state := filepath.Join(t.TempDir(), "state.json")
	wa := &translog.Witnessing{Src: translog.OpenSource(a.logDir()), LogKey: a.vkey, Cosigner: w, StateFile: state}
	if _, _, err := wa.Once(ctx); err != nil {
		t.Fatal(err)
	}
	wb := &translog.Witnessing{Src: translog.OpenSource(b.logDir()), LogKey: a.vkey, Cosigner: w, StateFile: state}
	if _, _, err := wb.Once(ctx); !errors.Is(err, translog.ErrInconsistent) || !strings.Contains(err.Error(), "fork") {
		t.Fatalf("fork: %v", err)
	}
	seen, _ := translog.LoadSeen(state)
	if seen.Size != 5 {
		t.Fatalf("the witness recorded the forked checkpoint (size %d)", seen.Size)
	}
	// The honest log grows: consistent, accepted. A copy at the old size is a rollback.
	old, _ := os.ReadFile(filepath.Join(a.logDir(), "checkpoint"))
	a.publish(3)
	if _, err := a.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wa.Once(ctx); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(a.logDir(), "checkpoint"), old, 0o644)
	if _, _, err := wa.Once(ctx); !errors.Is(err, translog.ErrInconsistent) || !strings.Contains(err.Error(), "rollback") {
		t.Fatalf("rollback: %v", err)
	}
}
