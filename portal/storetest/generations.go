package storetest

import (
	"time"

	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/store"
	"pqrepro/portal/translog"
)

// testGenerations: every write that changes what pages show advances its change counter
// before the call returns, as any reader of the database sees it, and writes that pages do
// not show (a heartbeat, a runner seen, a refused publication) advance none.
func testGenerations(e *env) {
	last, err := e.st.Generations(e.ctx)
	e.must(err, "generations")
	stepLog := func(what string, runs, work, log bool, write func()) {
		e.Helper()
		write()
		g, err := e.st.Generations(e.ctx)
		e.must(err, "generations after "+what)
		switch {
		case g.Runs < last.Runs || g.Work < last.Work || g.Log < last.Log:
			e.Fatalf("%s: generations went back from %+v to %+v", what, last, g)
		case (g.Runs > last.Runs) != runs:
			e.Fatalf("%s: runs generation %d → %d, want advanced %v", what, last.Runs, g.Runs, runs)
		case (g.Work > last.Work) != work:
			e.Fatalf("%s: work generation %d → %d, want advanced %v", what, last.Work, g.Work, work)
		case (g.Log > last.Log) != log:
			e.Fatalf("%s: log generation %d → %d, want advanced %v", what, last.Log, g.Log, log)
		}
		last = g
	}
	step := func(what string, runs, work bool, write func()) {
		e.Helper()
		stepLog(what, runs, work, false, write)
	}
	var r, job int64
	step("enrol a runner", false, true, func() { r, _ = e.runner("gen") })
	step("queue a job", false, true, func() { job = e.job("host", "") })
	step("lease it", false, true, func() { e.lease(r, "host", "l1", time.Now().Add(hour)) })
	step("a heartbeat", false, false, func() {
		e.must(e.st.Heartbeat(e.ctx, job, r, "l1", time.Now().Add(hour), protocol.Progress{CellsDone: 1, CellsTotal: 2}), "heartbeat")
	})
	step("the runner seen", false, false, func() { e.must(e.st.TouchRunner(e.ctx, r), "touch runner") })
	p := e.pub("host", "host", 10)
	p.Run.Origin, p.Run.RunnerID, p.Run.Binding = attest.OriginPortalRunner, r, store.BindingJob
	p.JobID, p.RunnerID, p.LeaseID = job, r, "l1"
	step("publish the job's run", true, true, func() { e.publish(p) })
	step("a refused publication", false, false, func() {
		q := e.pub("host", "host", 11)
		q.JobID, q.RunnerID, q.LeaseID = job, r, "l1"
		if _, err := e.st.Publish(e.ctx, q); err == nil {
			e.Fatalf("publishing a published job again succeeded")
		}
	})
	step("publish a community run", true, false, func() { e.publish(e.pub("host", "host", 12)) })
	step("save highlights", true, false, func() {
		e.must(e.st.SaveHighlights(e.ctx, "ML-KEM-768", "keygen", store.MetricLatency, nil, time.Now()), "save highlights")
	})
	step("revoke the runner", true, false, func() { e.must(e.st.RevokeRunner(e.ctx, r), "revoke runner") })
	step("rebuild the counters", true, false, func() { e.must(e.st.RebuildSummaries(e.ctx), "rebuild summaries") })
	stepLog("register a witness", false, false, true, func() {
		e.must(e.st.AddWitness(e.ctx, translog.Witness{Name: "w1", Ed25519: "w1+1+AA", MLDSA44: "w1+2+AA", Added: time.Now()}), "add witness")
	})
	stepLog("a cosignature", false, false, true, func() {
		e.must(e.st.AddCosignature(e.ctx, 1, "w1", 7, "— w1 AAAA"), "add cosignature")
	})
}
