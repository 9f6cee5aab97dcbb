package tls13

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestHandshakeMatrix(t *testing.T) {
	msg := []byte("ping from the client, 32 bytes!!")
	for _, g := range Groups() {
		for _, s := range SignatureSchemes() {
			t.Run(g.String()+"+"+s.String(), func(t *testing.T) {
				ccfg, scfg := clientConfig(t, s, g), serverConfig(t, s, g)
				client, server, cres, sres := runPair(t, ccfg, scfg, msg)
				if cres.err != nil || sres.err != nil {
					t.Fatalf("handshake: client %v, server %v", cres.err, sres.err)
				}
				if !bytes.Equal(sres.readData, msg) || sres.readErr != nil {
					t.Fatalf("server read %q, %v", sres.readData, sres.readErr)
				}
				if !bytes.Equal(cres.readData, msg) || cres.readErr != nil {
					t.Fatalf("client read echo %q, %v", cres.readData, cres.readErr)
				}
				for side, st := range map[string]State{"client": client.State(), "server": server.State()} {
					if st.Group != g || st.Scheme != s || st.CipherSuite != TLS_AES_128_GCM_SHA256 || st.HelloRetry {
						t.Errorf("%s state: %+v, want %s %s", side, st, g, s)
					}
				}
				if n := len(client.State().PeerCertificates); n != 1 {
					t.Errorf("client has %d peer certificates, want 1", n)
				}
				checkStats(t, client.Stats(), server.Stats(), g)
			})
		}
	}
}

func checkStats(t *testing.T, cs, ss Stats, g Group) {
	t.Helper()
	if cs.Handshake <= 0 || ss.Handshake <= 0 || cs.KeyShare <= 0 || cs.Decapsulate <= 0 || cs.Verify <= 0 ||
		cs.ChainVerify <= 0 || ss.Encapsulate <= 0 || ss.Sign <= 0 || cs.KeySchedule <= 0 || ss.KeySchedule <= 0 {
		t.Errorf("phase missing: client %+v server %+v", cs, ss)
	}
	if cs.Primitive+cs.Wait+cs.Protocol != cs.Handshake {
		t.Errorf("client Primitive+Wait+Protocol != Handshake: %+v", cs)
	}
	if cs.BytesSent != ss.BytesReceived || cs.BytesReceived != ss.BytesSent {
		t.Errorf("bytes: client sent %d received %d, server sent %d received %d", cs.BytesSent, cs.BytesReceived, ss.BytesSent, ss.BytesReceived)
	}
	if len(cs.Flights) != 3 || len(ss.Flights) != 3 {
		t.Fatalf("flights: client %+v server %+v", cs.Flights, ss.Flights)
	}
	for i := range cs.Flights {
		if cs.Flights[i].Bytes != ss.Flights[i].Bytes || cs.Flights[i].From != ss.Flights[i].From {
			t.Errorf("flight %d: client saw %+v, server %+v", i, cs.Flights[i], ss.Flights[i])
		}
	}
	if got := cs.Flights[0].Bytes; got < clientShareSize(g) {
		t.Errorf("ClientHello flight %d bytes, smaller than the %s share", got, g)
	}
	if cs.ChainBytes == 0 || cs.ChainBytes != ss.ChainBytes {
		t.Errorf("chain bytes client %d server %d", cs.ChainBytes, ss.ChainBytes)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  *Config
		srv  bool
	}{
		{"client without ServerName", &Config{Groups: []Group{X25519}}, false},
		{"client unknown group", &Config{Groups: []Group{Group(99)}, ServerName: testHost}, false},
		{"client share outside Groups", &Config{Groups: []Group{X25519}, KeyShares: []Group{P256}, ServerName: testHost}, false},
		{"client unknown scheme", &Config{SignatureSchemes: []SignatureScheme{0x0401}, ServerName: testHost}, false},
		{"client unknown suite", &Config{CipherSuites: []CipherSuite{0x1305}, ServerName: testHost}, false},
		{"server without certificate", &Config{}, true},
		{"server scheme not allowed", func() *Config {
			c := serverConfig(t, Ed25519)
			c.SignatureSchemes = []SignatureScheme{MLDSA44}
			return c
		}(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc, sc := tcpPair(t)
			var c *Conn
			if tc.srv {
				c = Server(sc, tc.cfg)
			} else {
				c = Client(cc, tc.cfg)
			}
			err := c.Handshake()
			var ce configError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a config error", err)
			}
		})
	}
}

func TestNames(t *testing.T) {
	for _, g := range Groups() {
		if got, err := ParseGroup(g.String()); err != nil || got != g {
			t.Errorf("ParseGroup(%q) = %v, %v", g, got, err)
		}
	}
	for _, s := range SignatureSchemes() {
		if got, err := ParseSignatureScheme(s.String()); err != nil || got != s {
			t.Errorf("ParseSignatureScheme(%q) = %v, %v", s, got, err)
		}
		if got, err := SchemeForKey(chainFor(t, s).key.Public()); err != nil || got != s {
			t.Errorf("SchemeForKey(%s key) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseGroup("Kyber"); err == nil || !strings.Contains(err.Error(), "ML-KEM-512") {
		t.Errorf("ParseGroup error does not list the valid names: %v", err)
	}
	if _, err := ParseSignatureScheme("DSA"); err == nil {
		t.Error("ParseSignatureScheme accepted DSA")
	}
	if len(Groups()) != 8 || len(SignatureSchemes()) != 6 {
		t.Error("wrong number of groups or schemes")
	}
}
