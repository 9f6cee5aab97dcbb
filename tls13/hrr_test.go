package tls13

import (
	"bytes"
	"crypto/tls"
	"io"
	"slices"
	"testing"
)

func TestHelloRetryRequest(t *testing.T) {
	msg := []byte("after a retry")
	ccfg := clientConfig(t, Ed25519, X25519, MLKEM768)
	ccfg.KeyShares = []Group{X25519}
	scfg := serverConfig(t, Ed25519, MLKEM768)
	client, server, cres, sres := runPair(t, ccfg, scfg, msg)
	if cres.err != nil || sres.err != nil {
		t.Fatalf("handshake: client %v, server %v", cres.err, sres.err)
	}
	if !bytes.Equal(cres.readData, msg) {
		t.Fatalf("echo %q", cres.readData)
	}
	for side, st := range map[string]State{"client": client.State(), "server": server.State()} {
		if !st.HelloRetry || st.Group != MLKEM768 {
			t.Errorf("%s: HelloRetry %v group %s, want true ML-KEM-768", side, st.HelloRetry, st.Group)
		}
	}
	cs := client.Stats()
	var from []string
	for _, f := range cs.Flights {
		from = append(from, f.From)
	}
	if want := []string{"client", "server", "client", "server", "client"}; !slices.Equal(from, want) {
		t.Errorf("flights %v, want %v", cs.Flights, want)
	}
	if !slices.Equal(cs.Flights[1].Messages, []string{"HelloRetryRequest", "ChangeCipherSpec"}) {
		t.Errorf("HRR flight %v", cs.Flights[1].Messages)
	}
}

// TestHelloRetryCryptoTLS runs the engine client's HRR path against crypto/tls's server and
// the engine server's HRR against crypto/tls's client.
func TestHelloRetryCryptoTLS(t *testing.T) {
	ch := chainFor(t, Ed25519)
	msg := []byte("x")
	t.Run("engine-client", func(t *testing.T) {
		cc, sc := tcpPair(t)
		srv := tls.Server(sc, &tls.Config{
			CurvePreferences: []tls.CurveID{tls.X25519MLKEM768},
			Certificates:     []tls.Certificate{{Certificate: [][]byte{ch.leafDER}, PrivateKey: ch.key}},
		})
		go func() {
			buf := make([]byte, 1)
			if _, err := io.ReadFull(srv, buf); err == nil {
				srv.Write(buf)
			}
		}()
		cfg := clientConfig(t, Ed25519, X25519, X25519MLKEM768)
		cfg.KeyShares = []Group{X25519}
		client := Client(cc, cfg)
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := io.ReadFull(client, buf); err != nil {
			t.Fatal(err)
		}
		if st := client.State(); !st.HelloRetry || st.Group != X25519MLKEM768 {
			t.Errorf("state %+v", st)
		}
		if !srv.ConnectionState().HelloRetryRequest {
			t.Error("crypto/tls server did not see a retry")
		}
	})
	t.Run("engine-server", func(t *testing.T) {
		cc, sc := tcpPair(t)
		server := Server(sc, serverConfig(t, Ed25519, P256))
		go func() {
			buf := make([]byte, 1)
			if _, err := io.ReadFull(server, buf); err == nil {
				server.Write(buf)
			}
		}()
		client := tls.Client(cc, &tls.Config{
			CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
			RootCAs:          ch.pool, ServerName: testHost,
		})
		if _, err := client.Write(msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := io.ReadFull(client, buf); err != nil {
			t.Fatal(err)
		}
		if st := server.State(); !st.HelloRetry || st.Group != P256 {
			t.Errorf("state %+v", st)
		}
		if cs := client.ConnectionState(); !cs.HelloRetryRequest || cs.CurveID != tls.CurveP256 {
			t.Errorf("crypto/tls client: HRR %v curve %v", cs.HelloRetryRequest, cs.CurveID)
		}
	})
}

func TestCipherSuites(t *testing.T) {
	for _, id := range []CipherSuite{TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256} {
		t.Run(id.String(), func(t *testing.T) {
			ccfg, scfg := clientConfig(t, ECDSAP256SHA256, P256), serverConfig(t, ECDSAP256SHA256, P256)
			ccfg.CipherSuites = []CipherSuite{id}
			scfg.CipherSuites = []CipherSuite{TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256}
			client, _, cres, sres := runPair(t, ccfg, scfg, []byte("suite"))
			if cres.err != nil || sres.err != nil || string(cres.readData) != "suite" {
				t.Fatalf("client %v server %v echo %q", cres.err, sres.err, cres.readData)
			}
			if got := client.State().CipherSuite; got != id {
				t.Errorf("suite %s", got)
			}
			// And against crypto/tls's server, which picks among what the client offers.
			ch := chainFor(t, ECDSAP256SHA256)
			cc, sc := tcpPair(t)
			srv := tls.Server(sc, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{ch.leafDER}, PrivateKey: ch.key}}})
			go func() {
				buf := make([]byte, 1)
				if _, err := io.ReadFull(srv, buf); err == nil {
					srv.Write(buf)
				}
			}()
			c2 := Client(cc, ccfg)
			if _, err := c2.Write([]byte("y")); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c2, make([]byte, 1)); err != nil {
				t.Fatal(err)
			}
			if got := srv.ConnectionState().CipherSuite; got != uint16(id) {
				t.Errorf("crypto/tls negotiated 0x%04x", got)
			}
		})
	}
}
