package tlscert_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

const host = "pqrepro.test"

// wantAlgs are the AlgorithmIdentifiers each scheme's certificates must carry: the subject
// public key's and the signature's, and whether parameters must be absent (RFC 9881 and RFC
// 8410 say absent; RFC 8017 rsaEncryption and sha256WithRSAEncryption carry NULL; ECDSA's
// key carries the curve).
var wantAlgs = map[tls13.SignatureScheme]struct {
	key, sig      asn1.ObjectIdentifier
	absentParams  bool
	openSSLKeyAlg string
}{
	tls13.MLDSA44:          {oid(2, 16, 840, 1, 101, 3, 4, 3, 17), oid(2, 16, 840, 1, 101, 3, 4, 3, 17), true, "ML-DSA-44"},
	tls13.MLDSA65:          {oid(2, 16, 840, 1, 101, 3, 4, 3, 18), oid(2, 16, 840, 1, 101, 3, 4, 3, 18), true, "ML-DSA-65"},
	tls13.MLDSA87:          {oid(2, 16, 840, 1, 101, 3, 4, 3, 19), oid(2, 16, 840, 1, 101, 3, 4, 3, 19), true, "ML-DSA-87"},
	tls13.Ed25519:          {oid(1, 3, 101, 112), oid(1, 3, 101, 112), true, "ED25519"},
	tls13.ECDSAP256SHA256:  {oid(1, 2, 840, 10045, 2, 1), oid(1, 2, 840, 10045, 4, 3, 2), false, "id-ecPublicKey"},
	tls13.RSAPSSRSAESHA256: {oid(1, 2, 840, 113549, 1, 1, 1), oid(1, 2, 840, 113549, 1, 1, 11), false, "rsaEncryption"},
}

func oid(n ...int) asn1.ObjectIdentifier { return n }

// algorithms decodes a certificate's DER: the outer signatureAlgorithm, the TBS signature
// field and the subject public key's algorithm.
func algorithms(t *testing.T, der []byte) (outer, inner, spki pkix.AlgorithmIdentifier) {
	t.Helper()
	var cert struct {
		TBS asn1.RawValue
		Alg pkix.AlgorithmIdentifier
		Sig asn1.BitString
	}
	if rest, err := asn1.Unmarshal(der, &cert); err != nil || len(rest) != 0 {
		t.Fatalf("decode certificate: %v (%d trailing bytes)", err, len(rest))
	}
	var tbs struct {
		Version   int `asn1:"optional,explicit,default:0,tag:0"`
		Serial    asn1.RawValue
		Alg       pkix.AlgorithmIdentifier
		Issuer    asn1.RawValue
		Validity  asn1.RawValue
		Subject   asn1.RawValue
		PublicKey struct {
			Alg pkix.AlgorithmIdentifier
			Key asn1.BitString
		}
		Rest []asn1.RawValue `asn1:"optional,explicit,tag:3"`
	}
	if _, err := asn1.Unmarshal(cert.TBS.FullBytes, &tbs); err != nil {
		t.Fatalf("decode TBSCertificate: %v", err)
	}
	return cert.Alg, tbs.Alg, tbs.PublicKey.Alg
}

func TestNew(t *testing.T) {
	now := time.Now()
	for _, scheme := range tls13.SignatureSchemes() {
		t.Run(scheme.String(), func(t *testing.T) {
			t.Parallel()
			c, err := tlscert.New(scheme, host, now)
			if err != nil {
				t.Fatal(err)
			}
			if c.Scheme != scheme {
				t.Errorf("Scheme %v, want %v", c.Scheme, scheme)
			}
			want := wantAlgs[scheme]
			for name, der := range map[string][]byte{"CA": c.CADER, "leaf": c.LeafDER} {
				outer, inner, spki := algorithms(t, der)
				if !outer.Algorithm.Equal(want.sig) || !inner.Algorithm.Equal(want.sig) {
					t.Errorf("%s signature algorithm %v / %v, want %v", name, outer.Algorithm, inner.Algorithm, want.sig)
				}
				if !spki.Algorithm.Equal(want.key) {
					t.Errorf("%s public key algorithm %v, want %v", name, spki.Algorithm, want.key)
				}
				if want.absentParams && (len(outer.Parameters.FullBytes) != 0 || len(spki.Parameters.FullBytes) != 0) {
					t.Errorf("%s: AlgorithmIdentifier parameters present, must be absent", name)
				}
			}
			// Each chain is its own algorithm: the leaf's key and the CA's give this scheme.
			for name, k := range map[string]any{"leaf": c.Key.Public(), "CA": c.CAKey.Public(), "leaf certificate": c.Leaf.PublicKey} {
				if s, err := tls13.SchemeForKey(k); err != nil || s != scheme {
					t.Errorf("%s key is for %v (%v), want %v", name, s, err, scheme)
				}
			}
			if !c.CA.IsCA || !c.CA.BasicConstraintsValid || c.CA.KeyUsage&x509.KeyUsageCertSign == 0 || !c.CA.MaxPathLenZero {
				t.Errorf("CA: IsCA %v, keyCertSign %v, path length 0 %v", c.CA.IsCA, c.CA.KeyUsage&x509.KeyUsageCertSign != 0, c.CA.MaxPathLenZero)
			}
			if c.Leaf.IsCA || c.Leaf.KeyUsage != x509.KeyUsageDigitalSignature ||
				len(c.Leaf.ExtKeyUsage) != 1 || c.Leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth ||
				len(c.Leaf.DNSNames) != 1 || c.Leaf.DNSNames[0] != host {
				t.Errorf("leaf: IsCA %v, key usage %v, EKU %v, DNS %v", c.Leaf.IsCA, c.Leaf.KeyUsage, c.Leaf.ExtKeyUsage, c.Leaf.DNSNames)
			}
			if got := c.Certificates(); len(got) != 1 || string(got[0]) != string(c.LeafDER) {
				t.Errorf("Certificates: %d, want the leaf alone", len(got))
			}
			opts := x509.VerifyOptions{Roots: c.Pool(), DNSName: host, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			if _, err := c.Leaf.Verify(opts); err != nil {
				t.Errorf("leaf does not verify against the CA: %v", err)
			}
			for name, mod := range map[string]func(*x509.VerifyOptions){
				"other host":      func(o *x509.VerifyOptions) { o.DNSName = "other.test" },
				"before validity": func(o *x509.VerifyOptions) { o.CurrentTime = now.Add(-2 * time.Hour) },
				"after validity":  func(o *x509.VerifyOptions) { o.CurrentTime = now.Add(25 * time.Hour) },
				"no trust anchor": func(o *x509.VerifyOptions) { o.Roots = x509.NewCertPool() },
			} {
				o := opts
				mod(&o)
				if _, err := c.Leaf.Verify(o); err == nil {
					t.Errorf("leaf verifies with %s", name)
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := tlscert.New(tls13.MLDSA44, "", time.Now()); err == nil {
		t.Error("empty host name accepted")
	}
	if _, err := tlscert.New(tls13.SignatureScheme(0x0401), host, time.Now()); !errors.Is(err, tlscert.ErrUnknownScheme) {
		t.Errorf("rsa_pkcs1_sha256: %v, want ErrUnknownScheme", err)
	}
}

// TestWritePEMOpenSSL: OpenSSL 3.5 reads every key and certificate WritePEM writes, and
// verifies the leaf against the CA for the host name as a TLS server certificate.
func TestWritePEMOpenSSL(t *testing.T) {
	o, err := interop.FindOpenSSL(context.Background())
	if err != nil {
		t.Fatalf("this test needs OpenSSL 3.5: %v", err)
	}
	for _, scheme := range tls13.SignatureSchemes() {
		t.Run(scheme.String(), func(t *testing.T) {
			t.Parallel()
			c, err := tlscert.New(scheme, host, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			caFile, certFile, keyFile, err := c.WritePEM(dir)
			if err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("key file mode %v (%v), want 0600", st.Mode().Perm(), err)
			}
			b, _ := os.ReadFile(keyFile)
			if blk, _ := pem.Decode(b); blk == nil || blk.Type != "PRIVATE KEY" {
				t.Fatalf("key.pem is not a PKCS #8 PEM block")
			}
			ctx := context.Background()
			want := wantAlgs[scheme].openSSLKeyAlg
			for _, args := range [][]string{
				{"pkey", "-in", keyFile, "-noout"},
				{"x509", "-in", caFile, "-noout", "-text"},
				{"x509", "-in", certFile, "-noout", "-text"},
				{"verify", "-CAfile", caFile, "-verify_hostname", host, "-purpose", "sslserver", certFile},
			} {
				out, stderr, err := o.Output(ctx, args...)
				if err != nil {
					t.Errorf("openssl %s: %v: %s", strings.Join(args, " "), err, stderr)
					continue
				}
				if args[0] == "x509" && !strings.Contains(out, "Public Key Algorithm: "+want) {
					t.Errorf("openssl %s does not name %s: %s", strings.Join(args, " "), want, out[:min(len(out), 600)])
				}
			}
			// The key OpenSSL reads is the leaf's: its public key equals the certificate's.
			pub, stderr, err := o.Output(ctx, "pkey", "-in", keyFile, "-pubout")
			if err != nil {
				t.Fatalf("openssl pkey -pubout: %v: %s", err, stderr)
			}
			blk, _ := pem.Decode([]byte(pub))
			if blk == nil || string(blk.Bytes) != string(c.Leaf.RawSubjectPublicKeyInfo) {
				t.Errorf("OpenSSL's public key from key.pem differs from the leaf's")
			}
			// A CA of another chain does not verify this leaf.
			other, err := tlscert.New(scheme, host, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			otherCA, _, _, err := other.WritePEM(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := o.Output(ctx, "verify", "-CAfile", otherCA, certFile); err == nil {
				t.Errorf("openssl verify accepts the leaf under another chain's CA")
			}
		})
	}
}

// TestSeeded: for every scheme a seeded CA and its seeded leaf are the same DER for the same
// seed and differ for another; the leaf verifies under the CA for its host name at SeededNow
// and signs what its public key verifies; the seeded certificates carry the same signature
// algorithm as NewCA's; a CA made at random (as a lab's CA folder holds) issues the same
// seeded leaf twice too.
func TestSeeded(t *testing.T) {
	for _, s := range tls13.SignatureSchemes() {
		t.Run(s.String(), func(t *testing.T) {
			a, err := tlscert.NewSeededCA(s, []byte("seed"))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := tlscert.NewSeededCA(s, []byte("seed"))
			c, _ := tlscert.NewSeededCA(s, []byte("other"))
			if !bytes.Equal(a.DER, b.DER) || bytes.Equal(a.DER, c.DER) {
				t.Fatalf("seeded CA not a function of its seed")
			}
			l1, err := a.IssueSeeded(host, []byte("cell"))
			if err != nil {
				t.Fatal(err)
			}
			l2, _ := b.IssueSeeded(host, []byte("cell"))
			l3, _ := a.IssueSeeded(host, []byte("cell2"))
			if !bytes.Equal(l1.LeafDER, l2.LeafDER) || bytes.Equal(l1.LeafDER, l3.LeafDER) {
				t.Fatalf("seeded leaf not a function of its seed")
			}
			if _, err := l1.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: l1.Pool(), CurrentTime: l1.SeededNow()}); err != nil {
				t.Fatalf("seeded leaf does not verify: %v", err)
			}
			if got, err := tls13.SchemeForKey(l1.Leaf.PublicKey); err != nil || got != s {
				t.Fatalf("the seeded leaf's key is for %v (%v)", got, err)
			}
			random, err := tlscert.NewCA(s, time.Now(), tlscert.CALifetime)
			if err != nil {
				t.Fatal(err)
			}
			if a.Cert.SignatureAlgorithm != random.Cert.SignatureAlgorithm || l1.Leaf.SignatureAlgorithm != random.Cert.SignatureAlgorithm {
				t.Errorf("seeded CA and leaf signed with %v and %v, NewCA with %v", a.Cert.SignatureAlgorithm, l1.Leaf.SignatureAlgorithm, random.Cert.SignatureAlgorithm)
			}
			r1, err := random.IssueSeeded(host, []byte("cell"))
			if err != nil {
				t.Fatal(err)
			}
			r2, _ := random.IssueSeeded(host, []byte("cell"))
			if !bytes.Equal(r1.LeafDER, r2.LeafDER) {
				t.Fatalf("a random CA's seeded leaves differ")
			}
			if _, err := r1.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: r1.Pool(), CurrentTime: r1.SeededNow()}); err != nil {
				t.Fatalf("a random CA's seeded leaf does not verify: %v", err)
			}
		})
	}
	opaque := &tlscert.CA{Scheme: tls13.Ed25519, Cert: nil, Key: opaqueSigner{}}
	if _, err := opaque.IssueSeeded(host, []byte("cell")); !errors.Is(err, tlscert.ErrNotSeedable) {
		t.Fatalf("a seeded leaf from a CA key of unknown type: %v, want ErrNotSeedable", err)
	}
}

// opaqueSigner is a signer of no type IssueSeeded knows.
type opaqueSigner struct{ crypto.Signer }

// TestSeededKeys: the seeded RSA key has a 2048-bit modulus, e = 65537, two distinct primes of
// 1024 bits and a private exponent below lcm(p-1, q-1) (FIPS 186-5 A.1.1), and it signs what
// its public key verifies; the ECDSA key is on P-256. Both differ from seed to seed.
func TestSeededKeys(t *testing.T) {
	a, _ := tlscert.NewSeededCA(tls13.RSAPSSRSAESHA256, []byte("seed"))
	b, _ := tlscert.NewSeededCA(tls13.RSAPSSRSAESHA256, []byte("other"))
	k := a.Key.(*rsa.PrivateKey)
	if k.N.BitLen() != tlscert.RSABits || k.E != 65537 || len(k.Primes) != 2 || k.Primes[0].Cmp(k.Primes[1]) == 0 {
		t.Fatalf("seeded RSA key: %d bits, e = %d, %d primes", k.N.BitLen(), k.E, len(k.Primes))
	}
	one := big.NewInt(1)
	pm1, qm1 := new(big.Int).Sub(k.Primes[0], one), new(big.Int).Sub(k.Primes[1], one)
	lambda := new(big.Int).Mul(pm1, qm1)
	lambda.Quo(lambda, new(big.Int).GCD(nil, nil, pm1, qm1))
	for _, p := range k.Primes {
		if p.BitLen() != tlscert.RSABits/2 {
			t.Errorf("a %d-bit prime", p.BitLen())
		}
	}
	if k.D.Cmp(lambda) >= 0 {
		t.Errorf("d is not below lcm(p-1, q-1)")
	}
	if b.Key.(*rsa.PrivateKey).N.Cmp(k.N) == 0 {
		t.Errorf("two seeds gave one RSA modulus")
	}
	digest := sha256.Sum256([]byte("seeded"))
	sig, err := rsa.SignPSS(rand.Reader, k, crypto.SHA256, digest[:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPSS(&k.PublicKey, crypto.SHA256, digest[:], sig, nil); err != nil {
		t.Errorf("seeded RSA key: %v", err)
	}
	e1, _ := tlscert.NewSeededCA(tls13.ECDSAP256SHA256, []byte("seed"))
	e2, _ := tlscert.NewSeededCA(tls13.ECDSAP256SHA256, []byte("other"))
	ek := e1.Key.(*ecdsa.PrivateKey)
	if ek.Curve != elliptic.P256() || ek.Equal(e2.Key) {
		t.Errorf("seeded ECDSA keys: curve %v, equal for two seeds %v", ek.Curve.Params().Name, ek.Equal(e2.Key))
	}
}
