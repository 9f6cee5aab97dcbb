package portal_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal"
	"pqrepro/portal/database"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/portalclient"
)

var hostBoards = []protocol.BoardInfo{{Name: "host", Class: "host", Driver: "host", Available: true}}

// rawEnrol sends req as it is (no proof added) and returns the runner client.
func rawEnrol(p *portaltest.Portal, req protocol.EnrolRequest) (*portalclient.Client, protocol.EnrolResponse, error) {
	c := &portalclient.Client{BaseURL: p.URL}
	resp, err := c.Enrol(context.Background(), req)
	return c, resp, err
}

// challenge asks the portal for a challenge for purpose and returns its raw bytes.
func challenge(t *testing.T, p *portaltest.Portal, purpose string) []byte {
	t.Helper()
	ch, err := (&portalclient.Client{BaseURL: p.URL}).Challenge(context.Background(), purpose)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(ch.Challenge)
	if err != nil || len(raw) != identity.ChallengeBytes {
		t.Fatalf("challenge %q: %v", ch.Challenge, err)
	}
	return raw
}

func prove(t *testing.T, id *identity.Identity, purpose string, ch []byte) identity.Possession {
	t.Helper()
	pr, err := id.ProvePossession(purpose, ch)
	if err != nil {
		t.Fatal(err)
	}
	return pr
}

// runnerState is what an attack on a runner must leave unchanged.
type runnerState struct {
	Runners []store.Runner
	Tokens  []store.EnrolToken
	Signers []string
}

func stateOf(t *testing.T, p *portaltest.Portal) runnerState {
	t.Helper()
	ctx := context.Background()
	rs, err := p.Server.Store().Runners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		rs[i].LastSeen = time.Time{} // a legitimate lease touches it
	}
	toks, err := p.Server.Store().EnrolTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := p.Server.Store().Runs(ctx, store.RunFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var signers []string
	for _, r := range runs {
		signers = append(signers, r.RunnerName+"/"+r.Signer)
	}
	return runnerState{rs, toks, signers}
}

func sameState(t *testing.T, what string, before, after runnerState) {
	t.Helper()
	b, _ := json.Marshal(before)
	a, _ := json.Marshal(after)
	if !bytes.Equal(a, b) {
		t.Errorf("%s changed the portal's runners, enrolment tokens or runs:\nbefore %s\nafter  %s", what, b, a)
	}
}

// publishAs has the enrolled runner lease a fresh job and publish its bundle.
func publishAs(t testing.TB, p *portaltest.Portal, r enrolled) int64 {
	t.Helper()
	m := smallManifest(t, 2)
	queueJob(t, p, m)
	l, err := r.client.Lease(context.Background(), 0)
	if err != nil || l == nil {
		t.Fatalf("lease: %v %v", l, err)
	}
	cr, err := r.client.Complete(context.Background(), l.JobID, l.LeaseID, runnerBundle(t, m, r.id, l))
	if err != nil {
		t.Fatal(err)
	}
	return cr.RunID
}

func TestEnrolWithStolenPublicKeysIsRefused(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	victim := enrol(t, p, "victim")
	runID := publishAs(t, p, victim)
	// The attacker has the victim's public keys (every bundle carries them) and a valid
	// enrolment token of his own, but not the private keys.
	run, _ := p.Server.Store().Run(ctx, runID)
	stolen := run.PublicKeys
	if !stolen.Equal(victim.id.Public()) {
		t.Fatal("the published run does not carry the victim's keys")
	}
	attacker, _ := identity.GenerateIdentity()
	tok := p.EnrolToken(t)
	before := stateOf(t, p)
	cases := []struct {
		name  string
		proof func() identity.Possession
		want  string
	}{
		{"no proof", func() identity.Possession { return identity.Possession{} }, "missing or malformed challenge"},
		{"no signatures", func() identity.Possession {
			return identity.Possession{Challenge: hex.EncodeToString(challenge(t, p, identity.PurposeRunnerEnrol))}
		}, "both required"},
		{"signed by the attacker's keys", func() identity.Possession {
			return prove(t, attacker, identity.PurposeRunnerEnrol, challenge(t, p, identity.PurposeRunnerEnrol))
		}, "ed25519 signature does not verify"},
		{"made-up challenge", func() identity.Possession {
			return prove(t, attacker, identity.PurposeRunnerEnrol, bytes.Repeat([]byte{1}, 32))
		}, "unknown challenge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := rawEnrol(p, protocol.EnrolRequest{Token: tok, Name: "victim", Version: "evil", PublicKeys: stolen, Boards: hostBoards, Proof: tc.proof()})
			if !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want unauthorized: %s", err, tc.want)
			}
		})
	}
	sameState(t, "enrolling with stolen keys", before, stateOf(t, p))
	// The victim's token still works and its run is still its own.
	if _, err := victim.client.Lease(ctx, 0); err != nil {
		t.Errorf("victim's token after the attack: %v", err)
	}
	if r, _ := p.Server.Store().Run(ctx, runID); r.RunnerName != "victim" || r.Signer != stolen.Fingerprint() {
		t.Errorf("victim's run now reads %s / %s", r.RunnerName, r.Signer)
	}
}

func TestEnrolProofChallengesAreSingleUseAndExpire(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) { c.ChallengeTTL = 300 * time.Millisecond })
	id, _ := identity.GenerateIdentity()
	req := func(tok string, pr identity.Possession) protocol.EnrolRequest {
		return protocol.EnrolRequest{Token: tok, Name: "lab", Version: "test", PublicKeys: id.Public(), Boards: hostBoards, Proof: pr}
	}
	// Replay: a proof seen once (here: refused for its token) cannot be used again.
	ch := challenge(t, p, identity.PurposeRunnerEnrol)
	pr := prove(t, id, identity.PurposeRunnerEnrol, ch)
	if _, _, err := rawEnrol(p, req("pqe_not-a-token", pr)); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "unknown enrolment token") {
		t.Fatalf("unknown enrolment token: %v", err)
	}
	tok := p.EnrolToken(t)
	before := stateOf(t, p)
	if _, _, err := rawEnrol(p, req(tok, pr)); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "already used") {
		t.Errorf("replayed challenge: %v", err)
	}
	// Expired.
	pr = prove(t, id, identity.PurposeRunnerEnrol, challenge(t, p, identity.PurposeRunnerEnrol))
	time.Sleep(400 * time.Millisecond)
	if _, _, err := rawEnrol(p, req(tok, pr)); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired challenge: %v", err)
	}
	// A challenge for registering submitter keys does not enrol a runner, even signed for it.
	ch = challenge(t, p, identity.PurposeSubmitterKeys)
	if _, _, err := rawEnrol(p, req(tok, prove(t, id, identity.PurposeRunnerEnrol, ch))); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "issued for submitter-keys") {
		t.Errorf("challenge of another purpose: %v", err)
	}
	sameState(t, "refused proofs", before, stateOf(t, p))
	// The same keys with a fresh proof enrol, spending the token once.
	if _, err := runner.EnrolWithProof(context.Background(), &portalclient.Client{BaseURL: p.URL}, id, req(tok, identity.Possession{})); err != nil {
		t.Fatalf("valid proof: %v", err)
	}
}

func TestEnrolmentTokensAreSingleUseExpireAndRevoke(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	st := p.Server.Store()
	enrolWith := func(tok string) error {
		id, _ := identity.GenerateIdentity()
		_, err := runner.EnrolWithProof(ctx, &portalclient.Client{BaseURL: p.URL}, id, protocol.EnrolRequest{Token: tok, Name: "r", Version: "test", Boards: hostBoards})
		return err
	}
	single := p.EnrolToken(t)
	if err := enrolWith(single); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, p)
	if err := enrolWith(single); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "used up (1 of 1 uses)") {
		t.Errorf("reused single-use token: %v", err)
	}
	sameState(t, "a reused token", before, stateOf(t, p))

	mk := func(label string, opt store.EnrolTokenOptions) string {
		tok := "pqe_" + label + "-0123456789abcdef"
		if _, err := st.CreateEnrolToken(ctx, label, portal.HashToken(tok), 0, opt); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	two := mk("two", store.EnrolTokenOptions{MaxUses: 2})
	for i := range 2 {
		if err := enrolWith(two); err != nil {
			t.Fatalf("use %d of 2: %v", i+1, err)
		}
	}
	if err := enrolWith(two); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "used up (2 of 2 uses)") {
		t.Errorf("third use of a two-use token: %v", err)
	}
	expired := mk("old", store.EnrolTokenOptions{MaxUses: 5, Expires: time.Now().Add(-time.Second)})
	if err := enrolWith(expired); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "expired at") {
		t.Errorf("expired token: %v", err)
	}

	// The administrator creates a token with uses and expiry, sees it listed, and revokes it.
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/admin")
	_, body := admin.postFollow("/admin/enrol-tokens", url.Values{"label": {"bench"}, "uses": {"3"}, "hours": {"2"}})
	m := regexp.MustCompile(`id="new-token">([^<]+)<`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, "0 of 3") {
		t.Fatalf("no new token, or not listed with its uses:\n%s", body)
	}
	if err := enrolWith(m[1]); err != nil {
		t.Fatal(err)
	}
	toks, _ := st.EnrolTokens(ctx)
	var id int64
	for _, tk := range toks {
		if tk.Label == "bench" {
			id = tk.ID
			if tk.Uses != 1 || tk.MaxUses != 3 || tk.Expires.IsZero() {
				t.Errorf("bench token recorded as %+v", tk)
			}
		}
	}
	// Without the CSRF token the revocation is refused.
	if resp, err := http.PostForm(p.URL+"/admin/enrol-tokens/"+itoa(id)+"/revoke", nil); err == nil {
		if resp.StatusCode < 400 {
			t.Errorf("revocation without a session and CSRF token: %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
	if code, loc, _ := admin.post("/admin/enrol-tokens/"+itoa(id)+"/revoke", url.Values{}); code != http.StatusSeeOther || loc != "/admin" {
		t.Fatalf("revoke: %d %s", code, loc)
	}
	before = stateOf(t, p)
	if err := enrolWith(m[1]); !errors.Is(err, runner.ErrUnauthorized) || !strings.Contains(err.Error(), "was revoked") {
		t.Errorf("revoked token: %v", err)
	}
	sameState(t, "a revoked token", before, stateOf(t, p))
}

func TestReenrolmentNeedsTheCurrentTokenAndRevocationFlagsRuns(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	id, _ := identity.GenerateIdentity()
	first := &portalclient.Client{BaseURL: p.URL}
	er, err := runner.EnrolWithProof(ctx, first, id, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: "lab", Version: "test", Boards: hostBoards})
	if err != nil {
		t.Fatal(err)
	}
	r := enrolled{first, id}
	runID := publishAs(t, p, r)
	rs, _ := p.Server.Store().Runners(ctx)
	runnerID := rs[0].ID
	again := func(current string) (*portalclient.Client, protocol.EnrolResponse, error) {
		c := &portalclient.Client{BaseURL: p.URL}
		resp, err := runner.EnrolWithProof(ctx, c, r.id, protocol.EnrolRequest{Token: p.EnrolToken(t), CurrentToken: current, Name: "renamed", Version: "test", Boards: hostBoards})
		return c, resp, err
	}
	// The same keys, proven, with a fresh enrolment token but not the current runner token.
	before := stateOf(t, p)
	if _, _, err := again(""); !errors.Is(err, runner.ErrConflict) || !strings.Contains(err.Error(), "needs that runner's current token") {
		t.Fatalf("re-enrolment without the current token: %v", err)
	}
	if _, _, err := again("pqr_wrong"); !errors.Is(err, runner.ErrConflict) {
		t.Fatalf("re-enrolment with a wrong token: %v", err)
	}
	after := stateOf(t, p)
	after.Tokens, before.Tokens = nil, nil // the two fresh enrolment tokens
	sameState(t, "re-enrolment without the token", before, after)
	if _, err := r.client.Lease(ctx, 0); err != nil {
		t.Errorf("the runner's token after refused re-enrolments: %v", err)
	}
	// With the current token: the same runner, a new token, the old one gone.
	old := r.client
	c, resp, err := again(er.RunnerToken)
	if err != nil || resp.RunnerID != runnerID {
		t.Fatalf("re-enrolment with the current token: %v (runner %d, want %d)", err, resp.RunnerID, runnerID)
	}
	if _, err := old.Lease(ctx, 0); !errors.Is(err, runner.ErrUnauthorized) {
		t.Errorf("old token after re-enrolment: %v", err)
	}
	if _, err := c.Lease(ctx, 0); err != nil {
		t.Errorf("new token: %v", err)
	}
	// The administrator's release lets it re-enrol once without a token.
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/admin")
	if code, _, _ := admin.post("/admin/runners/"+itoa(runnerID)+"/release", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("release: %d", code)
	}
	c, _, err = again("")
	if err != nil {
		t.Fatalf("released re-enrolment: %v", err)
	}
	if _, _, err := again(""); !errors.Is(err, runner.ErrConflict) {
		t.Errorf("a release is good for one re-enrolment: %v", err)
	}
	// Revoked: the token stops, the keys never enrol again, the run stays and is flagged.
	admin.get("/admin")
	if code, _, _ := admin.post("/admin/runners/"+itoa(runnerID)+"/revoke", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("revoke runner: %d", code)
	}
	if _, err := c.Lease(ctx, 0); !errors.Is(err, runner.ErrUnauthorized) {
		t.Errorf("revoked runner's token: %v", err)
	}
	if _, _, err := again(""); !errors.Is(err, runner.ErrRefused) || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("revoked runner re-enrolling: %v", err)
	}
	if _, body := get(t, p.URL+"/runs/"+itoa(runID)); !strings.Contains(body, "signed by a revoked key") {
		t.Error("run page of a revoked runner's run has no revoked badge")
	}
	var rj struct {
		SignerRevoked *time.Time `json:"signerRevoked"`
	}
	getJSON(t, p.URL+"/api/v1/runs/"+itoa(runID), &rj)
	if rj.SignerRevoked == nil {
		t.Error("run JSON of a revoked runner's run has no signerRevoked")
	}
}

// postJSON posts v with a bearer token; an answer of 300 or more is an error with the
// status and body.
func postJSON(url, token string, v any) error {
	b, _ := json.Marshal(v)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return nil
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestSubmitterKeySquattingIsRefused(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	st := p.Server.Store()
	victim := enrol(t, p, "victim")
	runID := publishAs(t, p, victim)
	mallory, alice, bob := "mallory-token-0123456789abcdef", "alice-token-0123456789abcdefgh", "bob-token-0123456789abcdefghij"
	for name, tok := range map[string]string{"mallory": mallory, "alice": alice, "bob": bob} {
		if _, err := st.CreateUser(ctx, name, store.RoleSubmitter, portal.HashToken(tok)); err != nil {
			t.Fatal(err)
		}
	}
	register := func(tok string, reg protocol.KeyRegistration) error {
		return postJSON(p.URL+"/api/v1/submitters/keys", tok, reg)
	}
	keysBefore := func() int { ks, _ := st.SubmitterKeys(ctx, 0); return len(ks) }
	// Mallory registers the runner's public keys as his own.
	own, _ := identity.GenerateIdentity()
	fake, _ := portalclient.KeyRegistrationFor(own, hex.EncodeToString(challenge(t, p, identity.PurposeSubmitterKeys)), "")
	fake.PublicKeys = victim.id.Public()
	if err := register(mallory, fake); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("squatting a runner's keys: %v", err)
	}
	if err := register(mallory, protocol.KeyRegistration{PublicKeys: victim.id.Public()}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("registering without a proof: %v", err)
	}
	// Even with a real proof by the runner's keys, keys a runner holds are not a submitter's.
	real, _ := portalclient.KeyRegistrationFor(victim.id, hex.EncodeToString(challenge(t, p, identity.PurposeSubmitterKeys)), "")
	if err := register(mallory, real); err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "enrolled as portal runner") {
		t.Errorf("runner's keys with a proof: %v", err)
	}
	if n := keysBefore(); n != 0 {
		t.Fatalf("%d keys registered by refused attempts", n)
	}
	// Mallory republishing the runner's bundle under his name is refused: no key of his signed it.
	_, rc := get(t, p.URL+"/runs/"+itoa(runID)+"/bundle.tar.gz")
	if code, body := (submitter{mallory, nil}).submit(t, p, []byte(rc)); code != 400 || !strings.Contains(body, "unknown key") {
		t.Errorf("republished runner bundle: %d %s", code, body)
	}
	// Alice registers her keys; Bob, even holding them, cannot take them over.
	aliceID, _ := identity.GenerateIdentity()
	if _, err := portalclient.NewSubmitter(p.URL, alice).RegisterKeys(ctx, aliceID, "bench"); err != nil {
		t.Fatal(err)
	}
	if _, err := portalclient.NewSubmitter(p.URL, bob).RegisterKeys(ctx, aliceID, "mine"); !errors.Is(err, runner.ErrConflict) || !strings.Contains(err.Error(), "already registered to the account alice") {
		t.Errorf("keys held by another account: %v", err)
	}
	if k, err := st.SubmitterKeyByFingerprint(ctx, aliceID.Public().Fingerprint()); err != nil || k.UserName != "alice" || k.Label != "bench" {
		t.Errorf("alice's keys now %+v %v", k, err)
	}
	// And a runner cannot enrol with keys a submitter holds.
	_, err := runner.EnrolWithProof(ctx, &portalclient.Client{BaseURL: p.URL}, aliceID, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: "x", Version: "t", Boards: hostBoards})
	if !errors.Is(err, runner.ErrConflict) || !strings.Contains(err.Error(), "submitter's keys") {
		t.Errorf("enrolling a submitter's keys: %v", err)
	}
	// A revoked key's bundles are refused; its published runs are flagged.
	sub := submitter{alice, aliceID}
	code, body := sub.submit(t, p, sub.bundle(t, &host.Host{}, smallManifest(t, 2)))
	if code != 200 {
		t.Fatalf("alice's submission: %d %s", code, body)
	}
	var cr protocol.CompleteResponse
	json.Unmarshal([]byte(body), &cr)
	k, _ := st.SubmitterKeyByFingerprint(ctx, aliceID.Public().Fingerprint())
	if err := st.RevokeSubmitterKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := sub.submit(t, p, sub.bundle(t, &host.Host{}, smallManifest(t, 2))); code != 400 || !strings.Contains(body, "revoked key") {
		t.Errorf("revoked key's submission: %d %s", code, body)
	}
	if _, body := get(t, p.URL+cr.URL); !strings.Contains(body, "signed by a revoked key") || !strings.Contains(body, "alice") {
		t.Error("community run of a revoked key is not flagged, or lost its submitter")
	}
}

func TestAccountNamesAreUnique(t *testing.T) {
	p := portaltest.Start(t, nil)
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/admin")
	if code, _ := admin.postFollow("/admin/users", url.Values{"name": {"Alice"}, "role": {"submitter"}}); code != http.StatusOK {
		t.Fatalf("first Alice: %d", code)
	}
	for _, name := range []string{"Alice", "alice", "ALICE", " alice "} {
		admin.get("/admin")
		code, _, body := admin.post("/admin/users", url.Values{"name": {name}, "role": {"member"}})
		if code != http.StatusConflict || !strings.Contains(body, "already exists") {
			t.Errorf("second account %q: %d", name, code)
		}
	}
	us, _ := p.Server.Store().Users(context.Background())
	if len(us) != 2 { // the administrator and Alice
		t.Errorf("%d accounts, want 2", len(us))
	}
	if _, err := p.Server.CreateAccount(context.Background(), "ADMIN", store.RoleMember); err == nil {
		t.Error("an account named like the administrator was created")
	}
}

func TestStartRefusesEmptyOrDamagedDatabase(t *testing.T) {
	ctx := context.Background()
	open := func(dir string, mod func(*portal.Config)) error {
		cfg := portal.DefaultConfig()
		cfg.DataDir, cfg.LocalRunner = dir, false
		if mod != nil {
			mod(&cfg)
		}
		srv, err := database.OpenPortal(ctx, cfg, discard())
		if err == nil {
			srv.Close()
		}
		return err
	}
	withBlobs := func(t *testing.T) string {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "blobs", "sha256", "ab"), 0o755)
		os.WriteFile(filepath.Join(dir, "blobs", "sha256", "ab", "abcd"), []byte("a bundle"), 0o644)
		return dir
	}
	t.Run("zero-length beside blobs", func(t *testing.T) {
		dir := withBlobs(t)
		os.WriteFile(filepath.Join(dir, "portal.db"), nil, 0o644)
		err := open(dir, nil)
		if err == nil || !strings.Contains(err.Error(), "empty (0 bytes)") || !strings.Contains(err.Error(), "holds 1 stored files") || !strings.Contains(err.Error(), "--init") {
			t.Fatalf("err %v", err)
		}
		if fi, _ := os.Stat(filepath.Join(dir, "portal.db")); fi.Size() != 0 {
			t.Error("the refused start wrote to the database")
		}
		if err := open(dir, func(c *portal.Config) { c.Init = true }); err != nil {
			t.Errorf("with --init: %v", err)
		}
	})
	t.Run("missing beside blobs", func(t *testing.T) {
		dir := withBlobs(t)
		if err := open(dir, nil); err == nil || !strings.Contains(err.Error(), "is missing") {
			t.Fatalf("err %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "portal.db")); err == nil {
			t.Error("the refused start created a database")
		}
	})
	t.Run("not SQLite", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "portal.db"), []byte("these are not the pages you are looking for"), 0o644)
		if err := open(dir, nil); err == nil || !strings.Contains(err.Error(), "not an SQLite database") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("damaged pages", func(t *testing.T) {
		dir := t.TempDir()
		if err := open(dir, nil); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "portal.db")
		data, _ := os.ReadFile(db)
		if len(data) < 8*4096 {
			t.Fatalf("database of %d bytes", len(data))
		}
		// Scribble over every page but the first (the schema), as a failing disk would.
		for off := 4096; off+64 < len(data); off += 4096 {
			copy(data[off+8:off+64], bytes.Repeat([]byte{0xa5}, 56))
		}
		os.WriteFile(db, data, 0o644)
		err := open(dir, nil)
		if err == nil || !strings.Contains(err.Error(), "restore it from a backup") {
			t.Fatalf("err %v", err)
		}
		t.Logf("refused: %v", err)
	})
	t.Run("damaged table found by quick_check", func(t *testing.T) {
		dir := t.TempDir()
		if err := open(dir, nil); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "portal.db")
		raw, err := sql.Open("sqlite3", db)
		if err != nil {
			t.Fatal(err)
		}
		var root, pageSize int
		raw.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'enrol_tokens'`).Scan(&root)
		raw.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
		raw.Close()
		if root < 2 || pageSize == 0 {
			t.Fatalf("root page %d, page size %d", root, pageSize)
		}
		// One table's page is scribbled over; opening and migrating never read it.
		data, _ := os.ReadFile(db)
		off := (root - 1) * pageSize
		copy(data[off:off+pageSize], bytes.Repeat([]byte{0xa5}, pageSize))
		os.WriteFile(db, data, 0o644)
		err = open(dir, nil)
		if err == nil || !strings.Contains(err.Error(), "is damaged") || !strings.Contains(err.Error(), "quick_check") {
			t.Fatalf("err %v", err)
		}
		t.Logf("refused: %v", err)
	})
	t.Run("marker", func(t *testing.T) {
		dir := t.TempDir()
		cfg := portal.DefaultConfig()
		cfg.DataDir, cfg.LocalRunner = dir, false
		srv, err := database.OpenPortal(ctx, cfg, discard())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "portal.running")); err != nil {
			t.Errorf("no running marker while open: %v", err)
		}
		srv.Close()
		if _, err := os.Stat(filepath.Join(dir, "portal.running")); err == nil {
			t.Error("running marker left after a clean close")
		}
	})
}

// Every serve start mints an enrolment token for its local runner; the previous start's, never
// used, is revoked rather than left "usable" on /admin. An administrator's token of the same
// label (not single-use, not expiring) is left alone.
func TestLocalRunnerTokenReplacesThePreviousStarts(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	st := p.Server.Store()
	if _, err := st.CreateEnrolToken(ctx, "local runner", portal.HashToken("pqe_admins-own-0123456789abcdef"), 0, store.EnrolTokenOptions{MaxUses: 5}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := p.Server.CreateEnrolToken(ctx, "local runner", 10*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	toks, err := st.EnrolTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	usable := map[int]int{}
	for _, tk := range toks {
		if ok, _ := tk.Usable(time.Now()); ok && tk.Label == "local runner" {
			usable[tk.MaxUses]++
		}
	}
	if usable[1] != 1 || usable[5] != 1 {
		t.Errorf("after three starts: %d usable local-runner tokens minted by serve (want 1), %d of the administrator's (want 1)", usable[1], usable[5])
	}
}
