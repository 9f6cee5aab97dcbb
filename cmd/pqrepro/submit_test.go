package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/portal/portaltest"
)

// TestSubmitToPortal submits bundles to a real portal over HTTP: one signed by keys the
// command registers first (published as community), one signed by unregistered keys
// (refused: unknown key), and a tampered one (refused before it leaves the machine).
func TestSubmitToPortal(t *testing.T) {
	p := portaltest.Start(t, nil)
	tok, err := p.Server.CreateAccount(context.Background(), "lab member", "submitter")
	if err != nil {
		t.Fatal(err)
	}
	bundle, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	code, out, errOut := pq(t, "submit", bundle, "--portal", p.URL, "--token", tok, "--register-keys", "--keys", keys)
	if code != 0 || !strings.Contains(out, "registered keys") || !strings.Contains(out, "published as run") {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	other, _ := runOnce(t, filepath.Join(t.TempDir(), "b2.tar.gz"))
	code, out, errOut = pq(t, "submit", other, "--portal", p.URL, "--token", tok)
	if code == 0 || !strings.Contains(errOut, "unknown key") {
		t.Fatalf("a bundle signed by unregistered keys: exit %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(t.TempDir(), "dir")
	b, err := artifacts.ReadBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if err := artifacts.WriteDir(dir, b); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, artifacts.FileSamples), []byte("algorithm,operation,iteration,value,unit\n"), 0o644)
	code, _, errOut = pq(t, "submit", dir, "--portal", p.URL, "--token", tok)
	if code == 0 || !strings.Contains(errOut, artifacts.FileSamples) {
		t.Fatalf("a tampered bundle was sent: exit %d %s", code, errOut)
	}
	if code, _, errOut = pq(t, "submit", bundle, "--portal", p.URL, "--token", "pqu_not-a-token"); code == 0 || !strings.Contains(errOut, "unauthorized") {
		t.Fatalf("an unknown token: exit %d %s", code, errOut)
	}
}
