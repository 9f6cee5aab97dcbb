package storetest

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// testPublishRun: a run and its cells read back as published (times to the millisecond,
// absent figures absent); a run without class status or binding is declared and unbound.
func testPublishRun(e *env) {
	keys := e.identity()
	u := e.user("ivy", store.RoleSubmitter)
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	p := e.pub("host", "host", 100)
	p.Run.PublicKeys, p.Run.SubmitterID, p.Run.Firmware, p.Run.ReportVersion = keys, u.ID, "sha256:fw", 3
	full := okCell("ML-KEM-768", "encaps", "ns", 100)
	full.Requested, full.BudgetReached, full.Keys, full.Variant = 1000, true, artifacts.KeysParsed, "crypto/tls"
	full.Memory = &artifacts.Memory{HeapBytesPerOp: f(1216), StackBytes: i(3632), PeakHeapBytes: i(40960)}
	full.Energy = &artifacts.Energy{Source: "rapl", JoulesPerOp: &artifacts.Stats{N: 3, Median: 0.0004}}
	failed := artifacts.Cell{Algorithm: "ML-KEM-768", Operation: "decaps", Status: artifacts.StatusFailed, Error: "boom", Unit: "ns", Requested: 5}
	p.Cells = []artifacts.Cell{p.Cells[0], full, failed}
	p.Run.CellsTotal, p.Run.CellsOK = 3, 2
	before := time.Now().Add(-time.Second)
	id := e.publish(p)
	r, err := e.st.Run(e.ctx, id)
	e.must(err, "run")
	w := p.Run
	if r.ID != id || r.JobID != 0 || r.Experiment != w.Experiment || r.Paper != w.Paper || r.ManifestID != w.ManifestID || r.Kind != w.Kind ||
		r.Method != w.Method || r.BoardClass != w.BoardClass || r.BoardName != w.BoardName || r.Level != w.Level || r.ClassStatus != w.ClassStatus ||
		r.Origin != w.Origin || r.Binding != w.Binding || r.RunnerID != 0 || r.Submitter != "ivy" || r.Signer != w.Signer ||
		!reflect.DeepEqual(r.PublicKeys, keys) || r.Bundle != w.Bundle || r.BundleSize != w.BundleSize || r.Firmware != "sha256:fw" ||
		!r.StartedAt.Equal(w.StartedAt) || !r.FinishedAt.Equal(w.FinishedAt) || r.PublishedAt.Before(before) ||
		r.Environment != w.Environment || r.Report != w.Report || r.Checks != w.Checks || r.ReportVersion != 3 || r.CellsTotal != 3 || r.CellsOK != 2 {
		e.Fatalf("run %+v\npublished %+v", r, w)
	}
	cs, err := e.st.Cells(e.ctx, id)
	e.must(err, "cells")
	if len(cs) != 3 {
		e.Fatalf("%d cells, want 3", len(cs))
	}
	if c := cs[0]; c.Algorithm != "ML-KEM-768" || c.Operation != "keygen" || *c.Stats != *p.Cells[0].Stats || c.Memory != nil || c.Energy != nil || c.Requested != 5 || c.BudgetReached {
		e.Fatalf("cell 0 %+v", c)
	}
	c := cs[1]
	if *c.Stats != *full.Stats || c.Requested != 1000 || !c.BudgetReached || c.Keys != artifacts.KeysParsed || c.Variant != "crypto/tls" || c.Memory == nil ||
		*c.Memory.HeapBytesPerOp != 1216 || *c.Memory.StackBytes != 3632 || *c.Memory.PeakHeapBytes != 40960 || c.Energy == nil || c.Energy.JoulesPerOp.Median != 0.0004 {
		e.Fatalf("cell 1 %+v", c)
	}
	if c := cs[2]; c.Status != artifacts.StatusFailed || c.Error != "boom" || c.Stats != nil || c.Memory != nil || c.Energy != nil {
		e.Fatalf("cell 2 %+v", c)
	}
	if cs, err := e.st.Cells(e.ctx, 987654); err != nil || len(cs) != 0 {
		e.Fatalf("cells of an unknown run: %v, %v", cs, err)
	}
	byBundle, err := e.st.RunByBundle(e.ctx, w.Bundle)
	e.must(err, "run by bundle")
	if byBundle.ID != id || byBundle.Submitter != "ivy" {
		e.Fatalf("run by bundle %+v", byBundle)
	}
	_, err = e.st.RunByBundle(e.ctx, digest("never"))
	e.wantKind(err, fault.NotFound, "run by an unknown bundle")
	_, err = e.st.Run(e.ctx, 987654)
	e.wantKind(err, fault.NotFound, "unknown run")

	q := e.pub("host", "host", 1)
	q.Run.ClassStatus, q.Run.Binding = "", ""
	r, _ = e.st.Run(e.ctx, e.publish(q))
	if r.ClassStatus != artifacts.ClassDeclared || r.Binding != store.BindingUnbound {
		e.Fatalf("a run published without class status and binding: %s, %s", r.ClassStatus, r.Binding)
	}
}

// testDuplicateBundle: a bundle digest is published once; the second publication names the
// first run and stores nothing.
func testDuplicateBundle(e *env) {
	p := e.pub("host", "host", 10)
	first := e.publish(p)
	p.Cells = append(p.Cells, p.Cells[0])
	p.Claims = []store.ClaimVerdict{{Paper: "paper001", ClaimID: "C1", Verdict: "holds", Reason: "r"}}
	_, err := e.st.Publish(e.ctx, p)
	d, ok := isDuplicate(err)
	if !ok || d.RunID != first || d.Digest != p.Run.Bundle {
		e.Fatalf("second publication of a bundle: %v, want a DuplicateBundleError naming run %d", err, first)
	}
	if n, _ := e.st.CountCells(e.ctx); n != 1 {
		e.Fatalf("%d cells after the refused duplicate, want 1", n)
	}
	if vs, _ := e.st.ClaimVerdicts(e.ctx, "paper001", 0); len(vs) != 0 {
		e.Fatalf("the refused duplicate stored verdicts %+v", vs)
	}
	if n, _ := e.st.PendingLogEntries(e.ctx); n != 1 {
		e.Fatalf("%d log entries pending, want the first run's only", n)
	}
}

// testEnergyMethods: energy is ranked within one method: two RAPL runs and a metered run of
// the same board and cell are two standings, each naming its method, never one.
func testEnergyMethods(e *env) {
	energyRun := func(j float64, metered bool) int64 {
		p := e.pub("host", "host", 10)
		en := &artifacts.Energy{Source: "rapl:intel-rapl:0 (package)", JoulesPerOp: &artifacts.Stats{N: 1, Median: j}}
		if metered {
			en.Source, en.Windows = "fnb58 /dev/hidraw3", &artifacts.EnergyWindows{Method: "E_op = (P_load - P_idle) x T_op", TOp: 1e-5}
		}
		p.Cells[0].Energy = en
		return e.publish(p)
	}
	energyRun(3e-4, false)
	last := energyRun(5e-4, false)
	metered := energyRun(1e-4, true)
	st, err := e.st.Standings(e.ctx, "ML-KEM-768", "keygen", store.MetricEnergy)
	e.must(err, "energy standings")
	got := map[string]store.Standing{}
	for _, s := range st {
		got[s.EnergyMethod] = s
	}
	rapl, meter := got[store.EnergyRAPL], got[store.EnergyMeter]
	if len(st) != 2 || rapl.Runs != 2 || math.Abs(rapl.Median-4e-4) > 1e-15 || rapl.N != 10 || rapl.LatestRun != last ||
		meter.Runs != 1 || meter.Median != 1e-4 || meter.N != 5 || meter.LatestRun != metered {
		e.Fatalf("energy standings %+v: want one RAPL standing of two runs and one metered of one", st)
	}
	if lat, err := e.st.Standings(e.ctx, "ML-KEM-768", "keygen", store.MetricLatency); err != nil || len(lat) != 1 || lat[0].Runs != 3 || lat[0].EnergyMethod != "" {
		e.Fatalf("latency standings %+v, %v: the energy method splits energy rankings only", lat, err)
	}
}

// testAggregates: leaderboards, the scheme table, counts and facets over a few boards.
func testAggregates(e *env) {
	var hostRuns, qemuRuns []int64
	for _, m := range []float64{10, 30, 20} {
		p := e.pub("host", "host", m)
		p.Cells = append(p.Cells, artifacts.Cell{Algorithm: "ML-DSA-65", Operation: "sign", Status: artifacts.StatusFailed, Error: "x", Unit: "ns"})
		hostRuns = append(hostRuns, e.publish(p))
	}
	for _, m := range []float64{100, 200} {
		qemuRuns = append(qemuRuns, e.publish(e.pub("qemu-mps2-an386", "emulated", m)))
	}
	h := 1216.0
	v := e.pub("host", "host", 50)
	v.Run.Paper, v.Run.Experiment, v.Run.Kind = "paper002", "paper002/tls", "tls-matrix"
	c := okCell("ML-KEM-768", "keygen", "ns", 50)
	c.Variant = "crypto/tls"
	c.Memory = &artifacts.Memory{HeapBytesPerOp: &h}
	v.Cells = []artifacts.Cell{c}
	variantRun := e.publish(v)

	st, err := e.st.Standings(e.ctx, "ML-KEM-768", "keygen", store.MetricLatency)
	e.must(err, "standings")
	got := map[string]store.Standing{}
	for _, s := range st {
		got[s.BoardClass+"|"+s.Method] = s
	}
	want := map[string]store.Standing{
		"host|in-process": {Unit: "ns", Level: "host", Method: "in-process", ClassStatus: "verified", BoardClass: "host", Origin: "community",
			Median: 20, P25: 9, P75: 31, N: 15, Runs: 3, LatestRun: hostRuns[2]},
		"qemu-mps2-an386|in-process": {Unit: "instructions", Level: "emulated", Method: "in-process", ClassStatus: "verified", BoardClass: "qemu-mps2-an386",
			Origin: "community", Median: 150, P25: 99, P75: 201, N: 10, Runs: 2, LatestRun: qemuRuns[1]},
		"host|in-process · crypto/tls": {Unit: "ns", Level: "host", Method: "in-process · crypto/tls", ClassStatus: "verified", BoardClass: "host",
			Origin: "community", Median: 50, P25: 49, P75: 51, N: 5, Runs: 1, LatestRun: variantRun},
	}
	if !reflect.DeepEqual(got, want) {
		e.Fatalf("standings\n%+v\nwant\n%+v", got, want)
	}
	heap, err := e.st.Standings(e.ctx, "ML-KEM-768", "keygen", store.MetricHeap)
	e.must(err, "heap standings")
	if len(heap) != 1 || heap[0].Unit != "B" || heap[0].Median != 1216 || heap[0].LatestRun != variantRun || heap[0].Runs != 1 {
		e.Fatalf("heap standings %+v", heap)
	}
	if none, err := e.st.Standings(e.ctx, "ML-DSA-65", "sign", store.MetricLatency); err != nil || len(none) != 0 {
		e.Fatalf("standings of failed cells only: %+v, %v", none, err)
	}
	ops, err := e.st.MeasuredAlgOps(e.ctx)
	e.must(err, "measured")
	if !reflect.DeepEqual(ops, []store.AlgOp{{Algorithm: "ML-KEM-768", Operation: "keygen"}}) {
		e.Fatalf("measured algorithms %+v (failed cells do not count)", ops)
	}
	schemes, err := e.st.Schemes(e.ctx, "host", "host")
	e.must(err, "schemes")
	if len(schemes) != 2 || schemes[0].Method != "in-process" || schemes[0].Median != 20 || schemes[0].Runs != 3 || schemes[0].N != 15 ||
		schemes[0].P25 != 9 || schemes[0].P75 != 31 || schemes[0].LatestRun != hostRuns[2] || schemes[1].Method != "in-process · crypto/tls" {
		e.Fatalf("schemes on host %+v", schemes)
	}
	if s, _ := e.st.Schemes(e.ctx, "emulated", "qemu-mps2-an386"); len(s) != 1 || s[0].Median != 150 || s[0].Unit != "instructions" {
		e.Fatalf("schemes on qemu %+v", s)
	}
	levels, err := e.st.BoardLevels(e.ctx)
	e.must(err, "board levels")
	if !reflect.DeepEqual(levels, []store.BoardLevel{{Level: "emulated", BoardClass: "qemu-mps2-an386"}, {Level: "host", BoardClass: "host"}}) {
		e.Fatalf("board levels %+v", levels)
	}
	boards, err := e.st.BoardCounts(e.ctx)
	e.must(err, "board counts")
	if !reflect.DeepEqual(boards, []store.BoardCount{{BoardClass: "host", Runs: 4, Levels: "host"}, {BoardClass: "qemu-mps2-an386", Runs: 2, Levels: "emulated"}}) {
		e.Fatalf("board counts %+v", boards)
	}
	counts, err := e.st.RunCounts(e.ctx)
	e.must(err, "run counts")
	if !reflect.DeepEqual(counts, map[string]int{"paper001": 5, "paper002": 1}) {
		e.Fatalf("run counts %v", counts)
	}
	if n, err := e.st.CountCells(e.ctx); err != nil || n != 3*2+2+1 {
		e.Fatalf("%d cells (%v), want 9", n, err)
	}
	f, err := e.st.Facets(e.ctx)
	e.must(err, "facets")
	wantF := store.RunFacets{Papers: []string{"paper001", "paper002"}, Experiments: []string{"paper001/mlkem", "paper002/tls"}, Boards: []string{"host", "qemu-mps2-an386"},
		Levels: []string{"emulated", "host"}, Kinds: []string{"kem-bench", "tls-matrix"}, Methods: []string{"in-process"}}
	if !reflect.DeepEqual(f, wantF) {
		e.Fatalf("facets %+v, want %+v", f, wantF)
	}
	runs, err := e.st.Runs(e.ctx, store.RunFilter{})
	e.must(err, "runs")
	qemu, err := e.st.Runs(e.ctx, store.RunFilter{BoardClass: "qemu-mps2-an386"})
	e.must(err, "qemu runs")
	one, err := e.st.Runs(e.ctx, store.RunFilter{Paper: "paper002"})
	e.must(err, "paper002 runs")
	lim, err := e.st.Runs(e.ctx, store.RunFilter{Experiment: "paper001/mlkem", Limit: 2})
	e.must(err, "two runs")
	if len(runs) != 6 || runs[0].ID != variantRun || len(qemu) != 2 || qemu[0].ID != qemuRuns[1] || len(one) != 1 || one[0].ID != variantRun ||
		len(lim) != 2 || lim[0].ID != qemuRuns[1] || lim[1].ID != qemuRuns[0] {
		e.Fatalf("runs: all %d, qemu %d, paper002 %d, limited %d", len(runs), len(qemu), len(one), len(lim))
	}
}

// testClaims: verdicts are read per paper or run, newest run first, and tallied per origin,
// board class, level and class status, never summed across them: a portal runner's verdict
// and a community member's stay apart.
func testClaims(e *env) {
	var runs []int64
	for _, c := range []struct {
		board                   string
		level                   artifacts.Level
		status, verdict, origin string
	}{
		{"host", "host", "verified", "holds", attest.OriginCommunity}, {"host", "host", "verified", "holds", attest.OriginPortalRunner},
		{"host", "host", "verified", "inconclusive", attest.OriginCommunity},
		{"qemu-mps2-an386", "emulated", "verified", "holds", attest.OriginCommunity}, {"rpi4-b", "host", "declared", "fails", attest.OriginCommunity},
	} {
		p := e.pub(c.board, c.level, 1)
		p.Run.Origin = c.origin
		p.Claims = []store.ClaimVerdict{{Paper: "paper001", ClaimID: "C001-01", Verdict: c.verdict, Reason: "why", ClassStatus: c.status},
			{Paper: "paper001", ClaimID: "C001-02", Verdict: "holds", Reason: "r", ClassStatus: c.status}}
		runs = append(runs, e.publish(p))
	}
	tallies, err := e.st.ClaimTallies(e.ctx, "paper001")
	e.must(err, "tallies")
	com, por := attest.OriginCommunity, attest.OriginPortalRunner
	want := []store.ClaimTally{
		{ClaimID: "C001-01", Origin: com, BoardClass: "qemu-mps2-an386", Level: "emulated", ClassStatus: "verified", Verdict: "holds", Runs: 1},
		{ClaimID: "C001-01", Origin: com, BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: "holds", Runs: 1},
		{ClaimID: "C001-01", Origin: com, BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: "inconclusive", Runs: 1},
		{ClaimID: "C001-01", Origin: com, BoardClass: "rpi4-b", Level: "host", ClassStatus: "declared", Verdict: "fails", Runs: 1},
		{ClaimID: "C001-01", Origin: por, BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: "holds", Runs: 1},
		{ClaimID: "C001-02", Origin: com, BoardClass: "qemu-mps2-an386", Level: "emulated", ClassStatus: "verified", Verdict: "holds", Runs: 1},
		{ClaimID: "C001-02", Origin: com, BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: "holds", Runs: 2},
		{ClaimID: "C001-02", Origin: com, BoardClass: "rpi4-b", Level: "host", ClassStatus: "declared", Verdict: "holds", Runs: 1},
		{ClaimID: "C001-02", Origin: por, BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: "holds", Runs: 1},
	}
	if !reflect.DeepEqual(tallies, want) {
		e.Fatalf("tallies\n%+v\nwant\n%+v", tallies, want)
	}
	if t, _ := e.st.ClaimTallies(e.ctx, "paper999"); len(t) != 0 {
		e.Fatalf("tallies of a paper without verdicts %+v", t)
	}
	vs, err := e.st.ClaimVerdicts(e.ctx, "paper001", 0)
	e.must(err, "verdicts")
	if len(vs) != 10 || vs[0].RunID != runs[4] || vs[9].RunID != runs[0] || vs[0].BoardClass != "rpi4-b" || vs[0].Level != "host" ||
		vs[0].Origin != "community" || vs[0].ClassStatus != "declared" {
		e.Fatalf("verdicts %+v", vs)
	}
	one, err := e.st.ClaimVerdicts(e.ctx, "", runs[2])
	e.must(err, "verdicts of one run")
	if len(one) != 2 || one[0].RunID != runs[2] || one[1].RunID != runs[2] {
		e.Fatalf("verdicts of run %d: %+v", runs[2], one)
	}
	byClaim := map[string]string{}
	for _, v := range one {
		byClaim[v.ClaimID] = v.Verdict + "/" + v.Reason
	}
	if byClaim["C001-01"] != "inconclusive/why" || byClaim["C001-02"] != "holds/r" {
		e.Fatalf("verdicts of run %d: %v", runs[2], byClaim)
	}
}

// testSignerRevoked: a run is flagged when its runner or its signer's registered keys are
// revoked, from the revocation on.
func testSignerRevoked(e *env) {
	r, _ := e.runner("r1")
	u := e.user("jo", store.RoleSubmitter)
	keys := e.identity()
	k, err := e.st.AddSubmitterKey(e.ctx, u.ID, "k", keys)
	e.must(err, "keys")
	p := e.pub("host", "host", 1)
	p.Run.RunnerID, p.Run.Origin = r, attest.OriginPortalRunner
	byRunner, _ := e.st.Run(e.ctx, e.publish(p))
	q := e.pub("host", "host", 1)
	q.Run.Signer = keys.Fingerprint()
	bySubmitter, _ := e.st.Run(e.ctx, e.publish(q))
	for _, run := range []store.Run{byRunner, bySubmitter} {
		if at, err := e.st.SignerRevoked(e.ctx, run); err != nil || !at.IsZero() {
			e.Fatalf("run %d before any revocation: %v, %v", run.ID, at, err)
		}
	}
	e.must(e.st.RevokeRunner(e.ctx, r), "revoke runner")
	e.must(e.st.RevokeSubmitterKey(e.ctx, k.ID), "revoke keys")
	for _, run := range []store.Run{byRunner, bySubmitter} {
		if at, err := e.st.SignerRevoked(e.ctx, run); err != nil || at.IsZero() {
			e.Fatalf("run %d after revocation: %v, %v", run.ID, at, err)
		}
	}
}

// walkRuns pages through ListRuns and returns the items in order, failing on a repeat.
func (e *env) walkRuns(f store.ListFilter) []store.Run {
	e.Helper()
	var out []store.Run
	seen := map[int64]bool{}
	for pages := 0; ; pages++ {
		if pages > 200 {
			e.Fatal("paging does not end")
		}
		p, err := e.st.ListRuns(e.ctx, f)
		e.must(err, "list runs")
		if len(p.Items) > f.Limit || p.Capped {
			e.Fatalf("page of %d runs (limit %d), capped %v", len(p.Items), f.Limit, p.Capped)
		}
		for _, r := range p.Items {
			if seen[r.ID] {
				e.Fatalf("run %d on two pages", r.ID)
			}
			seen[r.ID] = true
			out = append(out, r)
		}
		if p.Next == nil {
			return out
		}
		f.After = p.Next
	}
}

// testListRuns: keyset pages of runs, newest first by (published_at, id): every matching run
// once, whatever the filter and page size.
func testListRuns(e *env) {
	u := e.user("Kim", store.RoleSubmitter)
	var all []store.Run
	for i := range 23 {
		board, level := "host", artifacts.AssuranceHost
		if i%3 == 1 {
			board, level = "qemu-mps2-an386", "emulated"
		}
		p := e.pub(board, level, float64(i))
		if i%4 == 0 {
			p.Cells[0].Algorithm = "ML-DSA-65"
		}
		if i%5 == 0 {
			p.Run.SubmitterID = u.ID
		}
		r, err := e.st.Run(e.ctx, e.publish(p))
		e.must(err, "run")
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b store.Run) int {
		if c := b.PublishedAt.Compare(a.PublishedAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	expect := func(keep func(store.Run, int) bool) []int64 {
		var out []int64
		for _, r := range all {
			if keep(r, int(r.BundleSize-1001)) {
				out = append(out, r.ID)
			}
		}
		return out
	}
	idsOf := func(rs []store.Run) []int64 {
		var out []int64
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	mid := all[10].PublishedAt
	for _, c := range []struct {
		name string
		f    store.ListFilter
		keep func(store.Run, int) bool
	}{
		{"all", store.ListFilter{}, func(store.Run, int) bool { return true }},
		{"board", store.ListFilter{BoardClass: "qemu-mps2-an386"}, func(r store.Run, _ int) bool { return r.BoardClass == "qemu-mps2-an386" }},
		{"level", store.ListFilter{Level: "host"}, func(r store.Run, _ int) bool { return r.Level == "host" }},
		{"algorithm", store.ListFilter{Algorithm: "ML-DSA-65"}, func(_ store.Run, i int) bool { return i%4 == 0 }},
		{"board and algorithm", store.ListFilter{BoardClass: "host", Algorithm: "ML-DSA-65"}, func(r store.Run, i int) bool { return i%4 == 0 && r.BoardClass == "host" }},
		{"submitter", store.ListFilter{Submitter: "kIM"}, func(_ store.Run, i int) bool { return i%5 == 0 }},
		{"nobody", store.ListFilter{Submitter: "nobody"}, func(store.Run, int) bool { return false }},
		{"paper", store.ListFilter{Paper: "paper001", Kind: "kem-bench", Method: "in-process", Experiment: "paper001/mlkem"}, func(store.Run, int) bool { return true }},
		{"other paper", store.ListFilter{Paper: "paper002"}, func(store.Run, int) bool { return false }},
		{"from", store.ListFilter{From: mid}, func(r store.Run, _ int) bool { return !r.PublishedAt.Before(mid) }},
		{"to", store.ListFilter{To: mid}, func(r store.Run, _ int) bool { return r.PublishedAt.Before(mid) }},
	} {
		want := expect(c.keep)
		for _, limit := range []int{1, 4, 50} {
			f := c.f
			f.Limit = limit
			got := idsOf(e.walkRuns(f))
			if !slices.Equal(got, want) {
				e.Fatalf("%s, pages of %d: %v, want %v", c.name, limit, got, want)
			}
		}
	}
	p, err := e.st.ListRuns(e.ctx, store.ListFilter{BoardClass: "host", Limit: 3})
	e.must(err, "list")
	if p.Lead != "board" || p.Examined < 3 || p.Examined > store.ScanCap || p.Next == nil || len(p.Items) != 3 {
		e.Fatalf("first page by board: lead %q, examined %d, next %v, %d items", p.Lead, p.Examined, p.Next, len(p.Items))
	}
	if p.Items[0].Environment != "" || p.Items[0].Report != "" {
		e.Fatal("a list page carries the runs' large JSON fields")
	}
	if c, err := store.ParseCursor(p.Next.String()); err != nil || c != *p.Next {
		e.Fatalf("cursor %v does not survive its string: %v, %v", p.Next, c, err)
	}
}

// testListJobs: keyset pages of jobs, newest first by (created_at, id), by state, without
// their manifests.
func testListJobs(e *env) {
	r, _ := e.runner("r1")
	var queued, all []int64
	for i := range 15 {
		class := "host"
		if i%2 == 1 {
			class = "qemu-mps2-an386"
		}
		id := e.job(class, "")
		all = append(all, id)
		queued = append(queued, id)
	}
	for range 4 {
		j := e.lease(r, "host", fmt.Sprint("l", len(queued)), time.Now().Add(hour))
		queued = slices.DeleteFunc(queued, func(id int64) bool { return id == j.ID })
	}
	jobsOf := func(f store.ListFilter) []int64 {
		var out []int64
		seen := map[int64]bool{}
		for pages := 0; ; pages++ {
			if pages > 100 {
				e.Fatal("paging does not end")
			}
			p, err := e.st.ListJobs(e.ctx, f)
			e.must(err, "list jobs")
			for _, j := range p.Items {
				if seen[j.ID] || j.ManifestYAML != "" {
					e.Fatalf("job %d repeated or with its manifest", j.ID)
				}
				seen[j.ID] = true
				out = append(out, j.ID)
			}
			if p.Next == nil {
				return out
			}
			f.After = p.Next
		}
	}
	// Jobs created in the same millisecond are ordered by id: newest first is id descending.
	rev := func(s []int64) []int64 { s = slices.Clone(s); slices.Reverse(s); return s }
	if got := jobsOf(store.ListFilter{Limit: 4}); !slices.Equal(got, rev(all)) {
		e.Fatalf("all jobs %v, want %v", got, rev(all))
	}
	if got := jobsOf(store.ListFilter{State: store.JobQueued, Limit: 3}); !slices.Equal(got, rev(queued)) {
		e.Fatalf("queued jobs %v, want %v", got, rev(queued))
	}
	var qemu []int64
	for i, id := range all {
		if i%2 == 1 {
			qemu = append(qemu, id)
		}
	}
	if got := jobsOf(store.ListFilter{BoardClass: "qemu-mps2-an386", State: store.JobQueued, Limit: 2}); !slices.Equal(got, rev(qemu)) {
		e.Fatalf("queued qemu jobs %v, want %v", got, rev(qemu))
	}
	p, err := e.st.ListJobs(e.ctx, store.ListFilter{State: store.JobRunning, Limit: 10})
	e.must(err, "running jobs")
	if len(p.Items) != 4 || p.Lead != "state" || p.Next != nil {
		e.Fatalf("running jobs: %d, lead %q, next %v", len(p.Items), p.Lead, p.Next)
	}
}

// testPairReports: a pair report is kept once per code version; the first stored stays.
func testPairReports(e *env) {
	a := e.publish(e.pub("host", "host", 1))
	b := e.publish(e.pub("host", "host", 2))
	if _, ok, err := e.st.PairReport(e.ctx, a, b, "v1"); err != nil || ok {
		e.Fatalf("report before any: %v, %v", ok, err)
	}
	e.must(e.st.SavePairReport(e.ctx, a, b, "v1", `{"first":true}`), "save")
	e.must(e.st.SavePairReport(e.ctx, a, b, "v1", `{"second":true}`), "save again")
	e.must(e.st.SavePairReport(e.ctx, a, b, "v2", `{"v2":true}`), "save v2")
	if rep, ok, err := e.st.PairReport(e.ctx, a, b, "v1"); err != nil || !ok || rep != `{"first":true}` {
		e.Fatalf("report v1: %q, %v, %v", rep, ok, err)
	}
	if _, ok, _ := e.st.PairReport(e.ctx, b, a, "v1"); ok {
		e.Fatal("the pair's reverse has a report")
	}
	if n, err := e.st.PairReports(e.ctx); err != nil || n != 2 {
		e.Fatalf("%d pair reports (%v), want 2", n, err)
	}
}

// testRebuild: runs with older reports are listed in batches; a rebuild replaces the report,
// the verdicts and the cells' details in one transaction, or refuses cells that do not match.
func testRebuild(e *env) {
	var ids []int64
	for v := range 3 {
		p := e.pub("host", "host", 1)
		p.Run.ReportVersion = v
		p.Claims = []store.ClaimVerdict{{Paper: "paper001", ClaimID: "OLD", Verdict: "holds", Reason: "old"}}
		ids = append(ids, e.publish(p))
	}
	list := func(version int, all bool, after int64, limit int) []int64 {
		got, err := e.st.RunsToRebuild(e.ctx, version, all, after, limit)
		e.must(err, "runs to rebuild")
		return got
	}
	if got := list(2, false, 0, 10); !slices.Equal(got, ids[:2]) {
		e.Fatalf("runs older than 2: %v, want %v", got, ids[:2])
	}
	if got := list(2, true, 0, 10); !slices.Equal(got, ids) {
		e.Fatalf("all runs: %v", got)
	}
	if got := list(2, true, ids[0], 1); !slices.Equal(got, ids[1:2]) {
		e.Fatalf("batch after %d: %v", ids[0], got)
	}
	cell := okCell("ML-KEM-768", "keygen", "ns", 1)
	peak := 777
	cell.Keys, cell.Requested, cell.BudgetReached, cell.Variant, cell.Memory = artifacts.KeysEncoded, 64, true, "v", &artifacts.Memory{PeakHeapBytes: &peak}
	rb := store.Rebuilt{RunID: ids[0], Report: `{"rebuilt":true}`, ReportVersion: 2, Cells: []artifacts.Cell{cell, cell},
		Claims: []store.ClaimVerdict{{Paper: "paper001", ClaimID: "NEW", Verdict: "fails", Reason: "new"}}}
	if err := e.st.SaveRebuilt(e.ctx, rb); err == nil {
		e.Fatal("a rebuild with two cells for a run of one was accepted")
	}
	if r, _ := e.st.Run(e.ctx, ids[0]); r.ReportVersion != 0 || r.Report != `{"cells":1}` {
		e.Fatalf("a refused rebuild changed the run: %+v", r)
	}
	rb.Cells = rb.Cells[:1]
	e.must(e.st.SaveRebuilt(e.ctx, rb), "rebuild")
	r, _ := e.st.Run(e.ctx, ids[0])
	cs, _ := e.st.Cells(e.ctx, ids[0])
	vs, _ := e.st.ClaimVerdicts(e.ctx, "", ids[0])
	if r.Report != `{"rebuilt":true}` || r.ReportVersion != 2 || len(cs) != 1 || cs[0].Keys != artifacts.KeysEncoded || cs[0].Requested != 64 ||
		!cs[0].BudgetReached || cs[0].Variant != "v" || cs[0].Memory == nil || cs[0].Memory.PeakHeapBytes == nil || *cs[0].Memory.PeakHeapBytes != 777 ||
		len(vs) != 1 || vs[0].ClaimID != "NEW" {
		e.Fatalf("rebuilt run %+v, cells %+v, verdicts %+v", r, cs, vs)
	}
	if got := list(2, false, 0, 10); !slices.Equal(got, ids[1:2]) {
		e.Fatalf("runs older than 2 after the rebuild: %v", got)
	}
}

// testPublishBatch: a batch is published in one transaction, its runs in order with their
// cells, counters and log entries; a batch holding a bundle already published, or twice, or
// a job whose lease is not held, publishes nothing and names the refusal.
func testPublishBatch(e *env) {
	before, err := e.st.Generations(e.ctx)
	e.must(err, "generations")
	r, _ := e.runner("batch")
	job := e.job("host", "")
	e.lease(r, "host", "l1", time.Now().Add(hour))
	bound := e.pub("host", "host", 30)
	bound.Run.Origin, bound.Run.RunnerID, bound.Run.Binding = attest.OriginPortalRunner, r, store.BindingJob
	bound.JobID, bound.RunnerID, bound.LeaseID = job, r, "l1"
	batch := []store.Publication{e.pub("host", "host", 10), bound, e.pub("esp32c6", "hardware", 20)}
	ids, err := e.st.PublishBatch(e.ctx, batch)
	e.must(err, "publish a batch")
	if len(ids) != 3 || !(ids[0] < ids[1] && ids[1] < ids[2]) {
		e.Fatalf("batch ids %v, want three ascending", ids)
	}
	for i, id := range ids {
		run, err := e.st.Run(e.ctx, id)
		e.must(err, "run of the batch")
		if run.Bundle != batch[i].Run.Bundle || run.BoardClass != batch[i].Run.BoardClass {
			e.Fatalf("run %d of the batch is %s on %s, want %s on %s", i, run.Bundle, run.BoardClass, batch[i].Run.Bundle, batch[i].Run.BoardClass)
		}
	}
	if j, _ := e.st.Job(e.ctx, job); j.State != store.JobPublished || j.RunID != ids[1] {
		e.Fatalf("the batch's job is %s with run %d, want published with run %d", j.State, j.RunID, ids[1])
	}
	if n, _ := e.st.CountCells(e.ctx); n != 3 {
		e.Fatalf("%d cells after the batch, want 3", n)
	}
	if n, _ := e.st.RunCount(e.ctx, "paper", "paper001"); n != 3 {
		e.Fatalf("paper001 counts %d runs after the batch, want 3", n)
	}
	if n, _ := e.st.PendingLogEntries(e.ctx); n != 3 {
		e.Fatalf("%d log entries pending after the batch, want 3", n)
	}
	if g, _ := e.st.Generations(e.ctx); g.Runs <= before.Runs || g.Work <= before.Work {
		e.Fatalf("generations %+v after the batch, %+v before: runs and work must advance", g, before)
	}

	again := e.pub("host", "host", 11)
	for what, b := range map[string][]store.Publication{
		"a bundle published before": {again, batch[0]},
		"one bundle twice":          {again, again},
		"a lease no longer held":    {again, bound},
	} {
		_, err := e.st.PublishBatch(e.ctx, b)
		if err == nil {
			e.Fatalf("a batch with %s was published", what)
		}
		if !strings.Contains(err.Error(), "publication 2 of 2") {
			e.Fatalf("a batch with %s: %v, want the refusal of publication 2 named", what, err)
		}
		if n, _ := e.st.CountCells(e.ctx); n != 3 {
			e.Fatalf("a refused batch with %s left %d cells, want the 3 before it", what, n)
		}
	}
	if _, ok := isDuplicate(func() error { _, err := e.st.PublishBatch(e.ctx, []store.Publication{batch[2]}); return err }()); !ok {
		e.Fatalf("a batch of a published bundle does not say it is a duplicate")
	}
}
