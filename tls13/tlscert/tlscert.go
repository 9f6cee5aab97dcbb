// Package tlscert makes the certificate chains of the TLS matrix: per signature scheme a CA
// and a leaf of that same algorithm, so each cell's chain is its own algorithm.
//
// The chains are made by crypto/x509: ML-DSA-44/65/87 with the RFC 9881 OIDs id-ml-dsa-44/65/87
// (2.16.840.1.101.3.4.3.17/18/19), Ed25519 (RFC 8410), ECDSA with SHA-256 and RSA with
// SHA-256 (PKCS #1 v1.5 in the certificates; the TLS CertificateVerify of the RSA cell is
// rsa_pss_rsae_sha256, signed with the same rsaEncryption key).
//
// Assumptions, since paper000 gives no key sizes: the ECDSA chain uses the P-256 curve and the
// RSA chain RSA-2048 keys (CA and leaf both).
//
// The CA has basicConstraints CA:true (path length 0) and the keyCertSign and cRLSign key
// usages; the leaf has digitalSignature, the serverAuth extended key usage and one DNS SAN.
// Both are valid from now-1h to now+24h. Keys come from crypto/rand: chains are made per run
// and never reused across runs.
package tlscert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/mldsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"pqrepro/tls13"
)

// RSABits is the modulus size of the RSA chain's keys (an assumption: the paper gives none).
const RSABits = 2048

// Validity of the chains around the now given to New.
const (
	NotBeforeSkew = time.Hour
	Lifetime      = 24 * time.Hour
)

// Chain is a CA and a leaf of one signature scheme's algorithm.
type Chain struct {
	// Scheme is the TLS signature scheme the leaf's key signs CertificateVerify with.
	Scheme tls13.SignatureScheme
	// CA is the self-signed trust anchor; Leaf is the server certificate it issued.
	CA, Leaf *x509.Certificate
	// CADER and LeafDER are the certificates' DER encodings.
	CADER, LeafDER []byte
	// CAKey is the CA's key; Key is the leaf's.
	CAKey, Key crypto.Signer
}

// ErrUnknownScheme is returned (wrapped) by New for a scheme it has no algorithm for.
var ErrUnknownScheme = errors.New("no certificate algorithm for this signature scheme")

// New makes a CA and a leaf of scheme's algorithm, the leaf valid for hostName (its DNS SAN and
// CommonName), both valid from now-1h to now+24h.
func New(scheme tls13.SignatureScheme, hostName string, now time.Time) (*Chain, error) {
	if hostName == "" {
		return nil, errors.New("make certificate chain: empty host name")
	}
	ca, err := NewCA(scheme, now, Lifetime)
	if err != nil {
		return nil, err
	}
	return ca.Issue(hostName, now)
}

// newKey makes a key of scheme's algorithm.
func newKey(scheme tls13.SignatureScheme) (crypto.Signer, error) {
	switch scheme {
	case tls13.MLDSA44:
		return mldsa.GenerateKey(mldsa.MLDSA44())
	case tls13.MLDSA65:
		return mldsa.GenerateKey(mldsa.MLDSA65())
	case tls13.MLDSA87:
		return mldsa.GenerateKey(mldsa.MLDSA87())
	case tls13.Ed25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	case tls13.ECDSAP256SHA256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case tls13.RSAPSSRSAESHA256:
		return rsa.GenerateKey(rand.Reader, RSABits)
	}
	return nil, fmt.Errorf("signature scheme %v: %w", scheme, ErrUnknownScheme)
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("make certificate serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// Certificates is what the server sends: the leaf only (the CA is the client's trust anchor).
// The slice is new on each call; its element shares the chain's LeafDER.
func (c *Chain) Certificates() [][]byte { return [][]byte{c.LeafDER} }

// Pool is a new pool holding the CA alone.
func (c *Chain) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.CA)
	return p
}

// WritePEM writes ca.pem, cert.pem (the leaf) and key.pem (the leaf's key, unencrypted
// PKCS #8; ML-DSA keys in the seed-only form, which OpenSSL 3.5 reads) into dir, which must
// exist, and returns their paths. The key file is mode 0600.
func (c *Chain) WritePEM(dir string) (caFile, certFile, keyFile string, err error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		return "", "", "", fmt.Errorf("encode %v leaf key as PKCS #8: %w", c.Scheme, err)
	}
	caFile = filepath.Join(dir, "ca.pem")
	certFile = filepath.Join(dir, "cert.pem")
	keyFile = filepath.Join(dir, "key.pem")
	for _, f := range []struct {
		path, typ string
		der       []byte
		mode      os.FileMode
	}{
		{caFile, "CERTIFICATE", c.CADER, 0o644},
		{certFile, "CERTIFICATE", c.LeafDER, 0o644},
		{keyFile, "PRIVATE KEY", keyDER, 0o600},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return "", "", "", fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return caFile, certFile, keyFile, nil
}
