package portal_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// reply is one response as a client saw it.
type reply struct {
	code   int
	header http.Header
	body   string
}

// visitor is a client with its own cookies, answering redirects as they are.
type visitor struct {
	t *testing.T
	c *http.Client
}

func newVisitor(t *testing.T) *visitor {
	jar, _ := cookiejar.New(nil)
	return &visitor{t, &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get requests u with the given header lines ("Name: value"); a gzip reply to an explicit
// Accept-Encoding is decompressed and checked.
func (v *visitor) get(u string, header ...string) reply {
	v.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		v.t.Fatal(err)
	}
	for _, h := range header {
		k, val, _ := strings.Cut(h, ": ")
		req.Header.Set(k, val)
	}
	resp, err := v.c.Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		v.t.Fatal(err)
	}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			v.t.Fatalf("GET %s: gzip reply: %v", u, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			v.t.Fatalf("GET %s: gzip reply: %v", u, err)
		}
	}
	return reply{resp.StatusCode, resp.Header, string(body)}
}

// cookie is the visitor's cookie name for u.
func (v *visitor) cookie(u, name string) string {
	pu, _ := url.Parse(u)
	for _, c := range v.c.Jar.Cookies(pu) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// unmask returns the CSRF token a page's masked form field carries (compress.go's format).
func unmask(t *testing.T, masked string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(masked, "m1.")
	if !ok {
		t.Fatalf("CSRF field %q is not masked", masked)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b)%2 != 0 {
		t.Fatalf("CSRF field %q: %v", masked, err)
	}
	n := len(b) / 2
	out := make([]byte, n)
	for i := range n {
		out[i] = b[i] ^ b[n+i]
	}
	return string(out)
}

// warmed gets u until it is answered from the cache (background work, such as the summary
// job or an event from another replica, may change a counter between two requests) and
// returns that answer.
func (v *visitor) warmed(u string) reply {
	v.t.Helper()
	for range 20 {
		if a := v.get(u); a.code == http.StatusOK && a.header.Get("X-Cache") == "hit" {
			return a
		}
	}
	v.t.Fatalf("GET %s: never answered from the cache in 20 requests", u)
	return reply{}
}

func wantCache(t *testing.T, what string, a reply, how string) {
	t.Helper()
	if a.code != http.StatusOK {
		t.Fatalf("%s: %d %.300s", what, a.code, a.body)
	}
	if got := a.header.Get("X-Cache"); got != how {
		t.Fatalf("%s: X-Cache %q, want %q", what, got, how)
	}
}

// TestPageCacheRevalidatesAndFollowsTheStore: an anonymous page is rendered once and then
// served from memory with a weak ETag (an If-None-Match holding it is answered 304 without a
// body) and `Cache-Control: public, no-cache`, compressed for clients that accept gzip; a
// publication and a revocation made straight in the store, which this portal's handlers never
// see, are on the next reply of every page that shows them.
func TestPageCacheRevalidatesAndFollowsTheStore(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	r := enrol(t, p, "cache runner")
	run1 := publishAs(t, p, r)
	anon := newVisitor(t)
	pages := []string{"/api/v1/runs", "/runs", "/papers/paper001", "/"}

	for _, path := range pages {
		first := anon.get(p.URL + path)
		wantCache(t, "first GET "+path, first, "miss")
		second := anon.warmed(p.URL + path)
		if second.body != first.body {
			t.Fatalf("GET %s: the cached reply differs from the rendered one", path)
		}
		etag := second.header.Get("ETag")
		if !strings.HasPrefix(etag, `W/"`) || etag != first.header.Get("ETag") {
			t.Fatalf("GET %s: ETag %q then %q", path, first.header.Get("ETag"), etag)
		}
		if path == "/api/v1/runs" && second.header.Get("Cache-Control") != "public, no-cache" {
			t.Fatalf("GET %s: Cache-Control %q", path, second.header.Get("Cache-Control"))
		}
		if nm := anon.get(p.URL+path, "If-None-Match: "+etag); nm.code != http.StatusNotModified || nm.body != "" {
			t.Fatalf("GET %s with its ETag: %d, %d bytes; want 304 without a body", path, nm.code, len(nm.body))
		}
		gz := anon.get(p.URL+path, "Accept-Encoding: gzip")
		if len(first.body) >= 1024 && gz.header.Get("Content-Encoding") != "gzip" || gz.body != first.body {
			t.Fatalf("GET %s accepting gzip: encoding %q, same body %v", path, gz.header.Get("Content-Encoding"), gz.body == first.body)
		}
	}

	run2 := publishAs(t, p, r) // through the runner protocol: the handler drops this process's cache
	link := "/runs/" + strconv.FormatInt(run2, 10)
	for _, path := range pages[1:] {
		if a := anon.get(p.URL + path); !strings.Contains(a.body, link) {
			t.Fatalf("GET %s after run %d was published: %s, no link to it", path, run2, a.header.Get("X-Cache"))
		}
	}

	// A publication straight in the store (as another process on the same database would
	// make it: no handler here runs, no event is heard): the change counters alone must tell.
	runPage := "/runs/" + strconv.FormatInt(run1, 10)
	api := "/api/v1/runs/" + strconv.FormatInt(run1, 10)
	for _, path := range []string{runPage, api, "/api/v1/runs"} {
		anon.warmed(p.URL + path)
	}
	run, err := p.Server.Store().Run(ctx, run2)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := p.Server.Store().Cells(ctx, run2)
	if err != nil {
		t.Fatal(err)
	}
	pub := storePublication(run, cells)
	run3, err := p.Server.Store().Publish(ctx, pub)
	if err != nil {
		t.Fatal(err)
	}
	var listed []struct {
		ID int64 `json:"id"`
	}
	a := anon.get(p.URL + "/api/v1/runs")
	if err := json.Unmarshal([]byte(a.body), &listed); err != nil || len(listed) == 0 || listed[0].ID != run3 {
		t.Fatalf("/api/v1/runs after run %d was published in the store (%s): %.200s (%v)", run3, a.header.Get("X-Cache"), a.body, err)
	}

	// A revocation straight in the store flags the runner's runs on their pages at once.
	if err := p.Server.Store().RevokeRunner(ctx, runnerIDOf(t, p, "cache runner")); err != nil {
		t.Fatal(err)
	}
	if a := anon.get(p.URL + runPage); !strings.Contains(a.body, `id="signer-revoked"`) {
		t.Fatalf("run %d's page after its runner was revoked (%s) does not say so", run1, a.header.Get("X-Cache"))
	}
	if a := anon.get(p.URL + api); !strings.Contains(a.body, `"signerRevoked"`) {
		t.Fatalf("run %d's JSON after its runner was revoked (%s) does not say so", run1, a.header.Get("X-Cache"))
	}
}

// TestPageCacheNeverServesOneUsersPage: a signed-in page is rendered for its user, never kept
// and marked private; anonymous visitors share one cached page, but each gets the CSRF token
// of its own cookie (masked afresh), which its form posts are then accepted with; a page with
// a flash message is shown once, to whom it was for.
func TestPageCacheNeverServesOneUsersPage(t *testing.T) {
	p := portaltest.Start(t, nil)
	const page = "/experiments/paper001/mlkem"
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)

	a, b := newVisitor(t), newVisitor(t)
	wantCache(t, "visitor a", a.get(p.URL+page), "miss")
	for i := range 3 {
		code, body := admin.get(page)
		if code != http.StatusOK || !strings.Contains(body, "signed in as") {
			t.Fatalf("the administrator's page %d: %d, signed in: %v", i, code, strings.Contains(body, "signed in as"))
		}
	}
	resp, err := admin.c.Get(p.URL + page)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Cache") != "bypass" || resp.Header.Get("Cache-Control") != "private, no-cache" || resp.Header.Get("ETag") != "" {
		t.Fatalf("a signed-in page: X-Cache %q, Cache-Control %q, ETag %q", resp.Header.Get("X-Cache"), resp.Header.Get("Cache-Control"), resp.Header.Get("ETag"))
	}
	for name, v := range map[string]*visitor{"a": a, "b": b} {
		ans := v.warmed(p.URL + page)
		if strings.Contains(ans.body, "signed in as") || strings.Contains(ans.body, "Admin</a>") {
			t.Fatalf("visitor %s got a signed-in page", name)
		}
		m := csrfRE.FindStringSubmatch(ans.body)
		if m == nil {
			t.Fatalf("visitor %s: no CSRF field on %s", name, page)
		}
		own := v.cookie(p.URL, "pqrepro_csrf")
		if own == "" || unmask(t, m[1]) != own {
			t.Fatalf("visitor %s: the cached page carries token %q, the visitor's cookie is %q", name, unmask(t, m[1]), own)
		}
		if ans.header.Get("Cache-Control") != "private, no-cache" {
			t.Fatalf("visitor %s: a page with a CSRF form is %q", name, ans.header.Get("Cache-Control"))
		}
		// The token from the cached page is accepted: the sign-in fails on its token, not on CSRF.
		form := url.Values{"_csrf": {m[1]}, "token": {"not-a-token-not-a-token"}}
		pr, err := v.c.PostForm(p.URL+"/signin", form)
		if err != nil {
			t.Fatal(err)
		}
		pr.Body.Close()
		if pr.StatusCode != http.StatusUnauthorized {
			t.Fatalf("visitor %s posting the cached page's token: %d, want 401 (CSRF accepted, token wrong)", name, pr.StatusCode)
		}
	}
	if ea, eb := a.get(p.URL+page).header.Get("ETag"), b.get(p.URL+page).header.Get("ETag"); ea == eb {
		t.Fatalf("two visitors' pages with different CSRF tokens share the ETag %s", ea)
	}

	// A flash message is shown to the one it was for, and the page is not kept with it.
	wantCache(t, "warm /", b.get(p.URL+"/"), "miss")
	flash := &http.Cookie{Name: "pqrepro_flash", Value: base64.RawURLEncoding.EncodeToString([]byte(`{"k":"ok","m":"Shown once."}`))}
	pu, _ := url.Parse(p.URL)
	a.c.Jar.SetCookies(pu, []*http.Cookie{flash})
	if ans := a.get(p.URL + "/"); ans.header.Get("X-Cache") != "bypass" || !strings.Contains(ans.body, "Shown once.") {
		t.Fatalf("a page with a flash message: X-Cache %q, shows it: %v", ans.header.Get("X-Cache"), strings.Contains(ans.body, "Shown once."))
	}
	for name, v := range map[string]*visitor{"a": a, "b": b} {
		if ans := v.get(p.URL + "/"); strings.Contains(ans.body, "Shown once.") {
			t.Fatalf("visitor %s sees the flash message again (%s)", name, ans.header.Get("X-Cache"))
		}
	}
}

// TestPageCacheNeverStaleAcrossReplicas: three replicas on one PostgreSQL database each cache
// the pages and the JSON of the runs; a publication through one replica and a revocation
// through another are on every replica's next reply (no waiting: the change counters are read
// from the shared database with every request), and the caches serve hits again afterwards.
func TestPageCacheNeverStaleAcrossReplicas(t *testing.T) {
	s := startSite(t, 3, nil)
	r := enrol(t, s.replicas[0], "replicated runner")
	run1 := publishAs(t, s.replicas[0], r)
	v := newVisitor(t)
	lists := []string{"/runs", "/", "/papers/paper001", "/api/v1/runs"}
	one := []string{"/runs/" + strconv.FormatInt(run1, 10), "/api/v1/runs/" + strconv.FormatInt(run1, 10)}
	warm := func(paths []string) {
		t.Helper()
		for i, rp := range s.replicas {
			for _, path := range paths {
				if a := v.warmed(rp.URL + path); a.code != http.StatusOK {
					t.Fatalf("replica %d, GET %s: %d", i, path, a.code)
				}
			}
		}
	}
	warm(append(lists, one...))

	run2 := publishAs(t, s.replicas[2], r)
	for i, rp := range s.replicas {
		for _, path := range lists {
			a := v.get(rp.URL + path)
			if !strings.Contains(a.body, "/runs/"+strconv.FormatInt(run2, 10)) && !strings.Contains(a.body, `"id":`+strconv.FormatInt(run2, 10)) {
				t.Fatalf("replica %d, GET %s right after run %d was published through replica 2 (%s): it is not there", i, path, run2, a.header.Get("X-Cache"))
			}
		}
	}
	warm(one)

	admin := newBrowser(t, s.replicas[1].URL)
	admin.signIn(s.replicas[1].AdminToken)
	admin.get("/admin")
	code, _ := admin.postFollow("/admin/runners/"+strconv.FormatInt(runnerIDOf(t, s.replicas[1], "replicated runner"), 10)+"/revoke", url.Values{})
	if code != http.StatusOK {
		t.Fatalf("revoke the runner through replica 1: %d", code)
	}
	for i, rp := range s.replicas {
		if a := v.get(rp.URL + one[0]); !strings.Contains(a.body, `id="signer-revoked"`) {
			t.Fatalf("replica %d: run %d's page right after its runner was revoked through replica 1 (%s) does not say so", i, run1, a.header.Get("X-Cache"))
		}
		if a := v.get(rp.URL + one[1]); !strings.Contains(a.body, `"signerRevoked"`) {
			t.Fatalf("replica %d: run %d's JSON right after its runner was revoked through replica 1 (%s) does not say so", i, run1, a.header.Get("X-Cache"))
		}
	}
	warm(one)
}

// storePublication is a publication of a copy of run (with cells) under a bundle digest of
// its own, as another process would publish it straight into the shared store.
func storePublication(run store.Run, cells []artifacts.Cell) store.Publication {
	run.ID, run.JobID, run.Binding = 0, 0, store.BindingUnbound
	run.Bundle = fakeDigest("copy of run " + strconv.FormatInt(run.ID, 10) + run.Bundle)
	return store.Publication{Run: run, Cells: cells}
}

// runnerIDOf is the id of the runner named name.
func runnerIDOf(t *testing.T, p *portaltest.Portal, name string) int64 {
	t.Helper()
	rs, err := p.Server.Store().Runners(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Name == name {
			return r.ID
		}
	}
	t.Fatalf("no runner %q", name)
	return 0
}
