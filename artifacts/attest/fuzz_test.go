package attest

import (
	"bytes"
	"errors"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
)

// FuzzVerifyEnvelope replaces a signed bundle's attestation (the DSSE envelope and the in-toto
// statement inside it) with arbitrary bytes: nothing panics, and with the signer pinned only
// the original envelope verifies.
func FuzzVerifyEnvelope(f *testing.F) {
	id, err := identity.GenerateIdentity()
	if err != nil {
		f.Fatal(err)
	}
	b, pub := attestTestSigned(f, id, 128)
	orig := b.Files[artifacts.FileAttestation]
	f.Add(orig)
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}`))
	f.Fuzz(func(t *testing.T, att []byte) {
		c := attestTestClone(b)
		c.Files[artifacts.FileAttestation] = att
		v, err := Verify(c, pub)
		if err != nil {
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("error is not a VerifyError: %v", err)
			}
			return
		}
		if v == nil {
			t.Fatal("Verify returned neither a verification nor an error")
		}
		env1, err1 := attestParseEnvelopeForFuzz(att)
		env2, err2 := attestParseEnvelopeForFuzz(orig)
		if err1 != nil || err2 != nil || !bytes.Equal(env1, env2) {
			t.Fatalf("an altered envelope verified under the pinned key: %q", att)
		}
	})
}

// attestParseEnvelopeForFuzz returns the signed payload of an envelope.
func attestParseEnvelopeForFuzz(att []byte) ([]byte, error) {
	payload, _, err := attestParseEnvelope(att)
	return payload, err
}
