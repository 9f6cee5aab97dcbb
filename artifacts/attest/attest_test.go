package attest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
)

var attestUpdate = flag.Bool("update-attest", false, "rewrite testdata/attest_golden.* from a fixed identity")

// attestTestPredicate returns a valid predicate with a fixed time.
func attestTestPredicate() Predicate {
	return Predicate{
		Summary:   json.RawMessage(`{"cells":1,"fastest":"ML-DSA-65 sign"}`),
		Runner:    RunnerRef{Name: "pqrepro-runner", Version: "0.1.0"},
		Assurance: Assurance{Level: "host", Origin: OriginLocal},
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// attestTestSigned returns a bundle signed by id, with a copy of the
// pinned keys.
func attestTestSigned(t testing.TB, id *identity.Identity, samplesSize int) (*artifacts.Bundle, *identity.PublicKeys) {
	t.Helper()
	b := bundleTestFiles(samplesSize)
	if err := Sign(b, id, attestTestPredicate()); err != nil {
		t.Fatal(err)
	}
	pub := id.Public()
	return b, &pub
}

// attestTestClone returns a deep copy of b.
func attestTestClone(b *artifacts.Bundle) *artifacts.Bundle {
	c := &artifacts.Bundle{Files: make(map[string][]byte, len(b.Files))}
	for n, d := range b.Files {
		c.Files[n] = bytes.Clone(d)
	}
	return c
}

// attestTestEnvelope decodes b's envelope.
func attestTestEnvelope(t *testing.T, b *artifacts.Bundle) Envelope {
	t.Helper()
	var env Envelope
	if err := json.Unmarshal(b.Files[artifacts.FileAttestation], &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// attestTestSetEnvelope encodes env as b's attestation.
func attestTestSetEnvelope(t *testing.T, b *artifacts.Bundle, env Envelope) {
	t.Helper()
	data, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	b.Files[artifacts.FileAttestation] = data
}

// attestTestWantErr fails unless err is a *VerifyError of the given kind
// whose text contains every want.
func attestTestWantErr(t *testing.T, err error, kind string, want ...string) *VerifyError {
	t.Helper()
	if err == nil {
		t.Fatalf("Verify succeeded, want a %s error", kind)
	}
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *VerifyError", err)
	}
	if ve.Kind != kind {
		t.Errorf("error %q has kind %q, want %q", err, ve.Kind, kind)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	return ve
}

func TestSignVerify(t *testing.T) {
	id := identityTestFixed(1)
	b, pub := attestTestSigned(t, id, 1000)
	for _, tt := range []struct {
		name   string
		pinned *identity.PublicKeys
	}{
		{"pinned", pub},
		{"unpinned", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Verify(b, tt.pinned)
			if err != nil {
				t.Fatal(err)
			}
			if v.Pinned != (tt.pinned != nil) {
				t.Errorf("Pinned = %v", v.Pinned)
			}
			if v.KeyFingerprint != pub.Fingerprint() {
				t.Errorf("KeyFingerprint = %q, want %q", v.KeyFingerprint, pub.Fingerprint())
			}
			st := v.Statement
			if st.Type != StatementType || st.PredicateType != PredicateType {
				t.Errorf("statement types %q, %q", st.Type, st.PredicateType)
			}
			var names []string
			for _, s := range st.Subject {
				names = append(names, s.Name)
				if s.Digest["sha256"] != sha256Hex(b.Files[s.Name]) {
					t.Errorf("subject %s has digest %s", s.Name, s.Digest["sha256"])
				}
			}
			if !slices.Equal(names, artifacts.ContentFiles) {
				t.Errorf("subjects %v, want %v", names, artifacts.ContentFiles)
			}
			p := st.Predicate
			want := attestTestPredicate()
			if !p.Runner.PublicKeys.Equal(*pub) || p.Runner.Name != want.Runner.Name || p.Runner.Version != want.Runner.Version ||
				p.Assurance != want.Assurance || !p.CreatedAt.Equal(want.CreatedAt) || string(p.Summary) != string(want.Summary) {
				t.Errorf("predicate %+v does not round-trip", p)
			}
			checked := strings.Join(v.Checked, "\n")
			for _, w := range append(slices.Clone(artifacts.ContentFiles), "ed25519 signature", "ml-dsa-65 signature") {
				if !strings.Contains(checked, w) {
					t.Errorf("Checked does not mention %q:\n%s", w, checked)
				}
			}
			if strings.Contains(checked, "pinned") != (tt.pinned != nil) {
				t.Errorf("Checked mentions pinning wrongly:\n%s", checked)
			}
		})
	}
}

func TestSignDefaults(t *testing.T) {
	b := bundleTestFiles(10)
	p := attestTestPredicate()
	p.Summary = nil
	p.CreatedAt = time.Time{}
	p.Runner.PublicKeys = identityTestFixed(7).Public() // overwritten by Sign
	before := time.Now().Add(-time.Second)
	if err := Sign(b, identityTestFixed(1), p); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := v.Statement.Predicate
	if string(got.Summary) != "null" {
		t.Errorf("summary %q, want null", got.Summary)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now()) {
		t.Errorf("createdAt %v is not now", got.CreatedAt)
	}
	if !got.Runner.PublicKeys.Equal(identityTestFixed(1).Public()) {
		t.Error("Sign did not set the runner's public keys")
	}
}

func TestSignRefuses(t *testing.T) {
	id := identityTestFixed(1)
	tests := []struct {
		name   string
		mutate func(b *artifacts.Bundle, p *Predicate)
		want   string
	}{
		{"missing file", func(b *artifacts.Bundle, p *Predicate) { delete(b.Files, artifacts.FileSamples) }, "missing " + artifacts.FileSamples},
		{"unknown file", func(b *artifacts.Bundle, p *Predicate) { b.Files["notes.txt"] = nil }, `"notes.txt"`},
		{"bad level", func(b *artifacts.Bundle, p *Predicate) { p.Assurance.Level = "fast" }, `assurance level "fast"`},
		{"bad origin", func(b *artifacts.Bundle, p *Predicate) { p.Assurance.Origin = "" }, `assurance origin ""`},
		{"no runner name", func(b *artifacts.Bundle, p *Predicate) { p.Runner.Name = " " }, "runner name is empty"},
		{"bad summary", func(b *artifacts.Bundle, p *Predicate) { p.Summary = json.RawMessage("{") }, "summary"},
		{"duplicate key in summary", func(b *artifacts.Bundle, p *Predicate) { p.Summary = json.RawMessage(`{"a":1,"a":2}`) }, "duplicate key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bundleTestFiles(10)
			p := attestTestPredicate()
			tt.mutate(b, &p)
			err := Sign(b, id, p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Sign: error %v, want one containing %q", err, tt.want)
			}
			if _, ok := b.Files[artifacts.FileAttestation]; ok {
				t.Error("failed Sign wrote an attestation")
			}
		})
	}
	if err := Sign(bundleTestFiles(10), nil, attestTestPredicate()); err == nil {
		t.Error("Sign with a nil identity succeeded")
	}
}

// attestTestFlip returns a copy of data with byte i XORed with mask.
func attestTestFlip(data []byte, i int, mask byte) []byte {
	c := bytes.Clone(data)
	c[i] ^= mask
	return c
}

func TestVerifyDetectsEveryFlippedByte(t *testing.T) {
	id := identityTestFixed(1)
	b, pub := attestTestSigned(t, id, 2000)
	names := make([]string, 0, len(b.Files))
	for n := range b.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) != 6 {
		t.Fatalf("signed bundle holds %d files, want 6", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			data := b.Files[name]
			positions := []int{0, len(data) / 2, len(data) - 1}
			masks := []byte{0x01, 0x80}
			if name == artifacts.FileAttestation {
				// Every byte of the attestation (every 11th with -short) with
				// a low-bit flip, and every 5th of those with a case flip
				// (encoding/json would match field names ignoring case).
				stride := 1
				if testing.Short() {
					stride = 11
				}
				positions = positions[:0]
				for i := 0; i < len(data); i += stride {
					positions = append(positions, i)
				}
				masks = []byte{0x01, 0x20}
			}
			for _, pinned := range []*identity.PublicKeys{pub, nil} {
				for _, mask := range masks {
					t.Run(fmt.Sprintf("pinned=%v/mask=%#x", pinned != nil, mask), func(t *testing.T) {
						t.Parallel()
						for j, i := range positions {
							if mask == 0x20 && name == artifacts.FileAttestation && j%5 != 0 {
								continue // case flips: every 5th position is plenty
							}
							c := attestTestClone(b)
							c.Files[name] = attestTestFlip(data, i, mask)
							_, err := Verify(c, pinned)
							var ve *VerifyError
							if !errors.As(err, &ve) {
								t.Fatalf("byte %d: got %v, want a *VerifyError", i, err)
							}
							ok := ve.File == name && strings.HasPrefix(err.Error(), name+": ")
							if name == artifacts.FileAttestation {
								ok = ok && (ve.Kind == VerifyKindFormat || ve.Kind == VerifyKindSignature)
							} else {
								ok = ok && ve.Kind == VerifyKindDigest
							}
							if !ok {
								t.Fatalf("byte %d: error %q (kind %s, file %s)", i, err, ve.Kind, ve.File)
							}
						}
					})
				}
			}
		})
	}
}

func TestVerifyDigestMessage(t *testing.T) {
	b, pub := attestTestSigned(t, identityTestFixed(1), 100)
	want := sha256Hex(b.Files[artifacts.FileResult])
	b.Files[artifacts.FileResult] = []byte("{}")
	got := sha256Hex(b.Files[artifacts.FileResult])
	_, err := Verify(b, pub)
	attestTestWantErr(t, err, VerifyKindDigest,
		"result.json: sha256 mismatch (statement "+want[:12]+"…, file "+got[:12]+"…)")
}

func TestVerifyMissingSignature(t *testing.T) {
	id := identityTestFixed(1)
	b, pub := attestTestSigned(t, id, 100)
	for _, signer := range []string{identity.SignerEd25519, identity.SignerMLDSA65} {
		for _, pinned := range []*identity.PublicKeys{pub, nil} {
			t.Run(signer, func(t *testing.T) {
				c := attestTestClone(b)
				env := attestTestEnvelope(t, c)
				env.Signatures = slices.DeleteFunc(env.Signatures, func(s Signature) bool {
					return strings.HasPrefix(s.KeyID, signer+":")
				})
				if len(env.Signatures) != 1 {
					t.Fatalf("envelope has %d signatures left, want 1", len(env.Signatures))
				}
				attestTestSetEnvelope(t, c, env)
				_, err := Verify(c, pinned)
				ve := attestTestWantErr(t, err, VerifyKindSignature, "signature "+signer+" is missing")
				if ve.Signature != signer {
					t.Errorf("Signature = %q, want %q", ve.Signature, signer)
				}
			})
		}
	}
}

func TestVerifyBadSignature(t *testing.T) {
	b, pub := attestTestSigned(t, identityTestFixed(1), 100)
	other, _ := attestTestSigned(t, identityTestFixed(2), 100)
	otherEnv := attestTestEnvelope(t, other)
	for i, signer := range []string{identity.SignerEd25519, identity.SignerMLDSA65} {
		t.Run(signer, func(t *testing.T) {
			c := attestTestClone(b)
			env := attestTestEnvelope(t, c)
			// Another key's valid signature over another payload, under the
			// right keyid.
			env.Signatures[i].Sig = otherEnv.Signatures[i].Sig
			attestTestSetEnvelope(t, c, env)
			for _, pinned := range []*identity.PublicKeys{pub, nil} {
				_, err := Verify(c, pinned)
				ve := attestTestWantErr(t, err, VerifyKindSignature, "signature "+signer+" does not verify")
				if ve.Signature != signer {
					t.Errorf("Signature = %q, want %q", ve.Signature, signer)
				}
			}
		})
	}
}

func TestVerifyResignedByOtherIdentity(t *testing.T) {
	orig := identityTestFixed(1)
	_, pub := attestTestSigned(t, orig, 100)
	b, _ := attestTestSigned(t, orig, 100)
	if err := Sign(b, identityTestFixed(2), attestTestPredicate()); err != nil {
		t.Fatal(err)
	}
	_, err := Verify(b, pub)
	attestTestWantErr(t, err, VerifyKindKey, "key mismatch")

	// Unpinned it verifies, and says whose keys it used.
	v, err := Verify(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Pinned || v.KeyFingerprint != identityTestFixed(2).Public().Fingerprint() {
		t.Errorf("unpinned verification: Pinned %v, fingerprint %s", v.Pinned, v.KeyFingerprint)
	}
}

func TestVerifyReplacedPublicKey(t *testing.T) {
	b, pub := attestTestSigned(t, identityTestFixed(1), 100)
	intruder := identityTestFixed(2).Public()
	for _, tt := range []struct {
		name       string
		fixKeyIDs  bool
		pinned     *identity.PublicKeys
		wantSigner string
	}{
		{"keyids unchanged, unpinned", false, nil, identity.SignerEd25519},
		{"keyids changed, unpinned", true, nil, identity.SignerEd25519},
		{"keyids unchanged, pinned", false, pub, identity.SignerEd25519},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := attestTestClone(b)
			env := attestTestEnvelope(t, c)
			payload, err := base64.StdEncoding.DecodeString(env.Payload)
			if err != nil {
				t.Fatal(err)
			}
			var st Statement
			if err := json.Unmarshal(payload, &st); err != nil {
				t.Fatal(err)
			}
			st.Predicate.Runner.PublicKeys = intruder
			payload, err = json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			env.Payload = base64.StdEncoding.EncodeToString(payload)
			if tt.fixKeyIDs {
				env.Signatures[0].KeyID, env.Signatures[1].KeyID = intruder.KeyIDs()
			}
			attestTestSetEnvelope(t, c, env)
			_, err = Verify(c, tt.pinned)
			ve := attestTestWantErr(t, err, VerifyKindSignature, "does not verify")
			if ve.Signature != tt.wantSigner {
				t.Errorf("Signature = %q, want %q", ve.Signature, tt.wantSigner)
			}
		})
	}
}

func TestVerifyMissingAndExtraFiles(t *testing.T) {
	b, pub := attestTestSigned(t, identityTestFixed(1), 100)
	type testCase struct {
		name   string
		mutate func(*artifacts.Bundle)
		kind   string
		file   string
	}
	var tests []testCase
	for _, n := range append(artifacts.ContentNames(), artifacts.FileAttestation) {
		tests = append(tests, testCase{"missing " + n, func(b *artifacts.Bundle) { delete(b.Files, n) }, VerifyKindMissingFile, n})
	}
	tests = append(tests,
		testCase{"extra notes.txt", func(b *artifacts.Bundle) { b.Files["notes.txt"] = []byte("hi") }, VerifyKindExtraFile, "notes.txt"},
		testCase{"extra path", func(b *artifacts.Bundle) { b.Files["sub/"+artifacts.FileLog] = nil }, VerifyKindExtraFile, "sub/" + artifacts.FileLog},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, pinned := range []*identity.PublicKeys{pub, nil} {
				c := attestTestClone(b)
				tt.mutate(c)
				_, err := Verify(c, pinned)
				ve := attestTestWantErr(t, err, tt.kind, tt.file+": ")
				if ve.File != tt.file {
					t.Errorf("File = %q, want %q", ve.File, tt.file)
				}
			}
		})
	}
	if _, err := Verify(nil, nil); err == nil {
		t.Error("Verify(nil) succeeded")
	}
}

func TestVerifyMalformedEnvelope(t *testing.T) {
	b, pub := attestTestSigned(t, identityTestFixed(1), 100)
	att := string(b.Files[artifacts.FileAttestation])
	env := attestTestEnvelope(t, b)
	tests := []struct {
		name string
		edit func(t *testing.T) []byte
		kind string
		want string
	}{
		{"not json", func(t *testing.T) []byte { return []byte("hello") }, VerifyKindFormat, "malformed envelope"},
		{"duplicate payload", func(t *testing.T) []byte {
			return []byte(strings.Replace(att, `{"payloadType"`, `{"payload":"e30=","payloadType"`, 1))
		}, VerifyKindFormat, `duplicate key "payload"`},
		{"field name case", func(t *testing.T) []byte {
			return []byte(strings.Replace(att, `"payloadType"`, `"PayloadType"`, 1))
		}, VerifyKindFormat, `unknown key "PayloadType"`},
		{"unknown field", func(t *testing.T) []byte {
			return []byte(strings.Replace(att, `{"payloadType"`, `{"x":1,"payloadType"`, 1))
		}, VerifyKindFormat, `unknown key "x"`},
		{"trailing value", func(t *testing.T) []byte { return []byte(att + "{}") }, VerifyKindFormat, "trailing data"},
		{"payload type", func(t *testing.T) []byte {
			e := env
			e.PayloadType = "application/json"
			return attestTestMarshal(t, e)
		}, VerifyKindFormat, "payload type"},
		{"unpadded payload", func(t *testing.T) []byte {
			e := env
			e.Payload = strings.TrimRight(e.Payload, "=") + "\n"
			return attestTestMarshal(t, e)
		}, VerifyKindFormat, "payload"},
		{"line break in payload", func(t *testing.T) []byte {
			e := env
			e.Payload = e.Payload[:8] + "\n" + e.Payload[8:]
			return attestTestMarshal(t, e)
		}, VerifyKindFormat, "line break"},
		{"line break in signature", func(t *testing.T) []byte {
			e := env
			e.Signatures = slices.Clone(e.Signatures)
			e.Signatures[1].Sig = e.Signatures[1].Sig[:8] + "\r\n" + e.Signatures[1].Sig[8:]
			return attestTestMarshal(t, e)
		}, VerifyKindFormat, "line break"},
		{"unknown keyid", func(t *testing.T) []byte {
			e := env
			e.Signatures = append(slices.Clone(e.Signatures), Signature{KeyID: "rsa:00", Sig: ""})
			return attestTestMarshal(t, e)
		}, VerifyKindFormat, `unknown keyid "rsa:00"`},
		{"two ed25519 signatures", func(t *testing.T) []byte {
			e := env
			e.Signatures = append(slices.Clone(e.Signatures), e.Signatures[0])
			return attestTestMarshal(t, e)
		}, VerifyKindFormat, "more than one ed25519 signature"},
		{"keyid naming another key", func(t *testing.T) []byte {
			e := env
			e.Signatures = slices.Clone(e.Signatures)
			e.Signatures[1].KeyID = "ml-dsa-65:" + strings.Repeat("0", 32)
			return attestTestMarshal(t, e)
		}, VerifyKindFormat, "was made by"},
		{"no signatures", func(t *testing.T) []byte {
			e := env
			e.Signatures = nil
			return attestTestMarshal(t, e)
		}, VerifyKindSignature, "signature ed25519 is missing"},
		{"oversize", func(t *testing.T) []byte {
			return append([]byte(att), bytes.Repeat([]byte(" "), 1<<20)...)
		}, VerifyKindFormat, "more than the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := attestTestClone(b)
			c.Files[artifacts.FileAttestation] = tt.edit(t)
			_, err := Verify(c, pub)
			ve := attestTestWantErr(t, err, tt.kind, artifacts.FileAttestation+": ", tt.want)
			if ve.File != artifacts.FileAttestation {
				t.Errorf("File = %q", ve.File)
			}
		})
	}
}

func attestTestMarshal(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestVerifyMalformedStatement(t *testing.T) {
	id := identityTestFixed(1)
	b, _ := attestTestSigned(t, id, 100)
	env := attestTestEnvelope(t, b)
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var good Statement
	if err := json.Unmarshal(payload, &good); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(st *Statement)
		want string
	}{
		{"statement type", func(st *Statement) { st.Type = "https://in-toto.io/Statement/v0.1" }, "_type"},
		{"predicate type", func(st *Statement) { st.PredicateType = "x" }, "predicateType"},
		{"missing subject", func(st *Statement) { st.Subject = st.Subject[1:] }, "no subject for " + artifacts.FileManifest},
		{"duplicate subject", func(st *Statement) { st.Subject = append(st.Subject, st.Subject[0]) }, "listed twice"},
		{"unknown subject", func(st *Statement) {
			st.Subject = append(st.Subject, Subject{Name: "x", Digest: map[string]string{"sha256": strings.Repeat("0", 64)}})
		}, `subject "x"`},
		{"bad digest", func(st *Statement) { st.Subject[0].Digest = map[string]string{"sha512": "00"} }, "sha256 digest"},
		{"bad assurance", func(st *Statement) { st.Predicate.Assurance.Level = "" }, "assurance level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := good
			st.Subject = slices.Clone(good.Subject)
			tt.edit(&st)
			c := attestTestClone(b)
			attestTestResign(t, c, id, st)
			for _, pinned := range []*identity.PublicKeys{nil, func() *identity.PublicKeys { p := id.Public(); return &p }()} {
				_, err := Verify(c, pinned)
				attestTestWantErr(t, err, VerifyKindFormat, "malformed statement", tt.want)
			}
		})
	}
}

// attestTestResign signs an arbitrary statement with id, the way Sign does,
// and stores the envelope in b.
func attestTestResign(t *testing.T, b *artifacts.Bundle, id *identity.Identity, st Statement) {
	t.Helper()
	payload := attestTestMarshal(t, st)
	pae := attestPAE(PayloadType, payload)
	edSig, mlSig, err := id.SignBoth(pae)
	if err != nil {
		t.Fatal(err)
	}
	edID, mlID := id.Public().KeyIDs()
	attestTestSetEnvelope(t, b, Envelope{
		PayloadType: PayloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{
			{KeyID: edID, Sig: base64.StdEncoding.EncodeToString(edSig)},
			{KeyID: mlID, Sig: base64.StdEncoding.EncodeToString(mlSig)},
		},
	})
}

// attestTestBinding is the job binding of the v2 golden bundle.
var attestTestBinding = JobBinding{Portal: "https://portal.example", JobID: 7, LeaseID: "lease_golden", Attempt: 2, Nonce: "nonce_0123456789abcdef"}

// TestVerifyGolden verifies bundles signed when each predicate version was fixed, with their
// pinned keys, so a change that breaks old bundles fails here. attest_golden.tar.gz is a v1
// (legacy, unbound) bundle and is frozen: no build can sign v1 any more. The v2 (job-bound)
// golden is rewritten, deliberately, with:
// go test ./artifacts/attest/ -run TestVerifyGolden -update-attest
func TestVerifyGolden(t *testing.T) {
	keyPath := filepath.Join("testdata", "attest_golden.pub.json")
	v2Path := filepath.Join("testdata", "attest_golden_v2.tar.gz")
	if *attestUpdate {
		id := identityTestFixed(42)
		b := bundleTestFiles(300)
		p := attestTestPredicate()
		p.Assurance.Origin, p.Job = OriginPortalRunner, &attestTestBinding
		if err := Sign(b, id, p); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := artifacts.WriteTarGz(&buf, b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(v2Path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keyData, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := identity.ParsePublicKeys(keyData)
	if err != nil {
		t.Fatal(err)
	}
	if !pub.Equal(identityTestFixed(42).Public()) {
		t.Error("golden keys are no longer derived from the fixed seeds: key derivation changed")
	}
	for _, tc := range []struct {
		file   string
		legacy bool
		job    *JobBinding
	}{
		{filepath.Join("testdata", "attest_golden.tar.gz"), true, nil},
		{v2Path, false, &attestTestBinding},
	} {
		b, err := artifacts.ReadBundle(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		v, err := Verify(b, &pub)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !v.Pinned || v.Statement.Predicate.Runner.Name != "pqrepro-runner" ||
			!v.Statement.Predicate.CreatedAt.Equal(attestTestPredicate().CreatedAt) {
			t.Errorf("%s: golden verification: %+v", tc.file, v)
		}
		if v.Legacy != tc.legacy || (tc.job == nil) != (v.Statement.Predicate.Job == nil) || (tc.job != nil && *v.Statement.Predicate.Job != *tc.job) {
			t.Errorf("%s: legacy %v, job %+v; want legacy %v, job %+v", tc.file, v.Legacy, v.Statement.Predicate.Job, tc.legacy, tc.job)
		}
	}
}

func TestPredicateBindingRules(t *testing.T) {
	id := identityTestFixed(3)
	job := attestTestBinding
	for _, tc := range []struct {
		name   string
		origin string
		job    *JobBinding
		want   string // "" signs
	}{
		{"runner with its job", OriginPortalRunner, &job, ""},
		{"runner without a job", OriginPortalRunner, nil, "must carry its job binding"},
		{"local with a job", OriginLocal, &job, "carries no job binding"},
		{"community with a job", OriginCommunity, &job, "carries no job binding"},
		{"local without a job", OriginLocal, nil, ""},
		{"binding without a nonce", OriginPortalRunner, &JobBinding{Portal: "p", JobID: 1, LeaseID: "l", Attempt: 1}, "nonce"},
		{"binding without a portal", OriginPortalRunner, &JobBinding{JobID: 1, LeaseID: "l", Attempt: 1, Nonce: job.Nonce}, "portal"},
		{"binding with attempt 0", OriginPortalRunner, &JobBinding{Portal: "p", JobID: 1, LeaseID: "l", Nonce: job.Nonce}, "attempt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bundleTestFiles(10)
			p := attestTestPredicate()
			p.Assurance.Origin, p.Job = tc.origin, tc.job
			err := Sign(b, id, p)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				v, err := Verify(b, nil)
				if err != nil || v.Legacy || v.Statement.PredicateType != PredicateType {
					t.Fatalf("verify: %v, %+v", err, v)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("sign: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestVerifyRefusesBindingInV1 re-signs a statement that claims v1 but carries a job: v1
// never had one, so it is malformed.
func TestVerifyRefusesBindingInV1(t *testing.T) {
	id := identityTestFixed(4)
	b := bundleTestFiles(10)
	p := attestTestPredicate()
	p.Assurance.Origin, p.Job = OriginPortalRunner, &attestTestBinding
	if err := Sign(b, id, p); err != nil {
		t.Fatal(err)
	}
	v, err := Verify(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := v.Statement
	st.PredicateType = PredicateTypeV1
	attestTestResign(t, b, id, st)
	_, err = Verify(b, nil)
	attestTestWantErr(t, err, VerifyKindFormat, "no job binding")
}

func BenchmarkSign(b *testing.B) {
	id := identityTestFixed(1)
	bundle := bundleTestFiles(1 << 20)
	p := attestTestPredicate()
	b.ReportAllocs()
	for b.Loop() {
		if err := Sign(bundle, id, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	bundle, pub := attestTestSigned(b, identityTestFixed(1), 1<<20)
	b.SetBytes(int64(len(bundle.Files[artifacts.FileSamples])))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(bundle, pub); err != nil {
			b.Fatal(err)
		}
	}
}

// identityTestFixed returns a deterministic identity whose seeds are all n and n+1.
func identityTestFixed(n byte) *identity.Identity {
	return identity.FromSeeds([32]byte(bytes.Repeat([]byte{n}, 32)), [32]byte(bytes.Repeat([]byte{n + 1}, 32)))
}

// bundleTestFiles returns an unsigned bundle of every content file, its samples.csv about
// samplesSize bytes.
func bundleTestFiles(samplesSize int) *artifacts.Bundle {
	b := &artifacts.Bundle{Files: map[string][]byte{}}
	for _, name := range artifacts.ContentNames() {
		b.Files[name] = []byte(name + " of a test run\n")
	}
	b.Files[artifacts.FileSamples] = bytes.Repeat([]byte("ML-DSA-65,sign,0,100000\n"), samplesSize/24+1)
	return b
}
