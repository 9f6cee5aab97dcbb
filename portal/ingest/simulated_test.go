package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/experiments"
	"pqrepro/portal/blob"
	"pqrepro/portal/fault"
	"pqrepro/portal/ingest"
	"pqrepro/portal/store"
)

// TestSimulatedMeterRefused: a real host bundle whose environment names a simulated meter and
// whose first ok cell carries a simulated energy, re-signed so its signatures verify, is
// refused by the ingest with the reason and stores nothing; the same bundle re-signed unedited
// is published (the refusal is the meter's, not the re-signing's).
func TestSimulatedMeterRefused(t *testing.T) {
	ctx := context.Background()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.OpenFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	g := &ingest.Ingest{Catalog: cat, Blobs: blobs, PortalURL: "http://127.0.0.1:8080", MaxBundleBytes: 64 << 20,
		Commit: func(context.Context, store.Publication) (int64, error) { published++; return int64(published), nil }}
	data, _ := golden(t, "host-mlkem")
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	publish := func(simulated bool) error {
		b, err := g.Read(data)
		if err != nil {
			t.Fatal(err)
		}
		v, err := attest.Verify(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		if simulated {
			markSimulated(t, b)
		}
		if err := attest.Sign(b, id, v.Statement.Predicate); err != nil {
			t.Fatal(err)
		}
		_, err = g.Publish(ctx, b, ingest.Incoming{Keys: id.Public(), Origin: attest.OriginCommunity})
		return err
	}
	err = publish(true)
	if !fault.Is(err, fault.Invalid) || !errors.Is(err, artifacts.ErrSimulatedMeter) || !strings.Contains(err.Error(), "simulated meter") {
		t.Fatalf("simulated meter: %v, want an invalid-input refusal naming the simulated meter", err)
	}
	if published != 0 {
		t.Fatal("a simulated meter's bundle was published")
	}
	if err := publish(false); err != nil || published != 1 {
		t.Fatalf("the unedited bundle, re-signed: %v (%d published)", err, published)
	}
}

// markSimulated edits b's environment and first ok cell as a run with a simulated meter
// would have written them.
func markSimulated(t *testing.T, b *artifacts.Bundle) {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		t.Fatal(err)
	}
	env["meter"] = artifacts.MeterInfo{Kind: "fnb58", Device: "sim:fnb58:01_pi4_baseline.csv", Rate: 100, Simulated: true}
	b.Files[artifacts.FileEnvironment], _ = json.Marshal(env)
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Cells {
		if res.Cells[i].Status == artifacts.StatusOK {
			res.Cells[i].Energy = &artifacts.Energy{Source: "sim:fnb58 (" + artifacts.SimulatedMeterLabel + ")", Absent: "a test of the refusal", Simulated: true}
			break
		}
	}
	b.Files[artifacts.FileResult], _ = json.Marshal(res)
}
