package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pqrepro/portal/portaltest"
	"pqrepro/portal/translog"
)

// TestVerifyAgainstLog publishes a bundle, sequences the log, has `pqrepro witness` register
// and cosign over HTTP, then verifies the bundle's inclusion with `pqrepro verify --log`
// against the portal and against a directory copy, tampered copies being refused.
func TestVerifyAgainstLog(t *testing.T) {
	ctx := context.Background()
	p := portaltest.Start(t, nil)
	tok, err := p.Server.CreateAccount(ctx, "lab member", "submitter")
	if err != nil {
		t.Fatal(err)
	}
	bundle, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	if code, out, errOut := pq(t, "submit", bundle, "--portal", p.URL, "--token", tok, "--register-keys", "--keys", keys); code != 0 {
		t.Fatalf("submit: %s%s", out, errOut)
	}
	if _, err := p.Server.Log().Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	logKey := p.Server.Log().VerifierKey()
	wdir := filepath.Join(t.TempDir(), "witness")
	code, out, errOut := pq(t, "witness", "--log", p.URL, "--key", wdir, "--name", "witness.example/w1", "--log-key", logKey, "--register")
	if code != 0 {
		t.Fatalf("witness --register: %s%s", out, errOut)
	}
	ed := regexp.MustCompile(`(?m)^ed25519: (\S+)$`).FindStringSubmatch(out)
	ml := regexp.MustCompile(`(?m)^mldsa44: (\S+)$`).FindStringSubmatch(out)
	_, proof, _ := strings.Cut(out, "valid for a few minutes):\n")
	if ed == nil || ml == nil || proof == "" {
		t.Fatalf("witness --register printed:\n%s", out)
	}
	if _, err := p.Server.Log().RegisterWitness(ctx, ed[1], ml[1], []byte(proof), time.Minute); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := pq(t, "witness", "--log", p.URL, "--key", wdir, "--log-key", logKey, "--once"); code != 0 || !strings.Contains(out, "cosigned checkpoint 1") {
		t.Fatalf("witness --once: %s%s", out, errOut)
	}
	if _, err := p.Server.Log().Sequence(ctx); err != nil { // the file gets the cosignatures
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "seen.json")
	args := func(log string) []string {
		return []string{"verify", bundle, "--log", log, "--log-key", logKey, "--witness", ed[1], "--witness", ml[1], "--log-state", state}
	}
	code, out, errOut = pq(t, args(p.URL)...)
	if code != 0 || !strings.Contains(out, "is leaf 0: run 1") || !strings.Contains(out, "cosigned by pinned witnesses: witness.example/w1") || !strings.Contains(out, "VERIFIED") {
		t.Fatalf("verify --log URL: exit %d\n%s%s", code, out, errOut)
	}
	// A directory copy of the log's files verifies offline, and is consistent with what was seen.
	copyDir := filepath.Join(t.TempDir(), "log")
	if err := exec.Command("cp", "-r", filepath.Join(p.Config.DataDir, "blobs", "files"), copyDir).Run(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = pq(t, args(copyDir)...)
	if code != 0 || !strings.Contains(out, "consistent with the checkpoint of size 1") {
		t.Fatalf("verify --log DIR: exit %d\n%s%s", code, out, errOut)
	}
	// Tampered copies are refused, naming what failed.
	tile := filepath.Join(copyDir, "tile/entries/000.p/1")
	orig, _ := os.ReadFile(tile)
	bad := append([]byte(nil), orig...)
	bad[len(bad)-3] ^= 1
	os.WriteFile(tile, bad, 0o644)
	if code, _, errOut = pq(t, args(copyDir)...); code == 0 || !strings.Contains(errOut, "tampered entry") {
		t.Fatalf("tampered entry bundle: exit %d %s", code, errOut)
	}
	os.WriteFile(tile, orig, 0o644)
	// (A tampered hash tile is refused in portal/translog's TestTamperRefused: a one-leaf
	// tree's proof reads no tile.)
	cp := filepath.Join(copyDir, "checkpoint")
	msg, _ := os.ReadFile(cp)
	os.WriteFile(cp, []byte(strings.Replace(string(msg), "\n1\n", "\n2\n", 1)), 0o644)
	if code, _, errOut = pq(t, args(copyDir)...); code == 0 || !strings.Contains(errOut, "does not verify") {
		t.Fatalf("tampered checkpoint: exit %d %s", code, errOut)
	}
	os.WriteFile(cp, msg, 0o644)
	// A remembered checkpoint of the same size with another root: a fork, refused.
	vc, _ := translog.VerifyCheckpoint(msg, translog.Trust{LogKey: logKey})
	forked := vc.Checkpoint
	forked.Hash[0] ^= 1
	translog.SaveSeen(state, forked)
	if code, _, errOut = pq(t, args(copyDir)...); code == 0 || !strings.Contains(errOut, "fork") {
		t.Fatalf("forked state: exit %d %s", code, errOut)
	}
	// Without a pinned witness the log signature alone is reported as not enough.
	os.Remove(state)
	code, out, _ = pq(t, "verify", bundle, "--log", copyDir, "--log-key", logKey, "--log-state", state)
	if code != 0 || !strings.Contains(out, "does not show that the operator did not fork the log") {
		t.Fatalf("unwitnessed: exit %d %s", code, out)
	}
}
