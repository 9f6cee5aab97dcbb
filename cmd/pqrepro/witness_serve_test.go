package main

import (
	"context"
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

	"pqrepro/portal/translog"
)

// served is what `pqrepro serve` printed on its first start.
type served struct {
	portal, logURL, logKey, adminToken string
}

// startServe runs `pqrepro serve` on a free loopback port with a fresh data folder and
// returns what it printed; it is stopped (as by Ctrl-C) when the test ends.
func startServe(t *testing.T) served {
	t.Helper()
	t.Setenv("PQREPRO_ADMIN_TOKEN", "")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	// The folder is made here, before the cleanup below is registered: cleanups run last
	// first, so serve is stopped before its folder is removed.
	data := filepath.Join(t.TempDir(), "data")
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--no-local-runner"}, &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, errOut.String())
		}
	})
	re := regexp.MustCompile(`portal on (\S+)\n(?s:.*)transparency log: (\S+), key \(pin it with --log-key\):\n  (\S+)\n(?s:.*)with this token \(shown once; only its hash is stored\):\n  (\S+)\n`)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return served{portal: m[1], logURL: m[2], logKey: m[3], adminToken: m[4]}
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("serve exited %d:\n%s%s", code, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed:\n%s%s", out.String(), errOut.String())
	return served{}
}

// adminSession signs in as the administrator through the sign-in form and returns a client
// that carries the session, and the page's CSRF token.
func adminSession(t *testing.T, portal, token string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	csrf := func(path string) string {
		resp, err := c.Get(portal + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("GET %s: %s, no CSRF token", path, resp.Status)
		}
		return string(m[1])
	}
	resp, err := c.PostForm(portal+"/signin", url.Values{"token": {token}, "next": {"/admin"}, "_csrf": {csrf("/signin")}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c, csrf("/admin")
}

// TestWitnessWithTheURLServePrints takes the log URL and key exactly as `pqrepro serve`
// prints them, publishes a bundle, and has `pqrepro witness --log <that URL>` register
// (through the admin form) and cosign: the cosignature reaches the API, and the log's
// checkpoint carries it.
func TestWitnessWithTheURLServePrints(t *testing.T) {
	s := startServe(t)
	if !strings.HasSuffix(s.logURL, "/log") {
		t.Fatalf("serve prints the log at %q", s.logURL)
	}
	bundle, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	if code, out, errOut := pq(t, "submit", bundle, "--portal", s.portal, "--token", s.adminToken, "--register-keys", "--keys", keys); code != 0 {
		t.Fatalf("submit: %s%s", out, errOut)
	}
	waitCheckpoint(t, s.logURL, "\n1\n", "")
	wdir := filepath.Join(t.TempDir(), "witness")
	code, out, errOut := pq(t, "witness", "--log", s.logURL, "--key", wdir, "--name", "witness.example/w1", "--log-key", s.logKey, "--register")
	if code != 0 {
		t.Fatalf("witness --register: %s%s", out, errOut)
	}
	ed := regexp.MustCompile(`(?m)^ed25519: (\S+)$`).FindStringSubmatch(out)
	ml := regexp.MustCompile(`(?m)^mldsa44: (\S+)$`).FindStringSubmatch(out)
	_, proof, _ := strings.Cut(out, "valid for a few minutes):\n")
	if ed == nil || ml == nil || proof == "" {
		t.Fatalf("witness --register printed:\n%s", out)
	}
	c, csrf := adminSession(t, s.portal, s.adminToken)
	resp, err := c.PostForm(s.portal+"/admin/log/witnesses", url.Values{"ed25519": {ed[1]}, "mldsa44": {ml[1]}, "proof": {proof}, "_csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "witness.example/w1") {
		t.Fatalf("register the witness: %s %s", resp.Status, body)
	}
	code, out, errOut = pq(t, "witness", "--log", s.logURL, "--key", wdir, "--log-key", s.logKey, "--once")
	if code != 0 || !strings.Contains(out, "cosigned checkpoint 1") {
		t.Fatalf("witness --once --log %s: exit %d\n%s%s", s.logURL, code, out, errOut)
	}
	waitCheckpoint(t, s.logURL, "\n1\n", "— witness.example/w1 ")
}

// waitCheckpoint polls the log's checkpoint until it contains both strings.
func waitCheckpoint(t *testing.T, logURL, want1, want2 string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(logURL + "/checkpoint")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = string(b)
			if resp.StatusCode == http.StatusOK && strings.Contains(last, want1) && strings.Contains(last, want2) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the checkpoint never had %q and %q:\n%s", want1, want2, last)
}

// TestWitnessListensForPushes runs `pqrepro witness --listen` (the push side of C2SP
// tlog-witness), registers it on the admin page of a `pqrepro serve` by its URL, and has
// `pqrepro verify --log` require both of the portal's published witness policies, pinned as
// files: both are satisfied, the post-quantum one by the witness's ML-DSA-44 cosignature.
func TestWitnessListensForPushes(t *testing.T) {
	s := startServe(t)
	bundle, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	if code, out, errOut := pq(t, "submit", bundle, "--portal", s.portal, "--token", s.adminToken, "--register-keys", "--keys", keys); code != 0 {
		t.Fatalf("submit: %s%s", out, errOut)
	}
	waitCheckpoint(t, s.logURL, "\n1\n", "")

	ctx, cancel := context.WithCancel(context.Background())
	var wout, werr syncBuffer
	done := make(chan int, 1)
	wkey := filepath.Join(t.TempDir(), "w") // before the cleanup below: the witness stops first
	go func() {
		done <- run(ctx, []string{"witness", "--listen", "127.0.0.1:0", "--key", wkey, "--name", "witness.example/pushed", "--log-key", s.logKey}, &wout, &werr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	re := regexp.MustCompile(`serving add-checkpoint on (http://\S+) for (?s:.*)ed25519: (\S+)\n  mldsa44: (\S+)\n`)
	var m []string
	for deadline := time.Now().Add(time.Minute); m == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m = re.FindStringSubmatch(wout.String())
	}
	if m == nil {
		t.Fatalf("witness --listen printed:\n%s%s", wout.String(), werr.String())
	}
	c, csrf := adminSession(t, s.portal, s.adminToken)
	resp, err := c.PostForm(s.portal+"/admin/log/witnesses", url.Values{"ed25519": {m[2]}, "mldsa44": {m[3]}, "url": {m[1]}, "_csrf": {csrf}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("register the pushed witness: %s %s", resp.Status, body)
	}
	waitCheckpoint(t, s.logURL, "\n1\n", "— witness.example/pushed ")
	dir := t.TempDir()
	var args []string
	for _, name := range []string{"policy", "policy/post-quantum"} {
		r, err := http.Get(s.logURL + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		f := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".txt")
		os.WriteFile(f, b, 0o644)
		args = append(args, "--policy", f)
	}
	args = append([]string{"verify", bundle, "--log", s.logURL, "--log-key", s.logKey, "--log-state", filepath.Join(dir, "seen.json")}, args...)
	code, out, errOut := pq(t, args...)
	if code != 0 || !strings.Contains(out, "ok  witness policy ecosystem: satisfied") || !strings.Contains(out, "ok  witness policy post-quantum: satisfied (1 of 1 witnesses cosigned, 1 needed: witness.example/pushed)") {
		t.Fatalf("verify --policy: exit %d\n%s%s", code, out, errOut)
	}
	// A pinned policy naming a witness that did not cosign fails the check.
	other, _ := translog.NewCosigner("witness.example/absent", make([]byte, translog.CosignerSeedSize))
	oed, _ := other.VKeys()
	strict := filepath.Join(dir, "strict.txt")
	os.WriteFile(strict, []byte("log "+s.logKey+"\nwitness absent "+oed+"\ngroup g any absent\nquorum g\n"), 0o644)
	code, out, errOut = pq(t, "verify", bundle, "--log", s.logURL, "--log-key", s.logKey, "--log-state", filepath.Join(dir, "seen.json"), "--policy", strict)
	if code != 1 || !strings.Contains(errOut, "does not satisfy the witness policy g: NOT satisfied (0 of 1") {
		t.Fatalf("verify with an unmet policy: exit %d\n%s%s", code, out, errOut)
	}
}
