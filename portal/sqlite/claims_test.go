package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/store"
)

// TestClaimTalliesPerBoard stores verdicts from host, emulated and declared-class runs in a
// real SQLite file and checks the tallies keep them apart.
func TestClaimTalliesPerBoard(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "portal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	publish := func(board string, level artifacts.Level, status, verdict string) {
		n++
		now := time.Now()
		_, err := st.Publish(ctx, store.Publication{Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:x",
			Kind: "kem-bench", Method: "in-process", BoardClass: board, BoardName: board, Level: level, Origin: "community",
			Signer: "s", PublicKeys: id.Public(), Bundle: fakeDigest(string(rune('a' + n))), StartedAt: now, FinishedAt: now, Environment: "{}", Report: "{}", Checks: "[]"},
			Claims: []store.ClaimVerdict{{Paper: "paper001", ClaimID: "C001-01", Verdict: verdict, Reason: "r", ClassStatus: status}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	publish("host", "host", "verified", "holds")
	publish("host", "host", "verified", "holds")
	publish("host", "host", "verified", "inconclusive")
	publish("qemu-mps2-an386", "emulated", "verified", "holds")
	publish("rpi4-b", "host", "declared", "fails")
	publish("rpi4-b", "host", "verified", "fails")
	got, err := st.ClaimTallies(ctx, "paper001")
	if err != nil {
		t.Fatal(err)
	}
	want := map[store.ClaimTally]bool{
		{ClaimID: "C001-01", Origin: "community", BoardClass: "qemu-mps2-an386", Level: "emulated", ClassStatus: "verified", Verdict: "holds", Runs: 1}: true,
		{ClaimID: "C001-01", Origin: "community", BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: "holds", Runs: 2}:                true,
		{ClaimID: "C001-01", Origin: "community", BoardClass: "host", Level: "host", ClassStatus: "verified", Verdict: "inconclusive", Runs: 1}:         true,
		{ClaimID: "C001-01", Origin: "community", BoardClass: "rpi4-b", Level: "host", ClassStatus: "declared", Verdict: "fails", Runs: 1}:              true,
		{ClaimID: "C001-01", Origin: "community", BoardClass: "rpi4-b", Level: "host", ClassStatus: "verified", Verdict: "fails", Runs: 1}:              true,
	}
	if len(got) != len(want) {
		t.Fatalf("tallies %+v, want %d rows", got, len(want))
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected tally %+v", g)
		}
	}
	vs, err := st.ClaimVerdicts(ctx, "paper001", 0)
	if err != nil || len(vs) != 6 || vs[1].ClassStatus != "declared" {
		t.Errorf("verdicts %+v %v: the newest but one is the declared rpi4-b run", vs, err)
	}
}
