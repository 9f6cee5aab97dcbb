package tls13

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/mldsa"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

const (
	serverSignatureContext = "TLS 1.3, server CertificateVerify\x00"
	clientSignatureContext = "TLS 1.3, client CertificateVerify\x00"
)

// signedContent is the RFC 8446 §4.4.3 input of a CertificateVerify signature: 64 spaces, the
// context string with its terminating zero, and the transcript hash.
func signedContent(context string, transcriptHash []byte) []byte {
	b := make([]byte, 0, 64+len(context)+len(transcriptHash))
	for range 64 {
		b = append(b, ' ')
	}
	b = append(b, context...)
	return append(b, transcriptHash...)
}

var pssOptions = &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}

// sign signs content with key under scheme (pure ML-DSA with an empty context; Ed25519 over
// the content; ECDSA and RSA-PSS over its SHA-256 digest, PSS salt = hash length).
// deterministic (Config.Deterministic) signs ML-DSA with its deterministic variant, ECDSA with
// RFC 6979 nonces and RSA-PSS with its salt read from rand; ECDSA and RSA-PSS then need the
// standard library's key types, since another signer's randomness cannot be steered.
func sign(scheme SignatureScheme, key crypto.Signer, rand io.Reader, content []byte, deterministic bool) ([]byte, error) {
	switch scheme {
	case MLDSA44, MLDSA65, MLDSA87:
		if k, ok := key.(*mldsa.PrivateKey); ok && deterministic {
			return k.SignDeterministic(content, &mldsa.Options{})
		}
		return key.Sign(rand, content, &mldsa.Options{})
	case Ed25519:
		return key.Sign(rand, content, crypto.Hash(0))
	case ECDSAP256SHA256:
		h := sha256.Sum256(content)
		if !deterministic {
			return key.Sign(rand, h[:], crypto.SHA256)
		}
		k, ok := key.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("deterministic %s needs an *ecdsa.PrivateKey, not a %T", scheme, key)
		}
		// A nil reader asks crypto/ecdsa for RFC 6979 nonces.
		return k.Sign(nil, h[:], crypto.SHA256)
	case RSAPSSRSAESHA256:
		h := sha256.Sum256(content)
		if !deterministic {
			return key.Sign(rand, h[:], pssOptions)
		}
		k, ok := key.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("deterministic %s needs an *rsa.PrivateKey, not a %T", scheme, key)
		}
		// crypto/rsa reads the salt, and nothing else, from the reader it is given (Go 1.27:
		// SignPSS is not routed through the system generator as ECDSA and key generation
		// are); TestDeterministicPSS finds the reader's first 32 bytes in the signature, so
		// a release that stops doing so fails there.
		return rsa.SignPSS(rand, k, crypto.SHA256, h[:], pssOptions)
	}
	return nil, fmt.Errorf("sign: unsupported scheme %s", scheme)
}

// errKeyMismatch is returned by verify when the public key cannot be used with the scheme.
var errKeyMismatch = errors.New("certificate key does not match the signature scheme")

// verify checks sig over content with pub under scheme. It returns an error wrapping
// errKeyMismatch when pub's type or parameters do not belong to scheme.
func verify(scheme SignatureScheme, pub crypto.PublicKey, content, sig []byte) error {
	switch scheme {
	case MLDSA44, MLDSA65, MLDSA87:
		k, ok := pub.(*mldsa.PublicKey)
		if !ok {
			return fmt.Errorf("%w: %s with a %T key", errKeyMismatch, scheme, pub)
		}
		want := map[SignatureScheme]mldsa.Parameters{MLDSA44: mldsa.MLDSA44(), MLDSA65: mldsa.MLDSA65(), MLDSA87: mldsa.MLDSA87()}[scheme]
		if k.Parameters() != want {
			return fmt.Errorf("%w: %s with an %s key", errKeyMismatch, scheme, k.Parameters())
		}
		return mldsa.Verify(k, content, sig, nil)
	case Ed25519:
		k, ok := pub.(ed25519.PublicKey)
		if !ok {
			return fmt.Errorf("%w: %s with a %T key", errKeyMismatch, scheme, pub)
		}
		if !ed25519.Verify(k, content, sig) {
			return errors.New("Ed25519 signature is invalid")
		}
		return nil
	case ECDSAP256SHA256:
		k, ok := pub.(*ecdsa.PublicKey)
		if !ok || k.Curve != elliptic.P256() {
			return fmt.Errorf("%w: %s with a %T key", errKeyMismatch, scheme, pub)
		}
		h := sha256.Sum256(content)
		if !ecdsa.VerifyASN1(k, h[:], sig) {
			return errors.New("ECDSA signature is invalid")
		}
		return nil
	case RSAPSSRSAESHA256:
		k, ok := pub.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("%w: %s with a %T key", errKeyMismatch, scheme, pub)
		}
		h := sha256.Sum256(content)
		return rsa.VerifyPSS(k, crypto.SHA256, h[:], sig, pssOptions)
	}
	return fmt.Errorf("%w: unsupported scheme %s", errKeyMismatch, scheme)
}
