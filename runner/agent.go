package runner

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/logtext"
	"pqrepro/artifacts/protocol"
)

// Portal is the runner protocol as the agent uses it; the contract (routes, interface, error
// kinds) lives in artifacts. portalclient.Client implements it over /api/v1; the agent knows nothing
// else about the portal.
type Portal = protocol.Portal

// FirmwareLoader is a board that needs a firmware image before it runs (an emulated board
// boots the ELF, a serial board is flashed). The agent fetches the job's firmware from the
// portal, checks its digest, and calls LoadFirmware with the file before the run.
type FirmwareLoader interface {
	LoadFirmware(ctx context.Context, path, digest string) error
}

// FirmwareSource is a Portal that can serve firmware builds by digest (portalclient.Client can).
type FirmwareSource interface {
	FetchFirmware(ctx context.Context, url string, max int64) ([]byte, error)
}

// TokenFileName is the file beside a runner's identity (runner.key) that keeps its runner
// token between runs (Agent.TokenFile).
const TokenFileName = "runner.token"

// MaxFirmwareBytes bounds a firmware download.
const MaxFirmwareBytes = 64 << 20

// The protocol's error kinds as sentinels for errors.Is; every error portalclient.Client returns is an
// *protocol.RemoteError, and protocol.KindOf gives its kind.
var (
	// ErrConflict matches a conflict with the portal's state, a lost lease included.
	ErrConflict = protocol.ErrProtocolConflict
	// ErrLeaseLost means the portal no longer holds the job for this runner (the lease expired
	// and the job was re-queued, or it finished): the agent stops working on it.
	ErrLeaseLost = protocol.ErrLeaseLost
	// ErrUnauthorized means the portal did not accept the token (an unknown runner included).
	ErrUnauthorized = protocol.ErrProtocolUnauthorized
	// ErrRefused means the portal refused what was sent (for a bundle: it did not verify or
	// did not answer the job); retrying the same request cannot help.
	ErrRefused = protocol.ErrRefused
)

// AgentBoard is a board the agent offers, with how it is described to the portal.
type AgentBoard struct {
	Info  protocol.BoardInfo
	Board Board
	// WithFirmware, when set, opens the board with a firmware image file chosen for a job
	// (an uploaded build); the agent downloads it and checks its digest first.
	WithFirmware func(path string) (Board, error)
}

// Agent pulls jobs from a portal and runs them on its boards. Run blocks until ctx is
// cancelled; a job in progress then stops, and its lease expires so the portal re-queues it.
type Agent struct {
	Portal     Portal
	EnrolToken string
	// TokenFile, when set, keeps the runner token the portal hands out between runs (mode
	// 0600), so a restarted runner re-enrols its keys with it; empty keeps it in memory only.
	TokenFile string
	Name      string
	Identity  *identity.Identity
	Boards    []AgentBoard
	// Capabilities are reported at enrolment (which openssl the host board would run).
	Capabilities protocol.Capabilities
	Version      string
	Log          *slog.Logger
	// LeaseWait is how long one lease request waits (default 25s).
	LeaseWait time.Duration
	// FlushEvery is how often log chunks are sent (default 1s).
	FlushEvery time.Duration
	// OnJob, when set, is called as each job starts (tests use it to stop a runner mid-job).
	OnJob func(l *protocol.Lease)
	// Discover, when set, returns the runner's boards as they are now (the discovery Boards
	// came from). Between jobs, every DiscoverEvery, the agent takes the list it returns; when
	// the boards as the portal sees them changed (a firmware was built, an emulator installed,
	// a board plugged in or removed) it enrols again with its runner token, so the portal
	// offers the boards that became available without a restart. Lease requests then wait at
	// most DiscoverEvery.
	Discover func(ctx context.Context) []AgentBoard
	// DiscoverEvery is how often Discover is called (default 10s).
	DiscoverEvery time.Duration

	// token is the runner token of the last enrolment.
	token string
}

func (a *Agent) logger() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Log
}

// Run enrols, then leases and runs jobs until ctx is cancelled. It returns nil on
// cancellation and an error only when enrolment is refused.
func (a *Agent) Run(ctx context.Context) error {
	if a.Identity == nil {
		return errors.New("runner agent: no identity")
	}
	if a.LeaseWait <= 0 {
		a.LeaseWait = 25 * time.Second
	}
	if a.FlushEvery <= 0 {
		a.FlushEvery = time.Second
	}
	if a.DiscoverEvery <= 0 {
		a.DiscoverEvery = 10 * time.Second
	}
	wait := a.LeaseWait
	if a.Discover != nil {
		wait = min(wait, a.DiscoverEvery)
	}
	log := a.logger()
	if err := a.enrol(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	backoff := time.Second
	discovered := time.Now()
	for ctx.Err() == nil {
		if a.Discover != nil && time.Since(discovered) >= a.DiscoverEvery {
			discovered = time.Now()
			if err := a.rediscover(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		l, err := a.Portal.Lease(ctx, wait)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
		case protocol.KindOf(err) == protocol.KindUnknownRunner || protocol.KindOf(err) == protocol.KindUnauthorized:
			log.Warn("portal no longer accepts this runner's token; enrolling again")
			if err := a.enrol(ctx); err != nil {
				return err
			}
			continue
		default:
			wait := retryDelay(err, backoff)
			log.Warn("lease request failed", "err", err, "retry_in", wait)
			sleep(ctx, wait)
			backoff = min(backoff*2, 30*time.Second)
			continue
		}
		backoff = time.Second
		if l != nil {
			a.runJob(ctx, l)
		}
	}
	return nil
}

// rediscover takes the boards Discover returns now and, when the portal would see them
// differently, enrols again so that it does; an enrolment the portal refuses is returned.
func (a *Agent) rediscover(ctx context.Context) error {
	boards := a.Discover(ctx)
	if ctx.Err() != nil {
		return nil
	}
	before := boardInfos(a.Boards)
	a.Boards = boards
	after := boardInfos(boards)
	if reflect.DeepEqual(before, after) {
		return nil
	}
	a.logger().Info("boards changed; enrolling again so the portal offers them", "available", availableNames(after), "before", availableNames(before))
	return a.enrol(ctx)
}

func boardInfos(bs []AgentBoard) []protocol.BoardInfo {
	out := make([]protocol.BoardInfo, len(bs))
	for i, b := range bs {
		out[i] = b.Info
	}
	return out
}

func availableNames(infos []protocol.BoardInfo) string {
	var names []string
	for _, b := range infos {
		if b.Available {
			names = append(names, b.Name)
		}
	}
	return strings.Join(names, ",")
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// EnrolWithProof enrols with the portal, proving possession of id's keys: it asks for a
// challenge, signs it with both keys into req.Proof, and sends req with id's public keys.
func EnrolWithProof(ctx context.Context, p Portal, id *identity.Identity, req protocol.EnrolRequest) (protocol.EnrolResponse, error) {
	ch, err := p.Challenge(ctx, identity.PurposeRunnerEnrol)
	if err != nil {
		return protocol.EnrolResponse{}, err
	}
	raw, err := hex.DecodeString(ch.Challenge)
	if err != nil {
		return protocol.EnrolResponse{}, fmt.Errorf("%w: the portal's challenge is not hex: %v", ErrRefused, err)
	}
	if req.Proof, err = id.ProvePossession(identity.PurposeRunnerEnrol, raw); err != nil {
		return protocol.EnrolResponse{}, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	req.PublicKeys = id.Public()
	return p.Enrol(ctx, req)
}

// enrol registers the runner with a proof of possession and its current token (if it has
// one), retrying while the portal is unreachable; a refusal is returned at once.
func (a *Agent) enrol(ctx context.Context) error {
	req := protocol.EnrolRequest{Token: a.EnrolToken, Name: a.Name, Version: a.Version, Capabilities: a.Capabilities, CurrentToken: a.token}
	if req.CurrentToken == "" && a.TokenFile != "" {
		if b, err := os.ReadFile(a.TokenFile); err == nil {
			req.CurrentToken = strings.TrimSpace(string(b))
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("enrol: read runner token: %w", err)
		}
	}
	for _, b := range a.Boards {
		req.Boards = append(req.Boards, b.Info)
	}
	backoff := 200 * time.Millisecond
	for {
		resp, err := EnrolWithProof(ctx, a.Portal, a.Identity, req)
		if err == nil {
			a.token = resp.RunnerToken
			if a.TokenFile != "" {
				if err := writeTokenFile(a.TokenFile, resp.RunnerToken); err != nil {
					return fmt.Errorf("enrol: %w", err)
				}
			}
			a.logger().Info("enrolled with the portal", "runner", resp.RunnerID, "keys", a.Identity.Public().Fingerprint(), "boards", len(req.Boards))
			return nil
		}
		if protocol.KindOf(err).Permanent() {
			return fmt.Errorf("enrol: %w", err)
		}
		wait := retryDelay(err, backoff)
		a.logger().Warn("enrolment failed; retrying", "err", err, "retry_in", wait)
		sleep(ctx, wait)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// writeTokenFile replaces path with the token (mode 0600), through a temporary file.
func writeTokenFile(path, token string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("save runner token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save runner token: %w", err)
	}
	return nil
}

// jobProgress is the Observer that records progress for heartbeats.
type jobProgress struct {
	mu sync.Mutex
	p  protocol.Progress
}

func (o *jobProgress) CellStarted(i, total int, ref artifacts.CellRef) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p = protocol.Progress{CellsDone: i, CellsTotal: total, Current: ref.Algorithm + " " + ref.Operation}
}

func (o *jobProgress) Iteration(_, done, requested int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p.Iteration, o.p.Requested = done, requested
}

func (o *jobProgress) CellDone(i, total int, _ artifacts.Cell) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p.CellsDone, o.p.CellsTotal = i+1, total
}

func (o *jobProgress) get() protocol.Progress {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.p
}

// maxLogChunk bounds one log chunk: the portal takes at most 1 MiB a request.
const maxLogChunk = 512 << 10

// maxFailLog bounds the log sent with a failure (the portal takes at most 17 MiB).
const maxFailLog = 8 << 20

// logStream buffers the run's log and sends it in indexed chunks of whole lines.
type logStream struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	next int
}

func (l *logStream) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// take removes the next chunk from the buffer: whole lines, at most maxLogChunk bytes (a
// longer line is cut at a UTF-8 boundary); a line still being written stays for the next
// flush unless final. It returns nil when there is nothing to send.
func (l *logStream) take(final bool) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buf.Bytes()
	n := len(b)
	switch {
	case n > maxLogChunk:
		n = logtext.HeadCut(string(b[:maxLogChunk+1]), maxLogChunk)
	case !final:
		n = bytes.LastIndexByte(b, '\n') + 1
	}
	if n == 0 {
		return nil
	}
	return bytes.Clone(l.buf.Next(n))
}

// flush sends what is buffered as chunks (see take), each retried under its index on
// failure. The portal keeps the summary lines of every chunk whole (portal/sqlstore), which
// is why a chunk ends at a line end.
func (l *logStream) flush(ctx context.Context, p Portal, jobID int64, leaseID string, final bool) error {
	for {
		chunk := l.take(final)
		if chunk == nil {
			return nil
		}
		l.mu.Lock()
		idx := l.next
		l.next++
		l.mu.Unlock()
		var err error
		for try := 0; try < 3; try++ {
			if err = p.AppendLog(ctx, jobID, leaseID, idx, chunk); err == nil || protocol.KindOf(err).Permanent() || ctx.Err() != nil {
				break
			}
			sleep(ctx, retryDelay(err, time.Duration(try+1)*200*time.Millisecond))
		}
		if err != nil {
			return err
		}
	}
}

// runJob runs one leased job: heartbeats carry progress, the log streams in chunks, and the
// signed bundle (or the failure with its log) goes back to the portal.
func (a *Agent) runJob(ctx context.Context, l *protocol.Lease) {
	log := a.logger().With("job", l.JobID, "attempt", l.Attempt, "board", l.BoardClass)
	log.Info("job leased", "experiment", l.Experiment)
	if a.OnJob != nil {
		a.OnJob(l)
	}
	jobCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	fail := func(reason string, runLog []byte) {
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer fcancel()
		// The log goes along in case streaming it failed; it keeps its head, every summary
		// line and its tail within what the portal takes.
		failLog, _ := logtext.Bound(string(runLog), maxFailLog/8, maxFailLog/4, maxFailLog/2)
		if err := a.Portal.Fail(fctx, l.JobID, protocol.FailRequest{LeaseID: l.LeaseID, Reason: reason, Log: failLog}); err != nil {
			log.Warn("report failure", "err", err)
		}
		log.Info("job failed", "reason", reason)
	}
	board, entry := a.boardFor(l)
	if entry == nil {
		fail(fmt.Sprintf("this runner has no available board of class %s", l.BoardClass), nil)
		return
	}
	m, err := artifacts.ParseManifest([]byte(l.Manifest), l.Experiment)
	if err != nil {
		fail("the job's manifest does not parse: "+err.Error(), nil)
		return
	}
	if m.ID() != l.ManifestID {
		fail(fmt.Sprintf("the job's manifest is %s, the lease names %s", m.ID(), l.ManifestID), nil)
		return
	}
	obs := &jobProgress{}
	stream := &logStream{}
	if l.Firmware != "" {
		b, cleanup, err := a.loadFirmware(ctx, board, entry.WithFirmware, l, stream)
		if err != nil {
			fail("firmware: "+err.Error(), nil)
			return
		}
		defer cleanup()
		board = b
	}
	stop := a.keepLease(jobCtx, cancel, l, obs, stream, log)
	bundle, _, err := Execute(jobCtx, board, m, Options{Identity: a.Identity, Version: a.Version, Origin: attest.OriginPortalRunner,
		Job: l.Binding(), Observer: obs, Log: stream})
	stop()
	if errors.Is(context.Cause(jobCtx), ErrLeaseLost) {
		log.Warn("lease lost: the portal re-queued or finished the job; dropping it")
		return
	}
	if ctx.Err() != nil {
		log.Info("runner stopping: the job's lease will expire and the portal re-queues it")
		return
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer fcancel()
	if ferr := stream.flush(fctx, a.Portal, l.JobID, l.LeaseID, true); ferr != nil && protocol.KindOf(ferr) == protocol.KindLeaseLost {
		log.Warn("lease lost before completion; dropping the job")
		return
	}
	if err != nil {
		var re *RunError
		var runLog []byte
		if errors.As(err, &re) {
			runLog = re.Log
		}
		fail(err.Error(), runLog)
		return
	}
	a.publish(fctx, l, bundle, fail, log)
}

// boardFor is the board a lease is for: the first of its class that is available, or that
// lacks only its firmware when the job brings a firmware build; nil when there is none.
func (a *Agent) boardFor(l *protocol.Lease) (Board, *AgentBoard) {
	var board Board
	var entry *AgentBoard
	for i, b := range a.Boards {
		if b.Info.Class != l.BoardClass || entry != nil {
			continue
		}
		// A board that lacks only its firmware runs a job that brings a firmware build.
		if b.Info.Available || (b.Info.FirmwareOnly && l.Firmware != "" && b.WithFirmware != nil) {
			board, entry = b.Board, &a.Boards[i]
		}
	}
	return board, entry
}

// keepLease sends heartbeats (extending the lease, with live progress) and the run's log in
// chunks until the returned stop is called; a lost lease cancels jobCtx with ErrLeaseLost.
func (a *Agent) keepLease(jobCtx context.Context, cancel context.CancelCauseFunc, l *protocol.Lease, obs *jobProgress, stream *logStream, log *slog.Logger) (stop func()) {
	var wg sync.WaitGroup
	stopCh := make(chan struct{})
	// Heartbeats extend the lease well before it expires and carry live progress: at least
	// every two seconds.
	interval := min(max(time.Until(l.ExpiresAt)/3, 50*time.Millisecond), 2*time.Second)
	wg.Add(2)
	go func() { // heartbeats
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stopCh:
				return
			case <-jobCtx.Done():
				return
			case <-t.C:
			}
			err := a.Portal.Heartbeat(jobCtx, l.JobID, protocol.HeartbeatRequest{LeaseID: l.LeaseID, Progress: obs.get()})
			if protocol.KindOf(err) == protocol.KindLeaseLost {
				cancel(ErrLeaseLost)
				return
			} else if err != nil && jobCtx.Err() == nil {
				log.Warn("heartbeat failed", "err", err)
			}
		}
	}()
	go func() { // log chunks
		defer wg.Done()
		t := time.NewTicker(a.FlushEvery)
		defer t.Stop()
		for {
			select {
			case <-stopCh:
				return
			case <-jobCtx.Done():
				return
			case <-t.C:
			}
			if err := stream.flush(jobCtx, a.Portal, l.JobID, l.LeaseID, false); err != nil && protocol.KindOf(err) == protocol.KindLeaseLost {
				cancel(ErrLeaseLost)
				return
			}
		}
	}()
	return func() {
		close(stopCh)
		wg.Wait()
	}
}

// publish uploads the signed bundle, retrying a transient refusal a few times; a permanent
// refusal fails the job.
func (a *Agent) publish(fctx context.Context, l *protocol.Lease, bundle *artifacts.Bundle, fail func(string, []byte), log *slog.Logger) {
	var archive bytes.Buffer
	if err := artifacts.WriteTarGz(&archive, bundle); err != nil {
		fail("pack the bundle: "+err.Error(), nil)
		return
	}
	for try := 0; ; try++ {
		resp, err := a.Portal.Complete(fctx, l.JobID, l.LeaseID, archive.Bytes())
		if err == nil {
			log.Info("job published", "run", resp.RunID)
			return
		}
		switch kind := protocol.KindOf(err); {
		case kind == protocol.KindLeaseLost || kind == protocol.KindConflict:
			log.Warn("the portal refused the bundle: the lease is no longer held", "err", err)
			return
		case kind.Permanent():
			fail("the portal refused the bundle: "+err.Error(), nil)
			return
		case try >= 4 || fctx.Err() != nil:
			log.Warn("could not upload the bundle; the lease will expire", "err", err)
			return
		}
		sleep(fctx, retryDelay(err, time.Duration(try+1)*time.Second))
	}
}

// loadFirmware fetches the lease's firmware, checks its digest and gives it to the board:
// through withFirmware (a board opened with that image) or the board's LoadFirmware. Boards
// that take no firmware (the host) only note it in the log. cleanup removes the image file
// once the run is over.
func (a *Agent) loadFirmware(ctx context.Context, board Board, withFirmware func(string) (Board, error), l *protocol.Lease, log io.Writer) (Board, func(), error) {
	nop := func() {}
	fl, loads := board.(FirmwareLoader)
	if !loads && withFirmware == nil {
		fmt.Fprintf(log, "firmware %s requested; board %s takes no firmware\n", l.Firmware, l.BoardClass)
		return board, nop, nil
	}
	src, ok := a.Portal.(FirmwareSource)
	if !ok {
		return nil, nop, fmt.Errorf("this portal connection cannot download firmware %s", l.Firmware)
	}
	data, err := src.FetchFirmware(ctx, l.FirmwareURL, MaxFirmwareBytes)
	if err != nil {
		return nil, nop, err
	}
	if got := artifacts.Digest(data); got != l.Firmware {
		return nil, nop, fmt.Errorf("downloaded firmware is %s, the job names %s", got, l.Firmware)
	}
	f, err := os.CreateTemp("", "pqrepro-firmware-*.elf")
	if err != nil {
		return nil, nop, err
	}
	cleanup := func() { os.Remove(f.Name()) }
	if _, err := f.Write(data); err != nil {
		f.Close()
		cleanup()
		return nil, nop, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return nil, nop, err
	}
	fmt.Fprintf(log, "firmware %s (%d bytes) fetched from the portal\n", l.Firmware, len(data))
	if withFirmware != nil {
		b, err := withFirmware(f.Name())
		if err != nil {
			cleanup()
			return nil, nop, err
		}
		return b, cleanup, nil
	}
	if err := fl.LoadFirmware(ctx, f.Name(), l.Firmware); err != nil {
		cleanup()
		return nil, nop, err
	}
	return board, cleanup, nil
}

// retryDelay is how long to wait before retrying after err: the portal's Retry-After when it
// limited the rate, else fallback.
func retryDelay(err error, fallback time.Duration) time.Duration {
	var re *protocol.RemoteError
	if errors.As(err, &re) && re.Kind == protocol.KindRateLimited && re.RetryAfter > 0 {
		return min(re.RetryAfter, 5*time.Minute)
	}
	return fallback
}
