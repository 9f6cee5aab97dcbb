package tls13

import (
	"bytes"
	"errors"
	"testing"
)

// sealRecord builds one encrypted record under the fixed fuzz key with pad zero bytes of padding.
func sealRecord(t *testing.T, h *halfConn, typ uint8, data []byte, pad int) []byte {
	t.Helper()
	inner := append(append(bytes.Clone(data), typ), make([]byte, pad)...)
	l := len(inner) + h.aead.Overhead()
	hdr := []byte{recordApplicationData, 3, 3, byte(l >> 8), byte(l)}
	nonce := h.setNonce()
	h.seq++
	return h.aead.Seal(hdr, nonce, inner, hdr)
}

func fixedOut(t *testing.T) *halfConn {
	c := &Conn{cfg: &Config{}, suite: suiteByID(TLS_AES_128_GCM_SHA256)}
	if err := c.setKey(&c.out, fixedSecret()); err != nil {
		t.Fatal(err)
	}
	return &c.out
}

func alertOf(err error) Alert {
	var ac *alertCause
	if errors.As(err, &ac) {
		return ac.alert
	}
	return 255
}

func TestRecordLayer(t *testing.T) {
	fin := marshalFinished(bytes.Repeat([]byte{9}, 32))
	t.Run("padding stripped, message over two records", func(t *testing.T) {
		h := fixedOut(t)
		wire := append(sealRecord(t, h, recordHandshake, fin[:7], 100), sealRecord(t, h, recordHandshake, fin[7:], 0)...)
		wire = append(wire, sealRecord(t, h, recordApplicationData, []byte("app"), 3)...)
		c := fuzzRecordConn(wire, true)
		msg, err := c.readHandshake()
		if err != nil || !bytes.Equal(msg, fin) {
			t.Fatalf("readHandshake: %x, %v", msg, err)
		}
		typ, data, err := c.readRecord()
		if err != nil || typ != recordApplicationData || string(data) != "app" {
			t.Fatalf("readRecord: %d %q %v", typ, data, err)
		}
	})
	t.Run("two messages in one record", func(t *testing.T) {
		h := fixedOut(t)
		c := fuzzRecordConn(sealRecord(t, h, recordHandshake, append(bytes.Clone(fin), fin...), 0), true)
		for i := range 2 {
			if msg, err := c.readHandshake(); err != nil || !bytes.Equal(msg, fin) {
				t.Fatalf("message %d: %v", i, err)
			}
		}
	})
	cases := []struct {
		name  string
		wire  func(h *halfConn) []byte
		alert Alert
	}{
		{"only padding", func(h *halfConn) []byte {
			r := sealRecord(t, h, 0, nil, 5) // inner type 0 is indistinguishable from padding
			return r
		}, AlertUnexpectedMessage},
		{"plaintext over 2^14+1", func(h *halfConn) []byte {
			return sealRecord(t, h, recordApplicationData, make([]byte, maxPlaintext), 1)
		}, AlertRecordOverflow},
		{"wrong sequence number", func(h *halfConn) []byte {
			h.seq = 5
			return sealRecord(t, h, recordHandshake, fin, 0)
		}, AlertBadRecordMAC},
		{"plaintext handshake record after keys", func(h *halfConn) []byte {
			return append([]byte{recordHandshake, 3, 3, 0, byte(len(fin))}, fin...)
		}, AlertUnexpectedMessage},
		{"unknown inner type", func(h *halfConn) []byte {
			return sealRecord(t, h, 99, []byte("x"), 0)
		}, AlertUnexpectedMessage},
		{"malformed alert", func(h *halfConn) []byte {
			return sealRecord(t, h, recordAlert, []byte{2}, 0)
		}, AlertDecodeError},
		{"empty handshake record", func(h *halfConn) []byte {
			return sealRecord(t, h, recordHandshake, nil, 0)
		}, AlertUnexpectedMessage},
		{"message too large", func(h *halfConn) []byte {
			return sealRecord(t, h, recordHandshake, []byte{typeCertificate, 0x10, 0, 0}, 0)
		}, AlertDecodeError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fuzzRecordConn(tc.wire(fixedOut(t)), true)
			_, err := c.readHandshake()
			if got := alertOf(err); got != tc.alert {
				t.Fatalf("err %v (alert %s), want %s", err, got, tc.alert)
			}
		})
	}
	t.Run("message spanning a key change", func(t *testing.T) {
		h := fixedOut(t)
		c := fuzzRecordConn(sealRecord(t, h, recordHandshake, fin[:10], 0), true)
		if _, _, err := c.nextMessage(); err != nil {
			t.Fatal(err)
		}
		typ, data, err := c.readRecord()
		if err != nil || typ != recordHandshake {
			t.Fatal(err)
		}
		c.hsBuf = append(c.hsBuf, data...)
		if err := c.setKey(&c.in, fixedSecret()); alertOf(err) != AlertUnexpectedMessage {
			t.Fatalf("setKey with pending bytes: %v", err)
		}
	})
}

// TestWriteAllocations: sending application data reuses the write buffer.
func TestWriteAllocations(t *testing.T) {
	c := &Conn{conn: &fuzzConn{bytes.NewReader(nil)}, cfg: &Config{}, suite: suiteByID(TLS_AES_128_GCM_SHA256), hsDone: true}
	if err := c.setKey(&c.out, fixedSecret()); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1000)
	c.Write(data)
	if n := testing.AllocsPerRun(100, func() { c.Write(data) }); n > 0 {
		t.Errorf("Write allocates %.1f times per call", n)
	}
}

// TestReadAllocations: reading application data decrypts in place.
func TestReadAllocations(t *testing.T) {
	h := fixedOut(t)
	var wire []byte
	for range 102 {
		wire = append(wire, sealRecord(t, h, recordApplicationData, make([]byte, 1000), 0)...)
	}
	c := fuzzRecordConn(wire, true)
	c.hsDone = true
	buf := make([]byte, 1000)
	c.Read(buf)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}); n > 0 {
		t.Errorf("Read allocates %.1f times per call", n)
	}
}
