package portal_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/portal/portaltest"
	"pqrepro/portal/translog"
	"pqrepro/runner/host"
)

// TestEntryBundlesServedCompressed: an entry bundle goes gzip-compressed to a client that
// accepts it and whole to one that does not, the same bytes either way; a hash tile is never
// compressed; and a reader over HTTP (which asks for gzip) still proves inclusion.
func TestEntryBundlesServedCompressed(t *testing.T) {
	ctx := context.Background()
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	bundle := s.bundle(t, &host.Host{}, smallManifest(t, 3))
	if code, body := s.submit(t, p, bundle); code != http.StatusOK {
		t.Fatalf("submit: %d %s", code, body)
	}
	if _, err := p.Server.Log().Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	files := filepath.Join(p.Config.DataDir, "blobs", "files")
	fetch := func(path, accept string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/log/"+path, nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // no transparent decompression
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	want, err := os.ReadFile(filepath.Join(files, "tile/entries/000.p/1"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := fetch("tile/entries/000.p/1", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(strings.Join(resp.Header.Values("Vary"), ","), "Accept-Encoding") {
		t.Fatalf("entry bundle to a gzip client: Content-Encoding %q, Vary %q", resp.Header.Get("Content-Encoding"), resp.Header.Values("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr)
	if !bytes.Equal(got, want) {
		t.Errorf("compressed entry bundle: %d bytes decompressed, want the file's %d", len(got), len(want))
	}
	if resp, body := fetch("tile/entries/000.p/1", ""); resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, want) {
		t.Errorf("entry bundle without Accept-Encoding: %q, %d bytes", resp.Header.Get("Content-Encoding"), len(body))
	}
	if resp, _ := fetch("tile/0/000.p/1", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a hash tile was compressed")
	}
	src := translog.OpenSource(p.URL)
	msg, err := src.Get(ctx, translog.CheckpointFile)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := translog.VerifyCheckpoint(msg, translog.Trust{LogKey: p.Server.Log().VerifierKey()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := translog.ProveBundle(ctx, src, vc.Checkpoint, bundleDigestOf(bundle)); err != nil {
		t.Fatalf("inclusion over HTTP with compressed entry bundles: %v", err)
	}
}
