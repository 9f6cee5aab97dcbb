package interop

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"pqrepro/tls13"
)

const testHost = "pqrepro.test"

// testEnv is what every interop test shares: the OpenSSL root and one chain per scheme.
type testEnv struct {
	o      *OpenSSL
	chains *Chains
}

var (
	envOnce sync.Once
	env     testEnv
	envErr  error
)

// setup finds the OpenSSL root or fails the test: interop tests never skip for a missing peer.
func setup(t *testing.T) testEnv {
	t.Helper()
	envOnce.Do(func() {
		env.o, envErr = FindOpenSSL(context.Background())
		env.chains = NewChains(testHost, time.Now())
	})
	if envErr != nil {
		t.Fatalf("interop tests need OpenSSL 3.5: %v (scripts/test runs scripts/openssl-root and exports %s)", envErr, OpenSSLRootEnv)
	}
	return env
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// hasLine reports whether out holds want as a whole line.
func hasLine(out, want string) bool {
	for l := range strings.SplitSeq(out, "\n") {
		if strings.TrimRight(l, "\r") == want {
			return true
		}
	}
	return false
}

// message is the line a client sends in cell; the server answers with it reversed.
func message(cell Cell, from string) string { return "pqrepro " + from + " " + cell.String() }

// opensslGroupReported is the name s_client prints as the negotiated group for g.
var opensslGroupReported = map[tls13.Group][]string{
	tls13.X25519: {"X25519", "x25519"},
	tls13.P256:   {"secp256r1", "P-256", "prime256v1"},
}

// checkClientReport checks s_client's report against cell.
func checkClientReport(t *testing.T, cell Cell, rep *ClientReport, wantReply string) {
	t.Helper()
	group, sigalg, _ := cell.OpenSSLNames()
	names := append([]string{group}, opensslGroupReported[cell.Group]...)
	ok := false
	for _, n := range names {
		ok = ok || strings.EqualFold(rep.Group, n)
	}
	if !ok {
		t.Errorf("s_client negotiated group %q, want %q", rep.Group, group)
	}
	if rep.Scheme != sigalg {
		t.Errorf("s_client peer signature type %q, want %q", rep.Scheme, sigalg)
	}
	if !rep.Verified || rep.PeerName != testHost {
		t.Errorf("s_client verification: ok=%v peer name %q, want ok and %q", rep.Verified, rep.PeerName, testHost)
	}
	if rep.Cipher != "TLS_AES_128_GCM_SHA256" {
		t.Errorf("s_client cipher %q, want TLS_AES_128_GCM_SHA256", rep.Cipher)
	}
	if !hasLine(rep.Output, wantReply) {
		t.Errorf("s_client did not receive the line %q; output tail: %s", wantReply, tail(rep.Output, 400))
	}
}

// checkServerReport checks s_server's trace against cell.
func checkServerReport(t *testing.T, cell Cell, rep *ServerReport) {
	t.Helper()
	if rep.Group != uint16(cell.Group) {
		t.Errorf("s_server sent key share group %d, want %d (%v)", rep.Group, uint16(cell.Group), cell.Group)
	}
	if rep.Scheme != uint16(cell.Scheme) {
		t.Errorf("s_server signed CertificateVerify with %#04x, want %#04x (%v)", rep.Scheme, uint16(cell.Scheme), cell.Scheme)
	}
	if rep.HelloRetry {
		t.Errorf("s_server sent a HelloRetryRequest; the client's key share was the cell's group")
	}
}

// TestOpenSSLWithItself makes the harness trustworthy: for every cell, s_client against
// s_server with this package's chains, both ends' reports checked.
func TestOpenSSLWithItself(t *testing.T) {
	e := setup(t)
	for _, cell := range Cells() {
		t.Run(cell.String(), func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := e.o.StartOpenSSLServer(context.Background(), cell, chain, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			msg := message(cell, "s_client")
			crep, cerr := e.o.RunOpenSSLClient(context.Background(), cell, chain, testHost, srv.Addr, []string{msg, "CLOSE"}, t.TempDir())
			srep, serr := srv.Wait()
			if cerr != nil {
				t.Fatal(cerr)
			}
			if serr != nil {
				t.Fatal(serr)
			}
			checkClientReport(t, cell, crep, reverse(msg))
			checkServerReport(t, cell, srep)
		})
	}
}

// TestCryptoTLSWithOpenSSL checks the crypto/tls peers against OpenSSL on every cell crypto/tls
// has, both directions.
func TestCryptoTLSWithOpenSSL(t *testing.T) {
	e := setup(t)
	for _, cell := range Cells() {
		if !cell.CryptoTLSSupports() {
			continue
		}
		t.Run(cell.String()+"/crypto-tls-client", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := e.o.StartOpenSSLServer(context.Background(), cell, chain, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cfg, err := CryptoTLSClientConfig(cell, chain, testHost)
			if err != nil {
				t.Fatal(err)
			}
			cerr := func() error {
				conn, err := tls.Dial("tcp", srv.Addr, cfg)
				if err != nil {
					return fmt.Errorf("crypto/tls client handshake with s_server: %w", err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(PeerTimeout))
				if got, want := conn.ConnectionState().CurveID, mustCurve(cell); got != want {
					t.Errorf("crypto/tls client negotiated %v, want %v", got, want)
				}
				return lineExchange(conn, message(cell, "crypto/tls"))
			}()
			srep, serr := srv.Wait()
			if cerr != nil {
				t.Fatal(cerr)
			}
			if serr != nil {
				t.Fatal(serr)
			}
			checkServerReport(t, cell, srep)
		})
		t.Run(cell.String()+"/crypto-tls-server", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := CryptoTLSServerConfig(cell, chain)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			served := make(chan error, 1)
			var state tls.ConnectionState
			go func() {
				served <- func() error {
					raw, err := ln.Accept()
					if err != nil {
						return err
					}
					conn := tls.Server(raw, cfg)
					defer conn.Close()
					_ = conn.SetDeadline(time.Now().Add(PeerTimeout))
					if err := conn.Handshake(); err != nil {
						return fmt.Errorf("crypto/tls server handshake with s_client: %w", err)
					}
					state = conn.ConnectionState()
					return answerLine(conn)
				}()
			}()
			msg := message(cell, "s_client")
			crep, cerr := e.o.RunOpenSSLClient(context.Background(), cell, chain, testHost, ln.Addr().String(), []string{msg}, t.TempDir())
			ln.Close()
			serr := <-served
			if cerr != nil {
				t.Fatal(cerr)
			}
			if serr != nil {
				t.Fatal(serr)
			}
			if got, want := state.CurveID, mustCurve(cell); got != want {
				t.Errorf("crypto/tls server negotiated %v, want %v", got, want)
			}
			checkClientReport(t, cell, crep, reverse(msg))
		})
	}
}

func mustCurve(cell Cell) tls.CurveID {
	c, _, _ := cell.CryptoTLS()
	return c
}

// lineExchange writes msg as a line and expects it back reversed, as s_server -rev answers.
func lineExchange(conn io.ReadWriter, msg string) error {
	if _, err := fmt.Fprintf(conn, "%s\n", msg); err != nil {
		return fmt.Errorf("write application data: %w", err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read application data (got %q): %w", got, err)
	}
	if want := reverse(msg) + "\n"; got != want {
		return fmt.Errorf("application data: got %q, want %q", got, want)
	}
	return nil
}

// answerLine reads one line and writes it back reversed, then returns (the caller closes).
func answerLine(conn io.ReadWriter) error {
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read application data (got %q): %w", line, err)
	}
	if _, err := fmt.Fprintf(conn, "%s\n", reverse(strings.TrimSuffix(line, "\n"))); err != nil {
		return fmt.Errorf("write application data: %w", err)
	}
	return nil
}
