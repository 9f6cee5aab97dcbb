package identity

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// identityTestFixed returns a deterministic identity whose seeds are all n and n+1.
func identityTestFixed(n byte) *Identity {
	return FromSeeds([32]byte(bytes.Repeat([]byte{n}, 32)), [32]byte(bytes.Repeat([]byte{n + 1}, 32)))
}

func TestIdentityRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	id, err := GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Save(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{
		{dir, 0o700},
		{filepath.Join(dir, IdentityKeyFile), 0o600},
		{filepath.Join(dir, IdentityPubFile), 0o644},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.mode {
			t.Errorf("%s: mode %04o, want %04o", c.path, got, c.mode)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("identity dir holds %d entries, want 2 (temporary files left?)", len(entries))
	}

	loaded, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Public().Equal(id.Public()) {
		t.Fatal("loaded identity has other public keys")
	}
	if loaded.edSeed != id.edSeed || loaded.mlSeed != id.mlSeed {
		t.Fatal("loaded identity has other seeds")
	}

	pubData, err := os.ReadFile(filepath.Join(dir, IdentityPubFile))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKeys(pubData)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(id.Public()) {
		t.Fatal("runner.pub.json holds other keys")
	}

	// The loaded private keys sign what the saved public keys verify.
	challenge := []byte("0123456789abcdef0123456789abcdef")
	proof, err := loaded.ProvePossession(PurposeSubmitterKeys, challenge)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyPossession(PurposeSubmitterKeys, challenge, pub, proof); err != nil {
		t.Fatalf("a proof by the loaded identity does not verify with the saved keys: %v", err)
	}
}

func TestLoadIdentityMode(t *testing.T) {
	tests := []struct {
		mode   fs.FileMode
		wantOK bool
	}{
		{0o600, true},
		{0o400, true},
		{0o644, false},
		{0o640, false},
		{0o604, false},
		{0o660, false},
		{0o700, true},
	}
	id := identityTestFixed(1)
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			if err := id.Save(dir); err != nil {
				t.Fatal(err)
			}
			keyPath := filepath.Join(dir, IdentityKeyFile)
			if err := os.Chmod(keyPath, tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := LoadIdentity(dir)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("mode %04o refused: %v", tt.mode, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("mode %04o accepted", tt.mode)
			}
			for _, want := range []string{keyPath, "mode " + fmtOctal(tt.mode)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

// fmtOctal formats a permission like the identity errors do.
func fmtOctal(m fs.FileMode) string {
	const digits = "01234567"
	p := uint32(m.Perm())
	return string([]byte{'0', digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}

func TestSaveRefusesOverwrite(t *testing.T) {
	dir := t.TempDir()
	first := identityTestFixed(1)
	if err := first.Save(dir); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, IdentityKeyFile)
	before, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	err = identityTestFixed(2).Save(dir)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Save: got %v, want an fs.ErrExist error", err)
	}
	after, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("second Save changed runner.key")
	}
	loaded, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Public().Equal(first.Public()) {
		t.Fatal("key on disk is not the first identity's")
	}
}

func TestLoadOrCreateIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "id")
	id1, created, err := LoadOrCreateIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("first call: created = false")
	}
	id2, created, err := LoadOrCreateIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if created {
		t.Fatal("second call: created = true")
	}
	if !id1.Public().Equal(id2.Public()) {
		t.Fatal("second call returned other keys")
	}

	// A lost public key file is written again.
	pubPath := filepath.Join(dir, IdentityPubFile)
	if err := os.Remove(pubPath); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateIdentity(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pubPath)
	if err != nil {
		t.Fatalf("public key file not restored: %v", err)
	}
	if pub, err := ParsePublicKeys(data); err != nil || !pub.Equal(id1.Public()) {
		t.Fatalf("restored public key file is wrong: %v", err)
	}
}

func TestLoadIdentityRejects(t *testing.T) {
	good := identityTestFixed(1)
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"missing", func(t *testing.T, dir string) {}, IdentityKeyFile},
		{"garbage", func(t *testing.T, dir string) {
			identityTestWrite(t, dir, IdentityKeyFile, []byte("not json"), 0o600)
		}, "parse"},
		{"wrong type", func(t *testing.T, dir string) {
			identityTestWrite(t, dir, IdentityKeyFile, []byte(`{"type":"x","ed25519Seed":"","mldsa65Seed":""}`), 0o600)
		}, `type "x"`},
		{"short seed", func(t *testing.T, dir string) {
			identityTestWrite(t, dir, IdentityKeyFile, []byte(`{"type":"pqrepro-runner-key/v1","ed25519Seed":"AAAA","mldsa65Seed":"AAAA"}`), 0o600)
		}, "ed25519Seed is 3 bytes"},
		{"public key file of another identity", func(t *testing.T, dir string) {
			if err := good.Save(dir); err != nil {
				t.Fatal(err)
			}
			other, err := identityTestFixed(9).Public().MarshalFile()
			if err != nil {
				t.Fatal(err)
			}
			identityTestWrite(t, dir, IdentityPubFile, other, 0o644)
		}, "holds keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			_, err := LoadIdentity(dir)
			if err == nil {
				t.Fatal("LoadIdentity succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func identityTestWrite(t *testing.T, dir, name string, data []byte, mode fs.FileMode) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestParsePublicKeys(t *testing.T) {
	pub := identityTestFixed(1).Public()
	ed := base64.StdEncoding.EncodeToString(pub.Ed25519)
	ml := base64.StdEncoding.EncodeToString(pub.MLDSA65)
	good, err := pub.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data string
		want string // "" means success
	}{
		{"marshalled file", string(good), ""},
		{"compact", `{"ed25519":"` + ed + `","mldsa65":"` + ml + `"}`, ""},
		{"short ed25519", `{"ed25519":"AAAA","mldsa65":"` + ml + `"}`, "ed25519 public key is 3 bytes"},
		{"short ml-dsa-65", `{"ed25519":"` + ed + `","mldsa65":"AAAA"}`, "ml-dsa-65 public key is 3 bytes"},
		{"missing ml-dsa-65", `{"ed25519":"` + ed + `"}`, "ml-dsa-65 public key is 0 bytes"},
		{"unknown field", `{"ed25519":"` + ed + `","mldsa65":"` + ml + `","x":1}`, `unknown key "x"`},
		{"field in other case", `{"ED25519":"` + ed + `","mldsa65":"` + ml + `"}`, `unknown key "ED25519"`},
		{"duplicate field", `{"ed25519":"` + ed + `","ed25519":"` + ed + `","mldsa65":"` + ml + `"}`, "duplicate key"},
		{"trailing data", `{"ed25519":"` + ed + `","mldsa65":"` + ml + `"} {}`, "trailing data"},
		{"not base64", `{"ed25519":"!!!!","mldsa65":"` + ml + `"}`, "illegal base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePublicKeys([]byte(tt.data))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !got.Equal(pub) {
					t.Fatal("parsed keys differ")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestKeyIDsAndFingerprint(t *testing.T) {
	a := identityTestFixed(1).Public()
	b := identityTestFixed(2).Public()
	edID, mlID := a.KeyIDs()
	if !regexp.MustCompile(`^ed25519:[0-9a-f]{32}$`).MatchString(edID) {
		t.Errorf("ed25519 key ID %q has the wrong form", edID)
	}
	if !regexp.MustCompile(`^ml-dsa-65:[0-9a-f]{32}$`).MatchString(mlID) {
		t.Errorf("ml-dsa-65 key ID %q has the wrong form", mlID)
	}
	fp := a.Fingerprint()
	if !regexp.MustCompile(`^[0-9a-f]{4}(-[0-9a-f]{4}){4}$`).MatchString(fp) {
		t.Errorf("fingerprint %q has the wrong form", fp)
	}
	// These are part of the on-disk and wire formats: they must never change
	// for a given key.
	const (
		wantEdID = "ed25519:34750f98bd59fcfc946da45aaabe933b"
		wantMLID = "ml-dsa-65:fda6ad37a2ab2ae563455cc73b3d263e"
		wantFP   = "4d8e-4583-baee-bf0b-78a1"
	)
	if edID != wantEdID || mlID != wantMLID || fp != wantFP {
		t.Errorf("fixed identity has IDs %s, %s and fingerprint %s; want %s, %s, %s",
			edID, mlID, fp, wantEdID, wantMLID, wantFP)
	}
	edB, mlB := b.KeyIDs()
	if edB == edID || mlB == mlID || b.Fingerprint() == fp {
		t.Error("different keys have equal IDs or fingerprints")
	}
	if a2, _ := identityTestFixed(1).Public().KeyIDs(); a2 != edID {
		t.Error("key ID is not stable")
	}
}
