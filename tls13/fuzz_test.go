package tls13

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
)

// Every parser of peer input has a fuzz target here; seeds are real messages of a handshake,
// written to testdata/fuzz/<Target>/ by TestWriteFuzzSeeds (PQREPRO_WRITE_SEEDS=1).

func FuzzClientHello(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseClientHello(body)
		if err != nil {
			return
		}
		if !m.hasGroups || !m.hasSigAlgs || !m.hasKeyShare || len(m.supportedVersions) == 0 ||
			slices.ContainsFunc(m.keyShares, func(k keyShareEntry) bool { return len(k.data) > 0xffff }) {
			return
		}
		m2, err := parseClientHello(m.marshal()[4:])
		if err != nil {
			t.Fatalf("re-marshalled ClientHello does not parse: %v", err)
		}
		if !bytes.Equal(m.random, m2.random) || !bytes.Equal(m.sessionID, m2.sessionID) ||
			!slices.Equal(m.cipherSuites, m2.cipherSuites) || !slices.Equal(m.groups, m2.groups) ||
			!slices.Equal(m.sigAlgs, m2.sigAlgs) || len(m.keyShares) != len(m2.keyShares) ||
			!slices.Equal(m.supportedVersions, m2.supportedVersions) {
			t.Fatalf("ClientHello round trip differs:\n%+v\n%+v", m, m2)
		}
	})
}

func FuzzServerHello(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseServerHello(body)
		if err != nil || m.supportedVersion == 0 || !m.hasKeyShare {
			return
		}
		m2, err := parseServerHello(m.marshal()[4:])
		if err != nil {
			t.Fatalf("re-marshalled ServerHello does not parse: %v", err)
		}
		if m.isHRR() != m2.isHRR() || m.cipherSuite != m2.cipherSuite || !bytes.Equal(m.sessionID, m2.sessionID) ||
			m.keyShare.group != m2.keyShare.group || !bytes.Equal(m.keyShare.data, m2.keyShare.data) ||
			m.selectedGroup != m2.selectedGroup || !bytes.Equal(m.cookie, m2.cookie) {
			t.Fatalf("ServerHello round trip differs:\n%+v\n%+v", m, m2)
		}
	})
}

func FuzzEncryptedExtensions(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { _ = parseEncryptedExtensions(body) })
}

func FuzzExtensions(f *testing.F) {
	f.Fuzz(func(t *testing.T, block []byte) {
		s := cryptobyte.String(block)
		var types []uint16
		err := parseExtensions(&s, "fuzz", func(typ uint16, _ cryptobyte.String) error {
			types = append(types, typ)
			return nil
		})
		if err == nil {
			seen := map[uint16]bool{}
			for _, ty := range types {
				if seen[ty] {
					t.Fatalf("duplicate extension %d accepted", ty)
				}
				seen[ty] = true
			}
		}
	})
}

func FuzzCertificate(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseCertificate(body)
		if err != nil {
			return
		}
		m2, err := parseCertificate(m.marshal()[4:])
		if err != nil || !bytes.Equal(m.context, m2.context) || len(m.certs) != len(m2.certs) {
			t.Fatalf("Certificate round trip: %v", err)
		}
		for i := range m.certs {
			if !bytes.Equal(m.certs[i], m2.certs[i]) {
				t.Fatalf("certificate %d differs after round trip", i)
			}
		}
	})
}

func FuzzCertificateVerify(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := parseCertificateVerify(body)
		if err != nil {
			return
		}
		if got := m.marshal()[4:]; !bytes.Equal(got, body) {
			t.Fatalf("CertificateVerify round trip differs")
		}
	})
}

func FuzzFinished(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, n := range []int{32, 48} {
			v, err := parseFinished(body, n)
			if (err == nil) != (len(body) == n) || (err == nil && !bytes.Equal(v, body)) {
				t.Fatalf("Finished of %d bytes for hash %d: %v", len(body), n, err)
			}
		}
	})
}

func FuzzNewSessionTicket(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = parseNewSessionTicket(body)
		_, _ = parseCertificateRequest(body)
		_, _ = parseKeyUpdate(body)
	})
}

// fuzzConn is a net.Conn that reads from r and discards writes.
type fuzzConn struct{ r io.Reader }

func (c *fuzzConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *fuzzConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *fuzzConn) Close() error                     { return nil }
func (c *fuzzConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *fuzzConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *fuzzConn) SetDeadline(time.Time) error      { return nil }
func (c *fuzzConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fuzzConn) SetWriteDeadline(time.Time) error { return nil }
func fixedSecret() []byte                            { return bytes.Repeat([]byte{0x42}, 32) }
func fuzzRecordConn(data []byte, encrypted bool) *Conn {
	c := &Conn{conn: &fuzzConn{bytes.NewReader(data)}, cfg: &Config{}, suite: suiteByID(TLS_AES_128_GCM_SHA256)}
	if encrypted {
		if err := c.setKey(&c.in, fixedSecret()); err != nil {
			panic(err)
		}
	}
	return c
}

// FuzzRecord reads records (plaintext, or encrypted under a fixed key when the first byte is
// odd) and reassembles handshake messages from them until the input runs out.
func FuzzRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		c := fuzzRecordConn(data[1:], data[0]&1 == 1)
		for range 64 {
			msg, err := c.readHandshake()
			if err != nil {
				return
			}
			n := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
			if len(msg) != 4+n {
				t.Fatalf("message of %d bytes with length field %d", len(msg), n)
			}
		}
	})
}

// FuzzServerHandshake feeds arbitrary bytes to a server as its client's side of the connection.
func FuzzServerHandshake(f *testing.F) {
	ch := chainFor(f, Ed25519)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := &Config{Groups: Groups(), Certificates: [][]byte{ch.leafDER}, PrivateKey: ch.key}
		s := Server(&fuzzConn{bytes.NewReader(data)}, cfg)
		if s.Handshake() == nil {
			t.Fatal("handshake with fuzz input succeeded")
		}
	})
}

// FuzzClientHandshake feeds arbitrary bytes to a client as its server's side.
func FuzzClientHandshake(f *testing.F) {
	ch := chainFor(f, Ed25519)
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := &Config{Groups: []Group{X25519, MLKEM512}, RootCAs: ch.pool, ServerName: testHost}
		c := Client(&fuzzConn{bytes.NewReader(data)}, cfg)
		if c.Handshake() == nil {
			t.Fatal("handshake with fuzz input succeeded")
		}
	})
}

// recordingConn copies what it reads into log.
type recordingConn struct {
	net.Conn
	log *bytes.Buffer
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.log.Write(b[:n])
	return n, err
}

func writeSeed(t *testing.T, target string, data []byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	name := fmt.Sprintf("seed-%x", sum[:8])
	body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFuzzSeeds records the messages and wire bytes of real handshakes as seed corpora.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("PQREPRO_WRITE_SEEDS") != "1" {
		t.Skip("set PQREPRO_WRITE_SEEDS=1 to rewrite the seed corpora")
	}
	msgs := map[uint8][][]byte{}
	record := &testHooks{message: func(m []byte) []byte { msgs[m[0]] = append(msgs[m[0]], bytes.Clone(m)); return m }}
	for _, cell := range []struct {
		g Group
		s SignatureScheme
		k []Group
	}{{X25519, Ed25519, nil}, {MLKEM512, MLDSA44, nil}, {MLKEM768, ECDSAP256SHA256, []Group{X25519}}} {
		ccfg, scfg := clientConfig(t, cell.s, append([]Group{cell.g}, cell.k...)...), serverConfig(t, cell.s, cell.g)
		ccfg.KeyShares = cell.k
		ccfg.hooks, scfg.hooks = record, record
		cc, sc := tcpPair(t)
		var fromClient, fromServer bytes.Buffer
		client := Client(&recordingConn{cc, &fromServer}, ccfg)
		server := Server(&recordingConn{sc, &fromClient}, scfg)
		done := make(chan error, 1)
		go func() { done <- server.Handshake() }()
		if err := client.Handshake(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		writeSeed(t, "FuzzServerHandshake", fromClient.Bytes())
		writeSeed(t, "FuzzClientHandshake", fromServer.Bytes())
		writeSeed(t, "FuzzRecord", append([]byte{0}, fromServer.Bytes()[:min(fromServer.Len(), 2000)]...))
	}
	for typ, target := range map[uint8]string{
		typeClientHello: "FuzzClientHello", typeServerHello: "FuzzServerHello",
		typeEncryptedExtensions: "FuzzEncryptedExtensions", typeCertificate: "FuzzCertificate",
		typeCertificateVerify: "FuzzCertificateVerify", typeFinished: "FuzzFinished",
	} {
		for _, m := range msgs[typ] {
			writeSeed(t, target, m[4:])
		}
	}
	for _, m := range msgs[typeClientHello] {
		// The extensions block is the ClientHello's tail after the fixed fields.
		body := m[4:]
		off := 2 + 32 + 1 + int(body[34])
		off += 2 + (int(body[off])<<8 | int(body[off+1]))
		off += 1 + int(body[off])
		writeSeed(t, "FuzzExtensions", body[off:])
	}
	writeSeed(t, "FuzzNewSessionTicket", []byte{0, 0, 0x1c, 0x20, 1, 2, 3, 4, 1, 0, 0, 3, 'a', 'b', 'c', 0, 0})
	writeSeed(t, "FuzzNewSessionTicket", []byte{1})
	// Encrypted records under the fixed key: a handshake message split over two records, padding.
	c := &Conn{conn: &fuzzConn{bytes.NewReader(nil)}, cfg: &Config{}, suite: suiteByID(TLS_AES_128_GCM_SHA256)}
	if err := c.setKey(&c.out, fixedSecret()); err != nil {
		t.Fatal(err)
	}
	fin := marshalFinished(bytes.Repeat([]byte{7}, 32))
	c.writeRecord(recordHandshake, fin[:10])
	c.writeRecord(recordHandshake, fin[10:])
	c.writeRecord(recordApplicationData, []byte("data"))
	writeSeed(t, "FuzzRecord", append([]byte{1}, c.wbuf...))
}
