package runner_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/runner"
	"pqrepro/runner/host"
)

// memPortal is an in-memory runner protocol endpoint that hands out the given leases once
// and records what the agent sends. loseLeaseAfter > 0 answers heartbeats with a lost lease
// from that heartbeat on.
type memPortal struct {
	mu             sync.Mutex
	leases         []*protocol.Lease
	heartbeats     []protocol.Progress
	logs           map[int]string
	completed      [][]byte
	failed         []protocol.FailRequest
	loseLeaseAfter int
	done           chan struct{}
}

func (p *memPortal) Challenge(_ context.Context, purpose string) (protocol.ChallengeResponse, error) {
	return protocol.ChallengeResponse{Challenge: strings.Repeat("ab", identity.ChallengeBytes), Purpose: purpose}, nil
}

func (p *memPortal) Enrol(context.Context, protocol.EnrolRequest) (protocol.EnrolResponse, error) {
	return protocol.EnrolResponse{RunnerID: 1, RunnerToken: "t"}, nil
}

func (p *memPortal) Lease(ctx context.Context, wait time.Duration) (*protocol.Lease, error) {
	p.mu.Lock()
	if len(p.leases) > 0 {
		l := p.leases[0]
		p.leases = p.leases[1:]
		p.mu.Unlock()
		return l, nil
	}
	p.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return nil, nil
}

func (p *memPortal) Heartbeat(_ context.Context, _ int64, req protocol.HeartbeatRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heartbeats = append(p.heartbeats, req.Progress)
	if p.loseLeaseAfter > 0 && len(p.heartbeats) >= p.loseLeaseAfter {
		return runner.ErrLeaseLost
	}
	return nil
}

func (p *memPortal) AppendLog(_ context.Context, _ int64, _ string, index int, chunk []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logs == nil {
		p.logs = map[int]string{}
	}
	p.logs[index] = string(chunk)
	return nil
}

func (p *memPortal) Complete(_ context.Context, _ int64, _ string, bundle []byte) (protocol.CompleteResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.completed = append(p.completed, bundle)
	close(p.done)
	return protocol.CompleteResponse{RunID: 7}, nil
}

func (p *memPortal) Fail(_ context.Context, _ int64, req protocol.FailRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = append(p.failed, req)
	close(p.done)
	return nil
}

func (p *memPortal) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for i := 0; i < len(p.logs); i++ {
		b.WriteString(p.logs[i])
	}
	return b.String()
}

func testManifest(t *testing.T, iterations int) *artifacts.Manifest {
	t.Helper()
	m, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: paper001, name: mlkem}
spec:
  algorithms: [ML-KEM-512, ML-KEM-768]
  operations: [keygen, encaps, decaps]
  warmup: 1
  iterations: `+strconv.Itoa(iterations)+`
  seed: "agent-test"
  boards: [host]
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func runAgent(t *testing.T, p *memPortal, boards []runner.AgentBoard) {
	t.Helper()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &runner.Agent{Portal: p, EnrolToken: "e", Name: "t", Identity: id, Boards: boards, Version: "test", LeaseWait: 50 * time.Millisecond, FlushEvery: 10 * time.Millisecond}
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent never finished the job")
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func lease(m *artifacts.Manifest, class string, ttl time.Duration) *protocol.Lease {
	return &protocol.Lease{JobID: 1, LeaseID: "L", Attempt: 1, Experiment: m.Ref(), Manifest: string(m.YAML()), ManifestID: m.ID(),
		BoardClass: class, ExpiresAt: time.Now().Add(ttl), Nonce: "nonce_0123456789abcdef", PortalURL: "http://portal.test"}
}

func TestAgentRunsLeasedJobAndStreamsLog(t *testing.T) {
	m := testManifest(t, 3)
	p := &memPortal{leases: []*protocol.Lease{lease(m, "host", 90*time.Millisecond)}, done: make(chan struct{})}
	runAgent(t, p, host.AgentBoards(""))
	if len(p.completed) != 1 || len(p.failed) != 0 {
		t.Fatalf("completed %d, failed %v", len(p.completed), p.failed)
	}
	b, err := artifacts.ReadTarGz(strings.NewReader(string(p.completed[0])), 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := attest.Verify(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Statement.Predicate.Assurance.Origin != attest.OriginPortalRunner {
		t.Errorf("origin %s", v.Statement.Predicate.Assurance.Origin)
	}
	want := attest.JobBinding{Portal: "http://portal.test", JobID: 1, LeaseID: "L", Attempt: 1, Nonce: "nonce_0123456789abcdef"}
	if got := v.Statement.Predicate.Job; v.Legacy || got == nil || *got != want {
		t.Errorf("signed job binding %+v (legacy %v), want the lease's %+v", got, v.Legacy, want)
	}
	if log := p.log(); !strings.Contains(log, "finished: 6 cells") {
		t.Errorf("streamed log %q lacks the end of the run", log)
	}
}

type brokenBoard struct{}

func (brokenBoard) Identity(context.Context) (artifacts.BoardIdentity, error) {
	return artifacts.BoardIdentity{Name: "b", Class: "broken", Driver: "serial", Assurance: artifacts.AssuranceHardware}, nil
}

func (brokenBoard) Run(_ context.Context, _ *artifacts.Manifest, _ runner.Observer, log io.Writer) ([]runner.CellResult, error) {
	io.WriteString(log, "board said: brown-out\n")
	return nil, errors.New("board went silent")
}

func TestAgentReportsABrokenRunWithItsLog(t *testing.T) {
	m := testManifest(t, 2)
	p := &memPortal{leases: []*protocol.Lease{lease(m, "broken", time.Second)}, done: make(chan struct{})}
	runAgent(t, p, []runner.AgentBoard{{Info: protocol.BoardInfo{Name: "b", Class: "broken", Driver: "serial", Available: true}, Board: brokenBoard{}}})
	if len(p.failed) != 1 || !strings.Contains(p.failed[0].Reason, "board went silent") || !strings.Contains(p.failed[0].Log, "brown-out") {
		t.Fatalf("failure report %+v", p.failed)
	}
}

func TestAgentRefusesJobsForBoardsItLacks(t *testing.T) {
	m := testManifest(t, 2)
	p := &memPortal{leases: []*protocol.Lease{lease(m, "esp32c6", time.Second)}, done: make(chan struct{})}
	runAgent(t, p, host.AgentBoards(""))
	if len(p.failed) != 1 || !strings.Contains(p.failed[0].Reason, "no available board of class esp32c6") {
		t.Fatalf("failure report %+v", p.failed)
	}
}

// fwPortal is a memPortal that serves one firmware image.
type fwPortal struct {
	*memPortal
	image []byte
}

func (p fwPortal) FetchFirmware(context.Context, string, int64) ([]byte, error) { return p.image, nil }

// fwBoard records the firmware it was given and then runs like the host.
type fwBoard struct {
	*host.Host
	mu     sync.Mutex
	loaded string
}

func (b *fwBoard) LoadFirmware(_ context.Context, path, digest string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loaded = digest + " " + string(data)
	return nil
}

func TestAgentLoadsFirmwareCheckedByDigest(t *testing.T) {
	image := []byte("firmware image")
	sum := sha256.Sum256(image)
	good := "sha256:" + hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name, digest string
		wantFail     bool
	}{{"matching digest", good, false}, {"other digest", "sha256:" + strings.Repeat("0", 64), true}} {
		t.Run(tc.name, func(t *testing.T) {
			m := testManifest(t, 2)
			l := lease(m, "host", time.Second)
			l.Firmware, l.FirmwareURL = tc.digest, "/firmware/"+tc.digest
			mp := &memPortal{leases: []*protocol.Lease{l}, done: make(chan struct{})}
			b := &fwBoard{Host: &host.Host{}}
			id, _ := identity.GenerateIdentity()
			ctx, cancel := context.WithCancel(context.Background())
			a := &runner.Agent{Portal: fwPortal{mp, image}, Identity: id, Name: "t", Version: "test", LeaseWait: 50 * time.Millisecond,
				Boards: []runner.AgentBoard{{Info: protocol.BoardInfo{Name: "fw", Class: "host", Driver: "qemu", Available: true}, Board: b}}}
			go a.Run(ctx)
			<-mp.done
			cancel()
			if tc.wantFail {
				if len(mp.failed) != 1 || !strings.Contains(mp.failed[0].Reason, "downloaded firmware is") {
					t.Fatalf("failures %+v", mp.failed)
				}
				return
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(mp.completed) != 1 || b.loaded != good+" firmware image" {
				t.Fatalf("completed %d, loaded %q", len(mp.completed), b.loaded)
			}
		})
	}
}

// enrolPortal is a memPortal that records enrolments and hands out a new runner token each time.
type enrolPortal struct {
	memPortal
	enrols []protocol.EnrolRequest
}

func (p *enrolPortal) Enrol(_ context.Context, req protocol.EnrolRequest) (protocol.EnrolResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enrols = append(p.enrols, req)
	return protocol.EnrolResponse{RunnerID: 1, RunnerToken: fmt.Sprint("token-", len(p.enrols))}, nil
}

func (p *enrolPortal) enrolments() []protocol.EnrolRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.enrols)
}

// TestAgentRediscoversBoards: between leases the agent looks at its boards again; an
// unchanged list enrols nothing, a board that became available (its firmware built) is
// enrolled again with the runner token of the last enrolment and runs the next job.
func TestAgentRediscoversBoards(t *testing.T) {
	m := testManifest(t, 2)
	p := &enrolPortal{memPortal: memPortal{done: make(chan struct{})}}
	// A board that appears (as an emulated board does once its firmware is built); it runs
	// the job in-process, since the board's own driver is not under test.
	appears := protocol.BoardInfo{Name: "lab", Class: "lab-board", Driver: "host", Reason: "firmware not built"}
	var mu sync.Mutex
	built, calls := false, 0
	discover := func(context.Context) []runner.AgentBoard {
		mu.Lock()
		defer mu.Unlock()
		calls++
		b := runner.AgentBoard{Info: appears}
		if built {
			b.Info.Available, b.Info.Reason = true, ""
			b.Board = &host.Host{Class: "lab-board"}
		}
		return append(host.AgentBoards(""), b)
	}
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &runner.Agent{Portal: p, EnrolToken: "single-use", Name: "t", Identity: id, Boards: discover(ctx), Version: "test",
		LeaseWait: time.Hour, FlushEvery: 10 * time.Millisecond, Discover: discover, DiscoverEvery: 20 * time.Millisecond}
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("a few discoveries", func() bool { mu.Lock(); defer mu.Unlock(); return calls >= 4 })
	if n := len(p.enrolments()); n != 1 {
		t.Fatalf("%d enrolments while the boards stayed the same", n)
	}
	mu.Lock()
	built = true
	mu.Unlock()
	waitFor("a second enrolment", func() bool { return len(p.enrolments()) == 2 })
	second := p.enrolments()[1]
	if second.CurrentToken != "token-1" || len(second.Boards) != 2 || !second.Boards[1].Available {
		t.Fatalf("second enrolment: token %q, boards %+v", second.CurrentToken, second.Boards)
	}
	p.mu.Lock()
	p.leases = append(p.leases, lease(m, "lab-board", time.Minute))
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the job on the board that appeared never finished")
	}
	if len(p.completed) != 1 || len(p.failed) != 0 {
		t.Fatalf("completed %d, failed %v", len(p.completed), p.failed)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := len(p.enrolments()); n != 2 {
		t.Errorf("%d enrolments, want 2", n)
	}
}
