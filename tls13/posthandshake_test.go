package tls13

import (
	"crypto/tls"
	"io"
	"slices"
	"testing"
)

// TestKeyUpdate sends a KeyUpdate asking for an update (test-only: the engine has no public
// call for it) and checks data still flows both ways under the new keys.
func TestKeyUpdate(t *testing.T) {
	cc, sc := tcpPair(t)
	client, server := Client(cc, clientConfig(t, Ed25519, X25519)), Server(sc, serverConfig(t, Ed25519, X25519))
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 5)
		for range 2 {
			if _, err := io.ReadFull(server, buf); err != nil {
				errc <- err
				return
			}
			if _, err := server.Write(buf); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 5)
	for i, m := range []string{"first", "after"} {
		if i == 1 {
			client.outMu.Lock()
			client.writeRecord(recordHandshake, marshalKeyUpdate(true))
			err := client.flush()
			client.outTraffic = client.suite.nextTrafficSecret(client.outTraffic)
			if err == nil {
				err = client.setKey(&client.out, client.outTraffic)
			}
			client.outMu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := client.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, buf); err != nil || string(buf) != m {
			t.Fatalf("echo %d: %q, %v", i, buf, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if client.in.seq != 1 || server.in.seq != 1 {
		t.Errorf("sequence numbers after the update: client in %d, server in %d, want 1 (keys replaced)", client.in.seq, server.in.seq)
	}
}

// TestCertificateRequest: a crypto/tls server that asks for a client certificate gets an
// empty Certificate and completes.
func TestCertificateRequest(t *testing.T) {
	ch := chainFor(t, Ed25519)
	cc, sc := tcpPair(t)
	srv := tls.Server(sc, &tls.Config{
		ClientAuth:   tls.RequestClientCert,
		Certificates: []tls.Certificate{{Certificate: [][]byte{ch.leafDER}, PrivateKey: ch.key}},
	})
	go func() {
		buf := make([]byte, 2)
		if _, err := io.ReadFull(srv, buf); err == nil {
			srv.Write(buf)
		}
	}()
	client := Client(cc, clientConfig(t, Ed25519, X25519))
	if _, err := client.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := io.ReadFull(client, buf); err != nil || string(buf) != "hi" {
		t.Fatalf("echo %q %v", buf, err)
	}
	fl := client.Stats().Flights
	if !slices.Contains(fl[1].Messages, "CertificateRequest") || !slices.Equal(fl[2].Messages, []string{"Certificate", "Finished"}) {
		t.Errorf("flights %+v", fl)
	}
}

// TestCloseNotify: Close sends close_notify and the peer's Read returns io.EOF.
func TestCloseNotify(t *testing.T) {
	cc, sc := tcpPair(t)
	client, server := Client(cc, clientConfig(t, Ed25519, X25519)), Server(sc, serverConfig(t, Ed25519, X25519))
	errc := make(chan error, 1)
	go func() {
		_, err := server.Read(make([]byte, 1))
		errc <- err
	}()
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	client.Close()
	if err := <-errc; err != io.EOF {
		t.Fatalf("server Read after close_notify: %v, want io.EOF", err)
	}
}
