package translog_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/internal/webclient"
	"pqrepro/portal/translog"
	"pqrepro/portal/translog/litewitnesstest"
)

func sequence(t *testing.T, tl *testLog) {
	t.Helper()
	if _, err := tl.log.Sequence(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// policyResults checks the log's served checkpoint against both of its published policies.
func policyResults(t *testing.T, tl *testLog) map[string]translog.PolicyResult {
	t.Helper()
	ctx := context.Background()
	ps, err := tl.log.Policies(ctx, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := tl.log.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]translog.PolicyResult{}
	for _, p := range ps {
		// The published text is what a reader parses.
		back, err := translog.ParsePolicy(p.Format())
		if err != nil {
			t.Fatalf("policy %s does not parse back: %v\n%s", p.Name, err, p.Format())
		}
		r, err := translog.CheckPolicy(msg, back)
		if err != nil {
			t.Fatal(err)
		}
		out[p.Name] = r
	}
	return out
}

// TestLitewitnessCosignsThroughPush runs litewitness (torchwood's C2SP tlog-witness, with its
// key in an ssh-agent and the log added with witnessctl) and has the log push to it: the
// Ed25519-only witness is registered by cosigning when asked, its cosignature is kept and
// served, the log grows and is cosigned again through a consistency proof (after a log
// restart that forgot the witness's size: its 409 tells it), the ecosystem policy is met, and
// a fork under the same key is refused by the witness.
func TestLitewitnessCosignsThroughPush(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	lw := litewitnesstest.Start(t, "witness.example/lite", origin, tl.vkey)
	client := webclient.New(webclient.Config{Request: 30 * time.Second})

	tl.publish(3)
	sequence(t, tl)
	// A wrong key is not registered: the witness's answer does not verify under it.
	other := newCosigner(t, "witness.example/lite")
	otherEd, _ := other.VKeys()
	if _, err := tl.log.RegisterPushWitness(ctx, client, otherEd, "", lw.URL); err == nil || !strings.Contains(err.Error(), "do not verify") {
		t.Fatalf("registered under a key the witness does not hold: %v", err)
	}
	w, err := tl.log.RegisterPushWitness(ctx, client, lw.VKey, "", lw.URL)
	if err != nil {
		t.Fatalf("register litewitness: %v\n%s", err, lw.Output())
	}
	if w.Name != "witness.example/lite" || w.MLDSA44 != "" || w.URL != lw.URL {
		t.Fatalf("registered %+v", w)
	}
	sequence(t, tl) // writes the cosignature into the checkpoint file
	msg, _ := os.ReadFile(filepath.Join(tl.logDir(), "checkpoint"))
	vc, err := translog.VerifyCheckpoint(msg, translog.Trust{LogKey: tl.vkey, Witnesses: []string{lw.VKey}})
	if err != nil || vc.Size != 3 || len(vc.Witnessed) != 1 {
		t.Fatalf("checkpoint cosigned by litewitness: %+v %v\n%s", vc.Witnessed, err, msg)
	}
	if r := policyResults(t, tl); !r[translog.PolicyEcosystem].Satisfied || r[translog.PolicyPostQuantum].Members != 0 {
		t.Fatalf("policies: %+v", r)
	}

	// The log grows; a restarted log (its memory of the witness's size lost) pushes from 0,
	// learns 3 from the witness's 409 and proves consistency from there.
	tl.publish(300)
	sequence(t, tl)
	tl.log = tl.newLog(tl.db)
	tl.log.PushWitnesses(ctx, client)
	sequence(t, tl)
	msg, _ = os.ReadFile(filepath.Join(tl.logDir(), "checkpoint"))
	vc, err = translog.VerifyCheckpoint(msg, translog.Trust{LogKey: tl.vkey, Witnesses: []string{lw.VKey}})
	if err != nil || vc.Size != 303 {
		t.Fatalf("grown checkpoint: size %d, %v\n%s", vc.Size, err, lw.Output())
	}
	if out := lw.Ctl(t, "list-logs"); !strings.Contains(out, `"size":303`) {
		t.Fatalf("litewitness's database: %s", out)
	}

	// Another history under the same key, larger: the witness refuses its consistency proof.
	fork := newTestLog(t)
	fork.skey, fork.vkey = tl.skey, tl.vkey
	fork.log = fork.newLog(fork.db)
	fork.publish(400)
	sequence(t, fork)
	fork.wit(t, w)
	if _, err := fork.log.PushWitness(ctx, client, w); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("a fork was not refused by the witness: %v", err)
	}
	// A smaller one: the witness is ahead of it.
	small := newTestLog(t)
	small.skey, small.vkey = tl.skey, tl.vkey
	small.log = small.newLog(small.db)
	small.publish(10)
	sequence(t, small)
	small.wit(t, w)
	if _, err := small.log.PushWitness(ctx, client, w); !errors.Is(err, translog.ErrWitnessAhead) {
		t.Fatalf("a rolled-back log: %v", err)
	}
}

// wit registers w in tl's store as it is (a test shortcut for a log that already knows it).
func (tl *testLog) wit(t *testing.T, w translog.Witness) {
	t.Helper()
	if err := tl.db.AddWitness(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// TestPqreproWitnessServesAddCheckpoint has the log push to pqrepro's own tlog-witness
// (WitnessServer over HTTP): it answers with both cosignature types, so both published
// policies are met; a wrong old size gets 409 and the size; a tampered proof gets 422.
func TestPqreproWitnessServesAddCheckpoint(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	c := newCosigner(t, "witness.example/pq")
	ed, ml := c.VKeys()
	ws := &translog.WitnessServer{LogKey: tl.vkey, Cosigner: c, StateFile: filepath.Join(t.TempDir(), "seen.json")}
	srv := httptest.NewServer(ws)
	defer srv.Close()
	client := webclient.New(webclient.Default)
	tl.publish(5)
	sequence(t, tl)
	if _, err := tl.log.RegisterPushWitness(ctx, client, ed, ml, srv.URL); err != nil {
		t.Fatal(err)
	}
	tl.publish(20)
	sequence(t, tl)
	tl.log.PushWitnesses(ctx, client)
	sequence(t, tl)
	r := policyResults(t, tl)
	if !r[translog.PolicyEcosystem].Satisfied || !r[translog.PolicyPostQuantum].Satisfied {
		t.Fatalf("policies: %+v", r)
	}
	st, _ := tl.db.LogState(ctx)
	// Asked from the wrong size, the witness tells its own.
	if _, known, err := ws.AddCheckpoint(translog.AddCheckpointBody(3, nil, st.Checkpoint)); known != 25 || err != nil {
		t.Fatalf("wrong old size: known %d, %v", known, err)
	}
	// A checkpoint the log did not sign is refused.
	forged := []byte(strings.Replace(string(st.Checkpoint), "\n25\n", "\n26\n", 1))
	if _, _, err := ws.AddCheckpoint(translog.AddCheckpointBody(25, nil, forged)); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Fatalf("forged checkpoint: %v", err)
	}
}

// TestCosignatureTimes: a cosignature dated far in the future, or before the checkpoint was
// made, is refused; an older one never replaces a fresher one kept for the same checkpoint.
func TestCosignatureTimes(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	tl.publish(2)
	sequence(t, tl)
	c := newCosigner(t, "witness.example/clock")
	ed, ml := c.VKeys()
	cosignAt := func(at time.Time) []byte {
		c.Now = func() time.Time { return at }
		wit := &translog.Witnessing{Src: translog.OpenSource(tl.logDir()), LogKey: tl.vkey, Cosigner: c, StateFile: filepath.Join(t.TempDir(), "s.json")}
		_, out, err := wit.Once(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	now := time.Now()
	if _, err := tl.log.RegisterWitness(ctx, ed, ml, cosignAt(now), time.Minute); err != nil {
		t.Fatal(err)
	}
	for name, at := range map[string]time.Time{"in 100 years": now.AddDate(100, 0, 0), "a year before the checkpoint": now.AddDate(-1, 0, 0)} {
		if _, err := tl.log.AcceptCosignature(ctx, cosignAt(at)); err == nil {
			t.Errorf("a cosignature dated %s was accepted", name)
		}
	}
	fresh := cosignAt(now.Add(2 * time.Minute))
	stale := cosignAt(now.Add(time.Minute))
	for _, m := range [][]byte{fresh, stale} {
		if n, err := tl.log.AcceptCosignature(ctx, m); err != nil || n != 2 {
			t.Fatalf("accept: %d %v", n, err)
		}
	}
	sequence(t, tl)
	msg, _ := tl.log.Checkpoint(ctx)
	for _, ln := range sigLines(fresh) {
		if !strings.Contains(string(msg), ln) {
			t.Fatalf("the fresher cosignature was replaced by an older one:\n%s", msg)
		}
	}
}

// sigLines is the witness's signature lines of a cosigned note (the log's is the first).
func sigLines(note []byte) []string {
	_, sigs, _ := strings.Cut(string(note), "\n\n")
	lines := strings.Split(strings.TrimSuffix(sigs, "\n"), "\n")
	return lines[1:]
}

// TestProofPastedWithoutNewline: a registration proof copied without its final newline (or
// with CRLF line ends) is accepted as the note it is.
func TestProofPastedWithoutNewline(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	tl.publish(1)
	sequence(t, tl)
	c := newCosigner(t, "witness.example/paste")
	ed, ml := c.VKeys()
	wit := &translog.Witnessing{Src: translog.OpenSource(tl.logDir()), LogKey: tl.vkey, Cosigner: c, StateFile: filepath.Join(t.TempDir(), "s.json")}
	_, proof, err := wit.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pasted := strings.ReplaceAll(strings.TrimSuffix(string(proof), "\n"), "\n", "\r\n") + "  "
	if _, err := tl.log.RegisterWitness(ctx, ed, ml, []byte(pasted), time.Minute); err != nil {
		t.Fatalf("pasted proof: %v", err)
	}
}
