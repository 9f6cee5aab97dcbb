package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/experiments"
	"pqrepro/portal/blob"
	"pqrepro/portal/fault"
	"pqrepro/portal/ingest"
	"pqrepro/portal/store"
)

// golden reads a real recorded bundle of the portal's golden pages and its signer's keys.
func golden(t *testing.T, name string) ([]byte, identity.PublicKeys) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "golden")
	data, err := os.ReadFile(filepath.Join(dir, "bundles", name+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, "runner.pub.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys identity.PublicKeys
	if err := json.Unmarshal(pub, &keys); err != nil {
		t.Fatal(err)
	}
	return data, keys
}

// TestPublishStoresWhatVerified publishes a real host run through the ingest path into a
// real blob folder: the publication carries the re-derived run with its comparison, and the
// archive is stored under its digest. The same bundle under other keys is refused as invalid
// and stores nothing.
func TestPublishStoresWhatVerified(t *testing.T) {
	ctx := context.Background()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.OpenFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []store.Publication
	g := &ingest.Ingest{Catalog: cat, Blobs: blobs, PortalURL: "http://127.0.0.1:8080", MaxBundleBytes: 64 << 20,
		Commit: func(_ context.Context, p store.Publication) (int64, error) {
			got = append(got, p)
			return int64(len(got)), nil
		}}
	data, keys := golden(t, "host-mlkem")
	other, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	b, err := g.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Publish(ctx, b, ingest.Incoming{Data: data, Keys: other.Public(), Origin: attest.OriginCommunity}); !fault.Is(err, fault.Invalid) {
		t.Fatalf("bundle under other keys: %v, want an invalid-input refusal", err)
	}
	if _, err := blobs.Stat(ctx, ingest.BundleDigest(data)); err == nil || len(got) != 0 {
		t.Fatalf("a refused bundle was stored (stat %v, %d publications)", err, len(got))
	}
	p, err := g.Publish(ctx, b, ingest.Incoming{Data: data, Keys: keys, Origin: attest.OriginCommunity, Submitter: 7})
	if err != nil {
		t.Fatal(err)
	}
	if p.RunID != 1 || p.Experiment != "paper001/mlkem" || p.Board != "host" || len(got) != 1 {
		t.Fatalf("published %+v (%d publications)", p, len(got))
	}
	run := got[0].Run
	if run.Bundle != ingest.BundleDigest(data) || run.ReportVersion != ingest.ReportVersion || run.CellsOK != 9 || run.SubmitterID != 7 ||
		run.Binding != store.BindingUnbound || len(got[0].Cells) != 9 || !strings.Contains(run.Report, `"claim":{"ID":"C001-01"`) {
		t.Errorf("run of %s: %d of %d cells ok, version %d, binding %s, %d cells filed", run.Bundle, run.CellsOK, run.CellsTotal, run.ReportVersion, run.Binding, len(got[0].Cells))
	}
	// Recorded with 5 iterations, its manifest is not the catalogue's: its claims are checked
	// on its page but count toward no tally.
	if run.Catalogue || len(got[0].Claims) != 0 {
		t.Errorf("an own manifest counted: catalogue %v, %d verdicts", run.Catalogue, len(got[0].Claims))
	}
	if n, err := blobs.Stat(ctx, run.Bundle); err != nil || n != int64(len(data)) {
		t.Errorf("stored archive: %d bytes, %v", n, err)
	}
	rb, err := g.Rebuild(1, b, run.ClassStatus, false)
	if err != nil || rb.Report != run.Report || len(rb.Claims) != len(got[0].Claims) {
		t.Errorf("rebuild of the same bundle differs: %v", err)
	}
	var nc *ingest.NoCellError
	if errors.As(err, &nc) {
		t.Error("a run with ok cells is refused as measuring nothing")
	}
}
