package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pqrepro/internal/lockedio"
	"pqrepro/runner/qemu"
)

// syncBuffer is an io.Writer safe for the serve goroutine and the test reading it.
type syncBuffer = lockedio.Buffer

// site is a signed-in browser of a portal that `pqrepro serve` started.
type site struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (s *site) get(path string) (int, string) {
	s.t.Helper()
	resp, err := s.c.Get(s.base + path)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(body); m != nil {
		s.csrf = string(m[1])
	}
	return resp.StatusCode, string(body)
}

func (s *site) post(path string, form url.Values) (int, string) {
	s.t.Helper()
	form.Set("_csrf", s.csrf)
	resp, err := s.c.PostForm(s.base+path, form)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// waitUntil polls ok every 100 ms until it holds, failing the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !ok(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
	}
}

// TestServeFindsFirmwareBuiltWhileRunning starts `pqrepro serve` with an empty firmware
// directory: the emulated board is listed as not built. The real firmware then appears in
// that directory while serve runs; the local runner notices it, enrols again, and the
// portal runs a job on the board without a restart. The job page shows the board's log as
// human lines, the raw frames behind the toggle, and so does the run's log page.
func TestServeFindsFirmwareBuiltWhileRunning(t *testing.T) {
	mc, _ := qemu.LookupMachine("qemu-mps2-an386")
	built := filepath.Join(emulatedFirmware(t, mc), mc.Class)
	fwDir := t.TempDir()
	const admin = "admin-token-for-the-rediscovery-test"
	t.Setenv("PQREPRO_FIRMWARE", fwDir)
	t.Setenv("PQREPRO_MAP", "")
	t.Setenv("PQREPRO_ADMIN_TOKEN", admin)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	data := t.TempDir() // before the cleanup below: serve stops before its folder goes
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--rediscover", "200ms"}, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
		if t.Failed() {
			t.Logf("serve said:\n%s\n%s", stdout.String(), stderr.String())
		}
	})
	addr := regexp.MustCompile(`portal on (http://\S+)`)
	waitUntil(t, 60*time.Second, "serve to start its local runner", func() bool {
		return addr.MatchString(stdout.String()) && strings.Contains(stdout.String(), "local runner")
	})
	jar, _ := cookiejar.New(nil)
	s := &site{t: t, base: addr.FindStringSubmatch(stdout.String())[1],
		c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}

	notBuilt := "unavailable: firmware not built: looked for " + filepath.Join(fwDir, mc.Class, "pqrepro-fw.elf")
	waitUntil(t, 30*time.Second, "the local runner's boards on /boards", func() bool {
		_, body := s.get("/boards")
		return strings.Contains(body, notBuilt)
	})

	// The firmware is built (copied in, ELF and metadata) while serve runs.
	os.MkdirAll(filepath.Join(fwDir, mc.Class), 0o755)
	for _, f := range []string{"pqrepro-fw.elf", "metadata.json"} {
		b, err := os.ReadFile(filepath.Join(built, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(fwDir, mc.Class, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 30*time.Second, "the board to become available without a restart", func() bool {
		_, body := s.get("/boards")
		return strings.Contains(body, "local runner") && !strings.Contains(body, notBuilt)
	})
	if !strings.Contains(stderr.String(), "boards changed; enrolling again") {
		t.Errorf("the local runner did not say it enrolled again")
	}

	s.get("/signin")
	if code, _ := s.post("/signin", url.Values{"token": {admin}, "next": {"/"}}); code != http.StatusSeeOther {
		t.Fatalf("sign in: %d", code)
	}
	s.get("/experiments/paper001/mlkem")
	code, loc := s.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {mc.Class}, "iterations": {"2"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/jobs/") {
		t.Fatalf("start a job on %s: %d %s", mc.Class, code, loc)
	}
	var job struct {
		State    string `json:"state"`
		Terminal bool   `json:"terminal"`
		RunID    int64  `json:"runId"`
		Error    string `json:"error"`
	}
	waitUntil(t, 3*time.Minute, "the job on the emulated board", func() bool {
		_, body := s.get(loc + ".json")
		json.Unmarshal([]byte(body), &job)
		return job.Terminal
	})
	if job.State != "published" {
		t.Fatalf("job %s: %s", job.State, job.Error)
	}

	// The job page and the run's log page read the board's log.
	for _, path := range []string{loc, fmt.Sprintf("/runs/%d/log", job.RunID)} {
		code, page := s.get(path)
		human, raw, ok := strings.Cut(page, "Raw log with every protocol frame")
		if code != http.StatusOK || !ok {
			t.Fatalf("GET %s: %d, no raw log behind a toggle", path, code)
		}
		for _, want := range []string{"→ BENCH alg=ML-KEM-512 op=keygen n=2", "← 2 SAMPLE frames", "cell ML-KEM-1024 decaps: ok n=2", "self-test: "} {
			if !strings.Contains(human, want) {
				t.Errorf("GET %s: the human log lacks %q", path, want)
			}
		}
		if regexp.MustCompile(`@\d+:[A-Z]+:`).MatchString(human) || !strings.Contains(raw, ":SAMPLE:re=") {
			t.Errorf("GET %s: raw frames outside the toggle, or missing behind it", path)
		}
	}
}

// TestCLIFindsFirmwareFromAnotherDirectory: the command line run from a directory outside
// the checkout finds the checkout's firmware (through the binary's own checkout), runs an
// emulated board with it, and names every place it looked when a build is missing.
func TestCLIFindsFirmwareFromAnotherDirectory(t *testing.T) {
	mc, _ := qemu.LookupMachine("qemu-mps2-an386")
	built, err := filepath.Abs(filepath.Join(emulatedFirmware(t, mc), mc.Class, "pqrepro-fw.elf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PQREPRO_FIRMWARE", "")
	t.Setenv("PQREPRO_MAP", "")
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	code, stdout, stderr := pq(t, "boards")
	if code != 0 {
		t.Fatalf("boards: exit %d\n%s", code, stderr)
	}
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 3 && f[0] == mc.Class:
			if f[3] != "yes" || !strings.Contains(l, built) {
				t.Errorf("from %s: %s", elsewhere, l)
			}
		case strings.Contains(l, "firmware not built"):
			if !strings.Contains(l, filepath.Join(elsewhere, "firmware", "build")) || !strings.Contains(l, filepath.Dir(filepath.Dir(built))) {
				t.Errorf("a missing build does not name every place looked: %s", l)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr = pq(t, "run", "paper001/mlkem", "--board", mc.Class, "--iterations", "2", "--keys", filepath.Join(t.TempDir(), "keys"),
		"--out", out, "--quiet")
	if code != 0 || !strings.Contains(stdout, "on "+mc.Class) {
		t.Fatalf("run from %s: exit %d\n%s\n%s", elsewhere, code, stdout, stderr)
	}
}
