package tls13

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// onMessage returns hooks that pass every handshake message of type typ through f.
func onMessage(typ uint8, f func(msg []byte) []byte) *testHooks {
	return &testHooks{message: func(msg []byte) []byte {
		if msg[0] == typ {
			return f(bytes.Clone(msg))
		}
		return msg
	}}
}

// truncate cuts n bytes off a handshake message's body and fixes its length field.
func truncate(n int) func([]byte) []byte {
	return func(m []byte) []byte {
		m = m[:len(m)-n]
		l := len(m) - 4
		m[1], m[2], m[3] = byte(l>>16), byte(l>>8), byte(l)
		return m
	}
}

func flipLast(m []byte) []byte { m[len(m)-1] ^= 0x01; return m }

// badModulus sets the first 12-bit coefficient of an ML-KEM encapsulation key (at offset off of
// the share) to 4095 ≥ q.
func badModulus(off int) func(Group, []byte) []byte {
	return func(_ Group, s []byte) []byte {
		s = bytes.Clone(s)
		s[off] = 0xff
		s[off+1] |= 0x0f
		return s
	}
}

func TestNegative(t *testing.T) {
	msg := []byte("must never be accepted")
	type side struct {
		alert  Alert
		remote bool
	}
	cases := []struct {
		name         string
		group        Group
		scheme       SignatureScheme
		client       func(*Config)
		server       func(*Config)
		clientSees   side // the alert in the client's error (handshake or first Read)
		serverSees   side
		clientHandsh bool // the client's Handshake itself succeeds (it fails on Read)
	}{
		{name: "bad CertificateVerify", group: X25519, scheme: Ed25519,
			server:     func(c *Config) { c.hooks = onMessage(typeCertificateVerify, flipLast) },
			clientSees: side{AlertDecryptError, false}, serverSees: side{AlertDecryptError, true}},
		{name: "bad CertificateVerify ML-DSA", group: MLKEM768, scheme: MLDSA65,
			server:     func(c *Config) { c.hooks = onMessage(typeCertificateVerify, flipLast) },
			clientSees: side{AlertDecryptError, false}, serverSees: side{AlertDecryptError, true}},
		{name: "CertificateVerify scheme not offered", group: X25519, scheme: Ed25519,
			server: func(c *Config) {
				c.hooks = onMessage(typeCertificateVerify, func(m []byte) []byte { m[4], m[5] = 0x04, 0x03; return m })
			},
			clientSees: side{AlertIllegalParameter, false}, serverSees: side{AlertIllegalParameter, true}},
		{name: "bad server Finished", group: X25519, scheme: Ed25519,
			server:     func(c *Config) { c.hooks = onMessage(typeFinished, flipLast) },
			clientSees: side{AlertDecryptError, false}, serverSees: side{AlertDecryptError, true}},
		{name: "bad client Finished", group: P256, scheme: ECDSAP256SHA256,
			client:     func(c *Config) { c.hooks = onMessage(typeFinished, flipLast) },
			clientSees: side{AlertDecryptError, true}, serverSees: side{AlertDecryptError, false},
			clientHandsh: true},
		{name: "wrong host name", group: X25519, scheme: Ed25519,
			client:     func(c *Config) { c.ServerName = "other.test" },
			clientSees: side{AlertBadCertificate, false}, serverSees: side{AlertBadCertificate, true}},
		{name: "untrusted CA", group: X25519, scheme: MLDSA44,
			client:     func(c *Config) { c.RootCAs = makeChain(t, MLDSA44, testHost).pool },
			clientSees: side{AlertUnknownCA, false}, serverSees: side{AlertUnknownCA, true}},
		{name: "truncated ClientHello", group: X25519, scheme: Ed25519,
			client:     func(c *Config) { c.hooks = onMessage(typeClientHello, truncate(1)) },
			clientSees: side{AlertDecodeError, true}, serverSees: side{AlertDecodeError, false}},
		{name: "truncated Certificate", group: X25519, scheme: Ed25519,
			server:     func(c *Config) { c.hooks = onMessage(typeCertificate, truncate(3)) },
			clientSees: side{AlertDecodeError, false}, serverSees: side{AlertDecodeError, true}},
		{name: "truncated Finished", group: X25519, scheme: Ed25519,
			server:     func(c *Config) { c.hooks = onMessage(typeFinished, truncate(1)) },
			clientSees: side{AlertDecodeError, false}, serverSees: side{AlertDecodeError, true}},
		{name: "EncryptedExtensions missing", group: X25519, scheme: Ed25519,
			server:     func(c *Config) { c.hooks = onMessage(typeEncryptedExtensions, func([]byte) []byte { return nil }) },
			clientSees: side{AlertUnexpectedMessage, false}, serverSees: side{AlertUnexpectedMessage, true}},
		{name: "Finished before CertificateVerify", group: X25519, scheme: Ed25519,
			server:     func(c *Config) { c.hooks = onMessage(typeCertificateVerify, func([]byte) []byte { return nil }) },
			clientSees: side{AlertUnexpectedMessage, false}, serverSees: side{AlertUnexpectedMessage, true}},
		{name: "X25519 share too short", group: X25519, scheme: Ed25519,
			client:     func(c *Config) { c.hooks = &testHooks{keyShare: func(_ Group, s []byte) []byte { return s[:31] }} },
			clientSees: side{AlertIllegalParameter, true}, serverSees: side{AlertIllegalParameter, false}},
		{name: "ML-KEM-768 ek too long", group: MLKEM768, scheme: Ed25519,
			client: func(c *Config) {
				c.hooks = &testHooks{keyShare: func(_ Group, s []byte) []byte { return append(bytes.Clone(s), 0) }}
			},
			clientSees: side{AlertIllegalParameter, true}, serverSees: side{AlertIllegalParameter, false}},
		{name: "ML-KEM-768 ek fails the modulus check", group: MLKEM768, scheme: Ed25519,
			client:     func(c *Config) { c.hooks = &testHooks{keyShare: badModulus(0)} },
			clientSees: side{AlertIllegalParameter, true}, serverSees: side{AlertIllegalParameter, false}},
		{name: "ML-KEM-512 ek fails the modulus check", group: MLKEM512, scheme: Ed25519,
			client:     func(c *Config) { c.hooks = &testHooks{keyShare: badModulus(300)} },
			clientSees: side{AlertIllegalParameter, true}, serverSees: side{AlertIllegalParameter, false}},
		{name: "ML-KEM-1024 ek fails the modulus check", group: MLKEM1024, scheme: Ed25519,
			client:     func(c *Config) { c.hooks = &testHooks{keyShare: badModulus(1533)} },
			clientSees: side{AlertIllegalParameter, true}, serverSees: side{AlertIllegalParameter, false}},
		{name: "X25519MLKEM768 ek fails the modulus check", group: X25519MLKEM768, scheme: Ed25519,
			client:     func(c *Config) { c.hooks = &testHooks{keyShare: badModulus(3)} },
			clientSees: side{AlertIllegalParameter, true}, serverSees: side{AlertIllegalParameter, false}},
		{name: "SecP256r1MLKEM768 invalid point", group: SecP256r1MLKEM768, scheme: Ed25519,
			client: func(c *Config) {
				c.hooks = &testHooks{keyShare: func(_ Group, s []byte) []byte { s = bytes.Clone(s); s[10] ^= 1; return s }}
			},
			clientSees: side{AlertIllegalParameter, true}, serverSees: side{AlertIllegalParameter, false}},
		{name: "ML-KEM-768 ciphertext too short", group: MLKEM768, scheme: Ed25519,
			server: func(c *Config) {
				c.hooks = &testHooks{keyShare: func(_ Group, s []byte) []byte { return s[:len(s)-1] }}
			},
			clientSees: side{AlertIllegalParameter, false}, serverSees: side{AlertIllegalParameter, true}},
		{name: "ML-KEM-512 ciphertext too long", group: MLKEM512, scheme: Ed25519,
			server: func(c *Config) {
				c.hooks = &testHooks{keyShare: func(_ Group, s []byte) []byte { return append(bytes.Clone(s), 1) }}
			},
			clientSees: side{AlertIllegalParameter, false}, serverSees: side{AlertIllegalParameter, true}},
		{name: "no common group", group: X25519, scheme: Ed25519,
			server:     func(c *Config) { c.Groups = []Group{MLKEM1024} },
			clientSees: side{AlertHandshakeFailure, true}, serverSees: side{AlertHandshakeFailure, false}},
		{name: "no common scheme", group: X25519, scheme: Ed25519,
			client:     func(c *Config) { c.SignatureSchemes = []SignatureScheme{MLDSA44} },
			clientSees: side{AlertHandshakeFailure, true}, serverSees: side{AlertHandshakeFailure, false}},
		{name: "no common suite", group: X25519, scheme: Ed25519,
			client:     func(c *Config) { c.CipherSuites = []CipherSuite{TLS_AES_256_GCM_SHA384} },
			clientSees: side{AlertHandshakeFailure, true}, serverSees: side{AlertHandshakeFailure, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ccfg, scfg := clientConfig(t, tc.scheme, tc.group), serverConfig(t, tc.scheme, tc.group)
			if tc.client != nil {
				tc.client(ccfg)
			}
			if tc.server != nil {
				tc.server(scfg)
			}
			client, server, cres, sres := runPair(t, ccfg, scfg, msg)
			cerr := cres.err
			if tc.clientHandsh {
				if cres.err != nil {
					t.Fatalf("client handshake: %v", cres.err)
				}
				cerr = cres.readErr
			}
			wantAlert(t, "client", cerr, tc.clientSees.alert, tc.clientSees.remote)
			wantAlert(t, "server", sres.err, tc.serverSees.alert, tc.serverSees.remote)
			if len(sres.readData) != 0 || sres.readErr == nil {
				t.Errorf("server accepted %q (%v)", sres.readData, sres.readErr)
			}
			if len(cres.readData) != 0 || cres.readErr == nil {
				t.Errorf("client accepted %q (%v)", cres.readData, cres.readErr)
			}
			// Dead connections stay dead.
			if _, err := server.Write(msg); err == nil {
				t.Error("server Write after failure succeeded")
			}
			if _, err := client.Read(make([]byte, 8)); err == nil {
				t.Error("client Read after failure succeeded")
			}
		})
	}
}

// proxy relays bytes between a client and a server over real TCP, passing each record the
// server sends through mutate (index counts the server's records from 0).
type proxy struct {
	addr   string
	mutate func(index int, rec []byte) []byte
}

func startProxy(t *testing.T, target string, mutate func(int, []byte) []byte) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &proxy{addr: ln.Addr().String(), mutate: mutate}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			return
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); io.Copy(s, c); s.(*net.TCPConn).CloseWrite() }()
		go func() {
			defer wg.Done()
			defer c.(*net.TCPConn).CloseWrite()
			for i := 0; ; i++ {
				hdr := make([]byte, 5)
				if _, err := io.ReadFull(s, hdr); err != nil {
					return
				}
				body := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
				if _, err := io.ReadFull(s, body); err != nil {
					return
				}
				if _, err := c.Write(p.mutate(i, append(hdr, body...))); err != nil {
					return
				}
			}
		}()
		wg.Wait()
		c.Close()
		s.Close()
	}()
	return p
}

// TestRecordLayerProxy alters the server's records on the wire between two real sockets.
func TestRecordLayerProxy(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(i int, rec []byte) []byte
		alert  Alert
	}{
		{"flipped ciphertext bit", func(i int, r []byte) []byte {
			if i == 2 { // SH, CCS, then the first encrypted record
				r[len(r)-1] ^= 0x80
			}
			return r
		}, AlertBadRecordMAC},
		{"oversized plaintext record", func(i int, r []byte) []byte {
			if i == 0 {
				big := make([]byte, 5+maxPlaintext+1)
				copy(big, r[:5])
				binary.BigEndian.PutUint16(big[3:], maxPlaintext+1)
				return big
			}
			return r
		}, AlertRecordOverflow},
		{"oversized ciphertext record", func(i int, r []byte) []byte {
			if i == 2 {
				big := make([]byte, 5+maxCiphertext+1)
				copy(big, r[:5])
				binary.BigEndian.PutUint16(big[3:], maxCiphertext+1)
				return big
			}
			return r
		}, AlertRecordOverflow},
		{"ServerHello truncated inside its record", func(i int, r []byte) []byte {
			if i == 0 {
				r = r[:len(r)-2]
				binary.BigEndian.PutUint16(r[3:], uint16(len(r)-5))
				l := len(r) - 9
				r[6], r[7], r[8] = byte(l>>16), byte(l>>8), byte(l)
			}
			return r
		}, AlertDecodeError},
		{"application data before keys", func(i int, r []byte) []byte {
			if i == 0 {
				r[0] = recordApplicationData
			}
			return r
		}, AlertUnexpectedMessage},
		{"second ChangeCipherSpec with bad payload", func(i int, r []byte) []byte {
			if i == 1 {
				r[5] = 2
			}
			return r
		}, AlertUnexpectedMessage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			serr := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					serr <- err
					return
				}
				defer c.Close()
				s := Server(c, serverConfig(t, Ed25519, X25519))
				_, err = s.Read(make([]byte, 1))
				serr <- err
			}()
			p := startProxy(t, ln.Addr().String(), tc.mutate)
			cc, err := net.Dial("tcp", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			client := Client(cc, clientConfig(t, Ed25519, X25519))
			err = client.Handshake()
			wantAlert(t, "client", err, tc.alert, false)
			if _, err := client.Write([]byte("x")); err == nil {
				t.Error("client Write after failure succeeded")
			}
			wantAlert(t, "server", <-serr, tc.alert, true)
		})
	}
}

// TestRecordFragmentation sends the server's flight one byte per record and coalesces a client's
// application data with its Finished; both must still work.
func TestRecordFragmentation(t *testing.T) {
	// Split every server record's plaintext handshake data into 1-byte records: only the
	// plaintext ServerHello can be re-framed on the wire, so do it for record 0.
	mutate := func(i int, r []byte) []byte {
		if i != 0 {
			return r
		}
		var out []byte
		for _, b := range r[5:] {
			out = append(out, r[0], r[1], r[2], 0, 1, b)
		}
		return out
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3000) // 48000 bytes: several records
	serr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serr <- err
			return
		}
		defer c.Close()
		s := Server(c, serverConfig(t, MLDSA87, MLKEM1024))
		buf := make([]byte, len(big))
		if _, err := io.ReadFull(s, buf); err != nil {
			serr <- err
			return
		}
		_, err = s.Write(buf)
		serr <- err
	}()
	p := startProxy(t, ln.Addr().String(), mutate)
	cc, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := Client(cc, clientConfig(t, MLDSA87, MLKEM1024))
	if _, err := client.Write(big); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(big))
	if _, err := io.ReadFull(client, got); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("echo of %d bytes: %v", len(big), err)
	}
	if err := <-serr; err != nil {
		t.Fatal(err)
	}
	// The server's ML-DSA-87 Certificate and CertificateVerify span records on the engine's
	// own side too? They are coalesced into records of up to 2^14 bytes: check the flight.
	st := client.Stats()
	if st.Flights[1].Bytes < st.ChainBytes+4627 {
		t.Errorf("server flight %d bytes, chain %d", st.Flights[1].Bytes, st.ChainBytes)
	}
}
