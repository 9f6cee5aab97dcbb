package portal_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/portal/portaltest"
	"pqrepro/portal/translog"
	"pqrepro/runner/host"
)

// TestTransparencyLogOverHTTP publishes a real bundle, sees it pending, sequences, checks the
// inclusion answer and the files' headers, and has a witness cosign over HTTP.
func TestTransparencyLogOverHTTP(t *testing.T) {
	ctx := context.Background()
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	bundle := s.bundle(t, &host.Host{}, smallManifest(t, 3))
	if code, body := s.submit(t, p, bundle); code != http.StatusOK {
		t.Fatalf("submit: %d %s", code, body)
	}
	var inc translog.Inclusion
	getJSON(t, p.URL+"/api/v1/runs/1/inclusion", &inc)
	if !inc.Pending {
		t.Fatalf("before sequencing: %+v", inc)
	}
	if v := p.Server.RunLogStatus(ctx, 1); !v.Pending {
		t.Fatalf("run page status before sequencing: %+v", v)
	}
	if code, _ := get(t, p.URL+"/log/checkpoint"); code != http.StatusNotFound {
		t.Fatalf("checkpoint of an empty log: %d", code)
	}
	if _, err := p.Server.Log().Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	getJSON(t, p.URL+"/api/v1/runs/1/inclusion", &inc)
	logKey := p.Server.Log().VerifierKey()
	vc, err := translog.VerifyCheckpoint([]byte(inc.Checkpoint), translog.Trust{LogKey: logKey})
	if err != nil || inc.Pending || vc.Size != 1 {
		t.Fatalf("inclusion %+v: %v", inc, err)
	}
	if err := tlog.CheckRecord(inc.Proof, vc.Size, vc.Hash, inc.Index, tlog.RecordHash([]byte(inc.Leaf))); err != nil {
		t.Fatal(err)
	}
	if v := p.Server.RunLogStatus(ctx, 1); v.Pending || v.TreeSize != 1 || v.Index != 0 {
		t.Fatalf("run page status: %+v", v)
	}
	for _, c := range []struct{ path, ctype, cache string }{
		{"/log/checkpoint", "text/plain; charset=utf-8", "no-cache"},
		{"/log/tile/0/000.p/1", "application/octet-stream", "public, max-age=31536000, immutable"},
		{"/log/tile/entries/000.p/1", "application/octet-stream", "public, max-age=31536000, immutable"},
	} {
		resp, err := http.Get(p.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.ctype || resp.Header.Get("Cache-Control") != c.cache {
			t.Errorf("%s: %d %q %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
		}
	}
	for _, bad := range []string{"/log/tile/0/0001", "/log/tile/../portal.db", "/log/tile/0/000.p/300"} {
		if code, _ := get(t, p.URL+bad); code < 400 || code >= 500 {
			t.Errorf("%s: status %d, want a 4xx", bad, code)
		}
	}
	// The reader verifies the bundle's inclusion from the portal's files alone.
	src := translog.OpenSource(p.URL)
	digest := bundleDigestOf(bundle)
	if f, err := translog.ProveBundle(ctx, src, vc.Checkpoint, digest); err != nil || f.Leaf.RunID != 1 {
		t.Fatalf("ProveBundle: %+v %v", f, err)
	}

	// A witness over HTTP: registered by the admin with its proof, then cosigning.
	seed := make([]byte, translog.CosignerSeedSize)
	rand.Read(seed)
	w, _ := translog.NewCosigner("witness.example/w1", seed)
	wit := &translog.Witnessing{Src: src, LogKey: logKey, Cosigner: w, StateFile: filepath.Join(t.TempDir(), "seen.json")}
	_, cosigned, err := wit.Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	post := func() (int, string) {
		resp, err := http.Post(p.URL+"/api/v1/log/cosignature", "text/plain", bytes.NewReader(cosigned))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := post(); code != http.StatusBadRequest || !strings.Contains(body, "not a registered witness") {
		t.Fatalf("unregistered witness: %d %s", code, body)
	}
	ed, ml := w.VKeys()
	form := url.Values{"ed25519": {ed}, "mldsa44": {ml}, "proof": {string(cosigned)}}
	if resp, err := http.PostForm(p.URL+"/admin/log/witnesses", form); err != nil || resp.StatusCode < 400 {
		t.Fatalf("witness registered without the administrator: %v %v", resp, err)
	}
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/admin")
	if code, _, body := admin.post("/admin/log/witnesses", url.Values{"ed25519": {ed}, "mldsa44": {ml}, "proof": {"x\n\n— y AAAA\n"}}); code != http.StatusBadRequest {
		t.Fatalf("registration without a proof: %d %s", code, body)
	}
	if code, _, body := admin.post("/admin/log/witnesses", form); code != http.StatusOK || !strings.Contains(body, "witness.example/w1") {
		t.Fatalf("registration: %d %s", code, body)
	}
	if code, body := post(); code != http.StatusAccepted {
		t.Fatalf("cosignature: %d %s", code, body)
	}
	_, msg := get(t, p.URL+"/log/checkpoint")
	wvc, err := translog.VerifyCheckpoint([]byte(msg), translog.Trust{LogKey: logKey, Witnesses: []string{ed, ml}})
	if err != nil || len(wvc.Witnessed) != 1 {
		t.Fatalf("witnessed checkpoint: %v", err)
	}
	var info struct {
		LogKey    string `json:"log_key"`
		Size      int64  `json:"size"`
		Witnesses []struct{ Name, Ed25519, MLDSA44 string }
	}
	getJSON(t, p.URL+"/api/v1/log", &info)
	if info.LogKey != logKey || info.Size != 1 || len(info.Witnesses) != 1 || info.Witnesses[0].MLDSA44 != ml {
		t.Fatalf("/api/v1/log: %+v", info)
	}
	if v := p.Server.RunLogStatus(ctx, 1); v.Witnessed != 2 {
		t.Fatalf("run page cosignatures: %+v", v)
	}
	// The key is kept beside the portal's data and reused at the next start.
	if b, err := os.ReadFile(filepath.Join(p.Config.DataDir, "log.skey")); err != nil || !strings.HasPrefix(string(b), "PRIVATE+KEY+127.0.0.1") {
		t.Fatalf("log key file: %v", err)
	}
}

func bundleDigestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// fakeDigest is a well-formed bundle digest for runs published by tests without a bundle.
func fakeDigest(s string) string { return bundleDigestOf([]byte(s)) }
