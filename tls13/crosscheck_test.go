package tls13

import (
	"bytes"
	"crypto/tls"
	"io"
	"testing"
)

// TestCryptoTLS cross-checks a few cells against Go's crypto/tls in both directions (the full
// interop matrix lives in tls13/interop).
func TestCryptoTLS(t *testing.T) {
	cells := []struct {
		g Group
		s SignatureScheme
	}{
		{X25519, Ed25519},
		{MLKEM1024, MLDSA65},
		{X25519MLKEM768, RSAPSSRSAESHA256},
		{SecP384r1MLKEM1024, ECDSAP256SHA256},
	}
	msg := []byte("hello across stacks")
	for _, cell := range cells {
		name := cell.g.String() + "+" + cell.s.String()
		t.Run("engine-client/"+name, func(t *testing.T) {
			ch := chainFor(t, cell.s)
			cc, sc := tcpPair(t)
			srv := tls.Server(sc, &tls.Config{
				MinVersion:       tls.VersionTLS13,
				CurvePreferences: []tls.CurveID{tls.CurveID(cell.g)},
				Certificates:     []tls.Certificate{{Certificate: [][]byte{ch.leafDER}, PrivateKey: ch.key}},
			})
			errc := make(chan error, 1)
			go func() {
				if err := srv.Handshake(); err != nil {
					errc <- err
					return
				}
				buf := make([]byte, len(msg))
				if _, err := io.ReadFull(srv, buf); err != nil {
					errc <- err
					return
				}
				_, err := srv.Write(buf)
				errc <- err
			}()
			cfg := clientConfig(t, cell.s, cell.g)
			cfg.SignatureSchemes = []SignatureScheme{cell.s}
			client := Client(cc, cfg)
			if err := client.Handshake(); err != nil {
				t.Fatalf("engine client handshake with crypto/tls: %v (server: %v)", err, <-errc)
			}
			if _, err := client.Write(msg); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(msg))
			if _, err := io.ReadFull(client, buf); err != nil || !bytes.Equal(buf, msg) {
				t.Fatalf("echo %q, %v", buf, err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("crypto/tls server: %v", err)
			}
			st := client.State()
			if st.Group != cell.g || st.Scheme != cell.s {
				t.Errorf("engine client negotiated %s %s", st.Group, st.Scheme)
			}
			if got := srv.ConnectionState().CurveID; got != tls.CurveID(cell.g) {
				t.Errorf("crypto/tls server negotiated %v", got)
			}
		})
		t.Run("engine-server/"+name, func(t *testing.T) {
			ch := chainFor(t, cell.s)
			cc, sc := tcpPair(t)
			server := Server(sc, serverConfig(t, cell.s, cell.g))
			errc := make(chan error, 1)
			go func() {
				buf := make([]byte, len(msg))
				if _, err := io.ReadFull(server, buf); err != nil {
					errc <- err
					return
				}
				_, err := server.Write(buf)
				errc <- err
			}()
			client := tls.Client(cc, &tls.Config{
				MinVersion:       tls.VersionTLS13,
				CurvePreferences: []tls.CurveID{tls.CurveID(cell.g)},
				RootCAs:          ch.pool,
				ServerName:       testHost,
			})
			if err := client.Handshake(); err != nil {
				t.Fatalf("crypto/tls client with engine server: %v (server: %v)", err, <-errc)
			}
			if _, err := client.Write(msg); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(msg))
			if _, err := io.ReadFull(client, buf); err != nil || !bytes.Equal(buf, msg) {
				t.Fatalf("echo %q, %v", buf, err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("engine server: %v", err)
			}
			st := server.State()
			if st.Group != cell.g || st.Scheme != cell.s {
				t.Errorf("engine server negotiated %s %s", st.Group, st.Scheme)
			}
			if got := client.ConnectionState().CurveID; got != tls.CurveID(cell.g) {
				t.Errorf("crypto/tls client negotiated %v", got)
			}
		})
	}
}
