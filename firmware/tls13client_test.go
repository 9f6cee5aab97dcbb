package firmware

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// The C client's states (crypto/tls13/tls13c.h).
const (
	tlscConnected = 6
	tlscFailed    = 7
)

// tlscResult is what one tlsc-feed answered: the client's state, the alerts it sent and
// received (-1: none), its output and the application data it received, its group and the
// CertificateVerify scheme it verified (0 before).
type tlscResult struct {
	state, sent, received int
	out, app              []byte
	group, scheme         int
}

func tlscFeed(t *testing.T, k *katcli, in []byte) tlscResult {
	t.Helper()
	var r tlscResult
	f := feedFields(t, k, "tlsc-feed", in, &r.state, &r.sent, &r.received, nil, nil, &r.group, &r.scheme)
	r.out = unhexField(t, f[3])
	r.app = unhexField(t, f[4])
	return r
}

// feedFields sends katcli's cmd (tlsc-feed, tlss-feed) with in as hex and returns its answer's
// fields, one for each of ints, after reading each field whose pointer is not nil as a decimal
// into it; a different count or a field that is not a number fails t.
func feedFields(t *testing.T, k *katcli, cmd string, in []byte, ints ...*int) []string {
	t.Helper()
	f := strings.Fields(k.do(t, cmd, hex.EncodeToString(in)))
	if len(f) != len(ints) {
		t.Fatalf("%s: %q", cmd, f)
	}
	for i, p := range ints {
		if p == nil {
			continue
		}
		v, err := strconv.Atoi(f[i])
		if err != nil {
			t.Fatal(err)
		}
		*p = v
	}
	return f
}

func unhexField(t *testing.T, s string) []byte {
	t.Helper()
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tlsCell is one run of the C client against the Go engine as server.
type tlsCell struct {
	group  tls13.Group
	scheme tls13.SignatureScheme
	host   string // the name the C client asks for (the leaf is issued for board.pqrepro.test)
	now    time.Time
	// chain, when set, gives the chain whose CA the client trusts (another CA: unknown_ca).
	chain func(*tlscert.Chain) *tlscert.Chain
	// signer, when set, gives the chain whose leaf key the server signs CertificateVerify with.
	signer func(*tlscert.Chain) *tlscert.Chain
	// tamper, when set, changes the server's first flight on its way to the client.
	tamper func([]byte) []byte
	// state, when set, receives the server's State after its handshake.
	state *tls13.State
}

// runTLSCell starts the Go engine as a server on one end of a pipe and the C client (katcli's
// tlsc- commands) on the other, relays bytes between them until the C client is connected or
// has failed, then, if connected, sends "ping" and expects the server's echo. It returns the C
// client's last result and the server's handshake error.
func runTLSCell(t *testing.T, k *katcli, c tlsCell) (tlscResult, error) {
	t.Helper()
	issued := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	ch, err := tlscert.New(c.scheme, "board.pqrepro.test", issued)
	if err != nil {
		t.Fatal(err)
	}
	anchor := ch.CADER
	if c.chain != nil {
		anchor = c.chain(ch).CADER
	}
	key := ch.Key
	if c.signer != nil {
		key = c.signer(ch).Key
	}
	clientEnd, serverEnd := net.Pipe()
	defer clientEnd.Close()
	srv := tls13.Server(serverEnd, &tls13.Config{
		Groups: []tls13.Group{c.group}, SignatureSchemes: []tls13.SignatureScheme{c.scheme},
		Certificates: ch.Certificates(), PrivateKey: key,
	})
	srvErr := make(chan error, 1)
	go func() {
		defer serverEnd.Close()
		err := srv.Handshake()
		if c.state != nil {
			*c.state = srv.State()
		}
		if err == nil {
			buf := make([]byte, 64)
			var n int
			if n, err = srv.Read(buf); err == nil {
				_, err = srv.Write(buf[:n])
			}
		}
		srvErr <- err
	}()
	res := relayTLSClient(t, k, clientEnd, c, anchor, "ping")
	clientEnd.Close()
	return res, <-srvErr
}

// relayTLSClient starts the C client for cell c with trust anchor anchor and relays bytes between
// it and conn, the server's end, until the client has failed or received application data after
// sending ping once connected. The client's random, ML-KEM seed and ECDH secret are fresh (a
// P-256 scalar outside [1, n-1] fails tlsc-start, and is drawn again).
func relayTLSClient(t *testing.T, k *katcli, conn net.Conn, c tlsCell, anchor []byte, ping string) tlscResult {
	t.Helper()
	hx := hex.EncodeToString
	hello := "fail"
	for try := 0; try < 3 && hello == "fail"; try++ {
		random, seed, ecdh := make([]byte, 32), make([]byte, 64), make([]byte, 32)
		rand.Read(random)
		rand.Read(seed)
		rand.Read(ecdh)
		hello = k.do(t, "tlsc-start", fmt.Sprint(uint16(c.group)), hx([]byte(c.host)), hx(anchor),
			fmt.Sprint(c.now.Unix()), hx(random), hx(seed), hx(ecdh))
	}
	if hello == "fail" {
		t.Fatal("tlsc-start failed")
	}
	out := unhexField(t, hello)
	var res tlscResult
	buf := make([]byte, 1<<16)
	for pinged, first := false, true; ; {
		if len(out) > 0 {
			conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if _, err := conn.Write(out); err != nil {
				break // the server has gone (it failed, or it closed after the echo)
			}
			out = nil
		}
		if res.state == tlscConnected && !pinged {
			out, pinged = unhexField(t, k.do(t, "tlsc-write", hx([]byte(ping)))), true
			continue
		}
		if res.state == tlscFailed || len(res.app) > 0 {
			break
		}
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("read from the server: %v", err)
			}
			break
		}
		in := buf[:n]
		if first && c.tamper != nil {
			in = c.tamper(in)
		}
		first = false
		res = tlscFeed(t, k, in)
		out = res.out
	}
	return res
}

// The 6 x 6 matrix of paper000: every group the C client speaks with every signature scheme.
var (
	matrixGroups  = []tls13.Group{tls13.MLKEM512, tls13.MLKEM768, tls13.MLKEM1024, tls13.X25519, tls13.P256, tls13.X25519MLKEM768}
	matrixSchemes = []tls13.SignatureScheme{tls13.MLDSA44, tls13.MLDSA65, tls13.MLDSA87, tls13.Ed25519, tls13.ECDSAP256SHA256, tls13.RSAPSSRSAESHA256}
)

// TestTLSClientAgainstEngine runs the C TLS 1.3 client against the project's Go engine for the
// 36 cells of the matrix: each completes the handshake on both ends (the server's Handshake
// returns no error, so it verified the client's Finished), both ends report the cell's group
// and CertificateVerify scheme (the client's group and verified scheme, the server's State), and
// the C client gets its "ping" echoed under the application traffic keys.
func TestTLSClientAgainstEngine(t *testing.T) {
	k := startKatcli(t)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, g := range matrixGroups {
		for _, s := range matrixSchemes {
			t.Run(g.String()+"/"+s.String(), func(t *testing.T) {
				var st tls13.State
				res, err := runTLSCell(t, k, tlsCell{group: g, scheme: s, host: "board.pqrepro.test", now: now, state: &st})
				if err != nil {
					t.Fatalf("server: %v (client state %d, sent alert %d)", err, res.state, res.sent)
				}
				if res.state != tlscConnected || string(res.app) != "ping" {
					t.Fatalf("client state %d, alerts %d/%d, application data %q", res.state, res.sent, res.received, res.app)
				}
				if res.group != int(g) || res.scheme != int(s) || st.Group != g || st.Scheme != s {
					t.Fatalf("client negotiated %#04x/%#04x, server %v/%v", res.group, res.scheme, st.Group, st.Scheme)
				}
			})
		}
	}
}

// TestTLSClientAlerts checks that the C client refuses a wrong trust anchor (unknown_ca), a name
// the leaf does not carry (bad_certificate), a time outside the leaf's validity
// (certificate_expired), a CertificateVerify signed by another key (decrypt_error), a record
// tampered with on the way (bad_record_mac), a key share for another group and one of the wrong
// length (illegal_parameter), each with the alert the Go engine sends for the same failure, and
// that the Go server receives that alert.
func TestTLSClientAlerts(t *testing.T) {
	k := startKatcli(t)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	otherCA := func(ch *tlscert.Chain) *tlscert.Chain {
		o, err := tlscert.New(ch.Scheme, "board.pqrepro.test", now)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, c := range []struct {
		name  string
		cell  tlsCell
		alert tls13.Alert
	}{
		{"wrong CA", tlsCell{chain: otherCA}, tls13.AlertUnknownCA},
		{"wrong host name", tlsCell{host: "other.pqrepro.test"}, tls13.AlertBadCertificate},
		{"expired", tlsCell{now: now.Add(48 * time.Hour)}, tls13.AlertCertificateExpired},
		{"not yet valid", tlsCell{now: now.Add(-48 * time.Hour)}, tls13.AlertCertificateExpired},
		{"CertificateVerify by another key", tlsCell{signer: otherCA}, tls13.AlertDecryptError},
		{"tampered record", tlsCell{tamper: func(b []byte) []byte { b[len(b)-1] ^= 1; return b }}, tls13.AlertBadRecordMAC},
		{"key share for another group", tlsCell{tamper: shareGroup(0x0200)}, tls13.AlertIllegalParameter},
		{"key share of the wrong length", tlsCell{tamper: shareShort}, tls13.AlertIllegalParameter},
	} {
		t.Run(c.name, func(t *testing.T) {
			cell := c.cell
			cell.group, cell.scheme = tls13.MLKEM768, tls13.MLDSA44
			if cell.host == "" {
				cell.host = "board.pqrepro.test"
			}
			if cell.now.IsZero() {
				cell.now = now
			}
			res, err := runTLSCell(t, k, cell)
			if res.state != tlscFailed || res.sent != int(c.alert) {
				t.Fatalf("client state %d, sent alert %d, want %d (%v)", res.state, res.sent, c.alert, c.alert)
			}
			var ae *tls13.AlertError
			if !errors.As(err, &ae) || !ae.Remote || ae.Alert != c.alert {
				t.Fatalf("server: %v, want the client's %v alert", err, c.alert)
			}
		})
	}
}

// keyShareAt finds the ServerHello's key_share extension (type 0x0033) in the server's first
// flight: the offset of its group field. The ServerHello is the first record; its extensions
// follow the fixed fields (5-byte record header, 4-byte message header, version, random, an
// empty session id, suite, compression).
func keyShareAt(b []byte) int {
	i := 5 + 4 + 2 + 32 + 1 + 2 + 1 + 2
	for i+4 <= len(b) {
		typ, n := int(b[i])<<8|int(b[i+1]), int(b[i+2])<<8|int(b[i+3])
		if typ == 0x0033 {
			return i + 4
		}
		i += 4 + n
	}
	panic("no key_share in the ServerHello")
}

// shareGroup names another group in the ServerHello's key share.
func shareGroup(g uint16) func([]byte) []byte {
	return func(b []byte) []byte {
		i := keyShareAt(b)
		b[i], b[i+1] = byte(g>>8), byte(g)
		return b
	}
}

// shareShort shortens the ServerHello's key share by one byte (the extension, the ServerHello
// and its record one byte shorter too), so the ciphertext has the wrong length for the group.
func shareShort(b []byte) []byte {
	i := keyShareAt(b)
	dec16 := func(j int) { v := int(b[j])<<8 | int(b[j+1]) - 1; b[j], b[j+1] = byte(v>>8), byte(v) }
	dec16(3)                          // record length
	b[8]--                            // ServerHello length (low byte; the ServerHello is shorter than 64 KiB)
	dec16(5 + 4 + 2 + 32 + 1 + 2 + 1) // extensions length
	dec16(i - 2)                      // key_share extension length
	dec16(i + 2)                      // key_exchange length
	end := i + 4 + (int(b[i+2])<<8 | int(b[i+3]))
	return append(b[:end:end], b[end+1:]...)
}

// TestTLSClientAgainstOpenSSL runs the C client against OpenSSL 3.5's s_server (the Debian 13
// root of scripts/openssl-root, found as tls13/interop finds it) for the 36 cells of the
// matrix: s_server, limited to the cell's group and signature algorithm, establishes the
// connection, its trace shows the cell's group, scheme and TLS_AES_128_GCM_SHA256, the C client
// reports the same group and scheme, and it gets its line back reversed (s_server -rev), after
// the session tickets OpenSSL sends.
func TestTLSClientAgainstOpenSSL(t *testing.T) {
	ossl, err := interop.FindOpenSSL(t.Context())
	if err != nil {
		t.Skipf("no OpenSSL 3.5 to interoperate with: %v", err)
	}
	t.Logf("peer: %s", ossl.Version)
	k := startKatcli(t)
	now := time.Now()
	for _, g := range matrixGroups {
		for _, s := range matrixSchemes {
			t.Run(g.String()+"/"+s.String(), func(t *testing.T) {
				ch, err := tlscert.New(s, "board.pqrepro.test", now)
				if err != nil {
					t.Fatal(err)
				}
				srv, err := ossl.StartOpenSSLServer(t.Context(), interop.Cell{Group: g, Scheme: s}, ch, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				conn, err := net.Dial("tcp", srv.Addr)
				if err != nil {
					t.Fatal(err)
				}
				res := relayTLSClient(t, k, conn, tlsCell{group: g, scheme: s, host: "board.pqrepro.test", now: now}, ch.CADER, "ping\n")
				conn.Close()
				rep, err := srv.Wait()
				if err != nil {
					t.Fatalf("%v (client state %d, alerts %d/%d)", err, res.state, res.sent, res.received)
				}
				if res.state != tlscConnected || string(res.app) != "gnip\n" {
					t.Fatalf("client state %d, alerts %d/%d, application data %q", res.state, res.sent, res.received, res.app)
				}
				if rep.Group != uint16(g) || rep.Scheme != uint16(s) || rep.CipherSuite != uint16(tls13.TLS_AES_128_GCM_SHA256) {
					t.Fatalf("s_server negotiated group %#04x, scheme %#04x, suite %#04x", rep.Group, rep.Scheme, rep.CipherSuite)
				}
				if res.group != int(g) || res.scheme != int(s) {
					t.Fatalf("the C client negotiated group %#04x, scheme %#04x", res.group, res.scheme)
				}
			})
		}
	}
}

// mangledSigner signs as its key does, then changes the signature with mangle.
type mangledSigner struct {
	crypto.Signer
	mangle func([]byte) []byte
}

func (m mangledSigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	sig, err := m.Signer.Sign(r, digest, opts)
	if err != nil {
		return nil, err
	}
	return m.mangle(sig), nil
}

// signedBy makes the server's CertificateVerify signature mangled (the chain is unchanged).
func signedBy(mangle func([]byte) []byte) func(*tlscert.Chain) *tlscert.Chain {
	return func(ch *tlscert.Chain) *tlscert.Chain {
		c := *ch
		c.Key = mangledSigner{ch.Key, mangle}
		return &c
	}
}

// shareBytes changes the server's key_exchange in the ServerHello: f gets the share's bytes.
func shareBytes(f func(share []byte)) func([]byte) []byte {
	return func(b []byte) []byte {
		i := keyShareAt(b)
		n := int(b[i+2])<<8 | int(b[i+3])
		f(b[i+4 : i+4+n])
		return b
	}
}

// ed25519AddL adds the group order L to an Ed25519 signature's S (little-endian): the same
// point equation holds, but S >= L is not canonical (RFC 8032 section 5.1.7).
func ed25519AddL(sig []byte) []byte {
	l := [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 31: 0x10}
	out := bytes.Clone(sig)
	carry := 0
	for i := 0; i < 32; i++ {
		v := int(out[32+i]) + int(l[i]) + carry
		out[32+i], carry = byte(v), v>>8
	}
	return out
}

// derLongLength writes an ECDSA signature's SEQUENCE length in the long form (30 81 LL), which
// DER forbids for a length below 128.
func derLongLength(sig []byte) []byte {
	return append([]byte{0x30, 0x81}, sig[1:]...)
}

// TestTLSClientRefusesInvalidKeySharesAndSignatures feeds the C client invalid ECDH values in
// the ServerHello (X25519 all zeros and the low-order point u = 1, whose shared secret is all
// zeros; the X25519 half of the X25519MLKEM768 share zeroed; P-256 points off the curve, with
// x = 2^256 - 1 >= p, and compressed-prefix 0x02) and CertificateVerify signatures in
// non-canonical encodings (Ed25519 with S + L, ECDSA with a long-form DER length, RSA-PSS one
// byte short), and checks the alert the Go engine sends for each (illegal_parameter for a point,
// decrypt_error for a signature) is the one the client sends and the server receives.
func TestTLSClientRefusesInvalidKeySharesAndSignatures(t *testing.T) {
	k := startKatcli(t)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	zero := func(s []byte) { clear(s) }
	for _, c := range []struct {
		name   string
		group  tls13.Group
		scheme tls13.SignatureScheme
		cell   tlsCell
		alert  tls13.Alert
	}{
		{"X25519 all zeros", tls13.X25519, tls13.MLDSA44, tlsCell{tamper: shareBytes(zero)}, tls13.AlertIllegalParameter},
		{"X25519 low order u=1", tls13.X25519, tls13.MLDSA44, tlsCell{tamper: shareBytes(func(s []byte) { clear(s); s[0] = 1 })}, tls13.AlertIllegalParameter},
		{"X25519MLKEM768 X25519 half zero", tls13.X25519MLKEM768, tls13.MLDSA44, tlsCell{tamper: shareBytes(func(s []byte) { clear(s[len(s)-32:]) })}, tls13.AlertIllegalParameter},
		{"P-256 off the curve", tls13.P256, tls13.MLDSA44, tlsCell{tamper: shareBytes(func(s []byte) { s[64] ^= 1 })}, tls13.AlertIllegalParameter},
		{"P-256 x >= p", tls13.P256, tls13.MLDSA44, tlsCell{tamper: shareBytes(func(s []byte) { copy(s[1:33], bytes.Repeat([]byte{0xff}, 32)) })}, tls13.AlertIllegalParameter},
		{"P-256 compressed prefix", tls13.P256, tls13.MLDSA44, tlsCell{tamper: shareBytes(func(s []byte) { s[0] = 2 })}, tls13.AlertIllegalParameter},
		{"Ed25519 S >= L", tls13.X25519, tls13.Ed25519, tlsCell{signer: signedBy(ed25519AddL)}, tls13.AlertDecryptError},
		{"ECDSA not strict DER", tls13.P256, tls13.ECDSAP256SHA256, tlsCell{signer: signedBy(derLongLength)}, tls13.AlertDecryptError},
		{"RSA-PSS one byte short", tls13.X25519, tls13.RSAPSSRSAESHA256, tlsCell{signer: signedBy(func(s []byte) []byte { return s[:len(s)-1] })}, tls13.AlertDecryptError},
	} {
		t.Run(c.name, func(t *testing.T) {
			cell := c.cell
			cell.group, cell.scheme, cell.host, cell.now = c.group, c.scheme, "board.pqrepro.test", now
			res, err := runTLSCell(t, k, cell)
			if res.state != tlscFailed || res.sent != int(c.alert) {
				t.Fatalf("client state %d, sent alert %d, want %d (%v)", res.state, res.sent, c.alert, c.alert)
			}
			var ae *tls13.AlertError
			if !errors.As(err, &ae) || !ae.Remote || ae.Alert != c.alert {
				t.Fatalf("server: %v, want the client's %v alert", err, c.alert)
			}
		})
	}
}

// TestTLSClientECDHConstantTimeValgrind is the constant-time check of the C client's ECDH path:
// test/tls13ct.c, built with the client and its primitives (-O2, -DTLS13C_CT_CHECK
// -DP256_CT_CHECK), runs under valgrind memcheck with the 32-byte ECDH secret marked undefined,
// for X25519, secp256r1 and X25519MLKEM768 (four secrets each, 1 among them): tls13c_start (the
// key share), then a ServerHello made by the harness fed through tls13c_input (the shared
// secret, HKDF to the handshake traffic secrets, AES-GCM key setup). Memcheck must report no
// branch and no memory index that depends on the secret, and every run must reach the
// encrypted extensions state. With "control" the harness branches on the secret once, which
// memcheck must report, so the check is live. What memcheck cannot see (operand-dependent
// instruction latency) the per-primitive notes cover (TestP256ConstantTimeValgrind).
func TestTLSClientECDHConstantTimeValgrind(t *testing.T) {
	srcs := []string{"test/tls13ct.c", "crypto/tls13/tls13c.c", "crypto/tls13/tls13common.c", "crypto/x509/x509.c", "crypto/hkdf/hkdf.c",
		"crypto/aesgcm/aesgcm.c", "crypto/sha2/sha2.c", "crypto/keccak/keccak.c", "crypto/mlkem/mlkem512.c",
		"crypto/mlkem/mlkem768.c", "crypto/mlkem/mlkem1024.c", "crypto/mldsa/mldsa44.c", "crypto/mldsa/mldsa65.c",
		"crypto/mldsa/mldsa87.c", "crypto/c25519/fe25519.c", "crypto/c25519/x25519.c", "crypto/c25519/ed25519.c",
		"crypto/p256/p256.c", "crypto/rsa/rsa.c"}
	run := valgrindConstantTime(t, []string{"-Icore", "-DTLS13C_CT_CHECK", "-DP256_CT_CHECK"}, srcs...)
	ca := filepath.Join(tls13cDir, "ca.der")
	out, code := run(ca)
	if code != 0 || !strings.Contains(out, "tls13ct 12/12") {
		t.Fatalf("memcheck with the ECDH secret undefined: exit %d\n%s", code, out)
	}
	out, code = run(ca, "control")
	if code != valgrindErrExit || !strings.Contains(out, "uninitialised value") {
		t.Fatalf("the control's branch on the secret was not reported: exit %d\n%s", code, out)
	}
}
