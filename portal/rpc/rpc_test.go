package rpc_test

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/portal/fault"
	"pqrepro/portal/ingest"
	"pqrepro/portal/rpc"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/store"
	"pqrepro/portal/token"
)

// TestServiceDrivesAJob drives the protocol through the Service over a real SQLite store, as
// the HTTP handlers do: a runner proves its keys and enrols with a one-time token, finds no
// job, is woken by a queued one and leases it, extends the lease, sends its log and fails the
// job; a request without a runner, a spent challenge and a lost lease are refused with their
// kinds.
func TestServiceDrivesAJob(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "portal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan struct{})
	s := &rpc.Service{Store: st, Ingest: &ingest.Ingest{Catalog: cat}, Queued: func() <-chan struct{} { return queued },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), LeaseDuration: time.Minute, LongPoll: 5 * time.Second,
		LeasePoll: time.Hour, ChallengeTTL: time.Minute, PortalURL: "http://127.0.0.1:8080"}

	if _, err := s.Lease(ctx, 0); !fault.Is(err, fault.Unauthorized) {
		t.Fatalf("lease without a runner: %v, want unauthorized", err)
	}
	if _, err := s.Challenge(ctx, "anything"); !fault.Is(err, fault.Invalid) {
		t.Errorf("challenge for another purpose: %v, want invalid", err)
	}
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Challenge(ctx, identity.PurposeRunnerEnrol)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(ch.Challenge)
	proof, err := id.ProvePossession(identity.PurposeRunnerEnrol, raw)
	if err != nil {
		t.Fatal(err)
	}
	enrolTok := token.New("pqe")
	if _, err := st.CreateEnrolToken(ctx, "lab", token.Hash(enrolTok), 0, store.EnrolTokenOptions{MaxUses: 1}); err != nil {
		t.Fatal(err)
	}
	req := protocol.EnrolRequest{Token: enrolTok, Name: "lab runner", Version: "test", PublicKeys: id.Public(), Proof: proof,
		Boards: []protocol.BoardInfo{{Name: "host", Class: "host", Driver: "host", Available: true}}}
	resp, err := s.Enrol(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enrol(ctx, req); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("enrolment with a spent challenge: %v, want unauthorized", err)
	}
	r, err := st.RunnerByToken(ctx, token.Hash(resp.RunnerToken))
	if err != nil || r.ID != resp.RunnerID {
		t.Fatalf("runner by its new token: %+v %v", r, err)
	}
	rctx := rpc.WithRunner(ctx, r)

	if l, err := s.Lease(rctx, 0); l != nil || err != nil {
		t.Fatalf("lease with no job: %+v %v, want none", l, err)
	}
	m, err := cat.Manifest("paper001/mlkem")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *protocol.Lease, 1)
	go func() {
		l, err := s.Lease(rctx, 5*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	jobID, err := st.CreateJob(ctx, store.NewJob{Experiment: m.Ref(), Paper: m.Metadata.Paper, ManifestYAML: string(m.YAML()), ManifestID: m.ID(), BoardClass: "host"})
	if err != nil {
		t.Fatal(err)
	}
	close(queued) // the queue's wake-up
	l := <-got
	if l == nil || l.JobID != jobID || l.Nonce == "" || l.PortalURL != s.PortalURL || l.Manifest != string(m.YAML()) {
		t.Fatalf("lease after a job was queued: %+v", l)
	}
	exp, err := s.Extend(rctx, jobID, protocol.HeartbeatRequest{LeaseID: l.LeaseID})
	if err != nil || time.Until(exp) < 50*time.Second {
		t.Errorf("extend: %v until %v", err, exp)
	}
	if err := s.Heartbeat(rctx, jobID, protocol.HeartbeatRequest{LeaseID: "another"}); err == nil {
		t.Error("a heartbeat under another lease was accepted")
	}
	if err := s.AppendLog(rctx, jobID, l.LeaseID, 0, []byte("runner: started\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLog(rctx, jobID, l.LeaseID, -1, nil); !fault.Is(err, fault.Invalid) {
		t.Errorf("log chunk -1: %v, want invalid", err)
	}
	if _, err := s.Complete(rctx, jobID, "another", []byte("not a bundle")); !fault.Is(err, fault.LeaseLost) {
		t.Errorf("completion under another lease: %v, want lease lost", err)
	}
	if err := s.Fail(rctx, jobID, protocol.FailRequest{LeaseID: l.LeaseID, Reason: "  "}); err != nil {
		t.Fatal(err)
	}
	j, err := st.Job(ctx, jobID)
	if err != nil || j.State != store.JobFailed || j.Error != "the runner gave no reason" {
		t.Errorf("failed job: %s %q %v", j.State, j.Error, err)
	}
}
