package portal_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// TestWithdrawalCancelsQueuedJobs: withdrawing a firmware build cancels the jobs still queued
// that would flash it, and each one's page says so with the reason; the withdrawal's answer
// names them.
func TestWithdrawalCancelsQueuedJobs(t *testing.T) {
	p := portaltest.Start(t, nil)
	enrol(t, p, "lab") // offers the host board; it never leases, so jobs stay queued
	ctx := context.Background()
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/firmware")
	fields := map[string]string{"board_class": "host", "toolchain": "gcc 14", "libraries": "mlkem 1",
		"source_url": "https://example.org/fw", "source_commit": "0123abcd"}
	if code, _, body := admin.upload("/firmware", fields, "file", "bad.elf", armELF(700)); code != http.StatusSeeOther {
		t.Fatalf("upload: %d %s", code, body)
	}
	fw, err := p.Server.Store().FirmwareBuilds(ctx, "host")
	if err != nil || len(fw) != 1 {
		t.Fatalf("builds: %v %v", fw, err)
	}
	digest := fw[0].Digest
	var jobs []string
	for _, firmware := range []string{digest, digest, ""} {
		admin.get("/experiments/paper001/mlkem")
		code, loc, body := admin.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {"host"}, "firmware": {firmware}, "iterations": {"2"}})
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/jobs/") {
			t.Fatalf("queue a job: %d %s %s", code, loc, body)
		}
		jobs = append(jobs, loc)
	}
	admin.get("/firmware")
	code, page := admin.postFollow("/firmware/"+digest+"/withdraw", url.Values{"reason": {"miscompiled: wrong stack size"}})
	want := fmt.Sprintf("2 queued job(s) that would have flashed it were cancelled: #%s, #%s", strings.TrimPrefix(jobs[0], "/jobs/"), strings.TrimPrefix(jobs[1], "/jobs/"))
	if code != http.StatusOK || !strings.Contains(page, want) {
		t.Errorf("the withdrawal's answer does not name the cancelled jobs (%q): %d", want, code)
	}
	for _, loc := range jobs[:2] {
		_, body := admin.get(loc)
		if !strings.Contains(body, `id="job-cancelled"`) || !strings.Contains(body, "miscompiled: wrong stack size") || !strings.Contains(body, digest) {
			t.Errorf("%s does not say it was cancelled by the withdrawal, with the reason", loc)
		}
		if strings.Contains(body, "Failed:") {
			t.Errorf("%s calls a job cancelled before it started failed", loc)
		}
	}
	var id int64
	fmt.Sscanf(jobs[2], "/jobs/%d", &id)
	if j, err := p.Server.Store().Job(ctx, id); err != nil || j.State != store.JobQueued {
		t.Errorf("the job without the build: %s %v, want it still queued", j.State, err)
	}
}
