package portal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// TestPageListsAreBoundedWithALinkToTheRest publishes more runs and queues more jobs than the
// pages list, and checks each page shows its one page of rows with a link to the filtered
// /runs or /jobs view, and no link where everything fits.
func TestPageListsAreBoundedWithALinkToTheRest(t *testing.T) {
	p := portaltest.Start(t, nil)
	st := p.Server.Store()
	ctx := context.Background()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	publish := func(i int, paper, exp string) {
		run := store.Run{Experiment: exp, Paper: paper, ManifestID: "sha256:m", Kind: "kem-bench", Method: "in-process", BoardClass: "host", BoardName: "host",
			Level: "host", Origin: "community", Signer: id.Public().Fingerprint(), PublicKeys: id.Public(), Bundle: digestOf(fmt.Sprint("page-run", i)),
			StartedAt: time.Now(), FinishedAt: time.Now(), Environment: "{}", Report: "{}", Checks: "[]"}
		if _, err := st.Publish(ctx, store.Publication{Run: run}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 101 {
		publish(i, "paper001", "paper001/mlkem")
	}
	for i := range 3 {
		publish(1000+i, "paper003", "paper003/x")
	}
	for range 12 {
		if _, err := st.CreateJob(ctx, store.NewJob{Experiment: "paper001/mlkem", Paper: "paper001", ManifestYAML: "kind: x", ManifestID: "sha256:m", BoardClass: "host"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path      string
		runs      int
		links     []string
		noLinks   []string
		jobsShown int
	}{
		{"/", 15, []string{`href="/runs"`, `href="/jobs?state=queued"`}, []string{`href="/jobs?state=running"`}, 10},
		{"/papers/paper001", 30, []string{`href="/runs?paper=paper001"`}, nil, 0},
		{"/papers/paper003", 3, nil, []string{`href="/runs?paper=paper003"`}, 0},
		{"/boards/host", 30, []string{`href="/runs?board=host"`}, nil, 0},
		{"/experiments/paper001/mlkem", 30, []string{`href="/runs?experiment=paper001%2Fmlkem"`, `href="/jobs?experiment=paper001%2Fmlkem"`}, nil, 10},
	} {
		a := fetch(t, p.URL+tc.path)
		if a.code != 200 {
			t.Fatalf("%s: %d", tc.path, a.code)
		}
		if got := len(pageRuns(a.body)); got != tc.runs {
			t.Errorf("%s: %d runs listed, want %d", tc.path, got, tc.runs)
		}
		for _, l := range tc.links {
			if !strings.Contains(a.body, l) {
				t.Errorf("%s: no link %s", tc.path, l)
			}
		}
		for _, l := range tc.noLinks {
			if strings.Contains(a.body, l) {
				t.Errorf("%s: a link %s to nothing more", tc.path, l)
			}
		}
		if got := strings.Count(a.body, `<a href="/jobs/`); got != tc.jobsShown {
			t.Errorf("%s: %d jobs listed, want %d", tc.path, got, tc.jobsShown)
		}
	}
}
