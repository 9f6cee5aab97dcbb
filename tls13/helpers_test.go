package tls13

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/mldsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

const testHost = "server.test"

// testChain is a CA and a leaf of one signature algorithm, made for this package's tests
// (the production chain maker lives in tls13/tlscert).
type testChain struct {
	ca      *x509.Certificate
	leafDER []byte
	key     crypto.Signer
	pool    *x509.CertPool
}

var (
	chainMu    sync.Mutex
	chainCache = map[SignatureScheme]*testChain{}
)

func newKey(t testing.TB, s SignatureScheme) crypto.Signer {
	t.Helper()
	var k crypto.Signer
	var err error
	switch s {
	case MLDSA44:
		k, err = mldsa.GenerateKey(mldsa.MLDSA44())
	case MLDSA65:
		k, err = mldsa.GenerateKey(mldsa.MLDSA65())
	case MLDSA87:
		k, err = mldsa.GenerateKey(mldsa.MLDSA87())
	case Ed25519:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	case ECDSAP256SHA256:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSAPSSRSAESHA256:
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("no key for %s", s)
	}
	if err != nil {
		t.Fatalf("generate %s key: %v", s, err)
	}
	return k
}

// makeChain returns a fresh CA and leaf for scheme, the leaf valid for host.
func makeChain(t testing.TB, s SignatureScheme, host string) *testChain {
	t.Helper()
	now := time.Now()
	caKey := newKey(t, s)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tls13 test CA " + s.String()},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatalf("create %s CA: %v", s, err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t, s)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatalf("create %s leaf: %v", s, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testChain{ca: ca, leafDER: leafDER, key: key, pool: pool}
}

// chainFor returns a cached chain for scheme valid for testHost.
func chainFor(t testing.TB, s SignatureScheme) *testChain {
	t.Helper()
	chainMu.Lock()
	defer chainMu.Unlock()
	if c, ok := chainCache[s]; ok {
		return c
	}
	c := makeChain(t, s, testHost)
	chainCache[s] = c
	return c
}

func serverConfig(t testing.TB, s SignatureScheme, groups ...Group) *Config {
	ch := chainFor(t, s)
	return &Config{Groups: groups, Certificates: [][]byte{ch.leafDER}, PrivateKey: ch.key}
}

func clientConfig(t testing.TB, s SignatureScheme, groups ...Group) *Config {
	ch := chainFor(t, s)
	return &Config{Groups: groups, RootCAs: ch.pool, ServerName: testHost}
}

// tcpPair returns both ends of a real loopback TCP connection.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}

// result is what one side saw: its handshake error and what it read afterwards.
type result struct {
	err      error
	readErr  error
	readData []byte
}

// runPair runs a client and a server over TCP loopback. Each side handshakes; on success the
// client writes msg, the server echoes it back, and both results are returned. A side whose
// handshake fails tries one Read to show it accepts nothing.
func runPair(t testing.TB, ccfg, scfg *Config, msg []byte) (*Conn, *Conn, result, result) {
	t.Helper()
	cc, sc := tcpPair(t)
	client, server := Client(cc, ccfg), Server(sc, scfg)
	var sres result
	done := make(chan struct{})
	go func() {
		defer close(done)
		sres.err = server.Handshake()
		buf := make([]byte, len(msg)+16)
		n, err := io.ReadAtLeast(server, buf, len(msg))
		sres.readData, sres.readErr = buf[:n], err
		if err == nil && sres.err == nil {
			server.Write(buf[:n])
		}
		if sres.err != nil {
			// Close so a peer waiting for more handshake data sees the end.
			sc.Close()
		}
	}()
	var cres result
	cres.err = client.Handshake()
	if cres.err == nil {
		client.Write(msg)
	} else {
		cc.Close()
	}
	buf := make([]byte, len(msg)+16)
	n, err := io.ReadAtLeast(client, buf, max(len(msg), 1))
	cres.readData, cres.readErr = buf[:n], err
	<-done
	return client, server, cres, sres
}

// wantAlert checks that err is an *AlertError with the given alert and direction.
func wantAlert(t *testing.T, side string, err error, a Alert, remote bool) {
	t.Helper()
	var ae *AlertError
	if !errors.As(err, &ae) {
		t.Errorf("%s: err = %v, want alert %s (remote %v)", side, err, a, remote)
		return
	}
	if ae.Alert != a || ae.Remote != remote {
		t.Errorf("%s: alert %s remote %v (%v), want %s remote %v", side, ae.Alert, ae.Remote, err, a, remote)
	}
}
