package qemu

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/runner"
)

// jobPortal is the portal's side of the runner protocol for one job, in memory: it records
// what the agent reports. It stands in for the portal only; the board, QEMU and the
// firmware are real.
type jobPortal struct {
	mu        sync.Mutex
	lease     *protocol.Lease
	logs      map[int]string
	completed int
	bundle    []byte
	failed    []protocol.FailRequest
	done      chan struct{}
}

func (p *jobPortal) Challenge(_ context.Context, purpose string) (protocol.ChallengeResponse, error) {
	return protocol.ChallengeResponse{Challenge: strings.Repeat("ab", identity.ChallengeBytes), Purpose: purpose}, nil
}

func (p *jobPortal) Enrol(context.Context, protocol.EnrolRequest) (protocol.EnrolResponse, error) {
	return protocol.EnrolResponse{RunnerID: 1, RunnerToken: "t"}, nil
}

func (p *jobPortal) Lease(ctx context.Context, wait time.Duration) (*protocol.Lease, error) {
	p.mu.Lock()
	l := p.lease
	p.lease = nil
	p.mu.Unlock()
	if l != nil {
		return l, nil
	}
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	return nil, nil
}

func (p *jobPortal) Heartbeat(context.Context, int64, protocol.HeartbeatRequest) error { return nil }

func (p *jobPortal) AppendLog(_ context.Context, _ int64, _ string, index int, chunk []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logs[index] = string(chunk)
	return nil
}

func (p *jobPortal) Complete(_ context.Context, _ int64, _ string, bundle []byte) (protocol.CompleteResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.completed++
	p.bundle = bundle
	close(p.done)
	return protocol.CompleteResponse{RunID: 1}, nil
}

func (p *jobPortal) Fail(_ context.Context, _ int64, req protocol.FailRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed = append(p.failed, req)
	close(p.done)
	return nil
}

// TestAgentKeepsWhatASilentBoardMeasured: through the runner agent, a firmware that stops
// answering mid-run fails its cell with the reason; the board is restarted for the cells
// left and the job completes with a signed bundle holding that cell marked failed.
func TestAgentKeepsWhatASilentBoardMeasured(t *testing.T) {
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, _ := newBoard(t, mc)
	q.SkipSelfTest, q.SilenceTimeout = true, 2*time.Second // the silence is made during a BENCH
	var current atomic.Pointer[session]
	record := q.started
	q.started = func(s *session) { record(s); current.Store(s) }
	var once sync.Once
	// Pause the emulated CPU over QMP as soon as the first sample of the run crosses the line.
	q.line = func(p io.ReadWriteCloser) io.ReadWriteCloser {
		pr, pw := io.Pipe()
		go func() {
			br := bufio.NewReader(p)
			for {
				l, err := br.ReadString('\n')
				if strings.Contains(l, ":SAMPLE:") {
					once.Do(func() { current.Load().qmp.execute("stop", nil, 5*time.Second) })
				}
				if _, werr := io.WriteString(pw, l); werr != nil || err != nil {
					pw.CloseWithError(err)
					return
				}
			}
		}()
		return &pausingLine{ReadCloser: pr, port: p}
	}
	m := testManifest(t, mc.Class, 3)
	p := &jobPortal{logs: map[int]string{}, done: make(chan struct{}), lease: &protocol.Lease{
		JobID: 1, LeaseID: "l1", Attempt: 1, Nonce: "nonce-of-this-lease-1", PortalURL: "http://portal.test", Experiment: m.Ref(), Manifest: string(m.YAML()), ManifestID: m.ID(),
		BoardClass: mc.Class, ExpiresAt: time.Now().Add(time.Minute), LeaseSeconds: 60}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &runner.Agent{Portal: p, EnrolToken: "e", Name: "t", Identity: testIdentity(t), Version: "test",
		Boards:    []runner.AgentBoard{{Info: protocol.BoardInfo{Name: mc.Class, Class: mc.Class, Driver: "qemu", Available: true}, Board: q}},
		LeaseWait: 50 * time.Millisecond, FlushEvery: 20 * time.Millisecond}
	go a.Run(ctx)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatal("the agent never reported the job")
	}
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.completed != 1 || len(p.failed) != 0 {
		t.Fatalf("completed %d, failed %v", p.completed, p.failed)
	}
	b, err := artifacts.ReadTarGz(bytes.NewReader(p.bundle), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attest.Verify(b, nil); err != nil {
		t.Fatalf("the completed bundle does not verify: %v", err)
	}
	_, res, err := artifacts.RederiveBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range res.Cells {
		if c.Status == artifacts.StatusFailed {
			failed++
			if !strings.Contains(c.Error, "idle for") {
				t.Errorf("cell %s %s failed with %q, want the idle board's timeout", c.Algorithm, c.Operation, c.Error)
			}
		}
	}
	if failed != 1 || !strings.Contains(string(b.Files[artifacts.FileLog]), "restarting it for the remaining cells") {
		t.Fatalf("%d failed cells, log:\n%s", failed, b.Files[artifacts.FileLog])
	}
}

// pausingLine reads through the watching pipe and writes to the port.
type pausingLine struct {
	io.ReadCloser
	port io.ReadWriteCloser
}

func (l *pausingLine) Write(b []byte) (int, error) { return l.port.Write(b) }
func (l *pausingLine) Close() error                { l.ReadCloser.Close(); return l.port.Close() }
