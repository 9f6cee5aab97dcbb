package openssl

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/cloudflare/circl/kem"
	"github.com/cloudflare/circl/kem/mlkem/mlkem1024"
	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/kem/mlkem/mlkem768"
	"github.com/cloudflare/circl/sign"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
	"github.com/cloudflare/circl/sign/slhdsa"
)

// pemKey is a key pair read back from the PEM files openssl wrote, parsed by Go (the standard
// library for the classical algorithms, circl and encoding/asn1 for the post-quantum ones), so
// that every openssl output is checked by an implementation other than OpenSSL's.
type pemKey struct {
	// alg is the catalogue name the key's algorithm identifier maps to.
	alg string
	// pub and priv are the parsed keys: *ecdh, *ecdsa, *rsa, ed25519 values, circl kem/sign
	// keys, or *slhdsa keys.
	pub, priv any
	// pubRaw and privRaw are the raw key encodings (FIPS 203/204/205 forms for the
	// post-quantum sets) whose lengths the cell records.
	pubRaw, privRaw []byte
}

// pqOIDs maps the NIST algorithm identifiers (2.16.840.1.101.3.4.4.x for ML-KEM, .3.x for
// ML-DSA and SLH-DSA) to catalogue names.
var pqOIDs = map[string]string{
	"2.16.840.1.101.3.4.4.1": "ML-KEM-512", "2.16.840.1.101.3.4.4.2": "ML-KEM-768", "2.16.840.1.101.3.4.4.3": "ML-KEM-1024",
	"2.16.840.1.101.3.4.3.17": "ML-DSA-44", "2.16.840.1.101.3.4.3.18": "ML-DSA-65", "2.16.840.1.101.3.4.3.19": "ML-DSA-87",
	"2.16.840.1.101.3.4.3.20": "SLH-DSA-SHA2-128s", "2.16.840.1.101.3.4.3.21": "SLH-DSA-SHA2-128f",
	"2.16.840.1.101.3.4.3.22": "SLH-DSA-SHA2-192s", "2.16.840.1.101.3.4.3.23": "SLH-DSA-SHA2-192f",
	"2.16.840.1.101.3.4.3.24": "SLH-DSA-SHA2-256s", "2.16.840.1.101.3.4.3.25": "SLH-DSA-SHA2-256f",
	"2.16.840.1.101.3.4.3.26": "SLH-DSA-SHAKE-128s", "2.16.840.1.101.3.4.3.27": "SLH-DSA-SHAKE-128f",
	"2.16.840.1.101.3.4.3.28": "SLH-DSA-SHAKE-192s", "2.16.840.1.101.3.4.3.29": "SLH-DSA-SHAKE-192f",
	"2.16.840.1.101.3.4.3.30": "SLH-DSA-SHAKE-256s", "2.16.840.1.101.3.4.3.31": "SLH-DSA-SHAKE-256f",
}

func mlkemScheme(alg string) kem.Scheme {
	switch alg {
	case "ML-KEM-512":
		return mlkem512.Scheme()
	case "ML-KEM-768":
		return mlkem768.Scheme()
	case "ML-KEM-1024":
		return mlkem1024.Scheme()
	}
	return nil
}

func mldsaScheme(alg string) sign.Scheme {
	switch alg {
	case "ML-DSA-44":
		return mldsa44.Scheme()
	case "ML-DSA-65":
		return mldsa65.Scheme()
	case "ML-DSA-87":
		return mldsa87.Scheme()
	}
	return nil
}

func slhID(alg string) (slhdsa.ID, bool) {
	for id := slhdsa.SHA2_128s; id <= slhdsa.SHAKE_256f; id++ {
		if id.String() == alg {
			return id, true
		}
	}
	return 0, false
}

type algorithmIdentifier struct {
	OID    asn1.ObjectIdentifier
	Params asn1.RawValue `asn1:"optional"`
}

type spki struct {
	Algorithm algorithmIdentifier
	Key       asn1.BitString
}

type pkcs8 struct {
	Version    int
	Algorithm  algorithmIdentifier
	PrivateKey []byte
	Rest       asn1.RawValue `asn1:"optional,tag:0"`
}

// pemBlock decodes the one PEM block of a file and names its type.
func pemBlock(name string, b []byte) (*pem.Block, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", name)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("%s holds no PEM block", name)
	}
	return blk, nil
}

// parsePEMKeyPair parses a private key file and the public key file `openssl pkey -pubout`
// made from it, and checks that the public key is the private key's (recomputed from the
// private key, not copied from it, wherever the encoding allows).
func parsePEMKeyPair(privPEM, pubPEM []byte) (*pemKey, error) {
	k, err := parsePEMPrivate(privPEM)
	if err != nil {
		return nil, err
	}
	pub, err := parsePEMPublic(pubPEM)
	if err != nil {
		return nil, err
	}
	if pub.alg != k.alg {
		return nil, fmt.Errorf("the public key is %s, the private key %s", pub.alg, k.alg)
	}
	if !bytes.Equal(pub.pubRaw, k.pubRaw) {
		return nil, errors.New("the public key file is not the private key's public key")
	}
	k.pub = pub.pub
	return k, nil
}

// parsePEMPublic parses a SubjectPublicKeyInfo PEM file.
func parsePEMPublic(b []byte) (*pemKey, error) {
	blk, err := pemBlock("public key file", b)
	if err != nil {
		return nil, err
	}
	if blk.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("public key file holds a %q block, not PUBLIC KEY", blk.Type)
	}
	var s spki
	if rest, err := asn1.Unmarshal(blk.Bytes, &s); err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("public key: not a SubjectPublicKeyInfo: %v", err)
	}
	if alg, ok := pqOIDs[s.Algorithm.OID.String()]; ok {
		raw := s.Key.RightAlign()
		k := &pemKey{alg: alg, pubRaw: raw}
		switch {
		case mlkemScheme(alg) != nil:
			k.pub, err = mlkemScheme(alg).UnmarshalBinaryPublicKey(raw)
		case mldsaScheme(alg) != nil:
			k.pub, err = mldsaScheme(alg).UnmarshalBinaryPublicKey(raw)
		default:
			id, _ := slhID(alg)
			pk := slhdsa.PublicKey{ID: id}
			err = pk.UnmarshalBinary(raw)
			k.pub = &pk
		}
		if err != nil {
			return nil, fmt.Errorf("%s public key: %w", alg, err)
		}
		return k, nil
	}
	pub, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return classicalPublic(pub)
}

func classicalPublic(pub any) (*pemKey, error) {
	switch p := pub.(type) {
	case ed25519.PublicKey:
		return &pemKey{alg: "Ed25519", pub: p, pubRaw: p}, nil
	case *ecdh.PublicKey:
		if p.Curve() != ecdh.X25519() {
			return nil, errors.New("public key: an ECDH key on an unexpected curve")
		}
		return &pemKey{alg: "X25519", pub: p, pubRaw: p.Bytes()}, nil
	case *ecdsa.PublicKey:
		e, err := p.ECDH()
		if err != nil || e.Curve() != ecdh.P256() {
			return nil, errors.New("public key: an EC key not on P-256")
		}
		return &pemKey{alg: "P-256", pub: p, pubRaw: e.Bytes()}, nil
	case *rsa.PublicKey:
		return &pemKey{alg: fmt.Sprintf("RSA-%d", p.N.BitLen()), pub: p, pubRaw: p.N.Bytes()}, nil
	}
	return nil, fmt.Errorf("public key of unexpected type %T", pub)
}

// parsePEMPrivate parses a PKCS#8 (or PKCS#1 RSA) PEM private key and derives its public key.
func parsePEMPrivate(b []byte) (*pemKey, error) {
	blk, err := pemBlock("private key file", b)
	if err != nil {
		return nil, err
	}
	switch blk.Type {
	case "RSA PRIVATE KEY":
		sk, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		return classicalPrivate(sk)
	case "PRIVATE KEY":
	default:
		return nil, fmt.Errorf("private key file holds a %q block, not PRIVATE KEY", blk.Type)
	}
	var p pkcs8
	if _, err := asn1.Unmarshal(blk.Bytes, &p); err != nil {
		return nil, fmt.Errorf("private key: not PKCS#8: %w", err)
	}
	alg, ok := pqOIDs[p.Algorithm.OID.String()]
	if !ok {
		sk, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		return classicalPrivate(sk)
	}
	k := &pemKey{alg: alg}
	if id, ok := slhID(alg); ok {
		// FIPS 205 private key SK.seed || SK.prf || PK.seed || PK.root: regenerate the key
		// from the three seeds, so PK.root is recomputed rather than copied.
		var sk slhdsa.PrivateKey
		sk.ID = id
		if err := sk.UnmarshalBinary(p.PrivateKey); err != nil {
			return nil, fmt.Errorf("%s private key: %w", alg, err)
		}
		n := len(p.PrivateKey) / 4
		pk2, sk2, err := slhdsa.GenerateKey(bytes.NewReader(p.PrivateKey[:3*n]), id)
		if err != nil {
			return nil, fmt.Errorf("%s private key: %w", alg, err)
		}
		if !sk2.Equal(sk) {
			return nil, fmt.Errorf("%s private key: PK.root is not the root its seeds give", alg)
		}
		k.priv, k.privRaw = &sk, bytes.Clone(p.PrivateKey)
		k.pubRaw, _ = pk2.MarshalBinary()
		return k, nil
	}
	seed, expanded, err := mlPrivateKey(p.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("%s private key: %w", alg, err)
	}
	if s := mlkemScheme(alg); s != nil {
		sk, err := seededKey(alg, seed, expanded, s.SeedSize(),
			func(b []byte) kem.PrivateKey { _, sk := s.DeriveKeyPair(b); return sk },
			s.UnmarshalBinaryPrivateKey, func(a, b kem.PrivateKey) bool { return a.Equal(b) })
		if err != nil {
			return nil, err
		}
		k.priv = sk
		k.privRaw, _ = sk.MarshalBinary()
		k.pubRaw, _ = sk.Public().MarshalBinary()
		return k, nil
	}
	s := mldsaScheme(alg)
	sk, err := seededKey(alg, seed, expanded, s.SeedSize(),
		func(b []byte) sign.PrivateKey { _, sk := s.DeriveKey(b); return sk },
		s.UnmarshalBinaryPrivateKey, func(a, b sign.PrivateKey) bool { return a.Equal(b) })
	if err != nil {
		return nil, err
	}
	k.priv = sk
	k.privRaw, _ = sk.MarshalBinary()
	k.pubRaw, _ = sk.Public().(sign.PublicKey).MarshalBinary()
	return k, nil
}

// seededKey is an ML-KEM or ML-DSA private key from its seed, its expanded encoding, or both
// (which must then be the same key), as OpenSSL 3.5 writes them.
func seededKey[K comparable](alg string, seed, expanded []byte, seedSize int, derive func([]byte) K,
	unmarshal func([]byte) (K, error), equal func(a, b K) bool) (K, error) {
	var zero, fromSeed, fromExp K
	if seed != nil {
		if len(seed) != seedSize {
			return zero, fmt.Errorf("%s private key: seed of %d bytes, want %d", alg, len(seed), seedSize)
		}
		fromSeed = derive(seed)
	}
	if expanded != nil {
		var err error
		if fromExp, err = unmarshal(expanded); err != nil {
			return zero, fmt.Errorf("%s private key: %w", alg, err)
		}
	}
	if fromSeed != zero && fromExp != zero && !equal(fromSeed, fromExp) {
		return zero, fmt.Errorf("%s private key: the expanded key is not the one its seed gives", alg)
	}
	return firstNonNil(fromSeed, fromExp), nil
}

func firstNonNil[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// mlPrivateKey reads the ML-KEM/ML-DSA private key CHOICE of the IETF LAMPS drafts that
// OpenSSL 3.5 writes: seed [0] IMPLICIT OCTET STRING, expandedKey OCTET STRING, or both
// SEQUENCE { seed OCTET STRING, expandedKey OCTET STRING }.
func mlPrivateKey(b []byte) (seed, expanded []byte, err error) {
	var v asn1.RawValue
	rest, err := asn1.Unmarshal(b, &v)
	if err != nil || len(rest) != 0 {
		return nil, nil, fmt.Errorf("not a DER value: %v", err)
	}
	switch {
	case v.Class == asn1.ClassContextSpecific && v.Tag == 0 && !v.IsCompound:
		return v.Bytes, nil, nil
	case v.Class == asn1.ClassUniversal && v.Tag == asn1.TagOctetString:
		return nil, v.Bytes, nil
	case v.Class == asn1.ClassUniversal && v.Tag == asn1.TagSequence:
		var both struct{ Seed, Expanded []byte }
		if rest, err := asn1.Unmarshal(b, &both); err != nil || len(rest) != 0 {
			return nil, nil, fmt.Errorf("seed and expanded key: %v", err)
		}
		return both.Seed, both.Expanded, nil
	}
	return nil, nil, fmt.Errorf("unexpected private key form (class %d, tag %d)", v.Class, v.Tag)
}

func classicalPrivate(sk any) (*pemKey, error) {
	var pub any
	var raw []byte
	switch s := sk.(type) {
	case ed25519.PrivateKey:
		pub, raw = s.Public(), s
	case *ecdh.PrivateKey:
		pub, raw = s.PublicKey(), s.Bytes()
	case *ecdsa.PrivateKey:
		e, err := s.ECDH()
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		pub, raw = &s.PublicKey, e.Bytes()
	case *rsa.PrivateKey:
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		pub, raw = &s.PublicKey, x509.MarshalPKCS1PrivateKey(s)
	default:
		return nil, fmt.Errorf("private key of unexpected type %T", sk)
	}
	k, err := classicalPublic(pub)
	if err != nil {
		return nil, err
	}
	k.priv, k.privRaw = sk, raw
	return k, nil
}

// verifySignature checks sig over msg with the key's public key, independently of OpenSSL.
// digest says the signature was made with -rawin -digest sha256 (ECDSA, RSA); without it an
// ECDSA or RSA signature is over msg taken as the hash, as `pkeyutl -sign` without -rawin does.
func (k *pemKey) verifySignature(msg, sig []byte, digest bool) bool {
	switch pub := k.pub.(type) {
	case ed25519.PublicKey:
		return ed25519.Verify(pub, msg, sig)
	case *ecdsa.PublicKey:
		if digest {
			h := sha256.Sum256(msg)
			return ecdsa.VerifyASN1(pub, h[:], sig)
		}
		return ecdsa.VerifyASN1(pub, msg, sig)
	case *rsa.PublicKey:
		if digest {
			h := sha256.Sum256(msg)
			return rsa.VerifyPKCS1v15(pub, crypto.SHA256, h[:], sig) == nil
		}
		return rsa.VerifyPKCS1v15(pub, 0, msg, sig) == nil
	case *slhdsa.PublicKey: // before sign.PublicKey, which it also implements
		return slhdsa.Verify(pub, slhdsa.NewMessage(msg), sig, nil)
	case sign.PublicKey:
		return pub.Scheme().Verify(pub, msg, sig, nil)
	}
	return false
}
