package portal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/portalclient"
)

// forge re-signs archive with id after edit changed its result.json (decoded) and samples.csv
// (raw); the predicate, job binding included, is kept as it was. What comes out verifies: only
// re-derivation can tell.
func forge(t testing.TB, archive []byte, id *identity.Identity, edit func(r *artifacts.Result, samples *[]byte)) []byte {
	t.Helper()
	b, err := artifacts.ReadTarGz(bytes.NewReader(archive), 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := attest.Verify(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		t.Fatal(err)
	}
	samples := b.Files[artifacts.FileSamples]
	edit(res, &samples)
	b.Files[artifacts.FileResult], _ = json.Marshal(res)
	b.Files[artifacts.FileSamples] = samples
	if err := attest.Sign(b, id, v.Statement.Predicate); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// legacy re-signs archive with the v1 predicate, as runners did before job binding.
func legacy(t testing.TB, archive []byte, id *identity.Identity) []byte {
	t.Helper()
	b, err := artifacts.ReadTarGz(bytes.NewReader(archive), 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := attest.Verify(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := v.Statement.Predicate
	p.Job = nil
	if err := attest.SignLegacy(b, id, p); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// stored counts what a portal has published: runs and blobs.
func stored(t testing.TB, p *portaltest.Portal) (runs, blobs int) {
	t.Helper()
	rs, err := p.Server.Store().Runs(context.Background(), store.RunFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(rs), countBlobs(t, p.Config.DataDir)
}

// mldsaManifest is paper001/mldsa with few iterations.
func mldsaManifest(t testing.TB) *artifacts.Manifest {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	base, err := cat.Manifest("paper001/mldsa")
	if err != nil {
		t.Fatal(err)
	}
	m, err := artifacts.ParseManifest(base.YAML(), "test")
	if err != nil {
		t.Fatal(err)
	}
	m.Spec.Iterations, m.Spec.Warmup = 3, 1
	return m
}

// registeredSubmitter registers id's keys under a new submitter account and returns its client.
func registeredSubmitter(t testing.TB, p *portaltest.Portal, name string, id *identity.Identity) *portalclient.Client {
	t.Helper()
	return portalclient.NewSubmitter(p.URL, submitterToken(t, p, name, id))
}

// submitterToken creates the submitter account name with id's keys registered (straight in
// the store: the registration's proof of possession is tested on its own) and returns the
// account's bearer token.
func submitterToken(t testing.TB, p *portaltest.Portal, name string, id *identity.Identity) string {
	t.Helper()
	ctx := context.Background()
	tok := "sub-token-" + name + "-0123456789"
	u, err := p.Server.Store().CreateUser(ctx, name, "submitter", portal.HashToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Server.Store().AddSubmitterKey(ctx, u.ID, "test", id.Public()); err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestRunnerCompletionRefusesUnboundBundles(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	m := smallManifest(t, 2)
	jobA, jobB := queueJob(t, p, m), queueJob(t, p, m)
	r := enrol(t, p, "lab")
	la, err := r.client.Lease(ctx, 0)
	if err != nil || la == nil || la.JobID != jobA {
		t.Fatalf("lease A: %+v %v", la, err)
	}
	lb, err := r.client.Lease(ctx, 0)
	if err != nil || lb == nil || lb.JobID != jobB {
		t.Fatalf("lease B: %+v %v", lb, err)
	}
	if la.Nonce == "" || la.Nonce == lb.Nonce || la.PortalURL != p.Config.PortalURL() {
		t.Fatalf("leases carry nonces %q, %q and portal %q", la.Nonce, lb.Nonce, la.PortalURL)
	}
	with := func(l protocol.Lease, edit func(*protocol.Lease)) *protocol.Lease { edit(&l); return &l }
	forA := runnerBundle(t, m, r.id, la)
	cases := []struct {
		name   string
		lease  *protocol.Lease // completed under this lease
		bundle []byte
		want   string
	}{
		{"an old (v1) bundle for a new job", lb, legacy(t, runnerBundle(t, m, r.id, lb), r.id), "predicate: a legacy"},
		{"a locally signed bundle as a runner result", lb, signedBundle(t, m, r.id, attest.OriginLocal), "origin: the bundle was signed with origin \"local\""},
		{"a community-signed bundle as a runner result", lb, signedBundle(t, m, r.id, attest.OriginCommunity), "origin"},
		{"the bundle of job A completed on job B", lb, forA, "job: the bundle was signed for job"},
		{"a wrong nonce", lb, runnerBundle(t, m, r.id, with(*lb, func(l *protocol.Lease) { l.Nonce = "nonce_guessed0123456789" })), "nonce"},
		{"a wrong attempt", lb, runnerBundle(t, m, r.id, with(*lb, func(l *protocol.Lease) { l.Attempt++ })), "attempt"},
		{"a wrong lease", lb, runnerBundle(t, m, r.id, with(*lb, func(l *protocol.Lease) { l.LeaseID = "lease_other" })), "lease"},
		{"another portal", lb, runnerBundle(t, m, r.id, with(*lb, func(l *protocol.Lease) { l.PortalURL = "https://elsewhere.example" })), "portal"},
		{"another runner's keys", lb, runnerBundle(t, m, mustIdentity(t), lb), "runner: the bundle is not signed by the keys of runner"},
		{"a halved median signed by the runner", lb, forge(t, runnerBundle(t, m, r.id, lb), r.id, func(res *artifacts.Result, _ *[]byte) {
			res.Cells[1].Stats.Median /= 2
		}), "result does not re-derive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.client.Complete(ctx, tc.lease.JobID, tc.lease.LeaseID, tc.bundle)
			if !errors.Is(err, runner.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want refused saying %q", err, tc.want)
			}
			if runs, blobs := stored(t, p); runs != 0 || blobs != 0 {
				t.Fatalf("after a refused bundle: %d runs, %d blobs stored", runs, blobs)
			}
			if j, _ := p.Server.Store().Job(ctx, tc.lease.JobID); j.State != store.JobRunning {
				t.Fatalf("job %d is %s after a refused bundle, want still running", j.ID, j.State)
			}
		})
	}
	// The bundles signed for their own leases publish, each bound.
	for _, l := range []*protocol.Lease{la, lb} {
		b := forA
		if l == lb {
			b = runnerBundle(t, m, r.id, lb)
		}
		resp, err := r.client.Complete(ctx, l.JobID, l.LeaseID, b)
		if err != nil {
			t.Fatalf("job %d: %v", l.JobID, err)
		}
		run, _ := p.Server.Store().Run(ctx, resp.RunID)
		if run.Binding != store.BindingJob || run.JobID != l.JobID || run.Origin != attest.OriginPortalRunner {
			t.Errorf("run %d: binding %q, job %d, origin %s", run.ID, run.Binding, run.JobID, run.Origin)
		}
	}
}

func mustIdentity(t testing.TB) *identity.Identity {
	t.Helper()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestCommunitySubmissionLabelsAndDuplicates(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	m := smallManifest(t, 2)
	id := mustIdentity(t)
	sub := registeredSubmitter(t, p, "lab-member", id)

	local := signedBundle(t, m, id, attest.OriginLocal)
	first, err := sub.Submit(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	// The same bytes again: answered with the existing run, nothing more stored.
	again, err := sub.Submit(ctx, local)
	if err != nil || again.RunID != first.RunID {
		t.Fatalf("duplicate submission: run %d, %v; want the existing run %d", again.RunID, err, first.RunID)
	}
	if runs, blobs := stored(t, p); runs != 1 || blobs != 1 {
		t.Fatalf("after a duplicate: %d runs, %d blobs, want 1 and 1", runs, blobs)
	}
	run, _ := p.Server.Store().Run(ctx, first.RunID)
	if run.Origin != attest.OriginCommunity || run.Binding != store.BindingUnbound {
		t.Errorf("community run: origin %s, binding %s", run.Origin, run.Binding)
	}
	// A legacy bundle is accepted only as a community result, and labelled legacy.
	old, err := sub.Submit(ctx, legacy(t, signedBundle(t, m, id, attest.OriginLocal), id))
	if err != nil {
		t.Fatal(err)
	}
	if run, _ := p.Server.Store().Run(ctx, old.RunID); run.Binding != store.BindingLegacy || run.Origin != attest.OriginCommunity {
		t.Errorf("legacy run: origin %s, binding %s", run.Origin, run.Binding)
	}
	for id, want := range map[int64]string{first.RunID: "unbound: a community submission", old.RunID: "legacy: a v1 bundle"} {
		if code, page := get(t, p.URL+"/runs/"+itoa(id)); code != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("run %d page (%d) does not say %q", id, code, want)
		}
	}
	// A bundle bound to one of this portal's jobs is published by completing that job only.
	jobID := queueJob(t, p, m)
	r := enrol(t, p, "lab")
	l, err := r.client.Lease(ctx, 0)
	if err != nil || l == nil || l.JobID != jobID {
		t.Fatalf("lease: %+v %v", l, err)
	}
	// The runner's keys cannot become a submitter's (they are enrolled), so its bound bundle
	// cannot be submitted as a community result under any account.
	tok := "sub-token-runner-owner-0123456789"
	if _, err := p.Server.Store().CreateUser(ctx, "runner-owner", "submitter", portal.HashToken(tok)); err != nil {
		t.Fatal(err)
	}
	sub2 := portalclient.NewSubmitter(p.URL, tok)
	if _, err := sub2.RegisterKeys(ctx, r.id, "runner keys"); !errors.Is(err, runner.ErrConflict) || !strings.Contains(err.Error(), "a runner's keys cannot also be a submitter's") {
		t.Errorf("registering a runner's keys as a submitter's: %v", err)
	}
	if _, err := sub2.Submit(ctx, runnerBundle(t, m, r.id, l)); !errors.Is(err, runner.ErrRefused) {
		t.Errorf("a job's bundle submitted as community: %v", err)
	}
	if runs, _ := stored(t, p); runs != 2 {
		t.Errorf("%d runs stored, want 2", runs)
	}
}

func TestForgedResultsAreRefusedAtIngest(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	m := mldsaManifest(t)
	id := mustIdentity(t)
	sub := registeredSubmitter(t, p, "forger", id)
	good := signedBundle(t, m, id, attest.OriginLocal)
	sign65 := -1
	{
		b, _ := artifacts.ReadTarGz(bytes.NewReader(good), 0)
		res, _ := artifacts.ParseResult(b.Files[artifacts.FileResult])
		for i, c := range res.Cells {
			if c.Algorithm == "ML-DSA-65" && c.Operation == artifacts.OpSign {
				sign65 = i
			}
		}
	}
	if sign65 < 0 {
		t.Fatal("no ML-DSA-65 sign cell")
	}
	manyCells := func(n int) func(*artifacts.Result, *[]byte) {
		return func(res *artifacts.Result, _ *[]byte) {
			c := artifacts.Cell{Algorithm: "ML-DSA-65", Operation: "sign", Status: artifacts.StatusFailed, Error: "x"}
			for len(res.Cells) < n {
				res.Cells = append(res.Cells, c)
			}
		}
	}
	cases := []struct {
		name string
		edit func(*artifacts.Result, *[]byte)
		want string
	}{
		{"halved median", func(r *artifacts.Result, _ *[]byte) { r.Cells[sign65].Stats.Median /= 2 }, "result.json cells"},
		{"unordered statistics", func(r *artifacts.Result, _ *[]byte) {
			st := r.Cells[sign65].Stats
			st.P25, st.P75 = st.P75, st.P25-1
		}, "not ordered"},
		{"empty samples.csv behind ok cells", func(_ *artifacts.Result, s *[]byte) {
			*s = []byte(strings.Join(artifacts.SamplesHeader, ",") + "\n")
		}, "samples.csv cells[0]"},
		{"a 1 ns ML-DSA-65 sign", func(r *artifacts.Result, _ *[]byte) {
			r.Cells[sign65].Stats = &artifacts.Stats{N: r.Cells[sign65].Stats.N, Min: 1, P25: 1, Median: 1, P75: 1, Max: 1, Mean: 1}
		}, "(ML-DSA-65 sign) stats.min"},
		{"a cell outside the manifest", func(r *artifacts.Result, s *[]byte) {
			r.Cells[0].Algorithm = "ML-DSA-999"
			*s = bytes.ReplaceAll(*s, []byte("ML-DSA-44,keygen"), []byte("ML-DSA-999,keygen"))
		}, "the manifest does not ask for this cell"},
		{"MaxCells+1 cells", manyCells(artifacts.MaxCells + 1), "more than the limit of 4096"},
		{"90,000 cells", manyCells(90000), "more than the limit of 4096"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sub.Submit(ctx, forge(t, good, id, tc.edit))
			if !errors.Is(err, runner.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want refused saying %q", err, tc.want)
			}
			if runs, blobs := stored(t, p); runs != 0 || blobs != 0 {
				t.Fatalf("after a forged bundle: %d runs, %d blobs stored", runs, blobs)
			}
		})
	}
	if _, err := sub.Submit(ctx, good); err != nil {
		t.Fatalf("the honest bundle: %v", err)
	}
}
