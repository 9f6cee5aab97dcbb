package portal_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"pqrepro/portal/portaltest"
	"pqrepro/portal/translog"
	"pqrepro/portal/translog/litewitnesstest"
	"pqrepro/runner/host"
)

// TestLitewitnessWitnessesThePortal registers litewitness (a C2SP tlog-witness nobody here
// wrote, Ed25519 keys only, its key in an ssh-agent) on the admin page by its URL; the portal's
// sequencer pushes each checkpoint to it; the portal serves its cosignatures in the checkpoint,
// publishes the witness policies, and the run page and /api/v1/log say which are satisfied.
func TestLitewitnessWitnessesThePortal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := portaltest.Start(t, nil)
	done := make(chan struct{})
	go func() { p.Server.SequenceLog(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	logKey := p.Server.Log().VerifierKey()
	lw := litewitnesstest.Start(t, "witness.example/lite", p.Server.Log().Origin(), logKey)

	s := newSubmitter(t, p)
	if code, body := s.submit(t, p, s.bundle(t, &host.Host{}, smallManifest(t, 3))); code != http.StatusOK {
		t.Fatalf("submit: %d %s", code, body)
	}
	waitLog(t, p, func(cp string) bool { return strings.Contains(cp, "\n1\n") })
	// Viewed before any witness is registered: the run page's policy results are kept for
	// the checkpoint and policies they were checked on, and must not outlive either.
	if _, page := get(t, p.URL+"/runs/1"); strings.Contains(page, "<strong>satisfied</strong>") {
		t.Errorf("the run page says a policy is satisfied before any witness was registered")
	}

	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/admin")
	if code, _, body := admin.post("/admin/log/witnesses", url.Values{"ed25519": {lw.VKey}, "url": {lw.URL}}); code != http.StatusOK || !strings.Contains(body, "witness.example/lite") {
		t.Fatalf("register litewitness by URL: %d %s\n%s", code, body, lw.Output())
	}
	trust := translog.Trust{LogKey: logKey, Witnesses: []string{lw.VKey}}
	if _, cp := get(t, p.URL+"/log/checkpoint"); !witnessed(cp, trust, 1) {
		t.Fatalf("checkpoint after registration:\n%s", cp)
	}

	// A second publication: the sequencer pushes the new checkpoint with a consistency proof.
	if code, body := s.submit(t, p, s.bundle(t, &host.Host{}, smallManifest(t, 4))); code != http.StatusOK {
		t.Fatalf("submit: %d %s", code, body)
	}
	cp := waitLog(t, p, func(cp string) bool { return witnessed(cp, trust, 2) })

	_, text := get(t, p.URL+"/log/policy")
	pol, err := translog.ParsePolicy([]byte(text))
	if err != nil {
		t.Fatalf("/log/policy: %v\n%s", err, text)
	}
	if r, err := translog.CheckPolicy([]byte(cp), pol); err != nil || !r.Satisfied || r.Cosigned[0] != "witness.example/lite" {
		t.Fatalf("ecosystem policy: %+v %v\n%s", r, err, text)
	}
	if !strings.Contains(text, "witness witness.example/lite "+lw.VKey+" "+lw.URL) || !strings.Contains(text, "quorum ecosystem") {
		t.Errorf("/log/policy:\n%s", text)
	}
	if code, text := get(t, p.URL+"/log/policy/post-quantum"); code != http.StatusOK || !strings.Contains(text, "quorum none") {
		t.Errorf("/log/policy/post-quantum with no ML-DSA-44 witness: %d\n%s", code, text)
	}
	var info struct {
		Policies []translog.PolicyResult `json:"policies"`
	}
	getJSON(t, p.URL+"/api/v1/log", &info)
	if len(info.Policies) != 2 || !info.Policies[0].Satisfied || info.Policies[0].Policy != translog.PolicyEcosystem {
		t.Errorf("/api/v1/log policies: %+v", info.Policies)
	}
	for _, run := range []string{"/runs/2", "/runs/1"} {
		_, page := get(t, p.URL+run)
		if !strings.Contains(page, "ecosystem witness policy</a>:") || !strings.Contains(page, "<strong>satisfied</strong>") {
			t.Errorf("%s does not say the ecosystem policy is satisfied", run)
		}
	}
}

func witnessed(cp string, trust translog.Trust, size int64) bool {
	vc, err := translog.VerifyCheckpoint([]byte(cp), trust)
	return err == nil && vc.Size == size
}

// waitLog polls the served checkpoint until ok holds (the sequencer runs every few seconds).
func waitLog(t *testing.T, p *portaltest.Portal, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var cp string
	for time.Now().Before(deadline) {
		var code int
		code, cp = get(t, p.URL+"/log/checkpoint")
		if code == http.StatusOK && ok(cp) {
			return cp
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the checkpoint never got there:\n%s", cp)
	return ""
}
