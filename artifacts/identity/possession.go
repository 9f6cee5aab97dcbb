package identity

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
)

// Purposes of a proof of possession. A proof made for one purpose never verifies for another.
const (
	// PurposeRunnerEnrol proves a runner holds the keys it enrols with.
	PurposeRunnerEnrol = "runner-enrol"
	// PurposeSubmitterKeys proves a submitter holds the keys they register.
	PurposeSubmitterKeys = "submitter-keys"
)

// ChallengeBytes is the length of a portal-issued challenge.
const ChallengeBytes = 32

// possessionDomain separates proof-of-possession signatures from every other signature the
// keys make (DSSE envelopes sign "DSSEv1 ..." pre-authentication encodings).
const possessionDomain = "pqrepro-pop-v1\x00"

// PossessionMessage is the message both keys sign to prove possession:
//
//	"pqrepro-pop-v1" 0x00 || purpose || 0x00 || challenge (32 bytes) ||
//	SHA-256("pqrepro-keys-v1" 0x00 || ed25519 || mldsa65)
//
// The last part is the full digest the display Fingerprint is cut from, so the proof binds
// both public keys. It fails on an unknown purpose or a challenge of the wrong length.
func PossessionMessage(purpose string, challenge []byte, keys PublicKeys) ([]byte, error) {
	if purpose != PurposeRunnerEnrol && purpose != PurposeSubmitterKeys {
		return nil, fmt.Errorf("proof of possession: unknown purpose %q", purpose)
	}
	if len(challenge) != ChallengeBytes {
		return nil, fmt.Errorf("proof of possession: challenge is %d bytes, want %d", len(challenge), ChallengeBytes)
	}
	h := sha256.New()
	h.Write([]byte("pqrepro-keys-v1\x00"))
	h.Write(keys.Ed25519)
	h.Write(keys.MLDSA65)
	msg := make([]byte, 0, len(possessionDomain)+len(purpose)+1+ChallengeBytes+sha256.Size)
	msg = append(msg, possessionDomain...)
	msg = append(msg, purpose...)
	msg = append(msg, 0)
	msg = append(msg, challenge...)
	return h.Sum(msg), nil
}

// ProvePossession signs a portal's challenge for purpose with both keys of the identity.
func (id *Identity) ProvePossession(purpose string, challenge []byte) (Possession, error) {
	msg, err := PossessionMessage(purpose, challenge, id.Public())
	if err != nil {
		return Possession{}, err
	}
	ed, ml, err := id.SignBoth(msg)
	if err != nil {
		return Possession{}, fmt.Errorf("proof of possession: %w", err)
	}
	return Possession{Challenge: hex.EncodeToString(challenge), Ed25519: ed, MLDSA65: ml}, nil
}

// ErrNoPossession is wrapped by VerifyPossession when a signature is missing or wrong.
var ErrNoPossession = errors.New("no proof of possession of the private keys")

// VerifyPossession checks that p signs challenge for purpose with both of keys. The error
// names the signature that is missing or does not verify, and wraps ErrNoPossession.
func VerifyPossession(purpose string, challenge []byte, keys PublicKeys, p Possession) error {
	if err := keys.Validate(); err != nil {
		return fmt.Errorf("proof of possession: %w", err)
	}
	msg, err := PossessionMessage(purpose, challenge, keys)
	if err != nil {
		return err
	}
	if len(p.Ed25519) == 0 || len(p.MLDSA65) == 0 {
		return fmt.Errorf("proof of possession: the %s and %s signatures over the challenge are both required: %w", SignerEd25519, SignerMLDSA65, ErrNoPossession)
	}
	if len(p.Ed25519) != ed25519.SignatureSize || !ed25519.Verify(ed25519.PublicKey(keys.Ed25519), msg, p.Ed25519) {
		return fmt.Errorf("proof of possession: the %s signature does not verify for keys %s: %w", SignerEd25519, keys.Fingerprint(), ErrNoPossession)
	}
	var pk mldsa65.PublicKey
	if err := pk.UnmarshalBinary(keys.MLDSA65); err != nil {
		return fmt.Errorf("proof of possession: ml-dsa-65 public key: %w", err)
	}
	if len(p.MLDSA65) != mldsa65.SignatureSize || !mldsa65.Verify(&pk, msg, nil, p.MLDSA65) {
		return fmt.Errorf("proof of possession: the %s signature does not verify for keys %s: %w", SignerMLDSA65, keys.Fingerprint(), ErrNoPossession)
	}
	return nil
}

// Possession proves the caller holds the private halves of the public keys it registers:
// both keys' signatures over PossessionMessage(purpose, challenge, keys).
type Possession struct {
	// Challenge is the portal's challenge that was signed (lowercase hex).
	Challenge string `json:"challenge"`
	// Ed25519 and MLDSA65 are the two signatures (base64 in JSON).
	Ed25519 []byte `json:"ed25519"`
	MLDSA65 []byte `json:"mldsa65"`
}
