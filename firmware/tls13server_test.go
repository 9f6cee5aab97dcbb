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
	"syscall"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// The C server's states (crypto/tls13/tls13s.h).
const (
	tlssWaitCH    = 1
	tlssWaitCH2   = 2
	tlssWaitFin   = 3
	tlssConnected = 4
	tlssFailed    = 5
)

const serverHost = "board.pqrepro.test"

// tlssResult is what one tlss-feed answered: the server's state, the alerts it sent and
// received (-1: none), its output and the application data it received, its group, the scheme
// it signed CertificateVerify with (0 before), that signature's ML-DSA rejection rounds and
// whether it sent a HelloRetryRequest.
type tlssResult struct {
	state, sent, received int
	out, app              []byte
	group, scheme, rounds int
	hrr                   bool
}

func tlssFeed(t *testing.T, k *katcli, in []byte) tlssResult {
	t.Helper()
	f := strings.Fields(k.do(t, "tlss-feed", hex.EncodeToString(in)))
	if len(f) != 9 {
		t.Fatalf("tlss-feed: %q", f)
	}
	var r tlssResult
	var hrr int
	for i, p := range []*int{&r.state, &r.sent, &r.received, nil, nil, &r.group, &r.scheme, &r.rounds, &hrr} {
		if p == nil {
			continue
		}
		v, err := strconv.Atoi(f[i])
		if err != nil {
			t.Fatal(err)
		}
		*p = v
	}
	r.out = unhexField(t, f[3])
	r.app = unhexField(t, f[4])
	r.hrr = hrr == 1
	return r
}

// serverStart holds what the C server is started with besides its chain; nil fields are fresh
// random bytes, except sigRnd: nil gives "-" (deterministic ML-DSA, RFC 6979 ECDSA).
type serverStart struct {
	random, kemRnd, ecdh, sigRnd []byte
}

// tlssStart starts the C server for group with chain's leaf and key.
func tlssStart(t testing.TB, k *katcli, group tls13.Group, ch *tlscert.Chain, st serverStart) {
	t.Helper()
	blob, err := ch.KeyBlob()
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(b []byte) string {
		if b == nil {
			b = make([]byte, 32)
			rand.Read(b)
		}
		return hex.EncodeToString(b)
	}
	sig := "-"
	if st.sigRnd != nil {
		sig = hex.EncodeToString(st.sigRnd)
	}
	if r := k.do(t, "tlss-start", fmt.Sprint(uint16(group)), hex.EncodeToString(blob), hex.EncodeToString(ch.LeafDER),
		fresh(st.random), fresh(st.kemRnd), fresh(st.ecdh), sig); r != "ok" {
		t.Fatalf("tlss-start %v with a %v key: %s", group, ch.Scheme, r)
	}
}

// serverHasSigner says whether the firmware takes chain's key (it has the scheme's signer) and
// finds it matches the leaf.
func serverHasSigner(t testing.TB, k *katcli, ch *tlscert.Chain) bool {
	t.Helper()
	blob, err := ch.KeyBlob()
	if err != nil {
		t.Fatal(err)
	}
	return k.do(t, "tlss-key", hex.EncodeToString(blob), hex.EncodeToString(ch.LeafDER)) == "1 1"
}

// relayTLSServer relays bytes between conn, the client's end, and the started C server until
// the server has failed, or it received application data: it then echoes the data back,
// sends close_notify and returns.
func relayTLSServer(t *testing.T, k *katcli, conn net.Conn) tlssResult {
	t.Helper()
	var res tlssResult
	buf := make([]byte, 1<<16)
	for {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("read from the client: %v", err)
			}
			return res
		}
		res = tlssFeed(t, k, buf[:n])
		out := res.out
		if res.state == tlssConnected && len(res.app) > 0 {
			out = append(out, unhexField(t, k.do(t, "tlss-write", hex.EncodeToString(res.app)))...)
			out = append(out, unhexField(t, k.do(t, "tlss-close"))...)
		}
		if len(out) > 0 {
			conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
			if _, err := conn.Write(out); err != nil {
				return res // the client has gone (it failed)
			}
		}
		if res.state != tlssWaitCH && res.state != tlssWaitCH2 && res.state != tlssWaitFin &&
			(res.state != tlssConnected || len(res.app) > 0) {
			return res
		}
	}
}

// engineClientRun is what the Go engine's client saw of one connection.
type engineClientRun struct {
	err   error
	state tls13.State
	echo  string
}

// runEngineClient runs the Go engine's client with cfg over one end of a pipe against the C
// server (started already) on the other: the handshake, "ping" and the echo it reads back.
func runEngineClient(t *testing.T, k *katcli, cfg *tls13.Config) (tlssResult, engineClientRun) {
	t.Helper()
	clientEnd, serverEnd := net.Pipe()
	done := make(chan engineClientRun, 1)
	go func() {
		defer clientEnd.Close()
		c := tls13.Client(clientEnd, cfg)
		var run engineClientRun
		run.err = c.Handshake()
		run.state = c.State()
		if run.err == nil {
			if _, run.err = c.Write([]byte("ping")); run.err == nil {
				buf := make([]byte, 64)
				var n int
				n, run.err = c.Read(buf)
				run.echo = string(buf[:n])
			}
		}
		done <- run
	}()
	res := relayTLSServer(t, k, serverEnd)
	serverEnd.Close()
	return res, <-done
}

// TestTLSServerAgainstEngine runs the C TLS 1.3 server against the project's Go engine client
// for the 36 cells of the matrix: the
// handshake completes on both ends (the client verified the chain, the CertificateVerify the
// server signed and its Finished; the server the client's Finished), both report the cell's
// group and scheme, ML-DSA reports at least one rejection round, and "ping" comes back.
func TestTLSServerAgainstEngine(t *testing.T) {
	k := startKatcli(t)
	for _, s := range matrixSchemes {
		ch, err := tlscert.New(s, serverHost, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range matrixGroups {
			t.Run(g.String()+"/"+s.String(), func(t *testing.T) {
				if !serverHasSigner(t, k, ch) {
					t.Fatalf("the firmware does not take the %v key or it does not match its leaf", s)
				}
				tlssStart(t, k, g, ch, serverStart{})
				cell := interop.Cell{Group: g, Scheme: s}
				res, run := runEngineClient(t, k, interop.EngineClientConfig(cell, ch, serverHost))
				if run.err != nil || run.echo != "ping" {
					t.Fatalf("client: %v, echo %q (server state %d, alerts %d/%d)", run.err, run.echo, res.state, res.sent, res.received)
				}
				if res.state != tlssConnected || string(res.app) != "ping" || res.hrr {
					t.Fatalf("server state %d, alerts %d/%d, application data %q, hrr %v", res.state, res.sent, res.received, res.app, res.hrr)
				}
				if res.group != int(g) || res.scheme != int(s) || run.state.Group != g || run.state.Scheme != s || run.state.HelloRetry {
					t.Fatalf("server negotiated %#04x/%#04x, client %v/%v (retry %v)", res.group, res.scheme, run.state.Group, run.state.Scheme, run.state.HelloRetry)
				}
				if res.rounds < 1 {
					t.Fatalf("rounds %d", res.rounds)
				}
			})
		}
	}
}

// TestTLSServerHelloRetry has the Go engine's client offer X25519 and the server's group but
// send a key share for X25519 only: the C server answers with a HelloRetryRequest, the client's
// second ClientHello carries the share, and the connection completes with the server's group,
// both ends reporting the retry. For X25519 as the server's group no retry happens.
func TestTLSServerHelloRetry(t *testing.T) {
	k := startKatcli(t)
	ch, err := tlscert.New(tls13.MLDSA44, serverHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range matrixGroups {
		t.Run(g.String(), func(t *testing.T) {
			tlssStart(t, k, g, ch, serverStart{})
			cfg := interop.EngineClientConfig(interop.Cell{Group: g, Scheme: tls13.MLDSA44}, ch, serverHost)
			cfg.Groups, cfg.KeyShares = []tls13.Group{tls13.X25519, g}, []tls13.Group{tls13.X25519}
			res, run := runEngineClient(t, k, cfg)
			if run.err != nil || run.echo != "ping" || res.state != tlssConnected {
				t.Fatalf("client: %v, echo %q; server state %d, alerts %d/%d", run.err, run.echo, res.state, res.sent, res.received)
			}
			retry := g != tls13.X25519
			if res.hrr != retry || run.state.HelloRetry != retry || run.state.Group != g || res.group != int(g) {
				t.Fatalf("server hrr %v group %#04x, client retry %v group %v; want retry %v", res.hrr, res.group, run.state.HelloRetry, run.state.Group, retry)
			}
		})
	}
}
