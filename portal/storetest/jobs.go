package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

var hour = time.Hour

// testCreateJob: a queued job reads back as created, with its requester's name; Jobs lists
// newest first.
func testCreateJob(e *env) {
	u := e.user("hank", store.RoleSubmitter)
	before := time.Now().Add(-time.Second)
	id, err := e.st.CreateJob(e.ctx, store.NewJob{Experiment: "paper002/mldsa", Paper: "paper002", ManifestYAML: "kind: sig-bench\n", ManifestID: "sha256:m2",
		BoardClass: "host", Firmware: "sha256:fw", RequestedBy: u.ID})
	e.must(err, "create job")
	j, err := e.st.Job(e.ctx, id)
	e.must(err, "job")
	if j.ID != id || j.Experiment != "paper002/mldsa" || j.Paper != "paper002" || j.ManifestYAML != "kind: sig-bench\n" || j.ManifestID != "sha256:m2" ||
		j.BoardClass != "host" || j.Firmware != "sha256:fw" || j.Method != artifacts.MethodInProcess || j.State != store.JobQueued || j.RequestedBy != "hank" ||
		j.CreatedAt.Before(before) || !j.StartedAt.IsZero() || j.RunnerID != 0 || j.LeaseID != "" || j.Attempt != 0 || j.RunID != 0 || j.Terminal() {
		e.Fatalf("job %+v", j)
	}
	id2 := e.job("host", artifacts.MethodOpenSSLCLI)
	id3, err := e.st.CreateJob(e.ctx, store.NewJob{Experiment: "paper001/other", Paper: "paper001", ManifestYAML: "x", ManifestID: "m", BoardClass: "host"})
	e.must(err, "job 3")
	if j, _ := e.st.Job(e.ctx, id2); j.Method != artifacts.MethodOpenSSLCLI || j.RequestedBy != "" {
		e.Fatalf("job 2 %+v", j)
	}
	_, err = e.st.Job(e.ctx, 987654)
	e.wantKind(err, fault.NotFound, "unknown job")
	all, err := e.st.ListJobs(e.ctx, store.ListFilter{Limit: 10})
	e.must(err, "jobs")
	mine, err := e.st.ListJobs(e.ctx, store.ListFilter{Experiment: "paper001/mlkem", Limit: 10})
	e.must(err, "jobs of one experiment")
	two, err := e.st.ListJobs(e.ctx, store.ListFilter{Limit: 2})
	e.must(err, "two jobs")
	if ids(all.Items) != fmt.Sprint([]int64{id3, id2, id}) || ids(mine.Items) != fmt.Sprint([]int64{id2}) || ids(two.Items) != fmt.Sprint([]int64{id3, id2}) {
		e.Fatalf("jobs %s, of paper001/mlkem %s, limit 2 %s", ids(all.Items), ids(mine.Items), ids(two.Items))
	}
}

func ids(js []store.Job) string {
	var out []int64
	for _, j := range js {
		out = append(out, j.ID)
	}
	return fmt.Sprint(out)
}

// testLeaseByClass: a runner is leased the oldest queued job of its classes; an openssl-cli
// job only to an openssl class; a firmware-only board only a job that brings firmware.
func testLeaseByClass(e *env) {
	r, _ := e.runner("r1")
	_, err := e.st.LeaseJob(e.ctx, r, nil, nil, nil, "l0", "n0", time.Now().Add(hour))
	e.wantKind(err, fault.NotFound, "a runner with no boards")
	qemu1 := e.job("qemu-mps2-an386", "")
	host1 := e.job("host", "")
	qemu2 := e.job("qemu-mps2-an386", "")
	ossl := e.job("rpi4-b", artifacts.MethodOpenSSLCLI)
	fwJob, err := e.st.CreateJob(e.ctx, store.NewJob{Experiment: "paper001/mlkem", Paper: "paper001", ManifestYAML: "x", ManifestID: "m", BoardClass: "pico-w", Firmware: "sha256:fw"})
	e.must(err, "firmware job")
	plain := e.job("pico-w", "")

	_, err = e.st.LeaseJob(e.ctx, r, []string{"esp32c6"}, nil, nil, "l1", "n1", time.Now().Add(hour))
	e.wantKind(err, fault.NotFound, "a class with no jobs")
	until := time.Now().Add(hour).Truncate(time.Millisecond)
	j, err := e.st.LeaseJob(e.ctx, r, []string{"qemu-mps2-an386"}, nil, nil, "l2", "n2", until)
	e.must(err, "lease qemu")
	if j.ID != qemu1 || j.State != store.JobRunning || j.RunnerID != r || j.RunnerName != "r1" || j.LeaseID != "l2" || j.LeaseNonce != "n2" ||
		!j.LeaseExpires.Equal(until) || j.Attempt != 1 || j.StartedAt.IsZero() {
		e.Fatalf("leased %+v, want job %d under l2", j, qemu1)
	}
	if j := e.lease(r, "qemu-mps2-an386", "l3", until); j.ID != qemu2 {
		e.Fatalf("second qemu lease got job %d, want %d", j.ID, qemu2)
	}
	_, err = e.st.LeaseJob(e.ctx, r, []string{"rpi4-b"}, nil, nil, "l4", "n4", until)
	e.wantKind(err, fault.NotFound, "an openssl-cli job for a board without openssl")
	j, err = e.st.LeaseJob(e.ctx, r, []string{"rpi4-b"}, nil, []string{"rpi4-b"}, "l5", "n5", until)
	e.must(err, "lease openssl-cli")
	if j.ID != ossl {
		e.Fatalf("openssl lease got %d, want %d", j.ID, ossl)
	}
	j, err = e.st.LeaseJob(e.ctx, r, nil, []string{"pico-w"}, nil, "l6", "n6", until)
	e.must(err, "lease for a firmware-only board")
	if j.ID != fwJob {
		e.Fatalf("firmware-only lease got %d, want the job with firmware %d", j.ID, fwJob)
	}
	_, err = e.st.LeaseJob(e.ctx, r, nil, []string{"pico-w"}, nil, "l7", "n7", until)
	e.wantKind(err, fault.NotFound, "a job without firmware for a firmware-only board")
	if j := e.lease(r, "pico-w", "l8", until); j.ID != plain {
		e.Fatalf("pico lease got %d, want %d", j.ID, plain)
	}
	if j := e.lease(r, "host", "l9", until); j.ID != host1 {
		e.Fatalf("host lease got %d, want %d", j.ID, host1)
	}
}

// testLeaseHeld: heartbeats need the runner's current, unexpired lease, and record progress.
func testLeaseHeld(e *env) {
	r, _ := e.runner("r1")
	other, _ := e.runner("r2")
	id := e.job("host", "")
	e.lease(r, "host", "lease-a", time.Now().Add(hour))
	p := protocol.Progress{CellsDone: 2, CellsTotal: 5, Current: "ML-KEM-768 encaps", Iteration: 10, Requested: 100}
	e.wantKind(e.st.Heartbeat(e.ctx, id, r, "lease-b", time.Now().Add(hour), p), fault.LeaseLost, "heartbeat under another lease")
	e.wantKind(e.st.Heartbeat(e.ctx, id, other, "lease-a", time.Now().Add(hour), p), fault.LeaseLost, "heartbeat by another runner")
	e.wantKind(e.st.Heartbeat(e.ctx, 987654, r, "lease-a", time.Now().Add(hour), p), fault.NotFound, "heartbeat of an unknown job")
	until := time.Now().Add(2 * hour).Truncate(time.Millisecond)
	e.must(e.st.Heartbeat(e.ctx, id, r, "lease-a", until, p), "heartbeat")
	j, _ := e.st.Job(e.ctx, id)
	if j.Progress != p || !j.LeaseExpires.Equal(until) || j.ProgressAt.IsZero() {
		e.Fatalf("after the heartbeat %+v", j)
	}
	// A heartbeat may shorten the lease; once it has passed the lease is lost.
	e.must(e.st.Heartbeat(e.ctx, id, r, "lease-a", time.Now().Add(-time.Second), p), "heartbeat into the past")
	e.wantKind(e.st.Heartbeat(e.ctx, id, r, "lease-a", time.Now().Add(hour), p), fault.LeaseLost, "heartbeat after the lease expired")
}

// testFailJob: a failure ends the job for good (it is not leased again).
func testFailJob(e *env) {
	r, _ := e.runner("r1")
	id := e.job("host", "")
	e.lease(r, "host", "l1", time.Now().Add(hour))
	e.wantKind(e.st.FailJob(e.ctx, id, r, "other", "boom", ""), fault.LeaseLost, "fail under another lease")
	e.must(e.st.FailJob(e.ctx, id, r, "l1", "the board crashed", ""), "fail")
	j, _ := e.st.Job(e.ctx, id)
	if j.State != store.JobFailed || j.Error != "the board crashed" || j.LeaseID != "" || j.FinishedAt.IsZero() || !j.Terminal() {
		e.Fatalf("failed job %+v", j)
	}
	e.wantKind(e.st.FailJob(e.ctx, id, r, "l1", "again", ""), fault.LeaseLost, "failing a failed job")
	_, err := e.st.LeaseJob(e.ctx, r, []string{"host"}, nil, nil, "l2", "n2", time.Now().Add(hour))
	e.wantKind(err, fault.NotFound, "leasing after the only job failed")
}

// testRequeueExpired: an expired lease returns the job to the queue, MaxAttempts times; the
// last expiry fails it.
func testRequeueExpired(e *env) {
	r, _ := e.runner("r1")
	id := e.job("host", "")
	live := e.job("qemu-mps2-an386", "")
	e.lease(r, "qemu-mps2-an386", "live", time.Now().Add(hour))
	n, err := e.st.RequeueExpired(e.ctx)
	e.must(err, "requeue with nothing expired")
	if n != 0 {
		e.Fatalf("requeued %d with no lease expired", n)
	}
	for a := 1; a <= store.MaxAttempts; a++ {
		j := e.lease(r, "host", fmt.Sprintf("l%d", a), time.Now().Add(-time.Second))
		if j.ID != id || j.Attempt != a {
			e.Fatalf("lease %d: job %d attempt %d", a, j.ID, j.Attempt)
		}
		n, err := e.st.RequeueExpired(e.ctx)
		e.must(err, "requeue")
		j, _ = e.st.Job(e.ctx, id)
		if a < store.MaxAttempts {
			if n != 1 || j.State != store.JobQueued || j.LeaseID != "" || j.LeaseNonce != "" || !strings.Contains(j.Note, "re-queued") {
				e.Fatalf("attempt %d expired: requeued %d, job %+v", a, n, j)
			}
			continue
		}
		if n != 0 || j.State != store.JobFailed || !strings.Contains(j.Error, fmt.Sprint(store.MaxAttempts)) || j.FinishedAt.IsZero() {
			e.Fatalf("last attempt expired: requeued %d, job %+v", n, j)
		}
	}
	if j, _ := e.st.Job(e.ctx, live); j.State != store.JobRunning || j.LeaseID != "live" {
		e.Fatalf("the job with a live lease was touched: %+v", j)
	}
}

// testPublishJob: publishing under the job's lease marks it published with its run; the lease
// is then gone.
func testPublishJob(e *env) {
	r, _ := e.runner("r1")
	id := e.job("host", "")
	e.lease(r, "host", "l1", time.Now().Add(hour))
	p := e.pub("host", "host", 10)
	p.Run.Origin, p.Run.RunnerID, p.Run.Binding = attest.OriginPortalRunner, r, store.BindingJob
	p.JobID, p.RunnerID, p.LeaseID = id, r, "wrong"
	_, err := e.st.Publish(e.ctx, p)
	e.wantKind(err, fault.LeaseLost, "publishing under another lease")
	if n, _ := e.st.CountCells(e.ctx); n != 0 {
		e.Fatalf("a refused publication stored %d cells", n)
	}
	p.LeaseID = "l1"
	run := e.publish(p)
	j, _ := e.st.Job(e.ctx, id)
	if j.State != store.JobPublished || j.RunID != run || j.LeaseID != "" || j.FinishedAt.IsZero() || j.Progress.CellsDone != 1 || j.Progress.CellsTotal != 1 {
		e.Fatalf("published job %+v", j)
	}
	got, err := e.st.Run(e.ctx, run)
	e.must(err, "run")
	if got.JobID != id || got.RunnerID != r || got.RunnerName != "r1" || got.Binding != store.BindingJob || got.Origin != attest.OriginPortalRunner {
		e.Fatalf("run %+v", got)
	}
	q := e.pub("host", "host", 11)
	q.JobID, q.RunnerID, q.LeaseID = id, r, "l1"
	_, err = e.st.Publish(e.ctx, q)
	e.wantKind(err, fault.LeaseLost, "publishing a published job again")
	q.JobID = 987654
	_, err = e.st.Publish(e.ctx, q)
	e.wantKind(err, fault.NotFound, "publishing for an unknown job")
}

// testConcurrentLeases: eight runners leasing at once from 200 queued jobs each get distinct
// jobs; every job is leased exactly once and none is lost.
func testConcurrentLeases(e *env) {
	const jobs, workers = 200, 8
	_, err := e.st.CreateEnrolToken(e.ctx, "fleet", "e-fleet", 0, store.EnrolTokenOptions{MaxUses: workers})
	e.must(err, "token")
	var runners []int64
	for i := range workers {
		id, _, err := e.st.Enrol(e.ctx, store.Enrolment{EnrolTokenHash: "e-fleet", Name: fmt.Sprint("w", i), Version: "v", Keys: e.identity(), NewTokenHash: fmt.Sprint("rt-w", i)})
		e.must(err, "enrol")
		runners = append(runners, id)
	}
	queued := map[int64]bool{}
	for range jobs {
		queued[e.job("host", "")] = true
	}
	var mu sync.Mutex
	leasedBy := map[int64]int64{}
	var dups []int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				j, err := e.st.LeaseJob(e.ctx, r, []string{"host"}, nil, nil, fmt.Sprintf("w%d-%d", w, n), "nonce", time.Now().Add(hour))
				if fault.KindOf(err) == fault.NotFound {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("runner %d: %w", r, err)
					return
				}
				mu.Lock()
				if _, ok := leasedBy[j.ID]; ok {
					dups = append(dups, j.ID)
				}
				leasedBy[j.ID] = r
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.Error(err)
	}
	if len(dups) > 0 {
		e.Fatalf("jobs leased twice: %v", dups)
	}
	if len(leasedBy) != jobs {
		e.Fatalf("%d of %d jobs leased", len(leasedBy), jobs)
	}
	for id, r := range leasedBy {
		if !queued[id] {
			e.Fatalf("leased job %d was never queued", id)
		}
		j, _ := e.st.Job(e.ctx, id)
		if j.State != store.JobRunning || j.RunnerID != r || j.Attempt != 1 {
			e.Fatalf("job %d: %+v, leased by runner %d", id, j, r)
		}
	}
	workersUsed := map[int64]bool{}
	for _, r := range leasedBy {
		workersUsed[r] = true
	}
	if !slices.ContainsFunc(runners, func(r int64) bool { return workersUsed[r] }) {
		e.Fatal("no runner leased anything")
	}
}
