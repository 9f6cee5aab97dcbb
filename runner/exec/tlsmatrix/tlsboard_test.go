package tlsmatrix

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// badClients opens, in order, an idle socket, a half-sent record and a connection that resets
// after the server's first flight, and returns the three connections' local addresses (what
// the server records as Remote). The idle and half-sent ones stay open until the test ends.
func badClients(t *testing.T, addr string, chain *tlscert.Chain) []string {
	t.Helper()
	dial := func() *net.TCPConn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.TCPConn)
	}
	idle := dial()
	half := dial()
	// A handshake record header announcing 200 bytes, and 10 of them.
	half.Write(append([]byte{0x16, 0x03, 0x01, 0x00, 0xc8}, make([]byte, 10)...))
	reset := dial()
	reset.Write(clientHello(t, chain))
	reset.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := reset.Read(make([]byte, 1)); err != nil { // the server's first flight began
		t.Logf("reset client: no server flight (ordered server: it comes after the others): %v", err)
	}
	reset.SetLinger(0)
	reset.Close() // RST
	return []string{idle.LocalAddr().String(), half.LocalAddr().String(), reset.LocalAddr().String()}
}

// clientHello is a real ClientHello record of the engine for the cell ML-KEM-512 + ML-DSA-44.
func clientHello(t *testing.T, chain *tlscert.Chain) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go tls13.Client(a, goodClientConfig(chain)).Handshake()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	b.Close()
	return append(hdr, body...)
}

func goodClientConfig(chain *tlscert.Chain) *tls13.Config {
	return &tls13.Config{Groups: []tls13.Group{tls13.MLKEM512}, SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44},
		RootCAs: chain.Pool(), ServerName: "pqrepro.test"}
}

// goodClient makes a full handshake and the echo; it returns its local address.
func goodClient(t *testing.T, addr string, chain *tlscert.Chain) string {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(2 * time.Minute))
	c := tls13.Client(raw, goodClientConfig(chain))
	if err := c.Handshake(); err != nil {
		t.Fatalf("good client: %v", err)
	}
	msg := []byte("hello board!")
	c.Write(msg)
	back := make([]byte, len(msg))
	if _, err := io.ReadFull(c, back); err != nil || !bytes.Equal(back, msg) {
		t.Fatalf("good client echo: %q %v", back, err)
	}
	return raw.LocalAddr().String()
}

func startBoardServer(t *testing.T, opt TLSBoardOptions) (*TLSBoardServer, *tlscert.Chain) {
	t.Helper()
	chain, err := tlscert.New(tls13.MLDSA44, "pqrepro.test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartTLSBoardServerWith("127.0.0.1:0", TLSBoardCell{Group: "ML-KEM-512", Scheme: "ML-DSA-44", Suite: "TLS_AES_128_GCM_SHA256", Echo: 12}, chain, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, chain
}

func records(t *testing.T, srv *TLSBoardServer, n int) []TLSServed {
	t.Helper()
	var out []TLSServed
	for len(out) < n {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r, err := srv.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d records: %v", len(out), err)
		}
		out = append(out, r)
	}
	return out
}

// TestTLSServeConcurrent: an idle socket, a half-sent record and a reset mid-handshake, then a
// good client: the good client is served while the first two still hold their connections
// (its record comes before theirs), and each bad one is recorded failed at its deadline.
func TestTLSServeConcurrent(t *testing.T) {
	srv, chain := startBoardServer(t, TLSBoardOptions{Concurrent: true, ConnTimeout: 5 * time.Second})
	addr := srv.Addr().String()
	bad := badClients(t, addr, chain)
	good := goodClient(t, addr, chain)
	recs := records(t, srv, 4)
	byRemote := map[string]int{}
	for i, r := range recs {
		byRemote[r.Remote] = i
	}
	gi, ok := byRemote[good]
	if !ok || recs[gi].Err != "" || recs[gi].Group != "ML-KEM-512" || recs[gi].Scheme != "ML-DSA-44" {
		t.Fatalf("good client's record: %+v (all: %+v)", recs[gi], recs)
	}
	for i, who := range []string{"idle socket", "half-sent record"} {
		bi, ok := byRemote[bad[i]]
		if !ok || recs[bi].Err == "" || !strings.Contains(recs[bi].Err, "timeout") {
			t.Errorf("%s: %+v, want failed at its deadline", who, recs[bi])
		}
		if bi < gi {
			t.Errorf("%s was recorded before the good client: the good client waited for it", who)
		}
	}
	if ri, ok := byRemote[bad[2]]; !ok || recs[ri].Err == "" {
		t.Errorf("reset mid-handshake: %+v, want failed", recs[ri])
	}
}

// TestTLSBoardServerOrderedDeadlines: the board cell's server stays ordered (records in the
// order of the connections, so they match the board's handshakes), and the same three bad
// clients delay the good one by their deadlines only, instead of forever.
func TestTLSBoardServerOrderedDeadlines(t *testing.T) {
	srv, chain := startBoardServer(t, TLSBoardOptions{ConnTimeout: time.Second})
	addr := srv.Addr().String()
	bad := badClients(t, addr, chain)
	good := goodClient(t, addr, chain)
	recs := records(t, srv, 4)
	for i, want := range append(bad, good) {
		if recs[i].Remote != want {
			t.Fatalf("record %d is from %s, want %s: the order is lost", i, recs[i].Remote, want)
		}
	}
	for i := range 3 {
		if recs[i].Err == "" {
			t.Errorf("bad client %d recorded ok: %+v", i, recs[i])
		}
	}
	if recs[3].Err != "" {
		t.Errorf("good client: %+v", recs[3])
	}
}
