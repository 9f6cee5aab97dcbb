package portal_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"pqrepro/artifacts/identity"
	"pqrepro/portal"
	"pqrepro/portal/fault"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner/host"
	"pqrepro/runner/portalclient"
)

// TestSubmitCommunityInProcess: the in-process submission (what bench/seed calls) publishes a
// submitter's bundle once, answers the same bytes again with the same run, and refuses what
// POST /api/v1/submit refuses: another account's bundle and an upload over the limit.
func TestSubmitCommunityInProcess(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) { c.MaxBundleBytes = 1 << 20 })
	ctx := context.Background()
	st := p.Server.Store()
	const aliceTok, bobTok = "alice-token-0123456789abcdefgh", "bob-token-0123456789abcdefghij"
	alice, err := st.CreateUser(ctx, "alice", store.RoleSubmitter, portal.HashToken(aliceTok))
	if err != nil {
		t.Fatal(err)
	}
	bob, err := st.CreateUser(ctx, "bob", store.RoleSubmitter, portal.HashToken(bobTok))
	if err != nil {
		t.Fatal(err)
	}
	aliceID, _ := identity.GenerateIdentity()
	if _, err := portalclient.NewSubmitter(p.URL, aliceTok).RegisterKeys(ctx, aliceID, "bench"); err != nil {
		t.Fatal(err)
	}
	data := submitter{aliceTok, aliceID}.bundle(t, &host.Host{}, smallManifest(t, 2))
	id, already, err := p.Server.SubmitCommunity(ctx, alice, data)
	if err != nil || already || id == 0 {
		t.Fatalf("first submission: run %d, already %v, %v", id, already, err)
	}
	if run, err := st.Run(ctx, id); err != nil || run.Submitter != "alice" || run.Origin != "community" {
		t.Fatalf("published run %+v, %v", run, err)
	}
	again, already, err := p.Server.SubmitCommunity(ctx, alice, data)
	if err != nil || !already || again != id {
		t.Errorf("the same bytes again: run %d, already %v, %v; want run %d, already", again, already, err, id)
	}
	other := submitter{aliceTok, aliceID}.bundle(t, &host.Host{}, smallManifest(t, 2))
	if _, _, err := p.Server.SubmitCommunity(ctx, bob, other); !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "another account") {
		t.Errorf("alice's bundle as bob's: %v", err)
	}
	big := bytes.Repeat([]byte{0}, 1<<20+1)
	if _, _, err := p.Server.SubmitCommunity(ctx, alice, big); !fault.Is(err, fault.TooLarge) {
		t.Errorf("an upload over the limit: %v", err)
	}
}
