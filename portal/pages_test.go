package portal_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/portalclient"
)

// browser is an HTTP client with cookies that reads CSRF tokens from forms.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindSubmatch(body); m != nil {
		b.csrf = string(m[1])
	}
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) (int, string, string) {
	b.t.Helper()
	if form.Get("_csrf") == "" && b.csrf != "" {
		form.Set("_csrf", b.csrf)
	}
	resp, err := b.c.PostForm(b.base+path, form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

// postFollow posts a form that answers with a redirect (POST → redirect → GET) and gets
// the page it redirects to; an answer that is not a redirect is returned as it is.
func (b *browser) postFollow(path string, form url.Values) (int, string) {
	b.t.Helper()
	code, loc, body := b.post(path, form)
	if code != http.StatusSeeOther {
		return code, body
	}
	if strings.Contains(loc, "flash=") {
		b.t.Errorf("POST %s redirects to %s: the flash message belongs in a cookie, not the URL", path, loc)
	}
	return b.get(loc)
}

func (b *browser) upload(path string, fields map[string]string, field, filename string, data []byte) (int, string, string) {
	b.t.Helper()
	return b.uploadNamed(path, fields, map[string]namedFile{field: {filename, data}})
}

// uploadFiles posts a multipart form with the fields and the files (by field; each file is
// named after its field).
func (b *browser) uploadFiles(path string, fields map[string]string, files map[string][]byte) (int, string, string) {
	b.t.Helper()
	named := map[string]namedFile{}
	for f, data := range files {
		named[f] = namedFile{f + ".bin", data}
	}
	return b.uploadNamed(path, fields, named)
}

// A namedFile is a file of a multipart form.
type namedFile struct {
	name string
	data []byte
}

func (b *browser) uploadNamed(path string, fields map[string]string, files map[string]namedFile) (int, string, string) {
	b.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	w.WriteField("_csrf", b.csrf)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	for field, f := range files {
		fw, _ := w.CreateFormFile(field, f.name)
		fw.Write(f.data)
	}
	w.Close()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, &buf)
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

func (b *browser) signIn(token string) {
	b.t.Helper()
	b.get("/signin")
	if code, loc, body := b.post("/signin", url.Values{"token": {token}, "next": {"/"}}); code != http.StatusSeeOther {
		b.t.Fatalf("sign in: %d %s %s", code, loc, body)
	}
}

func startAgent(t *testing.T, p *portaltest.Portal) {
	id, _ := identity.GenerateIdentity()
	ctx, cancel := context.WithCancel(context.Background())
	agent := &runner.Agent{Portal: &portalclient.Client{BaseURL: p.URL}, EnrolToken: p.EnrolToken(t), Name: "test runner", Identity: id,
		Boards: host.AgentBoards(""), Version: "test", LeaseWait: time.Second, FlushEvery: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { agent.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if rs, _ := p.Server.Store().Runners(context.Background()); len(rs) > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("runner did not enrol")
}

func TestPortalPagesAndFlows(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) { c.MaxFirmwareBytes = 1 << 10 })
	startAgent(t, p)
	anon := newBrowser(t, p.URL)
	for _, path := range []string{"/", "/papers/paper000", "/papers/paper001", "/papers/paper002", "/papers/paper003", "/experiments/paper001/mlkem",
		"/leaderboards", "/boards", "/boards/host", "/firmware", "/submit", "/signin", "/api/v1/papers", "/api/v1/runs", "/healthz",
		"/static/style.css", "/static/app.js"} {
		if code, _ := anon.get(path); code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
	}
	for path, want := range map[string]int{"/papers/nope": 404, "/experiments/paper001/nope": 404, "/runs/99": 404, "/jobs/abc": 404, "/admin": 303,
		"/api/v1/leaderboards?algorithm=ML-KEM-768&operation=encaps&metric=bogus": 400} {
		if code, _ := anon.get(path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	// Forms need a CSRF token, and starting a re-run needs an account.
	anon.get("/experiments/paper001/mlkem")
	if code, _, _ := anon.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {"host"}, "_csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("re-run with a forged CSRF token: %d", code)
	}
	if code, _, body := anon.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {"host"}}); code != http.StatusUnauthorized || !strings.Contains(body, "sign in") {
		t.Errorf("anonymous re-run: %d", code)
	}
	if code, _, _ := anon.post("/signin", url.Values{"token": {"wrong"}}); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}

	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/experiments/paper001/mlkem")
	for _, bad := range []url.Values{{"board": {"esp32c6"}}, {"board": {"host"}, "iterations": {"0"}}, {"board": {"host"}, "iterations": {"100000"}},
		{"board": {"host"}, "firmware": {"sha256:" + strings.Repeat("0", 64)}}} {
		if code, _, _ := admin.post("/experiments/paper001/mlkem/jobs", bad); code != http.StatusBadRequest && code != http.StatusNotFound {
			t.Errorf("re-run %v: %d, want refusal", bad, code)
		}
	}
	code, loc, _ := admin.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {"host"}, "iterations": {"4"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/jobs/") {
		t.Fatalf("start re-run: %d %s", code, loc)
	}
	var jobID int64
	fmt.Sscanf(loc, "/jobs/%d", &jobID)
	j := waitJob(t, p, jobID, func(j store.Job) bool { return j.Terminal() }, 30*time.Second)
	if j.State != store.JobPublished {
		t.Fatalf("job %s: %s", j.State, j.Error)
	}
	if _, body := anon.get(loc); !strings.Contains(body, "run #") || strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("finished job page should link the run and stop refreshing")
	}
	run := fmt.Sprintf("/runs/%d", j.RunID)
	checks := map[string][]string{
		run:                                   {"Comparison with paper001", "C001-01", "portal-runner", "<svg", "ed25519 signature verifies", "Heap/op", "too few samples for an interval (4, need 5)"},
		run + "/cells.csv":                    {"host,host,portal-runner,in-process,verified,ML-KEM-1024,decaps,ok,ns,4,", ",github.com/cloudflare/circl v", ",encoded,0\n"},
		run + "/log":                          {"Log of run #", "cell ML-KEM-1024 decaps: ok n=4", "the whole log.txt"},
		run + "/log.txt":                      {"paper001/mlkem (kem-bench) on board host", "cell ML-KEM-512 keygen: ok n=4"},
		"/api/v1/runs/" + fmt.Sprint(j.RunID): {`"origin":"portal-runner"`, `"claims":[{`, `"cells":[{`},
		"/papers/paper001":                    {`<table class="tallies">`, "never added up", "C001-01"},
		"/leaderboards?algorithm=ML-KEM-768&operation=encaps":                   {"portal-runner", "table class=\"leaders\""},
		"/api/v1/leaderboards?algorithm=ML-KEM-768&operation=encaps&format=csv": {"ML-KEM-768,encaps,latency,measured,1,host,host,portal-runner,in-process,verified,github.com/cloudflare/circl v", ",encoded,0,ns,"},
		"/leaderboards?algorithm=ML-KEM-768&operation=keygen&metric=heap":       {"heap bytes per operation"},
		"/boards/host": {run},
	}
	for path, wants := range checks {
		code, body := anon.get(path)
		for _, w := range wants {
			if code != 200 || !strings.Contains(body, w) {
				t.Errorf("GET %s (%d) lacks %q", path, code, w)
			}
		}
	}
	// The stored bundle downloads and verifies against the runner's registered keys.
	resp, err := http.Get(p.URL + run + "/bundle.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	b, err := artifacts.ReadTarGz(resp.Body, 0)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := p.Server.Store().Runners(context.Background())
	if _, err := attest.Verify(b, &rs[0].PublicKeys); err != nil {
		t.Errorf("downloaded bundle: %v", err)
	}

	// Firmware: size-limited, stored by digest, offered for its board class.
	admin.get("/firmware")
	fields := map[string]string{"board_class": "qemu-mps2-an386", "toolchain": "arm-none-eabi-gcc 14", "libraries": "mlkem 1",
		"source_url": "https://example.org/fw", "source_commit": "0123abcd"}
	if code, _, _ := admin.upload("/firmware", fields, "file", "big.elf", bytes.Repeat([]byte{1}, 4<<10)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversize firmware: %d", code)
	}
	if code, loc, body := admin.upload("/firmware", fields, "file", "../../fw.elf", armELF(512)); code != http.StatusSeeOther {
		t.Fatalf("firmware upload: %d %s %s", code, loc, body)
	}
	if _, body := anon.get("/firmware"); !strings.Contains(body, "fw.elf") || strings.Contains(body, "../") || !strings.Contains(body, "qemu-mps2-an386") {
		t.Errorf("firmware list does not show the build safely")
	}

	// Community submissions: an account, its keys, a bundle signed by them.
	admin.get("/admin")
	_, body := admin.postFollow("/admin/users", url.Values{"name": {"lab-member"}, "role": {"submitter"}})
	m := regexp.MustCompile(`id="new-token">([^<]+)<`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no submitter token shown:\n%s", body)
	}
	subToken := m[1]
	id, _ := identity.GenerateIdentity()
	bundle := signedBundle(t, smallManifest(t, 3), id, attest.OriginLocal)
	submit := func(data []byte) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/submissions", bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+subToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, out := submit(bundle); code != 400 || !strings.Contains(out, "unknown key") {
		t.Errorf("unregistered keys: %d %s", code, out)
	}
	if code, out := submit(evilArchive()); code != 400 || !strings.Contains(out, "malformed archive") {
		t.Errorf("path traversal archive: %d %s", code, out)
	}
	sub := newBrowser(t, p.URL)
	sub.signIn(subToken)
	_, page := sub.get("/submit")
	ch := regexp.MustCompile(`pqrepro keys --prove ([0-9a-f]{64})`).FindStringSubmatch(page)
	if ch == nil {
		t.Fatalf("the submit page shows no challenge to prove possession of keys with")
	}
	// A registration without the private keys (the public keys with a proof by other keys) is refused.
	thief, _ := identity.GenerateIdentity()
	forged, _ := portalclient.KeyRegistrationFor(thief, ch[1], "")
	forged.PublicKeys = id.Public()
	fj, _ := json.Marshal(forged)
	if code, _, body := sub.upload("/submit/keys", map[string]string{"label": "bench"}, "registration", "registration.json", fj); code != http.StatusUnauthorized ||
		!strings.Contains(body, "does not verify") {
		t.Errorf("registration with a forged proof: %d", code)
	}
	_, page = sub.get("/submit")
	ch = regexp.MustCompile(`pqrepro keys --prove ([0-9a-f]{64})`).FindStringSubmatch(page)
	reg, err := portalclient.KeyRegistrationFor(id, ch[1], "")
	if err != nil {
		t.Fatal(err)
	}
	rj, _ := json.Marshal(reg)
	if code, _, body := sub.upload("/submit/keys", map[string]string{"label": "bench"}, "registration", "registration.json", rj); code != http.StatusSeeOther {
		t.Fatalf("register keys: %d %s", code, body)
	}
	code, out := submit(bundle)
	if code != 200 {
		t.Fatalf("registered keys: %d %s", code, out)
	}
	var cr protocol.CompleteResponse
	json.Unmarshal([]byte(out), &cr)
	if _, body := anon.get(cr.URL); !strings.Contains(body, "community") || !strings.Contains(body, "lab-member") {
		t.Errorf("community run page lacks its origin and submitter")
	}
	// Through the form, a tampered bundle is refused with the reason.
	sub.get("/submit")
	bad := rewrite(t, bundle, artifacts.FileResult, func(b []byte) []byte { b[100] ^= 1; return b })
	if code, loc, _ := sub.upload("/submit", nil, "bundle", "b.tar.gz", bad); code != http.StatusSeeOther || loc != "/submit" {
		t.Errorf("tampered submission: %d to %q, want a redirect to the submit page", code, loc)
	}
	if _, body := sub.get("/submit"); !strings.Contains(body, `id="submit-result"`) || !strings.Contains(body, "digest mismatch") {
		t.Errorf("the submit page after a tampered submission does not say why it was refused")
	}
	if _, body := sub.get("/submit"); strings.Contains(body, "digest mismatch") {
		t.Errorf("the refusal is shown again on the next visit: the flash is not cleared")
	}
}

// armELF is a minimal 32-bit ARM executable ELF header padded to n bytes: what the firmware
// upload's check reads.
func armELF(n int) []byte {
	b := make([]byte, n)
	copy(b, []byte{0x7f, 'E', 'L', 'F', 1, 1, 1})
	b[16], b[18], b[20] = 2, 40, 1 // ET_EXEC, EM_ARM, version 1
	b[40] = 52                     // e_ehsize
	return b
}

// evilArchive is a gzip tar whose entry climbs out of the bundle directory.
func evilArchive() []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	data := []byte("x")
	tw.WriteHeader(&tar.Header{Name: "../../etc/result.json", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
	tw.Write(data)
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestStoreReopensWithoutReapplyingMigrations(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for range 2 {
		st, err := sqlite.Open(ctx, dir+"/portal.db")
		if err != nil {
			t.Fatal(err)
		}
		vs, err := st.AppliedMigrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms, _ := sqlite.Migrations()
		if len(vs) != len(ms) || vs[0] != 1 {
			t.Errorf("applied %v, want %d migrations", vs, len(ms))
		}
		st.Close()
	}
}

func TestSigninIsRateLimited(t *testing.T) {
	p := portaltest.Start(t, nil)
	limited := false
	for i := 0; i < 60 && !limited; i++ {
		resp, err := http.PostForm(p.URL+"/signin", url.Values{"token": {"wrong-token-wrong-token"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		limited = resp.StatusCode == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("60 quick sign-in attempts were never limited")
	}
}
