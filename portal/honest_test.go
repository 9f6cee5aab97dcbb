package portal_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner"
)

// TestJobWithNoOkCellFailsWithTheReason: a job's bundle in which no cell ran ok is not
// published; the job fails saying why.
func TestJobWithNoOkCellFailsWithTheReason(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	m := smallManifest(t, 2)
	job := queueJob(t, p, m)
	r := enrol(t, p, "lab")
	l, err := r.client.Lease(ctx, 0)
	if err != nil || l == nil || l.JobID != job {
		t.Fatalf("lease: %+v %v", l, err)
	}
	none := forge(t, runnerBundle(t, m, r.id, l), r.id, func(res *artifacts.Result, _ *[]byte) {
		for i := range res.Cells {
			res.Cells[i].Status, res.Cells[i].Error, res.Cells[i].Stats, res.Cells[i].Memory = artifacts.StatusFailed, "the board faulted", nil, nil
		}
	})
	_, err = r.client.Complete(ctx, l.JobID, l.LeaseID, none)
	if !errors.Is(err, runner.ErrRefused) || !strings.Contains(err.Error(), "no cell ran ok") {
		t.Fatalf("completion: %v, want refused: no cell ran ok", err)
	}
	if runs, blobs := stored(t, p); runs != 0 || blobs != 0 {
		t.Errorf("%d runs, %d blobs stored for a run that measured nothing", runs, blobs)
	}
	j, _ := p.Server.Store().Job(ctx, job)
	if j.State != store.JobFailed || !strings.Contains(j.Error, "the board faulted") || !strings.Contains(j.Error, "of 9 cells") {
		t.Errorf("job %s with error %q, want failed with the cells' reason", j.State, j.Error)
	}
	_, body := newBrowser(t, p.URL).get("/jobs/" + itoa(job))
	if !strings.Contains(body, "the board faulted") || !strings.Contains(body, "step-failed") {
		t.Errorf("the job page does not show the failure and its reason")
	}
}

// TestPagesAreCompressedWithAMaskedCSRFToken: pages are gzip-compressed for clients that
// accept it, and the CSRF token in them differs in every response (BREACH), yet forms work.
func TestPagesAreCompressedWithAMaskedCSRFToken(t *testing.T) {
	p := portaltest.Start(t, nil)
	b := newBrowser(t, p.URL)
	b.signIn(p.AdminToken)
	get := func() (string, string) {
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/firmware", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := b.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("page not compressed: %q", resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(zr)
		m := csrfRE.FindSubmatch(page)
		if m == nil {
			t.Fatalf("no CSRF field in the signed-in page")
		}
		return string(page), string(m[1])
	}
	_, tok1 := get()
	_, tok2 := get()
	if tok1 == tok2 || !strings.HasPrefix(tok1, "m1.") {
		t.Errorf("CSRF tokens %q and %q: want a fresh mask per response", tok1, tok2)
	}
	// A masked token from either response is accepted; a wrong one is not.
	if code, loc, _ := b.post("/signout", map[string][]string{"_csrf": {tok1}}); code != http.StatusSeeOther || loc != "/" {
		t.Errorf("sign-out with a masked token: %d %s", code, loc)
	}
	b2 := newBrowser(t, p.URL)
	b2.signIn(p.AdminToken)
	if code, _, _ := b2.post("/signout", map[string][]string{"_csrf": {"m1.AAAA"}}); code != http.StatusForbidden && code != http.StatusBadRequest {
		t.Errorf("sign-out with a forged token: %d", code)
	}
	// The administrator's page showing a new token once is not compressed.
	b2.get("/admin")
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/admin", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	b2.post("/admin/enrol-tokens", map[string][]string{"label": {"lab"}})
	resp, err := b2.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") == "gzip" || !bytes.Contains(page, []byte(`id="new-token"`)) {
		t.Errorf("the page showing a new token: encoding %q, token shown %v", resp.Header.Get("Content-Encoding"), bytes.Contains(page, []byte(`id="new-token"`)))
	}
}

// TestPaperPageIsSmallAndGrouped: paper002's first screen is under 100 KB, its reference
// numbers grouped with a page per group.
func TestPaperPageIsSmallAndGrouped(t *testing.T) {
	p := portaltest.Start(t, nil)
	b := newBrowser(t, p.URL)
	code, body := b.get("/papers/paper002")
	if code != http.StatusOK || len(body) >= 100<<10 {
		t.Fatalf("/papers/paper002: %d, %d bytes, want under 100 KB", code, len(body))
	}
	m := regexp.MustCompile(`href="(/papers/paper002/reference\?[^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no reference group links on the paper page")
	}
	code, group := b.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	if code != http.StatusOK || !strings.Contains(group, `<details class="ref-group"`) || !strings.Contains(group, "published") {
		t.Errorf("reference group page: %d", code)
	}
	if code, _ := b.get("/papers/paper002/reference?board=no-such-board"); code != http.StatusNotFound {
		t.Errorf("unknown group: %d, want 404", code)
	}
	// A small paper keeps its reference numbers in place, grouped and collapsible.
	if _, body := b.get("/papers/paper001"); !strings.Contains(body, `<details class="ref-group"`) {
		t.Errorf("paper001's reference numbers are not grouped in place")
	}
}

// TestFaviconAndStylesheets: the icon and both stylesheets are served (no 404 on any page).
func TestFaviconAndStylesheets(t *testing.T) {
	p := portaltest.Start(t, nil)
	b := newBrowser(t, p.URL)
	if code, _, _ := func() (int, string, string) {
		resp, err := b.c.Get(p.URL + "/favicon.ico")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location"), ""
	}(); code != http.StatusMovedPermanently {
		t.Errorf("/favicon.ico: %d", code)
	}
	for _, path := range []string{"/static/favicon.svg", "/static/style.css", "/static/browse.css"} {
		if code, _ := b.get(path); code != http.StatusOK {
			t.Errorf("%s: %d", path, code)
		}
	}
	_, home := b.get("/")
	for _, want := range []string{`rel="icon"`, `/static/browse.css`, `href="/runs"`, `prefers-color-scheme`} {
		if want == `prefers-color-scheme` {
			_, css := b.get("/static/style.css")
			if !strings.Contains(css, want) || !strings.Contains(css, ":focus-visible") || !strings.Contains(css, "@media (max-width") {
				t.Errorf("style.css lacks dark mode, visible focus or a narrow-screen rule")
			}
			continue
		}
		if !strings.Contains(home, want) {
			t.Errorf("the home page lacks %s", want)
		}
	}
	if strings.Contains(home, "runner(s)") || strings.Contains(home, "experiment(s)") {
		t.Errorf("the home page says runner(s) or experiment(s)")
	}
}

// TestRebuildRederivesOldReports: a run whose stored report predates report versions is
// labelled on its page, and pqrepro rebuild re-derives it (and its cells' key form and
// requested count) from the bundle.
func TestRebuildRederivesOldReports(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	id := mustIdentity(t)
	c := registeredSubmitter(t, p, "lab-two", id)
	resp, err := c.Submit(ctx, signedBundle(t, smallManifest(t, 3), id, attest.OriginCommunity))
	if err != nil {
		t.Fatal(err)
	}
	st := p.Server.Store()
	run, _ := st.Run(ctx, resp.RunID)
	if run.ReportVersion != portal.ReportVersion {
		t.Fatalf("a new run's report version is %d, want %d", run.ReportVersion, portal.ReportVersion)
	}
	cells, _ := st.Cells(ctx, run.ID)
	if cells[1].Requested != 3 || cells[1].Keys == "" {
		t.Fatalf("stored cell: requested %d, keys %q", cells[1].Requested, cells[1].Keys)
	}
	// Make it look like a run published before versions: no version, no cell details.
	if err := st.SaveRebuilt(ctx, store.Rebuilt{RunID: run.ID, Report: run.Report, ReportVersion: 0, Cells: make([]artifacts.Cell, len(cells))}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, p.URL)
	if _, body := b.get("/runs/" + itoa(run.ID)); !strings.Contains(body, `id="report-note"`) {
		t.Errorf("a report older than the portal's is not labelled")
	}
	stats, err := p.Server.Rebuild(ctx, false)
	if err != nil || stats.Rebuilt != 1 || stats.Failed != 0 {
		t.Fatalf("rebuild: %+v %v", stats, err)
	}
	after, _ := st.Run(ctx, run.ID)
	cells, _ = st.Cells(ctx, run.ID)
	if after.ReportVersion != portal.ReportVersion || cells[1].Requested != 3 || cells[1].Keys == "" {
		t.Errorf("after rebuild: version %d, requested %d, keys %q", after.ReportVersion, cells[1].Requested, cells[1].Keys)
	}
	if _, body := b.get("/runs/" + itoa(run.ID)); strings.Contains(body, `id="report-note"`) {
		t.Errorf("the rebuilt report is still labelled old")
	}
	if stats, _ := p.Server.Rebuild(ctx, false); stats.Rebuilt != 0 {
		t.Errorf("a second rebuild redid %d current reports", stats.Rebuilt)
	}
}

// TestRunPageIsHonest: a published host run's page prints each row in the unit of its Unit
// column, names circl (not the portal's own modules) as the library that ran, and links to
// the comparison.
func TestRunPageIsHonest(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	id := mustIdentity(t)
	c := registeredSubmitter(t, p, "lab", id)
	resp, err := c.Submit(ctx, signedBundle(t, smallManifest(t, 3), id, attest.OriginCommunity))
	if err != nil {
		t.Fatal(err)
	}
	_, body := newBrowser(t, p.URL).get("/runs/" + itoa(resp.RunID))
	row := regexp.MustCompile(`(?s)<th scope="row">ML-KEM-768</th>\s*<td>encaps</td>.*?<td class="num median">([^<]*)</td>\s*<td>([^<]*)</td>`).FindStringSubmatch(body)
	if row == nil {
		t.Fatalf("no ML-KEM-768 encaps row with a median and a unit")
	}
	if med, unit := strings.TrimSpace(row[1]), row[2]; strings.ContainsAny(med, "µmns ") || (unit != "ns" && unit != "µs" && unit != "ms") {
		t.Errorf("median %q beside unit %q", med, unit)
	}
	libs := regexp.MustCompile(`<dt>Libraries</dt><dd>([^<]*)</dd>`).FindStringSubmatch(body)
	if libs == nil || !strings.Contains(libs[1], "github.com/cloudflare/circl") || strings.Contains(libs[1], "echo") || strings.Contains(libs[1], "sqlite") {
		t.Errorf("libraries %q: want circl, not the portal's own modules", libs)
	}
	for _, want := range []string{`href="/compare?runs=` + itoa(resp.RunID) + `"`, `class="table-scroll"`} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %s", want)
		}
	}
}
