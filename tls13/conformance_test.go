package tls13

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// pskFirst moves a pre_shared_key extension (empty identities and binders: only its place
// is under test) to the front of a ClientHello's extensions.
func pskFirst(m []byte) []byte {
	body := m[4:]
	off := 2 + 32
	off += 1 + int(body[off])                           // legacy_session_id
	off += 2 + int(binary.BigEndian.Uint16(body[off:])) // cipher_suites
	off += 1 + int(body[off])                           // legacy_compression_methods
	exts := body[off+2 : off+2+int(binary.BigEndian.Uint16(body[off:]))]
	psk := []byte{0, byte(extPreSharedKey), 0, 4, 0, 0, 0, 0} // identities<0>, binders<0>
	newExts := append(append([]byte(nil), psk...), exts...)
	out := append([]byte(nil), body[:off]...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(newExts)))
	out = append(out, newExts...)
	hdr := []byte{m[0], byte(len(out) >> 16), byte(len(out) >> 8), byte(len(out))}
	return append(hdr, out...)
}

// TestMisplacedPreSharedKey: a ClientHello whose pre_shared_key extension is not the last is
// refused with illegal_parameter (RFC 8446 §4.2.11).
func TestMisplacedPreSharedKey(t *testing.T) {
	ccfg, scfg := clientConfig(t, Ed25519, X25519), serverConfig(t, Ed25519, X25519)
	ccfg.hooks = onMessage(typeClientHello, pskFirst)
	_, _, cres, sres := runPair(t, ccfg, scfg, []byte("never"))
	wantAlert(t, "server", sres.err, AlertIllegalParameter, false)
	wantAlert(t, "client", cres.err, AlertIllegalParameter, true)
}

// clientHelloRecord is a real ClientHello record of the engine's client.
func clientHelloRecord(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go Client(a, clientConfig(t, Ed25519, X25519)).Handshake()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(binary.BigEndian.Uint16(hdr[3:])))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	b.Close()
	return append(hdr, body...)
}

// TestTwoClientHellosInOneRecord: a record holding two ClientHellos is refused with an
// unexpected_message alert sent in the clear as the first thing the server writes (RFC 8446
// §5.1: a ClientHello ends its record), not under handshake keys after a ServerHello.
func TestTwoClientHellosInOneRecord(t *testing.T) {
	rec := clientHelloRecord(t)
	msg := rec[5:]
	two := append(append([]byte(nil), msg...), msg...)
	raw := append([]byte{recordHandshake, 3, 1, byte(len(two) >> 8), byte(len(two))}, two...)
	cc, sc := tcpPair(t)
	server := Server(sc, serverConfig(t, Ed25519, X25519))
	done := make(chan error, 1)
	go func() { done <- server.Handshake() }()
	cc.SetDeadline(time.Now().Add(time.Minute))
	if _, err := cc.Write(raw); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(cc, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(binary.BigEndian.Uint16(hdr[3:])))
	io.ReadFull(cc, body)
	if hdr[0] != recordAlert || len(body) != 2 || body[0] != 2 || Alert(body[1]) != AlertUnexpectedMessage {
		t.Fatalf("first record the server wrote: type %d, %x; want a plaintext fatal unexpected_message alert", hdr[0], body)
	}
	wantAlert(t, "server", <-done, AlertUnexpectedMessage, false)
}
