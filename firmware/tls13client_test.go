package firmware

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// The C client's states (crypto/tls13/tls13c.h).
const (
	tlscConnected = 6
	tlscFailed    = 7
)

// tlscResult is what one tlsc-feed answered.
type tlscResult struct {
	state, sent, received int
	out, app              []byte
}

func tlscFeed(t *testing.T, k *katcli, in []byte) tlscResult {
	t.Helper()
	f := strings.Fields(k.do(t, "tlsc-feed", hex.EncodeToString(in)))
	if len(f) != 5 {
		t.Fatalf("tlsc-feed: %q", f)
	}
	var r tlscResult
	for i, p := range []*int{&r.state, &r.sent, &r.received} {
		v, err := strconv.Atoi(f[i])
		if err != nil {
			t.Fatal(err)
		}
		*p = v
	}
	r.out = unhexField(t, f[3])
	r.app = unhexField(t, f[4])
	return r
}

func unhexField(t *testing.T, s string) []byte {
	t.Helper()
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tlsCell is one run of the C client against the Go engine as server.
type tlsCell struct {
	group  tls13.Group
	scheme tls13.SignatureScheme
	host   string // the name the C client asks for (the leaf is issued for board.pqrepro.test)
	now    time.Time
	// serverHooks changes the server's configuration (a wrong CA for the client, say).
	chain func(*tlscert.Chain) *tlscert.Chain
}

// runTLSCell starts the Go engine as a server on one end of a pipe and the C client (katcli's
// tlsc- commands) on the other, relays bytes between them until the C client is connected or
// has failed, then, if connected, sends "ping" and expects the server's echo. It returns the C
// client's last result and the server's handshake error.
func runTLSCell(t *testing.T, k *katcli, c tlsCell) (tlscResult, error) {
	t.Helper()
	issued := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	ch, err := tlscert.New(c.scheme, "board.pqrepro.test", issued)
	if err != nil {
		t.Fatal(err)
	}
	anchor := ch.CADER
	if c.chain != nil {
		anchor = c.chain(ch).CADER
	}
	clientEnd, serverEnd := net.Pipe()
	defer clientEnd.Close()
	srv := tls13.Server(serverEnd, &tls13.Config{
		Groups: []tls13.Group{c.group}, SignatureSchemes: []tls13.SignatureScheme{c.scheme},
		Certificates: ch.Certificates(), PrivateKey: ch.Key,
	})
	srvErr := make(chan error, 1)
	go func() {
		defer serverEnd.Close()
		err := srv.Handshake()
		if err == nil {
			buf := make([]byte, 64)
			var n int
			if n, err = srv.Read(buf); err == nil {
				_, err = srv.Write(buf[:n])
			}
		}
		srvErr <- err
	}()
	random, seed := make([]byte, 32), make([]byte, 64)
	rand.Read(random)
	rand.Read(seed)
	hx := hex.EncodeToString
	hello := k.do(t, "tlsc-start", fmt.Sprint(uint16(c.group)), hx([]byte(c.host)), hx(anchor),
		fmt.Sprint(c.now.Unix()), hx(random), hx(seed))
	if hello == "fail" {
		t.Fatal("tlsc-start failed")
	}
	out := unhexField(t, hello)
	var res tlscResult
	buf := make([]byte, 1<<16)
	for pinged := false; ; {
		if len(out) > 0 {
			clientEnd.SetWriteDeadline(time.Now().Add(20 * time.Second))
			if _, err := clientEnd.Write(out); err != nil {
				break // the server has gone (it failed, or it closed after the echo)
			}
			out = nil
		}
		if res.state == tlscConnected && !pinged {
			out, pinged = unhexField(t, k.do(t, "tlsc-write", hx([]byte("ping")))), true
			continue
		}
		if res.state == tlscFailed || len(res.app) > 0 {
			break
		}
		clientEnd.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := clientEnd.Read(buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("read from the server: %v", err)
			}
			break
		}
		res = tlscFeed(t, k, buf[:n])
		out = res.out
	}
	clientEnd.Close()
	return res, <-srvErr
}

// TestTLSClientAgainstEngine runs the C TLS 1.3 client against the project's Go engine for the
// nine ML-KEM × ML-DSA cells: each completes the handshake on both ends (the server's Handshake
// returns no error, so it verified the client's Finished) and the C client gets its "ping" echoed
// under the application traffic keys.
func TestTLSClientAgainstEngine(t *testing.T) {
	k := startKatcli(t)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, g := range []tls13.Group{tls13.MLKEM512, tls13.MLKEM768, tls13.MLKEM1024} {
		for _, s := range []tls13.SignatureScheme{tls13.MLDSA44, tls13.MLDSA65, tls13.MLDSA87} {
			t.Run(g.String()+"/"+s.String(), func(t *testing.T) {
				res, err := runTLSCell(t, k, tlsCell{group: g, scheme: s, host: "board.pqrepro.test", now: now})
				if err != nil {
					t.Fatalf("server: %v (client state %d, sent alert %d)", err, res.state, res.sent)
				}
				if res.state != tlscConnected || string(res.app) != "ping" {
					t.Fatalf("client state %d, alerts %d/%d, application data %q", res.state, res.sent, res.received, res.app)
				}
			})
		}
	}
}

// TestTLSClientAlerts checks that the C client refuses a wrong trust anchor (unknown_ca), a name
// the leaf does not carry (bad_certificate) and a time outside the leaf's validity
// (certificate_expired), with the alert the Go engine sends for the same failure, and that the
// Go server receives that alert.
func TestTLSClientAlerts(t *testing.T) {
	k := startKatcli(t)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	otherCA := func(ch *tlscert.Chain) *tlscert.Chain {
		o, err := tlscert.New(ch.Scheme, "board.pqrepro.test", now)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, c := range []struct {
		name  string
		cell  tlsCell
		alert tls13.Alert
	}{
		{"wrong CA", tlsCell{chain: otherCA}, tls13.AlertUnknownCA},
		{"wrong host name", tlsCell{host: "other.pqrepro.test"}, tls13.AlertBadCertificate},
		{"expired", tlsCell{now: now.Add(48 * time.Hour)}, tls13.AlertCertificateExpired},
		{"not yet valid", tlsCell{now: now.Add(-48 * time.Hour)}, tls13.AlertCertificateExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			cell := c.cell
			cell.group, cell.scheme = tls13.MLKEM768, tls13.MLDSA44
			if cell.host == "" {
				cell.host = "board.pqrepro.test"
			}
			if cell.now.IsZero() {
				cell.now = now
			}
			res, err := runTLSCell(t, k, cell)
			if res.state != tlscFailed || res.sent != int(c.alert) {
				t.Fatalf("client state %d, sent alert %d, want %d (%v)", res.state, res.sent, c.alert, c.alert)
			}
			var ae *tls13.AlertError
			if !errors.As(err, &ae) || !ae.Remote || ae.Alert != c.alert {
				t.Fatalf("server: %v, want the client's %v alert", err, c.alert)
			}
		})
	}
}
