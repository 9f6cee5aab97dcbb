package firmware

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
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

const tlssHost = "board.pqrepro.test"

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
	var r tlssResult
	var hrr int
	f := feedFields(t, k, "tlss-feed", in, &r.state, &r.sent, &r.received, nil, nil, &r.group, &r.scheme, &r.rounds, &hrr)
	r.out = unhexField(t, f[3])
	r.app = unhexField(t, f[4])
	r.hrr = hrr == 1
	return r
}

// tlssConfig holds what the C server is started with besides its chain; nil fields are fresh
// random bytes, except sigRnd: nil gives "-" (deterministic ML-DSA, RFC 6979 ECDSA).
type tlssConfig struct {
	random, kemRnd, ecdh, sigRnd []byte
}

// tlssStart starts the C server for group with chain's leaf and key.
func tlssStart(t testing.TB, k *katcli, group tls13.Group, ch *tlscert.Chain, st tlssConfig) {
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

// tlssHasSigner says whether the firmware takes chain's key (it has the scheme's signer) and
// finds it matches the leaf.
func tlssHasSigner(t testing.TB, k *katcli, ch *tlscert.Chain) bool {
	t.Helper()
	blob, err := ch.KeyBlob()
	if err != nil {
		t.Fatal(err)
	}
	return k.do(t, "tlss-key", hex.EncodeToString(blob), hex.EncodeToString(ch.LeafDER)) == "1 1"
}

// tlssRelay relays bytes between conn, the client's end, and the started C server until
// the server has failed, or it received application data: it then echoes the data back,
// sends close_notify and returns.
func tlssRelay(t *testing.T, k *katcli, conn net.Conn) tlssResult {
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

// tlssEngineRun is what the Go engine's client saw of one connection.
type tlssEngineRun struct {
	err   error
	state tls13.State
	echo  string
}

// tlssEngineClient runs the Go engine's client with cfg over one end of a pipe against the C
// server (started already) on the other: the handshake, "ping" and the echo it reads back.
func tlssEngineClient(t *testing.T, k *katcli, cfg *tls13.Config) (tlssResult, tlssEngineRun) {
	t.Helper()
	clientEnd, serverEnd := net.Pipe()
	done := make(chan tlssEngineRun, 1)
	go func() {
		defer clientEnd.Close()
		c := tls13.Client(clientEnd, cfg)
		var run tlssEngineRun
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
	res := tlssRelay(t, k, serverEnd)
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
		ch, err := tlscert.New(s, tlssHost, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range matrixGroups {
			t.Run(g.String()+"/"+s.String(), func(t *testing.T) {
				if !tlssHasSigner(t, k, ch) {
					t.Fatalf("the firmware does not take the %v key or it does not match its leaf", s)
				}
				tlssStart(t, k, g, ch, tlssConfig{})
				cell := interop.Cell{Group: g, Scheme: s}
				res, run := tlssEngineClient(t, k, interop.EngineClientConfig(cell, ch, tlssHost))
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
	ch, err := tlscert.New(tls13.MLDSA44, tlssHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range matrixGroups {
		t.Run(g.String(), func(t *testing.T) {
			tlssStart(t, k, g, ch, tlssConfig{})
			cfg := interop.EngineClientConfig(interop.Cell{Group: g, Scheme: tls13.MLDSA44}, ch, tlssHost)
			cfg.Groups, cfg.KeyShares = []tls13.Group{tls13.X25519, g}, []tls13.Group{tls13.X25519}
			res, run := tlssEngineClient(t, k, cfg)
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

// tlssSClient runs OpenSSL's s_client against addr as interop.RunOpenSSLClient does, but
// offering groups (an OpenSSL -groups list: the first gets the key share): TLS 1.3,
// TLS_AES_128_GCM_SHA256, sigalg alone, chain's CA the only trust anchor, verification
// errors fatal, host name and SNI tlssHost. It sends "ping" and waits until the server closes.
func tlssSClient(ctx context.Context, ossl *interop.OpenSSL, groups, sigalg string, ch *tlscert.Chain, addr, dir string) (*interop.ClientReport, error) {
	caFile, _, _, err := ch.WritePEM(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, interop.PeerTimeout)
	defer cancel()
	cmd := ossl.Command(ctx, "s_client", "-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256", "-nocommands",
		"-groups", groups, "-sigalgs", sigalg, "-CAfile", caFile, "-verify_return_error",
		"-verify_hostname", tlssHost, "-servername", tlssHost, "-connect", addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	io.WriteString(stdin, "ping\n")
	err = cmd.Wait()
	stdin.Close()
	if err != nil {
		return nil, fmt.Errorf("s_client: %w: %s", err, stderr.String())
	}
	return interop.ParseClientReport(stdout.String())
}

// tlssOpenSSLGroup is whether s_client's reported group name is g's.
func tlssOpenSSLGroup(g tls13.Group, reported string) bool {
	names := map[tls13.Group][]string{
		tls13.MLKEM512: {"MLKEM512"}, tls13.MLKEM768: {"MLKEM768"}, tls13.MLKEM1024: {"MLKEM1024"},
		tls13.X25519: {"X25519"}, tls13.P256: {"secp256r1", "P-256", "prime256v1"},
		tls13.X25519MLKEM768: {"X25519MLKEM768"},
	}[g]
	for _, n := range names {
		if strings.EqualFold(n, reported) {
			return true
		}
	}
	return false
}

// tlssAgainstSClient starts the C server for group with ch and relays one s_client connection
// offering groups to it (see tlssSClient); it checks what both ends report: connected, the
// group and scheme, the chain verified, TLS_AES_128_GCM_SHA256, "ping" echoed.
func tlssAgainstSClient(t *testing.T, k *katcli, ossl *interop.OpenSSL, group tls13.Group, ch *tlscert.Chain, groups string) tlssResult {
	t.Helper()
	_, sigalg, err := interop.Cell{Group: group, Scheme: ch.Scheme}.OpenSSLNames()
	if err != nil {
		t.Fatal(err)
	}
	tlssStart(t, k, group, ch, tlssConfig{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		rep *interop.ClientReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := tlssSClient(t.Context(), ossl, groups, sigalg, ch, ln.Addr().String(), t.TempDir())
		done <- result{rep, err}
	}()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(interop.PeerTimeout))
	conn, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept s_client: %v (%v)", err, (<-done).err)
	}
	res := tlssRelay(t, k, conn)
	conn.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("%v (server state %d, alerts %d/%d)", r.err, res.state, res.sent, res.received)
	}
	if res.state != tlssConnected || string(res.app) != "ping\n" || res.group != int(group) || res.scheme != int(ch.Scheme) {
		t.Fatalf("server state %d, alerts %d/%d, application data %q, group %#04x, scheme %#04x", res.state, res.sent, res.received, res.app, res.group, res.scheme)
	}
	rep := r.rep
	if !tlssOpenSSLGroup(group, rep.Group) || rep.Scheme != sigalg || !rep.Verified || rep.PeerName != tlssHost || rep.Cipher != "TLS_AES_128_GCM_SHA256" {
		t.Fatalf("s_client: group %q, scheme %q, verified %v, peer %q, cipher %q", rep.Group, rep.Scheme, rep.Verified, rep.PeerName, rep.Cipher)
	}
	if !strings.Contains(rep.Output, "\nping\n") {
		t.Fatalf("s_client did not print the echo; output tail: %q", rep.Output[max(0, len(rep.Output)-300):])
	}
	return res
}

// TestTLSServerAgainstOpenSSL runs the C server against OpenSSL 3.5's s_client (the Debian 13
// root of scripts/openssl-root, found as tls13/interop finds it) for the 36 cells of the
// matrix, s_client limited to the cell's group and signature algorithm (tlssAgainstSClient).
func TestTLSServerAgainstOpenSSL(t *testing.T) {
	ossl, err := interop.FindOpenSSL(t.Context())
	if err != nil {
		t.Skipf("no OpenSSL 3.5 to interoperate with: %v", err)
	}
	t.Logf("peer: %s", ossl.Version)
	k := startKatcli(t)
	for _, s := range matrixSchemes {
		ch, err := tlscert.New(s, tlssHost, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range matrixGroups {
			t.Run(g.String()+"/"+s.String(), func(t *testing.T) {
				name, _, _ := interop.Cell{Group: g, Scheme: s}.OpenSSLNames()
				if res := tlssAgainstSClient(t, k, ossl, g, ch, name); res.hrr {
					t.Fatal("a HelloRetryRequest for the one group offered")
				}
			})
		}
	}
}

// TestTLSServerHelloRetryOpenSSL has s_client offer X25519 first (its key share) and the
// server's group second: the C server asks for the second with a HelloRetryRequest and the
// connection completes with it, for each of the other five groups.
func TestTLSServerHelloRetryOpenSSL(t *testing.T) {
	ossl, err := interop.FindOpenSSL(t.Context())
	if err != nil {
		t.Skipf("no OpenSSL 3.5 to interoperate with: %v", err)
	}
	k := startKatcli(t)
	ch, err := tlscert.New(tls13.MLDSA44, tlssHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range matrixGroups[:5] {
		if g == tls13.X25519 {
			continue
		}
		t.Run(g.String(), func(t *testing.T) {
			name, _, _ := interop.Cell{Group: g, Scheme: tls13.MLDSA44}.OpenSSLNames()
			if res := tlssAgainstSClient(t, k, ossl, g, ch, "x25519:"+name); !res.hrr {
				t.Fatal("no HelloRetryRequest")
			}
		})
	}
	t.Run(tls13.X25519MLKEM768.String(), func(t *testing.T) {
		if res := tlssAgainstSClient(t, k, ossl, tls13.X25519MLKEM768, ch, "x25519:X25519MLKEM768"); !res.hrr {
			t.Fatal("no HelloRetryRequest")
		}
	})
}

// TestTLSServerKeys checks tls13s_key_set and tls13s_key_matches for each scheme: a chain's key
// blob is taken and matches its own leaf but not another chain's; a blob cut short, an unknown
// scheme, an ML-DSA seed labelled with another parameter set, and P-256 scalars 0 and n are
// refused or do not match; an RSA blob whose p is changed is refused.
func TestTLSServerKeys(t *testing.T) {
	k := startKatcli(t)
	try := func(blob, leaf []byte) string {
		return k.do(t, "tlss-key", hex.EncodeToString(blob), hex.EncodeToString(leaf))
	}
	chains := map[tls13.SignatureScheme]*tlscert.Chain{}
	for _, s := range matrixSchemes {
		a, err := tlscert.New(s, tlssHost, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		b, err := tlscert.New(s, tlssHost, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		chains[s] = a
		blob, err := a.KeyBlob()
		if err != nil {
			t.Fatal(err)
		}
		if got := try(blob, a.LeafDER); got != "1 1" {
			t.Errorf("%v: own leaf: %s, want 1 1", s, got)
		}
		if got := try(blob, b.LeafDER); got != "1 0" {
			t.Errorf("%v: another leaf: %s, want 1 0", s, got)
		}
		if got := try(blob[:len(blob)-1], a.LeafDER); got != "0 0" {
			t.Errorf("%v: blob a byte short: %s, want 0 0", s, got)
		}
	}
	mldsa44, _ := chains[tls13.MLDSA44].KeyBlob()
	relabelled := append([]byte{0x09, 0x05}, mldsa44[2:]...)
	if got := try(relabelled, chains[tls13.MLDSA65].LeafDER); got != "1 0" {
		t.Errorf("an ML-DSA-44 seed as ML-DSA-65: %s, want 1 0", got)
	}
	if got := try(append([]byte{0x08, 0x05}, mldsa44[2:]...), chains[tls13.MLDSA44].LeafDER); got != "0 0" {
		t.Errorf("an unknown scheme: %s, want 0 0", got)
	}
	n, _ := hex.DecodeString("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")
	for _, d := range [][]byte{make([]byte, 32), n} {
		if got := try(append([]byte{0x04, 0x03}, d...), chains[tls13.ECDSAP256SHA256].LeafDER); got != "0 0" {
			t.Errorf("P-256 d = %x: %s, want 0 0", d, got)
		}
	}
	rsaBlob, _ := chains[tls13.RSAPSSRSAESHA256].KeyBlob()
	rsaBlob[2+256+4+100] ^= 1 // inside p
	if got := try(rsaBlob, chains[tls13.RSAPSSRSAESHA256].LeafDER); got != "0 0" {
		t.Errorf("an RSA blob with p changed: %s, want 0 0", got)
	}
}
