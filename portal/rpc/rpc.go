// Package rpc is the portal's side of the runner protocol: a Service that implements
// protocol.Portal, the contract the runner's HTTP client implements too. The portal's HTTP
// handlers only decode a request, call the Service and encode its answer; the runner a
// request comes from is put in the context by the handler that authenticated it (WithRunner).
// Errors are portal/fault errors whose kind the portal's error handler maps to the protocol's
// status and protocol.ErrorKind.
package rpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/ingest"
	"pqrepro/portal/store"
	"pqrepro/portal/token"
)

var _ protocol.Portal = (*Service)(nil)

// Store is what the Service needs of the portal's store.
type Store interface {
	IssueChallenge(ctx context.Context, challenge, purpose string, expires time.Time) error
	UseChallenge(ctx context.Context, challenge, purpose string) error
	Enrol(ctx context.Context, e store.Enrolment) (id int64, reenrolled bool, err error)
	LeaseJob(ctx context.Context, runnerID int64, classes, firmwareOnly, opensslClasses []string, leaseID, nonce string, expires time.Time) (store.Job, error)
	Heartbeat(ctx context.Context, jobID, runnerID int64, leaseID string, expires time.Time, p protocol.Progress) error
	AppendLog(ctx context.Context, jobID, runnerID int64, leaseID string, idx int, data string) error
	FailJob(ctx context.Context, jobID, runnerID int64, leaseID, reason, log string) error
	Job(ctx context.Context, id int64) (store.Job, error)
	Run(ctx context.Context, id int64) (store.Run, error)
}

// Service answers the runner protocol. Its fields are set once before use; it is safe for
// concurrent use.
type Service struct {
	Store Store
	// Ingest publishes completed jobs' bundles.
	Ingest *ingest.Ingest
	// Published is called after a run was published (the portal drops its cached pages and
	// wakes the transparency log); nil: nothing.
	Published func(ingest.Published, ingest.Incoming)
	// Queued returns a channel closed when a job is next queued, to wake waiting leases.
	Queued func() <-chan struct{}
	Log    *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// LeaseDuration is how long a lease lasts without a heartbeat; LongPoll the longest a
	// lease request waits; LeasePoll how often a waiting one looks again (zero: a quarter of
	// the lease, between 100 ms and 2 s); ChallengeTTL how long a challenge stays usable.
	LeaseDuration, LongPoll, LeasePoll, ChallengeTTL time.Duration
	// PortalURL is the portal's public URL, carried by leases.
	PortalURL string
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

type runnerKey struct{}

// WithRunner returns ctx carrying the authenticated runner whose request it serves.
func WithRunner(ctx context.Context, r store.Runner) context.Context {
	return context.WithValue(ctx, runnerKey{}, r)
}

// runnerFrom is the runner of the request; a request without one is unauthorized.
func runnerFrom(ctx context.Context) (store.Runner, error) {
	r, ok := ctx.Value(runnerKey{}).(store.Runner)
	if !ok {
		return store.Runner{}, fault.New(fault.Unauthorized, "missing runner token")
	}
	return r, nil
}

// Challenge issues a proof-of-possession challenge for purpose. The challenge is stored in
// the database, so any portal process sharing it accepts the proof, once, until it expires.
func (s *Service) Challenge(ctx context.Context, purpose string) (protocol.ChallengeResponse, error) {
	if purpose != identity.PurposeRunnerEnrol && purpose != identity.PurposeSubmitterKeys {
		return protocol.ChallengeResponse{}, fault.New(fault.Invalid, "purpose must be %s or %s", identity.PurposeRunnerEnrol, identity.PurposeSubmitterKeys)
	}
	b := make([]byte, identity.ChallengeBytes)
	if _, err := rand.Read(b); err != nil {
		return protocol.ChallengeResponse{}, err
	}
	exp := s.now().Add(s.ChallengeTTL).UTC()
	ch := protocol.ChallengeResponse{Challenge: hex.EncodeToString(b), Purpose: purpose, ExpiresAt: exp}
	if err := s.Store.IssueChallenge(ctx, ch.Challenge, purpose, exp); err != nil {
		return protocol.ChallengeResponse{}, err
	}
	return ch, nil
}

// CheckPossession spends the proof's challenge (once, whatever follows) and checks both
// signatures over it for purpose and keys. Every refusal is unauthorized, with its reason.
func (s *Service) CheckPossession(ctx context.Context, purpose string, keys identity.PublicKeys, p identity.Possession) error {
	ch, err := hex.DecodeString(p.Challenge)
	if p.Challenge == "" || err != nil || len(ch) != identity.ChallengeBytes {
		return fault.New(fault.Unauthorized, "proof of possession: missing or malformed challenge (want the %d-byte hex challenge from %s, signed with both keys)",
			identity.ChallengeBytes, protocol.RouteChallenge)
	}
	if err := s.Store.UseChallenge(ctx, p.Challenge, purpose); err != nil {
		return err
	}
	if err := identity.VerifyPossession(purpose, ch, keys, p); err != nil {
		if errors.Is(err, identity.ErrNoPossession) {
			return fault.Wrap(fault.Unauthorized, err, "%s", err.Error())
		}
		return fault.Wrap(fault.Invalid, err, "%s", err.Error())
	}
	return nil
}

// checkEnrolment refuses an enrolment request with bad keys, names, boards or capabilities.
func checkEnrolment(req *protocol.EnrolRequest) error {
	if err := req.PublicKeys.Validate(); err != nil {
		return fault.Wrap(fault.Invalid, err, "public keys: %s", err.Error())
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "" || len(req.Name) > 100 || len(req.Boards) > 64 {
		return fault.New(fault.Invalid, "a runner needs a name (at most 100 characters) and at most 64 boards")
	}
	if err := artifacts.CheckName("runner name", req.Name, 100); err != nil {
		return fault.Wrap(fault.Invalid, err, "%s", err.Error())
	}
	for _, b := range req.Boards {
		if b.Name == "" || len(b.Name) > 100 || !artifacts.ValidBoardClass(b.Class) {
			return fault.New(fault.Invalid, "every board needs a name (at most 100 characters) and a class (a lower-case slug like qemu-mps2-an386)")
		}
		if err := artifacts.CheckName("board name", b.Name, 100); err != nil {
			return fault.Wrap(fault.Invalid, err, "%s", err.Error())
		}
	}
	if len(req.Capabilities.OpenSSL) > 200 || len(req.Capabilities.OpenSSLReason) > 2000 {
		return fault.New(fault.Invalid, "capabilities: the openssl version (at most 200 characters) or reason (at most 2000) is too long")
	}
	for _, b := range req.Boards {
		if slices.Contains(b.Methods, artifacts.MethodOpenSSLCLI) && !req.Capabilities.OpenSSLUsable {
			return fault.New(fault.Invalid, "board %s offers openssl-cli but the runner reports no usable OpenSSL 3.5", b.Name)
		}
	}
	return nil
}

// Enrol registers a runner whose proof signs a challenge from Challenge with both keys. New
// keys need a usable enrolment token; keys the portal knows need that runner's current token
// (or the administrator's release); keys held by another runner or a submitter are a
// conflict.
func (s *Service) Enrol(ctx context.Context, req protocol.EnrolRequest) (protocol.EnrolResponse, error) {
	if err := checkEnrolment(&req); err != nil {
		return protocol.EnrolResponse{}, err
	}
	tok := token.New("pqr")
	if err := s.CheckPossession(ctx, identity.PurposeRunnerEnrol, req.PublicKeys, req.Proof); err != nil {
		return protocol.EnrolResponse{}, err
	}
	e := store.Enrolment{Name: req.Name, Version: req.Version, Keys: req.PublicKeys, Boards: req.Boards, Capabilities: req.Capabilities, NewTokenHash: token.Hash(tok)}
	if req.Token != "" {
		e.EnrolTokenHash = token.Hash(req.Token)
	}
	if req.CurrentToken != "" {
		e.CurrentTokenHash = token.Hash(req.CurrentToken)
	}
	id, again, err := s.Store.Enrol(ctx, e)
	if err != nil {
		s.Log.Info("enrolment refused", "name", req.Name, "keys", req.PublicKeys.Fingerprint(), "reason", fault.Message(err))
		return protocol.EnrolResponse{}, err
	}
	s.Log.Info("runner enrolled", "runner", id, "name", req.Name, "keys", req.PublicKeys.Fingerprint(), "boards", len(req.Boards), "re-enrolled", again)
	return protocol.EnrolResponse{RunnerID: id, RunnerToken: tok, LeaseSeconds: int(s.LeaseDuration.Seconds())}, nil
}

// leaseClasses are the board classes a runner can take jobs for: those it has available, the
// ones of them it can run openssl-cli jobs on, and those that run only uploaded firmware.
func leaseClasses(r store.Runner) (classes, firmwareOnly, opensslClasses []string) {
	for _, b := range r.Boards {
		if b.Available {
			classes = append(classes, b.Class)
			if r.Capabilities.OpenSSLUsable && b.CanRun(artifacts.MethodOpenSSLCLI) {
				opensslClasses = append(opensslClasses, b.Class)
			}
		} else if b.FirmwareOnly {
			firmwareOnly = append(firmwareOnly, b.Class)
		}
	}
	return classes, firmwareOnly, opensslClasses
}

// Lease hands out the next job for the runner's available boards, waiting up to wait (at
// most LongPoll); nil and no error when none arrived in time or ctx ended.
func (s *Service) Lease(ctx context.Context, wait time.Duration) (*protocol.Lease, error) {
	r, err := runnerFrom(ctx)
	if err != nil {
		return nil, err
	}
	classes, firmwareOnly, opensslClasses := leaseClasses(r)
	deadline := time.Now().Add(min(wait, s.LongPoll))
	poll := min(max(s.LeaseDuration/4, 100*time.Millisecond), 2*time.Second)
	if s.LeasePoll > 0 {
		poll = s.LeasePoll
	}
	for {
		woken := s.Queued()
		leaseID, nonce := token.New("lease"), token.New("nonce")
		j, err := s.Store.LeaseJob(ctx, r.ID, classes, firmwareOnly, opensslClasses, leaseID, nonce, s.now().Add(s.LeaseDuration))
		if err == nil {
			s.Log.Info("job leased", "job", j.ID, "runner", r.ID, "attempt", j.Attempt, "board", j.BoardClass)
			return s.lease(j, leaseID, nonce), nil
		}
		if !fault.Is(err, fault.NotFound) {
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(left, poll))
		select {
		case <-woken:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		}
		t.Stop()
	}
}

// lease is the answer to a leased job.
func (s *Service) lease(j store.Job, leaseID, nonce string) *protocol.Lease {
	l := &protocol.Lease{JobID: j.ID, LeaseID: leaseID, Attempt: j.Attempt, Experiment: j.Experiment, Manifest: j.ManifestYAML,
		ManifestID: j.ManifestID, BoardClass: j.BoardClass, Firmware: j.Firmware, ExpiresAt: j.LeaseExpires,
		LeaseSeconds: int(s.LeaseDuration.Seconds()), Nonce: nonce, PortalURL: s.PortalURL}
	if j.Firmware != "" {
		l.FirmwareURL = "/firmware/" + j.Firmware + "?download=1"
	}
	return l
}

// Heartbeat extends the runner's lease of a job (Extend, without its answer).
func (s *Service) Heartbeat(ctx context.Context, jobID int64, req protocol.HeartbeatRequest) error {
	_, err := s.Extend(ctx, jobID, req)
	return err
}

// Extend extends the runner's lease of a job by LeaseDuration, records its progress and
// returns the new expiry.
func (s *Service) Extend(ctx context.Context, jobID int64, req protocol.HeartbeatRequest) (time.Time, error) {
	r, err := runnerFrom(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if err := req.Progress.Validate(); err != nil {
		return time.Time{}, fault.Wrap(fault.Invalid, err, "heartbeat progress: %s", err.Error())
	}
	exp := s.now().Add(s.LeaseDuration)
	if err := s.Store.Heartbeat(ctx, jobID, r.ID, req.LeaseID, exp, req.Progress); err != nil {
		return time.Time{}, err
	}
	return exp.UTC(), nil
}

// AppendLog stores chunk index of the current attempt's log.
func (s *Service) AppendLog(ctx context.Context, jobID int64, leaseID string, index int, chunk []byte) error {
	r, err := runnerFrom(ctx)
	if err != nil {
		return err
	}
	if index < 0 || index >= 1000000000 {
		return fault.New(fault.Invalid, "log chunk index must be a number from 0")
	}
	return s.Store.AppendLog(ctx, jobID, r.ID, leaseID, index, string(chunk))
}

// Complete verifies the signed bundle of a held lease against the runner's registered keys
// and publishes it. A retried completion (the answer to the first was lost) gets the same
// answer; a bundle in which no cell ran ok fails the job with the reason.
func (s *Service) Complete(ctx context.Context, jobID int64, leaseID string, bundle []byte) (protocol.CompleteResponse, error) {
	r, err := runnerFrom(ctx)
	if err != nil {
		return protocol.CompleteResponse{}, err
	}
	j, err := s.Store.Job(ctx, jobID)
	if err != nil {
		return protocol.CompleteResponse{}, err
	}
	if j.State == store.JobPublished && j.RunnerID == r.ID {
		if run, err := s.Store.Run(ctx, j.RunID); err == nil && run.Bundle == ingest.BundleDigest(bundle) {
			return completed(run.ID), nil
		}
	}
	if j.State != store.JobRunning || j.LeaseID != leaseID || j.RunnerID != r.ID || j.LeaseExpires.Before(s.now()) {
		return protocol.CompleteResponse{}, fault.New(fault.LeaseLost, "job %d is not leased to this runner under this lease (expired, re-queued or finished)", jobID)
	}
	b, err := s.Ingest.Read(bundle)
	if err != nil {
		return protocol.CompleteResponse{}, bundleRefused(err)
	}
	in := ingest.Incoming{Data: bundle, Keys: r.PublicKeys, Origin: attest.OriginPortalRunner, RunnerID: r.ID, Job: &j, LeaseID: leaseID}
	p, err := s.Ingest.Publish(ctx, b, in)
	var dup *store.DuplicateBundleError
	if errors.As(err, &dup) {
		return protocol.CompleteResponse{}, fault.New(fault.Invalid, "duplicate: this bundle is already published as run %d; a job is completed by the bundle signed for its own lease", dup.RunID)
	}
	var nc *ingest.NoCellError
	if errors.As(err, &nc) {
		// Nothing to publish: the portal fails the job itself, with the reason, so the job
		// page says why whatever the runner does next.
		if ferr := s.Store.FailJob(ctx, jobID, r.ID, leaseID, nc.Error(), ""); ferr != nil {
			s.Log.Warn("fail a job with no ok cell", "job", jobID, "err", ferr)
		}
	}
	if err != nil {
		return protocol.CompleteResponse{}, bundleRefused(err)
	}
	if s.Published != nil {
		s.Published(p, in)
	}
	return completed(p.RunID), nil
}

func completed(runID int64) protocol.CompleteResponse {
	return protocol.CompleteResponse{RunID: runID, URL: fmt.Sprintf("/runs/%d", runID)}
}

// bundleRefused gives a runner's refused completion its protocol kind: invalid input in an
// uploaded bundle is a refused bundle (the runner fails the job rather than retrying); other
// kinds (a lost lease, an internal error) stay as they are.
func bundleRefused(err error) error {
	if fault.Is(err, fault.Invalid) {
		return &fault.Error{Kind: fault.BundleRefused, Msg: fault.Message(err), Err: err}
	}
	return err
}

// Fail ends the runner's attempt at a job with its reason (at most 2000 bytes) and log.
func (s *Service) Fail(ctx context.Context, jobID int64, req protocol.FailRequest) error {
	r, err := runnerFrom(ctx)
	if err != nil {
		return err
	}
	reason := strings.TrimSpace(req.Reason)
	if reason == "" {
		reason = "the runner gave no reason"
	}
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	if err := s.Store.FailJob(ctx, jobID, r.ID, req.LeaseID, reason, req.Log); err != nil {
		return err
	}
	s.Log.Info("job failed", "job", jobID, "runner", r.ID, "reason", reason)
	return nil
}
