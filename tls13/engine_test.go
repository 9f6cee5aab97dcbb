package tls13

import (
	"bytes"
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
