package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/portal/portaltest"
)

// TestTLSMatrixReRunWithFewIterations: the re-run form follows pqrepro run's iteration rule.
// A TLS matrix re-run with fewer iterations than its CPU batch (10) is queued with the batch
// lowered to the iterations, and the job page says so; the queued manifest validates.
func TestTLSMatrixReRunWithFewIterations(t *testing.T) {
	p := portaltest.Start(t, nil)
	enrol(t, p, "lab") // a runner offering the host board
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/experiments/paper000/matrix-stacks")
	code, loc, body := admin.post("/experiments/paper000/matrix-stacks/jobs", url.Values{"board": {"host"}, "iterations": {"5"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/jobs/") {
		t.Fatalf("re-run with 5 iterations: %d %s %s", code, loc, body)
	}
	var id int64
	fmt.Sscanf(loc, "/jobs/%d", &id)
	j, err := p.Server.Store().Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	m, err := artifacts.ParseManifest([]byte(j.ManifestYAML), "job")
	if err != nil {
		t.Fatalf("queued manifest: %v", err)
	}
	if m.Spec.Iterations != 5 || m.Spec.TLS == nil || m.Spec.TLS.Batch != 5 {
		t.Errorf("queued manifest: %d iterations, tls %+v; want 5 and batch 5", m.Spec.Iterations, m.Spec.TLS)
	}
	if _, page := admin.get(loc); !strings.Contains(page, "spec.tls.batch lowered to 5 to fit 5 iterations") {
		t.Error("the job page does not say the batch was lowered")
	}
}
