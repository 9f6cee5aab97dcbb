package firmware

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/mlkem"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// tlssHello is a ClientHello the refusal tests build and change: nil lists leave their
// extension out; exts are appended whole after the others.
type tlssHello struct {
	random, sid []byte
	suites      []uint16
	comp        []byte
	versions    []uint16
	groups      []uint16
	sigalgs     []uint16
	shares      []tlssShare
	exts        [][]byte
}

type tlssShare struct {
	group uint16
	data  []byte
}

func tlssU16s(v ...uint16) []byte {
	var b []byte
	for _, x := range v {
		b = binary.BigEndian.AppendUint16(b, x)
	}
	return b
}

// tlssVec is b with a big-endian length prefix of n bytes.
func tlssVec(n int, b []byte) []byte {
	l := make([]byte, 4)
	binary.BigEndian.PutUint32(l, uint32(len(b)))
	return append(l[4-n:], b...)
}

func tlssExt(typ uint16, body []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, typ), tlssVec(2, body)...)
}

// tlssMessage is a handshake message of type typ.
func tlssMessage(typ byte, body []byte) []byte { return append([]byte{typ}, tlssVec(3, body)...) }

// tlssRecord is a record of type typ, legacy_record_version 0x0301 (a ClientHello's).
func tlssRecord(typ byte, body []byte) []byte { return append([]byte{typ, 3, 1}, tlssVec(2, body)...) }

// message is the ClientHello (header included): server_name first, then the lists set.
func (h tlssHello) message() []byte {
	b := append([]byte{3, 3}, h.random...)
	b = append(b, tlssVec(1, h.sid)...)
	b = append(b, tlssVec(2, tlssU16s(h.suites...))...)
	b = append(b, tlssVec(1, h.comp)...)
	ext := tlssExt(0, tlssVec(2, append([]byte{0}, tlssVec(2, []byte(tlssHost))...)))
	if h.versions != nil {
		ext = append(ext, tlssExt(43, tlssVec(1, tlssU16s(h.versions...)))...)
	}
	if h.groups != nil {
		ext = append(ext, tlssExt(10, tlssVec(2, tlssU16s(h.groups...)))...)
	}
	if h.sigalgs != nil {
		ext = append(ext, tlssExt(13, tlssVec(2, tlssU16s(h.sigalgs...)))...)
	}
	if h.shares != nil {
		var l []byte
		for _, s := range h.shares {
			l = append(append(l, tlssU16s(s.group)...), tlssVec(2, s.data)...)
		}
		ext = append(ext, tlssExt(51, tlssVec(2, l))...)
	}
	for _, e := range h.exts {
		ext = append(ext, e...)
	}
	return tlssMessage(1, append(b, tlssVec(2, ext)...))
}

// tlssX25519Hello is a well-formed ClientHello offering X25519 (with key's share) and ML-DSA-44.
func tlssX25519Hello(key *ecdh.PrivateKey) tlssHello {
	random, sid := make([]byte, 32), make([]byte, 32)
	rand.Read(random)
	rand.Read(sid)
	return tlssHello{
		random: random, sid: sid, suites: []uint16{0x1301}, comp: []byte{0}, versions: []uint16{0x0304},
		groups: []uint16{0x001d}, sigalgs: []uint16{0x0904},
		shares: []tlssShare{{0x001d, key.PublicKey().Bytes()}},
	}
}

// engineAlert feeds the client's records to the Go engine's server for group with chain ch and
// returns the alert it fails with (ok false when it does not fail within a few seconds).
func engineAlert(t *testing.T, group tls13.Group, ch *tlscert.Chain, records ...[]byte) (tls13.Alert, bool) {
	t.Helper()
	cfg, err := interop.EngineServerConfig(interop.Cell{Group: group, Scheme: ch.Scheme}, ch)
	if err != nil {
		t.Fatal(err)
	}
	cEnd, sEnd := net.Pipe()
	srv := tls13.Server(sEnd, cfg)
	errc := make(chan error, 1)
	go func() { errc <- srv.Handshake(); sEnd.Close() }()
	go io.Copy(io.Discard, cEnd)
	go func() {
		for _, r := range records {
			if _, err := cEnd.Write(r); err != nil {
				return
			}
		}
	}()
	var err2 error
	select {
	case err2 = <-errc:
	case <-time.After(5 * time.Second):
		cEnd.Close()
		<-errc
		return 0, false
	}
	cEnd.Close()
	var ae *tls13.AlertError
	if errors.As(err2, &ae) && !ae.Remote {
		return ae.Alert, true
	}
	return 0, false
}

// tlssRefused feeds records to the C server (started) and checks it fails with want, sending
// that alert in the clear as its last record.
func tlssRefused(t *testing.T, k *katcli, want tls13.Alert, records ...[]byte) {
	t.Helper()
	var res tlssResult
	for _, r := range records {
		res = tlssFeed(t, k, r)
	}
	if res.state != tlssFailed || res.sent != int(want) {
		t.Fatalf("C server: state %d, sent alert %d, want %d (%v)", res.state, res.sent, want, want)
	}
	if !bytes.HasSuffix(res.out, []byte{21, 3, 3, 0, 2, 2, byte(want)}) {
		t.Fatalf("C server output does not end with the %v alert: %x", want, res.out[max(0, len(res.out)-16):])
	}
}

// TestTLSServerRefusesClientHellos feeds the C server ClientHellos it must refuse and checks
// its alert against the one the Go engine's server sends for the same bytes: no TLS 1.3
// (protocol_version), a non-null compression method, a duplicate extension or key share,
// pre_shared_key not last, a key share of the wrong size or an invalid point or ML-KEM key
// (illegal_parameter), no common suite, scheme or group (handshake_failure), no
// signature_algorithms, supported_groups or key_share (missing_extension), malformed fields
// (decode_error), and a ClientHello that does not end its record (unexpected_message).
func TestTLSServerRefusesClientHellos(t *testing.T) {
	k := startKatcli(t)
	ch, err := tlscert.New(tls13.MLDSA44, tlssHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p256, _ := ecdh.P256().GenerateKey(rand.Reader)
	badEK := bytes.Repeat([]byte{0xff}, mlkem.EncapsulationKeySize768)
	for _, c := range []struct {
		name   string
		group  tls13.Group
		change func(h *tlssHello)
		record func(msg []byte) []byte
		want   tls13.Alert
	}{
		{"TLS 1.2 only", tls13.X25519, func(h *tlssHello) { h.versions = []uint16{0x0303} }, nil, tls13.AlertProtocolVersion},
		{"no supported_versions", tls13.X25519, func(h *tlssHello) { h.versions = nil }, nil, tls13.AlertProtocolVersion},
		{"compression not null", tls13.X25519, func(h *tlssHello) { h.comp = []byte{1} }, nil, tls13.AlertIllegalParameter},
		{"no common suite", tls13.X25519, func(h *tlssHello) { h.suites = []uint16{0x1302} }, nil, tls13.AlertHandshakeFailure},
		{"no signature_algorithms", tls13.X25519, func(h *tlssHello) { h.sigalgs = nil }, nil, tls13.AlertMissingExtension},
		{"scheme not offered", tls13.X25519, func(h *tlssHello) { h.sigalgs = []uint16{0x0807} }, nil, tls13.AlertHandshakeFailure},
		{"no supported_groups", tls13.X25519, func(h *tlssHello) { h.groups = nil }, nil, tls13.AlertMissingExtension},
		{"no key_share", tls13.X25519, func(h *tlssHello) { h.shares = nil }, nil, tls13.AlertMissingExtension},
		{"no common group", tls13.X25519, func(h *tlssHello) {
			h.groups, h.shares = []uint16{0x0017}, []tlssShare{{0x0017, p256.PublicKey().Bytes()}}
		}, nil, tls13.AlertHandshakeFailure},
		{"two shares for X25519", tls13.X25519, func(h *tlssHello) { h.shares = append(h.shares, h.shares[0]) }, nil, tls13.AlertIllegalParameter},
		{"duplicate extension", tls13.X25519, func(h *tlssHello) { h.exts = [][]byte{tlssExt(10, tlssVec(2, tlssU16s(0x001d)))} }, nil, tls13.AlertIllegalParameter},
		{"pre_shared_key not last", tls13.X25519, func(h *tlssHello) { h.exts = [][]byte{tlssExt(41, []byte{0, 0}), tlssExt(0xff01, nil)} }, nil, tls13.AlertIllegalParameter},
		{"key share a byte short", tls13.X25519, func(h *tlssHello) { h.shares[0].data = h.shares[0].data[:31] }, nil, tls13.AlertIllegalParameter},
		{"X25519 share all zeros", tls13.X25519, func(h *tlssHello) { h.shares[0].data = make([]byte, 32) }, nil, tls13.AlertIllegalParameter},
		{"P-256 share off the curve", tls13.P256, func(h *tlssHello) {
			pt := p256.PublicKey().Bytes()
			pt[64] ^= 1
			h.groups, h.shares = []uint16{0x0017}, []tlssShare{{0x0017, pt}}
		}, nil, tls13.AlertIllegalParameter},
		{"ML-KEM-768 key over q", tls13.MLKEM768, func(h *tlssHello) {
			h.groups, h.shares = []uint16{0x0201}, []tlssShare{{0x0201, badEK}}
		}, nil, tls13.AlertIllegalParameter},
		{"empty key share", tls13.X25519, func(h *tlssHello) { h.shares[0].data = nil }, nil, tls13.AlertDecodeError},
		{"session id of 33 bytes", tls13.X25519, func(h *tlssHello) { h.sid = make([]byte, 33) }, nil, tls13.AlertDecodeError},
		{"odd supported_versions", tls13.X25519, func(h *tlssHello) { h.exts = [][]byte{tlssExt(43, []byte{3, 3, 4, 0})}; h.versions = nil }, nil, tls13.AlertDecodeError},
		{"ClientHello not ending its record", tls13.X25519, nil, func(m []byte) []byte { return tlssRecord(22, append(m, 20)) }, tls13.AlertUnexpectedMessage},
	} {
		t.Run(c.name, func(t *testing.T) {
			key, _ := ecdh.X25519().GenerateKey(rand.Reader)
			h := tlssX25519Hello(key)
			if c.change != nil {
				c.change(&h)
			}
			rec := tlssRecord(22, h.message())
			if c.record != nil {
				rec = c.record(h.message())
			}
			tlssStart(t, k, c.group, ch, tlssConfig{})
			tlssRefused(t, k, c.want, rec)
			if a, ok := engineAlert(t, c.group, ch, rec); !ok || a != c.want {
				t.Fatalf("the Go engine answers %v (failed %v), the C server %v", a, ok, c.want)
			}
		})
	}
}

// TestTLSServerRefusesSecondClientHellos checks the C server's HelloRetryRequest (the special
// random, the group asked for, the session id echoed, then a ChangeCipherSpec) and refuses a
// second ClientHello without the share asked for, with another share besides, or with another
// random (illegal_parameter, as the Go engine); the right one gets the server's flight.
func TestTLSServerRefusesSecondClientHellos(t *testing.T) {
	k := startKatcli(t)
	ch, err := tlscert.New(tls13.MLDSA44, tlssHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdh.X25519().GenerateKey(rand.Reader)
	first := tlssX25519Hello(key)
	first.groups = []uint16{0x001d, 0x0201}
	mlkemShare := tlssShare{0x0201, dk.EncapsulationKey().Bytes()}
	for _, c := range []struct {
		name   string
		change func(h *tlssHello)
		want   tls13.Alert // 0: accepted
	}{
		{"the same share again", func(h *tlssHello) {}, tls13.AlertIllegalParameter},
		{"both shares", func(h *tlssHello) { h.shares = append(h.shares, mlkemShare) }, tls13.AlertIllegalParameter},
		{"another random", func(h *tlssHello) {
			h.shares, h.random = []tlssShare{mlkemShare}, bytes.Repeat([]byte{7}, 32)
		}, tls13.AlertIllegalParameter},
		{"the share asked for", func(h *tlssHello) { h.shares = []tlssShare{mlkemShare} }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			second := first
			second.shares = append([]tlssShare(nil), first.shares...)
			c.change(&second)
			rec1, rec2 := tlssRecord(22, first.message()), tlssRecord(22, second.message())
			tlssStart(t, k, tls13.MLKEM768, ch, tlssConfig{})
			res := tlssFeed(t, k, rec1)
			hrr := append([]byte{3, 3}, tls13HRRRandom...)
			hrr = append(append(hrr, tlssVec(1, first.sid)...), 0x13, 0x01, 0)
			hrr = append(hrr, tlssVec(2, append(tlssExt(43, tlssU16s(0x0304)), tlssExt(51, tlssU16s(0x0201))...))...)
			want := append(tlssRecord(22, tlssMessage(2, hrr)), 20, 3, 3, 0, 1, 1)
			want[2] = 3
			if res.state != tlssWaitCH2 || !res.hrr || !bytes.Equal(res.out, want) {
				t.Fatalf("after the first ClientHello: state %d, hrr %v, out %x, want %x", res.state, res.hrr, res.out, want)
			}
			if c.want == 0 {
				res = tlssFeed(t, k, append([]byte{20, 3, 3, 0, 1, 1}, rec2...))
				if res.state != tlssWaitFin || len(res.out) < 1000 || res.group != 0x0201 {
					t.Fatalf("after the second ClientHello: state %d, alert %d, %d bytes out", res.state, res.sent, len(res.out))
				}
				return
			}
			tlssRefused(t, k, c.want, rec2)
			if a, ok := engineAlert(t, tls13.MLKEM768, ch, rec1, rec2); !ok || a != c.want {
				t.Fatalf("the Go engine answers %v (failed %v), the C server %v", a, ok, c.want)
			}
		})
	}
}

// tls13HRRRandom is the HelloRetryRequest's random (RFC 8446 section 4.1.3).
var tls13HRRRandom = func() []byte { s := sha256.Sum256([]byte("HelloRetryRequest")); return s[:] }()

// tlssExpandLabel is HKDF-Expand-Label with SHA-256.
func tlssExpandLabel(t *testing.T, secret []byte, label string, ctx []byte, n int) []byte {
	t.Helper()
	info := binary.BigEndian.AppendUint16(nil, uint16(n))
	info = append(info, tlssVec(1, []byte("tls13 "+label))...)
	info = append(info, tlssVec(1, ctx)...)
	out, err := hkdf.Expand(sha256.New, secret, string(info), n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tlssKeys is one direction's record protection.
type tlssKeys struct {
	aead cipher.AEAD
	iv   []byte
	seq  uint64
}

func newTLSSKeys(t *testing.T, secret []byte) *tlssKeys {
	block, err := aes.NewCipher(tlssExpandLabel(t, secret, "key", nil, 16))
	if err != nil {
		t.Fatal(err)
	}
	aead, _ := cipher.NewGCM(block)
	return &tlssKeys{aead: aead, iv: tlssExpandLabel(t, secret, "iv", nil, 12)}
}

func (k *tlssKeys) nonce() []byte {
	n := bytes.Clone(k.iv)
	for i := 0; i < 8; i++ {
		n[11-i] ^= byte(k.seq >> (8 * i))
	}
	k.seq++
	return n
}

func (k *tlssKeys) seal(typ byte, p []byte) []byte {
	hdr := []byte{23, 3, 3, 0, 0}
	binary.BigEndian.PutUint16(hdr[3:], uint16(len(p)+1+16))
	return k.aead.Seal(hdr, k.nonce(), append(bytes.Clone(p), typ), hdr)
}

// open decrypts each protected record of recs and returns the plaintexts' content.
func (k *tlssKeys) open(t *testing.T, recs [][]byte) []byte {
	t.Helper()
	var out []byte
	for _, r := range recs {
		p, err := k.aead.Open(nil, k.nonce(), r[5:], r[:5])
		if err != nil {
			t.Fatalf("a record of the server's does not open: %v", err)
		}
		out = append(out, p[:len(p)-1]...)
	}
	return out
}

// tlssSplit splits b into records.
func tlssSplit(t *testing.T, b []byte) [][]byte {
	t.Helper()
	var recs [][]byte
	for len(b) > 0 {
		if len(b) < 5 || len(b) < 5+int(binary.BigEndian.Uint16(b[3:])) {
			t.Fatalf("a partial record: %x", b)
		}
		n := 5 + int(binary.BigEndian.Uint16(b[3:]))
		recs, b = append(recs, b[:n]), b[n:]
	}
	return recs
}

// tlssScriptedClient plays a TLS 1.3 client written here from the RFC (X25519, ML-DSA-44)
// against the C server: ClientHello, the server's flight decrypted under the handshake keys,
// its Finished checked, and the client's Finished, changed by mangle, sent under the client's
// handshake keys. It returns the server's answer to that Finished.
func tlssScriptedClient(t *testing.T, k *katcli, ch *tlscert.Chain, mangle func(mac []byte)) tlssResult {
	t.Helper()
	key, _ := ecdh.X25519().GenerateKey(rand.Reader)
	hello := tlssX25519Hello(key).message()
	tlssStart(t, k, tls13.X25519, ch, tlssConfig{})
	res := tlssFeed(t, k, tlssRecord(22, hello))
	recs := tlssSplit(t, res.out)
	if res.state != tlssWaitFin || len(recs) < 3 || recs[0][0] != 22 || recs[1][0] != 20 {
		t.Fatalf("server state %d, alert %d, %d records", res.state, res.sent, len(recs))
	}
	sh := recs[0][5:]
	peer, err := ecdh.X25519().NewPublicKey(sh[len(sh)-32:]) // key_share is the ServerHello's last extension
	if err != nil {
		t.Fatal(err)
	}
	ss, err := key.ECDH(peer)
	if err != nil {
		t.Fatal(err)
	}
	transcript := append(bytes.Clone(hello), sh...)
	th := sha256.Sum256(transcript)
	empty := sha256.Sum256(nil)
	early, _ := hkdf.Extract(sha256.New, make([]byte, 32), nil)
	hs, _ := hkdf.Extract(sha256.New, ss, tlssExpandLabel(t, early, "derived", empty[:], 32))
	cHS, sHS := tlssExpandLabel(t, hs, "c hs traffic", th[:], 32), tlssExpandLabel(t, hs, "s hs traffic", th[:], 32)
	flight := newTLSSKeys(t, sHS).open(t, recs[2:])
	fin := flight[len(flight)-36:]
	th = sha256.Sum256(append(bytes.Clone(transcript), flight[:len(flight)-36]...))
	mac := hmac.New(sha256.New, tlssExpandLabel(t, sHS, "finished", nil, 32))
	mac.Write(th[:])
	if !bytes.Equal(fin[4:], mac.Sum(nil)) {
		t.Fatal("the server's Finished does not verify")
	}
	th = sha256.Sum256(append(transcript, flight...))
	mac = hmac.New(sha256.New, tlssExpandLabel(t, cHS, "finished", nil, 32))
	mac.Write(th[:])
	sum := mac.Sum(nil)
	mangle(sum)
	return tlssFeed(t, k, append([]byte{20, 3, 3, 0, 1, 1}, newTLSSKeys(t, cHS).seal(22, tlssMessage(20, sum))...))
}

// TestTLSServerClientFinished plays the client with the test's own TLS 1.3 code: a client
// Finished that verifies connects; one with a flipped bit is refused with decrypt_error (the
// Go engine's alert for it), sent under the server's application traffic key.
func TestTLSServerClientFinished(t *testing.T) {
	k := startKatcli(t)
	ch, err := tlscert.New(tls13.MLDSA44, tlssHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res := tlssScriptedClient(t, k, ch, func([]byte) {}); res.state != tlssConnected || len(res.out) != 0 {
		t.Fatalf("the right Finished: state %d, alert %d, %d bytes out", res.state, res.sent, len(res.out))
	}
	res := tlssScriptedClient(t, k, ch, func(mac []byte) { mac[5] ^= 1 })
	if res.state != tlssFailed || res.sent != int(tls13.AlertDecryptError) || len(res.out) != 5+2+1+16 || res.out[0] != 23 {
		t.Fatalf("a wrong Finished: state %d, alert %d, out %x", res.state, res.sent, res.out)
	}
}

// TestTLSServerConstantTimeValgrind is the constant-time check of the C server's secret paths:
// test/tls13sct.c, built with the server and its primitives (-O2, -DTLS13C_CT_CHECK
// -DP256_CT_CHECK -DRSA_CT_CHECK), runs under valgrind memcheck for X25519, secp256r1 and
// X25519MLKEM768 with Ed25519, ECDSA-P256 and RSA-PSS keys, the private key's values, the ECDH
// secret, the ML-KEM m and the signature randomness marked undefined, from the ClientHello
// (made here) to the server's sealed flight. Memcheck must report no branch and no memory index
// that depends on them, and all nine handshakes must reach the state waiting for the client's
// Finished. With "control" the harness branches on the secret once, which memcheck must report.
func TestTLSServerConstantTimeValgrind(t *testing.T) {
	srcs := []string{"test/tls13sct.c", "crypto/tls13/tls13s.c", "crypto/tls13/tls13common.c", "crypto/x509/x509.c",
		"crypto/hkdf/hkdf.c", "crypto/aesgcm/aesgcm.c", "crypto/sha2/sha2.c", "crypto/keccak/keccak.c",
		"crypto/mlkem/mlkem512.c", "crypto/mlkem/mlkem768.c", "crypto/mlkem/mlkem1024.c", "crypto/mldsa/mldsa44.c",
		"crypto/mldsa/mldsa65.c", "crypto/mldsa/mldsa87.c", "crypto/c25519/fe25519.c", "crypto/c25519/x25519.c",
		"crypto/c25519/ed25519.c", "crypto/p256/p256.c", "crypto/rsa/rsa.c"}
	run := valgrindConstantTime(t, []string{"-Icore", "-DTLS13C_CT_CHECK", "-DP256_CT_CHECK", "-DRSA_CT_CHECK"}, srcs...)
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []tls13.SignatureScheme{tls13.Ed25519, tls13.ECDSAP256SHA256, tls13.RSAPSSRSAESHA256} {
		ch, err := tlscert.New(s, tlssHost, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		blob, err := ch.KeyBlob()
		if err != nil {
			t.Fatal(err)
		}
		write(fmt.Sprintf("key-%04x.bin", uint16(s)), blob)
		write("leaf.der", ch.LeafDER)
	}
	x, _ := ecdh.X25519().GenerateKey(rand.Reader)
	p, _ := ecdh.P256().GenerateKey(rand.Reader)
	dk, _ := mlkem.GenerateKey768()
	for g, share := range map[uint16][]byte{
		0x001d: x.PublicKey().Bytes(), 0x0017: p.PublicKey().Bytes(),
		0x11ec: append(dk.EncapsulationKey().Bytes(), x.PublicKey().Bytes()...),
	} {
		h := tlssX25519Hello(x)
		h.groups, h.shares, h.sigalgs = []uint16{g}, []tlssShare{{g, share}}, []uint16{0x0807, 0x0403, 0x0804}
		write(fmt.Sprintf("ch-%04x.bin", g), tlssRecord(22, h.message()))
	}
	out, code := run(dir)
	if code != 0 || !strings.Contains(out, "tls13sct 9/9") {
		t.Fatalf("memcheck with the secrets undefined: exit %d\n%s", code, out)
	}
	out, code = run(dir, "control")
	if code != valgrindErrExit || !strings.Contains(out, "uninitialised value") {
		t.Fatalf("the control's branch on the secret was not reported: exit %d\n%s", code, out)
	}
}
