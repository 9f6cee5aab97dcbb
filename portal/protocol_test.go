package portal_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/portalclient"
)

// smallManifest is paper001/mlkem with few iterations, so a run takes milliseconds.
func smallManifest(t testing.TB, iterations int) *artifacts.Manifest {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	base, err := cat.Manifest("paper001/mlkem")
	if err != nil {
		t.Fatal(err)
	}
	m, err := artifacts.ParseManifest(base.YAML(), "test")
	if err != nil {
		t.Fatal(err)
	}
	m.Spec.Iterations, m.Spec.Warmup = iterations, 1
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

func queueJob(t testing.TB, p *portaltest.Portal, m *artifacts.Manifest) int64 {
	t.Helper()
	id, err := p.Server.Store().CreateJob(context.Background(), store.NewJob{Experiment: m.Ref(), Paper: m.Metadata.Paper,
		ManifestYAML: string(m.YAML()), ManifestID: m.ID(), BoardClass: "host"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// enrolled is a runner client enrolled with fresh keys and the host board.
type enrolled struct {
	client *portalclient.Client
	id     *identity.Identity
}

func enrol(t testing.TB, p *portaltest.Portal, name string) enrolled {
	t.Helper()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	c := &portalclient.Client{BaseURL: p.URL}
	_, err = runner.EnrolWithProof(context.Background(), c, id, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: name, Version: "test", PublicKeys: id.Public(),
		Boards: []protocol.BoardInfo{{Name: "host", Class: "host", Driver: "host", Available: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return enrolled{c, id}
}

// signedBundle runs m on the host board and returns the signed bundle as .tar.gz.
func signedBundle(t testing.TB, m *artifacts.Manifest, id *identity.Identity, origin string) []byte {
	t.Helper()
	return boundBundle(t, m, id, origin, nil)
}

// runnerBundle is what a runner signs for lease l: origin portal-runner, bound to l.
func runnerBundle(t testing.TB, m *artifacts.Manifest, id *identity.Identity, l *protocol.Lease) []byte {
	t.Helper()
	return boundBundle(t, m, id, attest.OriginPortalRunner, l.Binding())
}

// boundBundle runs m on the host board and returns the bundle signed with origin and the job
// binding job (nil for none) as .tar.gz.
func boundBundle(t testing.TB, m *artifacts.Manifest, id *identity.Identity, origin string, job *attest.JobBinding) []byte {
	t.Helper()
	b, _, err := runner.Execute(context.Background(), &host.Host{}, m, runner.Options{Identity: id, Version: "test", Origin: origin, Job: job})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTwoRunnersNeverLeaseTheSameJob(t *testing.T) {
	p := portaltest.Start(t, nil)
	m := smallManifest(t, 2)
	const jobs = 40
	for range jobs {
		queueJob(t, p, m)
	}
	runners := []enrolled{enrol(t, p, "a"), enrol(t, p, "b"), enrol(t, p, "c")}
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for i, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, err := r.client.Lease(context.Background(), 0)
				if err != nil {
					t.Error(err)
					return
				}
				if l == nil {
					return
				}
				mu.Lock()
				if prev, dup := seen[l.JobID]; dup {
					t.Errorf("job %d leased twice: runner %s and runner %d", l.JobID, prev, i)
				}
				seen[l.JobID] = string(rune('a' + i))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Fatalf("%d jobs leased, want %d", len(seen), jobs)
	}
}

func TestKilledRunnerJobIsRequeuedAndSecondAttemptPublishes(t *testing.T) {
	// Long enough that runner B's heartbeats keep its lease on a busy host (a one-second lease
	// expired under load and the job went to a third attempt), short enough to wait for A's.
	p := portaltest.Start(t, func(c *portal.Config) { c.LeaseDuration = 5 * time.Second })
	m := smallManifest(t, 3)
	jobID := queueJob(t, p, m)
	ctx := context.Background()

	// Runner A leases the job, sends a log chunk, then dies: no heartbeat, no completion.
	a := enrol(t, p, "dies")
	la, err := a.client.Lease(ctx, 0)
	if err != nil || la == nil || la.JobID != jobID || la.Attempt != 1 {
		t.Fatalf("first lease: %+v, %v", la, err)
	}
	if err := a.client.AppendLog(ctx, jobID, la.LeaseID, 0, []byte("runner A started\n")); err != nil {
		t.Fatal(err)
	}
	staleBundle := runnerBundle(t, m, a.id, la)

	// Runner B is a real agent with the host board; it gets the job once A's lease expires.
	b, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	agentCtx, stop := context.WithCancel(ctx)
	defer stop()
	agent := &runner.Agent{Portal: &portalclient.Client{BaseURL: p.URL}, EnrolToken: p.EnrolToken(t), Name: "survivor", Identity: b,
		Boards: host.AgentBoards(""), Version: "test", LeaseWait: 2 * time.Second, FlushEvery: 50 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- agent.Run(agentCtx) }()

	j := waitJob(t, p, jobID, func(j store.Job) bool { return j.Terminal() }, 2*time.Minute)
	if j.State != store.JobPublished || j.Attempt != 2 {
		t.Fatalf("job ended %s after %d attempts (error %q), want published on attempt 2", j.State, j.Attempt, j.Error)
	}
	run, err := p.Server.Store().Run(ctx, j.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Signer != b.Public().Fingerprint() || run.Origin != attest.OriginPortalRunner {
		t.Errorf("run signed by %s (%s), want the second runner %s", run.Signer, run.Origin, b.Public().Fingerprint())
	}
	// The dead runner's lease is gone: its (valid, signed) bundle is refused.
	if _, err := a.client.Complete(ctx, jobID, la.LeaseID, staleBundle); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("bundle for an expired lease: err %v, want a lease conflict", err)
	}
	if err := a.client.Heartbeat(ctx, jobID, protocol.HeartbeatRequest{LeaseID: la.LeaseID}); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("heartbeat on an expired lease: err %v, want a lease conflict", err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitJob(t testing.TB, p *portaltest.Portal, id int64, cond func(store.Job) bool, within time.Duration) store.Job {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		j, err := p.Server.Store().Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(j) || time.Now().After(deadline) {
			return j
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rewrite returns the archive with fn applied to the named file's contents.
func rewrite(t testing.TB, archive []byte, name string, fn func([]byte) []byte) []byte {
	t.Helper()
	b, err := artifacts.ReadTarGz(bytes.NewReader(archive), 0)
	if err != nil {
		t.Fatal(err)
	}
	b.Files[name] = fn(bytes.Clone(b.Files[name]))
	// Write the tar by hand: WriteTarGz would refuse nothing here, but keep the bytes exact.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for n, data := range b.Files {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func countBlobs(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dir, "blobs", "sha256"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func TestChangedBundleIsRefusedAndNothingStored(t *testing.T) {
	p := portaltest.Start(t, nil)
	m := smallManifest(t, 3)
	jobID := queueJob(t, p, m)
	ctx := context.Background()
	r := enrol(t, p, "lab")
	l, err := r.client.Lease(ctx, 0)
	if err != nil || l == nil {
		t.Fatalf("lease: %v %v", l, err)
	}
	good := runnerBundle(t, m, r.id, l)
	flip := func(i int) func([]byte) []byte {
		return func(b []byte) []byte { b[i%len(b)] ^= 0x01; return b }
	}
	other, _ := identity.GenerateIdentity()
	cases := []struct {
		name   string
		bundle []byte
		want   string
	}{
		{"one byte of result.json", rewrite(t, good, artifacts.FileResult, flip(200)), "digest mismatch"},
		{"one byte of samples.csv", rewrite(t, good, artifacts.FileSamples, flip(50)), "digest mismatch"},
		{"one byte of the signature envelope", rewrite(t, good, artifacts.FileAttestation, flip(30)), ""},
		{"one byte of the archive", flip(len(good) / 2)(bytes.Clone(good)), ""},
		{"signed by another key", runnerBundle(t, m, other, l), "runner: the bundle is not signed by the keys of runner"},
		{"not an archive", []byte("hello"), "malformed archive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.client.Complete(ctx, l.JobID, l.LeaseID, tc.bundle)
			if !errors.Is(err, runner.ErrRefused) {
				t.Fatalf("err %v, want refused", err)
			}
			if tc.want != "" && !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Errorf("reason %q does not say %q", err, tc.want)
			}
			runs, _ := p.Server.Store().Runs(ctx, store.RunFilter{})
			if len(runs) != 0 || countBlobs(t, p.Config.DataDir) != 0 {
				t.Fatalf("after a refused bundle: %d runs, %d blobs stored", len(runs), countBlobs(t, p.Config.DataDir))
			}
		})
	}
	// The lease still holds: the untouched bundle publishes.
	resp, err := r.client.Complete(ctx, l.JobID, l.LeaseID, good)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := p.Server.Store().Job(ctx, jobID)
	if j.State != store.JobPublished || j.RunID != resp.RunID || countBlobs(t, p.Config.DataDir) != 1 {
		t.Fatalf("job %s run %d (response %d), %d blobs", j.State, j.RunID, resp.RunID, countBlobs(t, p.Config.DataDir))
	}
	// A retried completion (its answer lost) gets the same run, and nothing more is stored.
	again, err := r.client.Complete(ctx, l.JobID, l.LeaseID, good)
	if err != nil || again.RunID != resp.RunID {
		t.Errorf("completing twice with the same bundle: run %d, %v; want run %d", again.RunID, err, resp.RunID)
	}
	if runs, _ := p.Server.Store().Runs(ctx, store.RunFilter{}); len(runs) != 1 || countBlobs(t, p.Config.DataDir) != 1 {
		t.Errorf("after a retried completion: %d runs, %d blobs, want 1 and 1", len(runs), countBlobs(t, p.Config.DataDir))
	}
	// Another bundle for the finished job is refused.
	if _, err := r.client.Complete(ctx, l.JobID, l.LeaseID, runnerBundle(t, m, r.id, l)); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("completing a finished job with another bundle: %v", err)
	}
}

func TestLogChunksAreIdempotentAndLeaseBound(t *testing.T) {
	p := portaltest.Start(t, nil)
	m := smallManifest(t, 2)
	jobID := queueJob(t, p, m)
	ctx := context.Background()
	r := enrol(t, p, "lab")
	stranger := enrol(t, p, "stranger")
	l, err := r.client.Lease(ctx, 0)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		idx  int
		text string
	}{{0, "one\n"}, {1, "two\n"}, {1, "two\n"}, {0, "one\n"}, {2, "three\n"}} {
		if err := r.client.AppendLog(ctx, jobID, l.LeaseID, c.idx, []byte(c.text)); err != nil {
			t.Fatal(err)
		}
	}
	if err := stranger.client.AppendLog(ctx, jobID, l.LeaseID, 3, []byte("intruder\n")); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("foreign runner appended a log chunk: %v", err)
	}
	if err := stranger.client.Heartbeat(ctx, jobID, protocol.HeartbeatRequest{LeaseID: l.LeaseID}); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("foreign runner extended the lease: %v", err)
	}
	if err := r.client.Heartbeat(ctx, jobID, protocol.HeartbeatRequest{LeaseID: l.LeaseID, Progress: protocol.Progress{CellsDone: 4, CellsTotal: 9}}); err != nil {
		t.Fatal(err)
	}
	log, err := p.Server.Store().JobLog(ctx, jobID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if log != "one\ntwo\nthree\n" {
		t.Errorf("log %q", log)
	}
	if err := r.client.Fail(ctx, jobID, protocol.FailRequest{LeaseID: l.LeaseID, Reason: "board went silent", Log: "one\ntwo\nthree\n"}); err != nil {
		t.Fatal(err)
	}
	j, _ := p.Server.Store().Job(ctx, jobID)
	if j.State != store.JobFailed || j.Error != "board went silent" {
		t.Errorf("job %s %q", j.State, j.Error)
	}
}

func TestLongPollWakesOnNewJob(t *testing.T) {
	p := portaltest.Start(t, nil)
	r := enrol(t, p, "waiting")
	m := smallManifest(t, 2)
	got := make(chan *protocol.Lease, 1)
	start := time.Now()
	go func() {
		l, err := r.client.Lease(context.Background(), 4*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	time.Sleep(200 * time.Millisecond)
	id := queueJob(t, p, m)
	p.Server.Notify()
	l := <-got
	if l == nil || l.JobID != id {
		t.Fatalf("lease %+v, want job %d", l, id)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("long poll answered after %s", d)
	}
	// With no job, the poll ends empty after the wait.
	if l, err := r.client.Lease(context.Background(), 300*time.Millisecond); err != nil || l != nil {
		t.Errorf("empty poll: %+v %v", l, err)
	}
}

var _ = io.EOF

// TestFirmwareOnlyBoardTakesOnlyJobsWithFirmware: a board whose runner has no firmware of its
// own is offered only the jobs that bring an uploaded build.
func TestFirmwareOnlyBoardTakesOnlyJobsWithFirmware(t *testing.T) {
	p := portaltest.Start(t, nil)
	m := smallManifest(t, 2)
	ctx := context.Background()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	c := &portalclient.Client{BaseURL: p.URL}
	if _, err := runner.EnrolWithProof(ctx, c, id, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: "lab", Version: "test", PublicKeys: id.Public(),
		Boards: []protocol.BoardInfo{{Name: "m4", Class: "qemu-mps2-an386", Driver: "qemu", Reason: "firmware not built", FirmwareOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	newJob := func(firmware string) int64 {
		id, err := p.Server.Store().CreateJob(ctx, store.NewJob{Experiment: m.Ref(), Paper: m.Metadata.Paper, ManifestYAML: string(m.YAML()),
			ManifestID: m.ID(), BoardClass: "qemu-mps2-an386", Firmware: firmware})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	newJob("")
	if l, err := c.Lease(ctx, 0); err != nil || l != nil {
		t.Fatalf("a job without firmware was leased to a board without firmware: %+v %v", l, err)
	}
	withFw := newJob("sha256:" + string(bytes.Repeat([]byte("ab"), 32)))
	l, err := c.Lease(ctx, 0)
	if err != nil || l == nil || l.JobID != withFw {
		t.Fatalf("the job bringing firmware was not leased: %+v %v", l, err)
	}
}

func TestEnrolRefusesBadBoardClass(t *testing.T) {
	p := portaltest.Start(t, nil)
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	c := &portalclient.Client{BaseURL: p.URL}
	_, err = runner.EnrolWithProof(context.Background(), c, id, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: "x", Version: "test", PublicKeys: id.Public(),
		Boards: []protocol.BoardInfo{{Name: "b", Class: "javascript:alert(1)", Driver: "serial", Available: true}}})
	if !errors.Is(err, runner.ErrRefused) {
		t.Fatalf("a board class that is not a slug was accepted: %v", err)
	}
}
