package translog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"golang.org/x/mod/sumdb/note"
)

// Signature types of C2SP signed-note keys used here.
const (
	// SigEd25519 is a plain Ed25519 note signature (the log's checkpoint signature).
	SigEd25519 = 0x01
	// SigCosignEd25519 is a C2SP tlog-cosignature Ed25519 (cosignature/v1) key.
	SigCosignEd25519 = 0x04
	// SigCosignMLDSA44 is a C2SP tlog-cosignature ML-DSA-44 (subtree/v1) key.
	SigCosignMLDSA44 = 0x06
)

// keyID is SHA-256(name || "\n" || type || public key)[:4] as a big-endian uint32 (C2SP
// signed-note and tlog-cosignature key IDs).
func keyID(name string, typ byte, pub []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', typ})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// VKey encodes a verifier key: "<name>+<8 hex key ID>+<base64(type || public key)>".
func VKey(name string, typ byte, pub []byte) string {
	return fmt.Sprintf("%s+%08x+%s", name, keyID(name, typ, pub), base64.StdEncoding.EncodeToString(append([]byte{typ}, pub...)))
}

// ErrKey is wrapped by ParseVKey errors.
var ErrKey = errors.New("malformed verifier key")

// ParseVKey parses a vkey of type SigEd25519 (a log key), SigCosignEd25519 or
// SigCosignMLDSA44 (a witness key) into a verifier.
func ParseVKey(vkey string) (note.Verifier, error) {
	if len(vkey) > 4096 {
		return nil, fmt.Errorf("%w: %d bytes", ErrKey, len(vkey))
	}
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, b64, ok2 := strings.Cut(rest, "+")
	id, err1 := strconv.ParseUint(hash16, 16, 32)
	key, err2 := base64.StdEncoding.Strict().DecodeString(b64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || len(hash16) != 8 || len(key) < 1 || name == "" ||
		strings.ContainsAny(name, " \t\n+") {
		return nil, fmt.Errorf("%w: want name+keyid+base64", ErrKey)
	}
	typ, pub := key[0], key[1:]
	if keyID(name, typ, pub) != uint32(id) {
		return nil, fmt.Errorf("%w: key ID %s does not match the key", ErrKey, hash16)
	}
	switch typ {
	case SigEd25519:
		return note.NewVerifier(vkey)
	case SigCosignEd25519:
		if len(pub) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("%w: Ed25519 cosigner key is %d bytes", ErrKey, len(pub))
		}
		return &cosignVerifier{name: name, typ: typ, id: uint32(id), ed: ed25519.PublicKey(pub)}, nil
	case SigCosignMLDSA44:
		var pk mldsa44.PublicKey
		if err := pk.UnmarshalBinary(pub); err != nil {
			return nil, fmt.Errorf("%w: ML-DSA-44 cosigner key: %w", ErrKey, err)
		}
		return &cosignVerifier{name: name, typ: typ, id: uint32(id), ml: &pk}, nil
	}
	return nil, fmt.Errorf("%w: signature type 0x%02x is not supported", ErrKey, typ)
}

// CosignedMessage returns what a cosigner of type typ signs for the checkpoint note text
// at time ts (seconds): for Ed25519 "cosignature/v1\ntime <ts>\n" and the note text; for
// ML-DSA-44 the subtree/v1 cosigned_message structure (label, name, timestamp, origin,
// start 0, end = size, root hash).
func CosignedMessage(typ byte, name string, ts uint64, text []byte) ([]byte, error) {
	switch typ {
	case SigCosignEd25519:
		return append(fmt.Appendf(nil, "cosignature/v1\ntime %d\n", ts), text...), nil
	case SigCosignMLDSA44:
		c, err := ParseCheckpoint(text)
		if err != nil {
			return nil, err
		}
		if len(name) == 0 || len(name) > 255 || len(c.Origin) > 255 {
			return nil, fmt.Errorf("cosigner name or log origin longer than 255 bytes")
		}
		m := []byte("subtree/v1\n\x00")
		m = append(m, byte(len(name)))
		m = append(m, name...)
		m = binary.BigEndian.AppendUint64(m, ts)
		m = append(m, byte(len(c.Origin)))
		m = append(m, c.Origin...)
		m = binary.BigEndian.AppendUint64(m, 0)
		m = binary.BigEndian.AppendUint64(m, uint64(c.Size))
		return append(m, c.Hash[:]...), nil
	}
	return nil, fmt.Errorf("signature type 0x%02x is not a cosignature", typ)
}

type cosignVerifier struct {
	name string
	typ  byte
	id   uint32
	ed   ed25519.PublicKey
	ml   *mldsa44.PublicKey
}

func (v *cosignVerifier) Name() string    { return v.name }
func (v *cosignVerifier) KeyHash() uint32 { return v.id }

// Verify checks a timestamped_signature (u64 timestamp || signature) over msg.
func (v *cosignVerifier) Verify(msg, sig []byte) bool {
	if len(sig) < 8 {
		return false
	}
	ts := binary.BigEndian.Uint64(sig)
	if ts > 1<<63-1 {
		return false
	}
	m, err := CosignedMessage(v.typ, v.name, ts, msg)
	if err != nil {
		return false
	}
	switch v.typ {
	case SigCosignEd25519:
		return len(sig) == 8+ed25519.SignatureSize && ed25519.Verify(v.ed, m, sig[8:])
	case SigCosignMLDSA44:
		return len(sig) == 8+mldsa44.SignatureSize && mldsa44.Verify(v.ml, m, nil, sig[8:])
	}
	return false
}

// Cosigner signs checkpoints as one witness with both cosignature types.
type Cosigner struct {
	// Name is the witness's key name (a schema-less URL, e.g. "witness.example/w1").
	Name string
	ed   ed25519.PrivateKey
	ml   *mldsa44.PrivateKey
	// Now returns the time cosignatures carry.
	Now func() time.Time
}

// CosignerSeedSize is the length of the seed a Cosigner's two keys derive from.
const CosignerSeedSize = 64

// NewCosigner derives a witness's Ed25519 and ML-DSA-44 keys from a 64-byte seed (the first
// 32 bytes for Ed25519, the last 32 for ML-DSA-44).
func NewCosigner(name string, seed []byte) (*Cosigner, error) {
	if len(seed) != CosignerSeedSize {
		return nil, fmt.Errorf("witness seed is %d bytes, want %d", len(seed), CosignerSeedSize)
	}
	if name == "" || len(name) > 255 || strings.ContainsAny(name, " \t\n+") {
		return nil, fmt.Errorf("witness name %q: want a non-empty name without spaces or '+'", name)
	}
	var ms [mldsa44.SeedSize]byte
	copy(ms[:], seed[32:])
	_, sk := mldsa44.NewKeyFromSeed(&ms)
	return &Cosigner{Name: name, ed: ed25519.NewKeyFromSeed(seed[:32]), ml: sk, Now: time.Now}, nil
}

// VKeys returns the witness's verifier keys: Ed25519 (type 0x04) and ML-DSA-44 (type 0x06).
func (c *Cosigner) VKeys() (ed, ml string) {
	return VKey(c.Name, SigCosignEd25519, c.ed.Public().(ed25519.PublicKey)), VKey(c.Name, SigCosignMLDSA44, c.ml.Public().(*mldsa44.PublicKey).Bytes())
}

// Signers returns note signers for both cosignature types.
func (c *Cosigner) Signers() []note.Signer {
	return []note.Signer{&cosignSigner{c: c, typ: SigCosignEd25519}, &cosignSigner{c: c, typ: SigCosignMLDSA44}}
}

type cosignSigner struct {
	c   *Cosigner
	typ byte
}

func (s *cosignSigner) Name() string { return s.c.Name }
func (s *cosignSigner) KeyHash() uint32 {
	if s.typ == SigCosignEd25519 {
		return keyID(s.c.Name, s.typ, s.c.ed.Public().(ed25519.PublicKey))
	}
	return keyID(s.c.Name, s.typ, s.c.ml.Public().(*mldsa44.PublicKey).Bytes())
}

func (s *cosignSigner) Sign(msg []byte) ([]byte, error) {
	ts := uint64(s.c.Now().Unix())
	m, err := CosignedMessage(s.typ, s.c.Name, ts, msg)
	if err != nil {
		return nil, err
	}
	out := binary.BigEndian.AppendUint64(nil, ts)
	if s.typ == SigCosignEd25519 {
		return append(out, ed25519.Sign(s.c.ed, m)...), nil
	}
	sig := make([]byte, mldsa44.SignatureSize)
	if err := mldsa44.SignTo(s.c.ml, m, nil, true, sig); err != nil {
		return nil, fmt.Errorf("sign with ML-DSA-44: %w", err)
	}
	return append(out, sig...), nil
}
