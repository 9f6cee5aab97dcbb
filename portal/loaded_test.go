package portal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/compare"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/host"
)

// TestLoadedRunIsShownNotVerdicted: a host run whose environment.json says other processes
// used the CPU above the threshold is published with its checks computed and shown, every
// timed claim not verdicted with that reason, and its cells out of the home page's highlights.
func TestLoadedRunIsShownNotVerdicted(t *testing.T) {
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	m := smallManifest(t, 6)
	b, _, err := runner.Execute(context.Background(), &host.Host{}, m, runner.Options{Identity: s.id, Version: "test", Origin: attest.OriginLocal})
	if err != nil {
		t.Fatal(err)
	}
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		t.Fatal(err)
	}
	env.Timing.External = &artifacts.ExternalLoad{Method: "test", Seconds: 3, Intervals: 3, CPUs: []float64{0.9, 1.1, 1}, Mean: 1, P90: 1.08, Max: 1.1, Threshold: 0.2, Exceeded: true}
	env.Timing.Loaded = true
	b.Files[artifacts.FileEnvironment], _ = json.MarshalIndent(env, "", "  ")
	summary, _ := json.Marshal(map[string]string{"experiment": m.Ref()})
	if err := attest.Sign(b, s.id, attest.Predicate{Summary: summary, Runner: attest.RunnerRef{Name: "pqrepro-runner", Version: "test"},
		Assurance: attest.Assurance{Level: artifacts.AssuranceHost, Origin: attest.OriginLocal}, CreatedAt: time.Now().UTC().Truncate(time.Second)}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	if code, body := s.submit(t, p, buf.Bytes()); code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	ctx := context.Background()
	runs, err := p.Server.Store().Runs(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %d, %v", len(runs), err)
	}
	r, err := p.Server.Store().Run(ctx, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var rep compare.Report
	if err := json.Unmarshal([]byte(r.Report), &rep); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, cr := range rep.Claims {
		if cr.Claim.Scope != "" || len(cr.Checks) == 0 {
			continue
		}
		checked++
		if cr.Verdict != compare.NotVerdicted || !strings.Contains(cr.Reason, "other processes used the CPU") {
			t.Errorf("%s: %s (%s)", cr.Claim.ID, cr.Verdict, cr.Reason)
		}
		if cr.Checks[0].Verdict == compare.Untestable || len(cr.Checks[0].Intervals) == 0 {
			t.Errorf("%s: the checks of a loaded run must be computed and shown: %+v", cr.Claim.ID, cr.Checks[0])
		}
	}
	if checked == 0 {
		t.Fatal("no claim with checks")
	}
	verdicts, err := p.Server.Store().ClaimVerdicts(ctx, "paper001", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range verdicts {
		if v.Verdict == compare.Holds || v.Verdict == compare.Fails || v.Verdict == compare.Inconclusive {
			t.Errorf("a loaded run was tallied: %+v", v)
		}
	}
	if err := p.Server.RefreshHighlights(ctx); err != nil {
		t.Fatal(err)
	}
	rows, _, err := p.Server.Store().Highlights(ctx, "ML-KEM-768", "encaps", store.MetricLatency)
	if err != nil || len(rows) != 0 {
		t.Errorf("highlights %+v, %v: a loaded run's cells stay out", rows, err)
	}
	code, page := get(t, p.URL+"/runs/"+itoa(runs[0].ID))
	for _, want := range []string{"Other processes", "mean 1.00 CPUs", "other processes used the CPU"} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("run page (%d) lacks %q", code, want)
		}
	}
}
