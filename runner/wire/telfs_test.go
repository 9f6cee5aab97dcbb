package wire

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/ascon"
	"pqrepro/telemetry"
)

// fsGateway is a Go gateway with a fresh ML-DSA-44 key and a fixed clock for device dev.
func fsGateway(t *testing.T, dev string, now time.Time) (*telemetry.Gateway, []byte) {
	t.Helper()
	pub, priv, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := pub.MarshalBinary()
	gw, err := telemetry.NewGateway(telemetry.GatewayConfig{SigningKey: priv, Devices: map[string][]byte{dev: nil},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return gw, pk
}

// fsRound runs one forward-secret handshake between the board behind c and gw: the board's
// request to the gateway, the gateway's offer (through tamper, when not nil) to the board,
// TELFS at now. On acceptance the gateway must open the board's handshake and its sealed
// frames.
func fsRound(ctx context.Context, t *testing.T, c *Conn, gw *telemetry.Gateway, dev string, now time.Time, tamper func([]byte) []byte) TelFSHandshake {
	t.Helper()
	rq, err := c.TelRequest(ctx, dev, nil)
	if err != nil {
		t.Fatalf("TelRequest: %v", err)
	}
	ev, err := gw.Receive(telemetry.Message{Topic: telemetry.TopicPrefix + dev + "/rq", Payload: rq})
	if err != nil || ev.Reply == nil {
		t.Fatalf("gateway on the board's request: %v", err)
	}
	offer := ev.Reply.Payload
	if tamper != nil {
		offer = tamper(bytes.Clone(offer))
	}
	if err := c.TelOffer(ctx, offer); err != nil {
		t.Fatalf("TelOffer: %v", err)
	}
	h, err := c.TelForwardSecret(ctx, now.Unix())
	if err != nil {
		t.Fatalf("TelForwardSecret: %v", err)
	}
	if !h.OK {
		return h
	}
	ev, err = gw.Receive(telemetry.Message{Topic: telemetry.TopicPrefix + dev + "/hs", Payload: h.Payload})
	if err != nil || ev.Kind != telemetry.EventSession || ev.Session != telemetry.SessionID(h.SessionID) {
		t.Fatalf("gateway on the board's forward-secret handshake: %v (session %x, board %x)", err, ev.Session, h.SessionID)
	}
	opened := 0
	_, err = c.TelSeal(ctx, 2, []int{0, 33}, func(f TelFrame) error {
		ev, err := gw.Receive(telemetry.Message{Topic: telemetry.TopicPrefix + dev + "/d/" + ev.Session.String(), Payload: f.Payload})
		if err != nil {
			return fmt.Errorf("gateway on board frame %d: %w", f.Index, err)
		}
		if h := ascon.Sum256(ev.Plaintext); !bytes.Equal(h[:], f.PlainHash) {
			return fmt.Errorf("board frame %d opens to another plaintext", f.Index)
		}
		opened++
		return nil
	})
	if err != nil || opened != 2 {
		t.Fatalf("TelSeal in the forward-secret session: %v (%d opened)", err, opened)
	}
	return h
}

// checkFS runs the forward-secret checks on a board: the signing key pinned (its hash as
// Go computes it), a genuine handshake accepted and its frames opened by the Go gateway,
// and tampered offers refused with their reasons. It returns the genuine handshake.
func checkFS(ctx context.Context, t *testing.T, c *Conn) TelFSHandshake {
	t.Helper()
	const dev = "board-fs"
	now := time.Unix(1_790_000_000, 0)
	gw, pk := fsGateway(t, dev, now)
	pkh, err := c.TelPinSigner(ctx, pk)
	if err != nil {
		t.Fatalf("TelPinSigner: %v", err)
	}
	if h := ascon.Sum256(pk); !bytes.Equal(pkh, h[:8]) {
		t.Fatalf("board's pkh %x, Go's %x", pkh, h[:8])
	}
	for _, bad := range []struct {
		name, want string
		tamper     func([]byte) []byte
		now        time.Time
	}{
		{"signature bit", "signature", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, now},
		{"ephemeral key bit", "signature", func(b []byte) []byte { b[100] ^= 1; return b }, now},
		{"short", "malformed", func(b []byte) []byte { return b[:len(b)-1] }, now},
		{"expired", "expired", nil, now.Add(61 * time.Second)},
	} {
		h := fsRound(ctx, t, c, gw, dev, bad.now, bad.tamper)
		if h.OK || h.Reason != bad.want || h.Verify == 0 {
			t.Fatalf("%s: board answers %+v, want refused %s", bad.name, h, bad.want)
		}
	}
	// An old offer a broker replays answers an earlier request: refused by the nonce check.
	rq1, _ := c.TelRequest(ctx, dev, nil)
	ev, err := gw.Receive(telemetry.Message{Topic: telemetry.TopicPrefix + dev + "/rq", Payload: rq1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TelRequest(ctx, dev, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.TelOffer(ctx, ev.Reply.Payload); err != nil {
		t.Fatal(err)
	}
	if h, err := c.TelForwardSecret(ctx, now.Unix()); err != nil || h.OK || h.Reason != "nonce" {
		t.Fatalf("a replayed offer: %+v %v, want refused nonce", h, err)
	}
	h := fsRound(ctx, t, c, gw, dev, now, nil)
	if !h.OK || h.Verify == 0 || h.Encaps == 0 || h.KDF == 0 {
		t.Fatalf("genuine offer: %+v", h)
	}
	// A request completes once.
	if _, err := c.TelForwardSecret(ctx, now.Unix()); err == nil {
		t.Fatal("TELFS after the request completed: accepted")
	}
	return h
}

// TestConnTelemetryForwardSecret: the host firmware as the forward-secret device.
func TestConnTelemetryForwardSecret(t *testing.T) {
	c, _ := startHost(t, nil, nil, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Seed(ctx, []byte("forward secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TelForwardSecret(ctx, 1); err == nil {
		t.Fatal("TELFS before a signing key: accepted")
	}
	checkFS(ctx, t, c)
}

// TestQEMUTelemetryForwardSecret: the forward-secret checks of checkFS on the emulated boards
// that run every algorithm (qemu-mps2-an505 shares the an386's C); it logs the instructions
// of the verification apart from the encapsulation (docs/BENCHMARKS.md).
func TestQEMUTelemetryForwardSecret(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	for _, b := range qemuBoards {
		if b.lean {
			continue
		}
		t.Run(b.target, func(t *testing.T) {
			qemuTools(t, b)
			dir := buildFirmware(t, b.target, b.cc)
			var runs []string
			for run := 0; run < 1; run++ {
				s := startQEMU(t, b, filepath.Join(dir, "pqrepro-fw.elf"))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a hang guard: liveness bounds a silent board
				if _, err := s.conn.Hello(ctx); err != nil {
					t.Fatal(err)
				}
				if err := s.conn.Seed(ctx, []byte("forward secret")); err != nil {
					t.Fatal(err)
				}
				h := checkFS(ctx, t, s.conn)
				cancel()
				s.conn.Close()
				s.cmd.Process.Kill()
				s.cmd.Wait()
				runs = append(runs, fmt.Sprintf("verify %d, checks %d, encaps %d, kdf %d, total %d, stack %d", h.Verify, h.Accept, h.Encaps, h.KDF, h.Count, h.StackBytes))
			}
			t.Logf("%s forward-secret handshake (instructions): %s", b.target, runs[0])
		})
	}
}
