package tls13

import (
	"bytes"
	mrand "math/rand/v2"
	"testing"
)

// deterministicServerBytes runs one handshake and echo with both sides' randomness drawn from
// seeded ChaCha8 streams (the server Deterministic) and returns every byte the client read from the server.
func deterministicServerBytes(t *testing.T, g Group, s SignatureScheme, seed byte, deterministic bool) []byte {
	t.Helper()
	cc, sc := tcpPair(t)
	var fromServer bytes.Buffer
	scfg := serverConfig(t, s, g)
	scfg.Rand, scfg.Deterministic = mrand.NewChaCha8([32]byte{seed}), deterministic
	ccfg := clientConfig(t, s, g)
	ccfg.Rand = mrand.NewChaCha8([32]byte{seed, 1})
	client, server := Client(&recordingConn{cc, &fromServer}, ccfg), Server(sc, scfg)
	errc := make(chan error, 1)
	go func() {
		if err := server.Handshake(); err != nil {
			errc <- err
			return
		}
		buf := make([]byte, 5)
		if _, err := server.Read(buf); err != nil {
			errc <- err
			return
		}
		_, err := server.Write(buf)
		errc <- err
	}()
	if err := client.Handshake(); err != nil {
		t.Fatalf("%s + %s: client: %v (server: %v)", g, s, err, <-errc)
	}
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := client.Read(got); err != nil || string(got) != "hello" {
		t.Fatalf("%s + %s: echo %q, %v", g, s, got, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("%s + %s: server: %v", g, s, err)
	}
	if st := server.State(); st.Group != g || st.Scheme != s {
		t.Fatalf("negotiated %s + %s, want %s + %s", st.Group, st.Scheme, g, s)
	}
	return fromServer.Bytes()
}

// TestDeterministicServer: with Config.Deterministic and a seeded Rand the server's bytes
// (ServerHello random, ML-KEM ciphertext, ML-DSA CertificateVerify, every encrypted record)
// are identical from one handshake to the next, the client still agrees on the keys (the
// handshake and the echo complete), and another seed or the default randomised server gives
// other bytes.
func TestDeterministicServer(t *testing.T) {
	for _, g := range []Group{MLKEM512, MLKEM768, MLKEM1024} {
		for _, s := range []SignatureScheme{MLDSA44, MLDSA87} {
			a := deterministicServerBytes(t, g, s, 7, true)
			if len(a) < 1000 {
				t.Fatalf("%s + %s: the server wrote %d bytes", g, s, len(a))
			}
			b := deterministicServerBytes(t, g, s, 7, true)
			if !bytes.Equal(a, b) {
				t.Errorf("%s + %s: two seeded deterministic servers wrote different bytes (%d and %d)", g, s, len(a), len(b))
			}
			if c := deterministicServerBytes(t, g, s, 8, true); bytes.Equal(a, c) {
				t.Errorf("%s + %s: another seed wrote the same bytes", g, s)
			}
			if d := deterministicServerBytes(t, g, s, 7, false); bytes.Equal(a, d) {
				t.Errorf("%s + %s: the randomised server wrote the deterministic one's bytes", g, s)
			}
		}
	}
}
