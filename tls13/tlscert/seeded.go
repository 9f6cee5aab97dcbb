package tlscert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/mldsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"pqrepro/tls13"
)

// Seeded certificates: a CA and leaves that are byte-for-byte functions of a seed, so that a
// board whose instruction count depends on the chain it verifies (ML-DSA verification of the
// leaf, the DER it parses) counts the same from one run to the next. Keys come from the seed
// (ML-DSA's 32-byte key-generation seed, Ed25519's private seed, the ECDSA-P256 scalar, the
// RSA-2048 primes: seededECDSA, seededRSA), the serial number from the seed, the validity from
// fixed dates, and every signature is deterministic: ML-DSA's deterministic variant (FIPS 204
// §3.4), Ed25519 (deterministic by design), ECDSA with RFC 6979 nonces, and RSA with PKCS #1
// v1.5 and SHA-256 (deterministic by design; the algorithm NewCA's RSA chains use too). The
// standard library's ECDSA and RSA key generation ignore a seeded reader since Go 1.26, which
// is why those keys are made here.

// ErrNotSeedable.

// ErrNotSeedable is returned (wrapped) for a scheme or a CA key whose keys or signatures cannot
// be derived from a seed.
var ErrNotSeedable = errors.New("no seeded certificates for this signature scheme")

// SeededEpoch is when a seeded CA's validity begins; it lasts CALifetime.
var SeededEpoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// derive is the 32 bytes SHA-256(label || 0 || seed).
func derive(label string, seed []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write(seed)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// deterministicSigner signs with ML-DSA's deterministic variant; x509.CreateCertificate calls
// it with the TBS bytes and crypto.Hash(0).
type deterministicSigner struct{ k *mldsa.PrivateKey }

func (d deterministicSigner) Public() crypto.PublicKey { return d.k.Public() }

func (d deterministicSigner) Sign(_ io.Reader, msg []byte, _ crypto.SignerOpts) ([]byte, error) {
	return d.k.SignDeterministic(msg, &mldsa.Options{})
}

// deterministicECDSA signs with RFC 6979 nonces, whatever reader it is given (x509 passes its
// own).
type deterministicECDSA struct{ k *ecdsa.PrivateKey }

func (d deterministicECDSA) Public() crypto.PublicKey { return d.k.Public() }

func (d deterministicECDSA) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return d.k.Sign(nil, digest, opts)
}

// certSigner is the signer that signs certificates with key deterministically, or
// ErrNotSeedable for a key of another type.
func certSigner(key crypto.Signer) (crypto.Signer, error) {
	switch k := key.(type) {
	case *mldsa.PrivateKey:
		return deterministicSigner{k}, nil
	case *ecdsa.PrivateKey:
		return deterministicECDSA{k}, nil
	case ed25519.PrivateKey, *rsa.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("a %T: %w", key, ErrNotSeedable)
}

// seededKey is scheme's key from seed, and the signer that signs certificates with it
// deterministically.
func seededKey(scheme tls13.SignatureScheme, seed [32]byte) (key, certSigner crypto.Signer, err error) {
	var params mldsa.Parameters
	switch scheme {
	case tls13.MLDSA44:
		params = mldsa.MLDSA44()
	case tls13.MLDSA65:
		params = mldsa.MLDSA65()
	case tls13.MLDSA87:
		params = mldsa.MLDSA87()
	case tls13.Ed25519:
		k := ed25519.NewKeyFromSeed(seed[:])
		return k, k, nil
	case tls13.ECDSAP256SHA256:
		k, err := seededECDSA(seed)
		if err != nil {
			return nil, nil, err
		}
		return k, deterministicECDSA{k}, nil
	case tls13.RSAPSSRSAESHA256:
		k, err := seededRSA(seed)
		if err != nil {
			return nil, nil, err
		}
		return k, k, nil
	default:
		return nil, nil, fmt.Errorf("signature scheme %v: %w", scheme, ErrNotSeedable)
	}
	k, err := mldsa.NewPrivateKey(params, seed[:])
	if err != nil {
		return nil, nil, err
	}
	return k, deterministicSigner{k}, nil
}

// seededSerial is a positive 127-bit serial number from seed.
func seededSerial(seed []byte) *big.Int {
	b := derive("pqrepro serial", seed)
	b[0] &= 0x7f
	return new(big.Int).Add(new(big.Int).SetBytes(b[:16]), big.NewInt(1))
}

// NewSeededCA makes scheme's CA from seed: the same seed gives the same DER. It is valid from
// SeededEpoch for CALifetime.
func NewSeededCA(scheme tls13.SignatureScheme, seed []byte) (*CA, error) {
	ks := derive("pqrepro CA key "+scheme.String(), seed)
	key, signer, err := seededKey(scheme, ks)
	if err != nil {
		return nil, fmt.Errorf("seeded %v CA: %w", scheme, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          seededSerial(ks[:]),
		Subject:               pkix.Name{Organization: []string{"pqrepro"}, CommonName: "pqrepro " + scheme.String() + " seeded test CA"},
		NotBefore:             SeededEpoch,
		NotAfter:              SeededEpoch.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("make %v seeded CA certificate: %w", scheme, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse %v seeded CA certificate: %w", scheme, err)
	}
	return &CA{Scheme: scheme, Cert: cert, DER: der, Key: key}, nil
}

// IssueSeeded makes the CA's leaf for hostName from seed: its key and serial number come from
// the seed, its validity is the CA's own, and the CA signs it deterministically, so one CA,
// host name and seed always give the same leaf. The CA's key must be one the standard library
// signs with deterministically (ML-DSA, Ed25519, ECDSA, RSA), as a CA made by NewCA,
// NewSeededCA or LoadOrCreateCA is.
func (ca *CA) IssueSeeded(hostName string, seed []byte) (*Chain, error) {
	if hostName == "" {
		return nil, errors.New("make certificate chain: empty host name")
	}
	ks := derive("pqrepro leaf key "+ca.Scheme.String()+" "+hostName, seed)
	key, _, err := seededKey(ca.Scheme, ks)
	if err != nil {
		return nil, fmt.Errorf("seeded %v leaf: %w", ca.Scheme, err)
	}
	caSigner, err := certSigner(ca.Key)
	if err != nil {
		return nil, fmt.Errorf("seeded %v leaf: the CA's key is %w", ca.Scheme, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          seededSerial(ks[:]),
		Subject:               pkix.Name{Organization: []string{"pqrepro"}, CommonName: hostName},
		NotBefore:             ca.Cert.NotBefore,
		NotAfter:              ca.Cert.NotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{hostName},
	}
	der, err := x509.CreateCertificate(nil, tmpl, ca.Cert, key.Public(), caSigner)
	if err != nil {
		return nil, fmt.Errorf("make %v seeded leaf certificate: %w", ca.Scheme, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse %v seeded leaf certificate: %w", ca.Scheme, err)
	}
	return &Chain{Scheme: ca.Scheme, CA: ca.Cert, Leaf: leaf, CADER: ca.DER, LeafDER: der, CAKey: ca.Key, Key: key}, nil
}

// SeededNow is the time a board checks a seeded leaf against: an hour into the leaf's
// validity, so that the check is made and its count repeats.
func (c *Chain) SeededNow() time.Time { return c.Leaf.NotBefore.Add(time.Hour) }
