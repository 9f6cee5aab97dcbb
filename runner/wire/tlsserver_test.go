package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// TestQEMUTLSServe runs one ML-KEM-768 × Ed25519 cell with qemu-mps2-an386 as the server
// through Conn: TLSPinLeaf, a key of another leaf refused (KeyRefusedError mismatch), the right
// key loaded, then TLSServeSerial relaying the Go engine's client (two handshakes after a
// warm-up one), each echo returned and each report the server's (role, rounds 1, phases
// summing to the count).
func TestQEMUTLSServe(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	b := qemuBoards[0]
	qemuTools(t, b)
	elf := filepath.Join(buildFirmware(t, b.target, b.cc), "pqrepro-fw.elf")
	s := startQEMU(t, b, elf)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h, err := s.conn.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !h.TLSServes() {
		t.Fatalf("HELLO tls_roles=%v, want the server", h.TLSRoles())
	}
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ch, err := tlscert.New(tls13.Ed25519, "board.pqrepro.test", now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlscert.New(tls13.Ed25519, "board.pqrepro.test", now)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := s.conn.TLSPinLeaf(ctx, ch.LeafDER)
	if err != nil {
		t.Fatal(err)
	}
	otherBlob, _ := other.KeyBlob()
	var ke *KeyRefusedError
	if _, err := s.conn.TLSLoadKey(ctx, otherBlob); !errors.As(err, &ke) || ke.Reason != "mismatch" {
		t.Fatalf("another leaf's key: %v, want a mismatch refusal", err)
	}
	blob, _ := ch.KeyBlob()
	key, err := s.conn.TLSLoadKey(ctx, blob)
	if err != nil {
		t.Fatal(err)
	}
	hs, sum := serveEngine(ctx, t, s.conn, ch, now, TLSServerRequest{Group: 513, Sig: 0x0807, Leaf: leaf, Key: key,
		Iterations: 2, Warmup: 1, Echo: 32, SigRnd: SigRndDet})
	if sum.OK != 2 || len(hs) != 2 {
		t.Fatalf("summary %+v, reports %+v", sum, hs)
	}
	for _, x := range hs {
		t.Logf("handshake %d: count=%d phases=%+v rounds=%d segments=%d", x.Index, x.Count, *x.Phases, x.Rounds, x.Segments)
		p := x.Phases
		if !x.OK || x.Role != "server" || x.Rounds != 1 || x.HelloRetry || x.Segments != 2 || p.Chain != 0 ||
			p.KeyExchange+p.CertificateVerify+p.KeyScheduleRecords+p.Rest != x.Count {
			t.Fatalf("handshake %+v phases %+v", x, *p)
		}
	}
}

// serveEngine runs req on the board with the Go engine's client connecting to a loopback
// listener per handshake; each client's handshake and echo must succeed.
func serveEngine(ctx context.Context, t *testing.T, c *Conn, ch *tlscert.Chain, now time.Time, req TLSServerRequest) ([]Handshake, TLSSummary) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg := &tls13.Config{Groups: []tls13.Group{tls13.Group(req.Group)}, SignatureSchemes: []tls13.SignatureScheme{tls13.SignatureScheme(req.Sig)},
		RootCAs: ch.Pool(), ServerName: "board.pqrepro.test", Time: func() time.Time { return now }}
	results := make(chan error, req.Warmup+req.Iterations)
	accept := func(context.Context) (net.Conn, error) {
		go func() { results <- engineEcho(ln.Addr().String(), cfg, req.Echo) }()
		return ln.Accept()
	}
	var hs []Handshake
	sum, err := c.TLSServeSerial(ctx, req, accept, func(h Handshake) { hs = append(hs, h) })
	if err != nil {
		t.Fatal(err)
	}
	for range req.Warmup + req.Iterations {
		if err := <-results; err != nil {
			t.Fatalf("client: %v", err)
		}
	}
	return hs, sum
}

// engineEcho is one engine client handshake against addr, then an echo line of n bytes.
func engineEcho(addr string, cfg *tls13.Config, n int) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	c := tls13.Client(conn, cfg)
	if err := c.Handshake(); err != nil {
		return err
	}
	line := make([]byte, n)
	for i := range line {
		line[i] = "0123456789abcdef"[i%16]
	}
	line[n-1] = '\n'
	if _, err := c.Write(line); err != nil {
		return err
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != string(line) {
		return fmt.Errorf("echo %q: %v", got, err)
	}
	return nil
}
