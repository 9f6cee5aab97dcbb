package artifacts_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
)

// TestTLSBundleAttested checks tls.csv is signed with the other files: a changed or missing
// tls.csv fails verification, naming it.
func TestTLSBundleAttested(t *testing.T) {
	_, _, b := artifacts.TestTLSFixture(t)
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if err := attest.Sign(b, id, attest.Predicate{Runner: attest.RunnerRef{Name: "test", Version: "test"}, Assurance: attest.Assurance{Level: artifacts.AssuranceHost, Origin: attest.OriginLocal}}); err != nil {
		t.Fatal(err)
	}
	if _, err := attest.Verify(b, nil); err != nil {
		t.Fatalf("verify: %v", err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	back, err := artifacts.ReadTarGz(&buf, 0)
	if err != nil || !bytes.Equal(back.Files[artifacts.FileTLS], b.Files[artifacts.FileTLS]) {
		t.Fatalf("tar round trip: %v", err)
	}
	changed := &artifacts.Bundle{Files: map[string][]byte{}}
	for k, v := range b.Files {
		changed.Files[k] = v
	}
	changed.Files[artifacts.FileTLS] = append(bytes.Clone(b.Files[artifacts.FileTLS]), "X25519+Ed25519,handshake,,sign,server,0,1\n"...)
	if _, err := attest.Verify(changed, nil); err == nil || !strings.Contains(err.Error(), artifacts.FileTLS) {
		t.Fatalf("changed tls.csv: %v", err)
	}
	delete(changed.Files, artifacts.FileTLS)
	if _, err := attest.Verify(changed, nil); err == nil || !strings.Contains(err.Error(), artifacts.FileTLS) {
		t.Fatalf("missing tls.csv: %v", err)
	}
}

// TestSignedBundleRoundTrip checks a signed bundle written as a directory and read back still
// verifies: the bundle IO keeps every byte the signatures cover.
func TestSignedBundleRoundTrip(t *testing.T) {
	b := artifacts.TestBundleFiles(4096)
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if err := attest.Sign(b, id, attest.Predicate{Runner: attest.RunnerRef{Name: "test", Version: "test"}, Assurance: attest.Assurance{Level: artifacts.AssuranceHost, Origin: attest.OriginLocal}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run-1")
	if err := artifacts.WriteDir(dir, b); err != nil {
		t.Fatal(err)
	}
	got, err := artifacts.ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attest.Verify(got, nil); err != nil {
		t.Fatalf("bundle read back does not verify: %v", err)
	}
}
