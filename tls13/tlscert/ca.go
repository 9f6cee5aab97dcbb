package tlscert

import (
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"pqrepro/tls13"
)

// CALifetime is how long a CA that LoadOrCreateCA makes stays valid: a lab builds it into its
// boards' firmware once, so it outlives many runs.
const CALifetime = 10 * 365 * 24 * time.Hour

// CA is one signature scheme's certificate authority.
type CA struct {
	Scheme tls13.SignatureScheme
	Cert   *x509.Certificate
	DER    []byte
	Key    crypto.Signer
}

// NewCA makes a CA of scheme's algorithm, valid from now-1h for lifetime.
func NewCA(scheme tls13.SignatureScheme, now time.Time, lifetime time.Duration) (*CA, error) {
	key, err := newKey(scheme)
	if err != nil {
		return nil, fmt.Errorf("make %v CA key: %w", scheme, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{Organization: []string{"pqrepro"}, CommonName: "pqrepro " + scheme.String() + " test CA"},
		NotBefore:             now.Add(-NotBeforeSkew).UTC(),
		NotAfter:              now.Add(lifetime).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("make %v CA certificate: %w", scheme, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse %v CA certificate: %w", scheme, err)
	}
	return &CA{Scheme: scheme, Cert: cert, DER: der, Key: key}, nil
}

// Issue makes a fresh leaf of the CA's algorithm for hostName (DNS SAN, serverAuth), valid
// from now-1h to now+Lifetime (never past the CA's own end).
func (ca *CA) Issue(hostName string, now time.Time) (*Chain, error) {
	if hostName == "" {
		return nil, errors.New("make certificate chain: empty host name")
	}
	if now.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("the %v CA expired on %s", ca.Scheme, ca.Cert.NotAfter.Format(time.DateOnly))
	}
	key, err := newKey(ca.Scheme)
	if err != nil {
		return nil, fmt.Errorf("make %v leaf key: %w", ca.Scheme, err)
	}
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(Lifetime).UTC()
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{Organization: []string{"pqrepro"}, CommonName: hostName},
		NotBefore:             now.Add(-NotBeforeSkew).UTC(),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{hostName},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("make %v leaf certificate: %w", ca.Scheme, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse %v leaf certificate: %w", ca.Scheme, err)
	}
	return &Chain{Scheme: ca.Scheme, CA: ca.Cert, Leaf: leaf, CADER: ca.DER, LeafDER: der, CAKey: ca.Key, Key: key}, nil
}

// Fingerprint is the first 16 bytes of the SHA-256 of the CA's DER: what a board that pinned
// the CA compares (firmware/PROTOCOL.md, TLS ca=).
func (ca *CA) Fingerprint() []byte {
	sum := sha256.Sum256(ca.DER)
	return sum[:16]
}

// CAFiles are where LoadOrCreateCA keeps scheme's CA in dir: the certificate (PEM, to build
// into a board's firmware or give to s_client -CAfile) and its key (PKCS #8 PEM, mode 0600).
func CAFiles(dir string, scheme tls13.SignatureScheme) (certFile, keyFile string) {
	return filepath.Join(dir, scheme.String()+"-ca.pem"), filepath.Join(dir, scheme.String()+"-ca.key")
}

// LoadOrCreateCA reads scheme's CA from dir, or makes one valid for CALifetime and writes it
// there (dir is created 0700). A CA that has expired, is not a CA of scheme's algorithm, or
// whose key does not match its certificate is refused, naming the file.
func LoadOrCreateCA(dir string, scheme tls13.SignatureScheme, now time.Time) (*CA, error) {
	certFile, keyFile := CAFiles(dir, scheme)
	certPEM, err := os.ReadFile(certFile)
	if errors.Is(err, os.ErrNotExist) {
		ca, err := NewCA(scheme, now, CALifetime)
		if err != nil {
			return nil, err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(ca.Key)
		if err != nil {
			return nil, fmt.Errorf("encode the %v CA key: %w", scheme, err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		// The key first and the certificate last, so a crash leaves no certificate without its key.
		if err := writeNew(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
			return nil, err
		}
		if err := writeNew(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.DER}), 0o644); err != nil {
			return nil, err
		}
		return ca, nil
	}
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE block", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certFile, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s: not a CA certificate", certFile)
	}
	if now.After(cert.NotAfter) {
		return nil, fmt.Errorf("%s: the CA expired on %s; move it away to make a new one (and rebuild the boards that pin it)", certFile, cert.NotAfter.Format(time.DateOnly))
	}
	if s, err := tls13.SchemeForKey(cert.PublicKey); err != nil || s != scheme {
		return nil, fmt.Errorf("%s: the CA's key is not a %v key", certFile, scheme)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: no PEM PRIVATE KEY block", keyFile)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: a %T cannot sign", keyFile, k)
	}
	if pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s: the key does not match %s", keyFile, certFile)
	}
	return &CA{Scheme: scheme, Cert: cert, DER: cert.Raw, Key: signer}, nil
}

// writeNew writes a file that must not exist yet, through a temporary file and a rename.
func writeNew(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Remove(tmp)
}
