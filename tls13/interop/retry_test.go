package interop

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
)

// retryCells are the cells the HelloRetryRequest and failure tests run on: a pure ML-KEM, the
// paper's hybrid, an extra hybrid and an ECDH group, across the algorithm families.
var retryCells = []Cell{
	{tls13.MLKEM512, tls13.MLDSA44},
	{tls13.X25519MLKEM768, tls13.Ed25519},
	{tls13.SecP384r1MLKEM1024, tls13.RSAPSSRSAESHA256},
	{tls13.P256, tls13.MLDSA87},
}

// otherGroup is a group to send a key share for that is not cell's.
func otherGroup(cell Cell) tls13.Group {
	if cell.Group == tls13.X25519 {
		return tls13.P256
	}
	return tls13.X25519
}

// TestHelloRetryWithOpenSSL: a client whose one key share is a group the server does not
// accept, though it offers the cell's group too, gets a HelloRetryRequest and completes the
// handshake in the cell's group; both directions against OpenSSL.
func TestHelloRetryWithOpenSSL(t *testing.T) {
	e := setup(t)
	for _, cell := range retryCells {
		t.Run(cell.String()+"/engine-client", func(t *testing.T) {
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
			cfg := EngineClientConfig(cell, chain, testHost)
			cfg.Groups = []tls13.Group{otherGroup(cell), cell.Group}
			cfg.KeyShares = []tls13.Group{otherGroup(cell)}
			st, cerr := dialWith(cfg, srv.Addr, message(cell, "engine"))
			srep, serr := srv.Wait()
			if cerr != nil || serr != nil {
				t.Fatalf("engine client: %v; s_server: %v", cerr, serr)
			}
			if !st.HelloRetry || st.Group != cell.Group || st.Scheme != cell.Scheme {
				t.Errorf("engine client: HelloRetry %v group %v scheme %v, want a retry into %v", st.HelloRetry, st.Group, st.Scheme, cell)
			}
			if !srep.HelloRetry || srep.Group != uint16(cell.Group) || srep.Scheme != uint16(cell.Scheme) {
				t.Errorf("s_server: HelloRetry %v group %d scheme %#04x, want a retry into %v", srep.HelloRetry, srep.Group, srep.Scheme, cell)
			}
		})
		t.Run(cell.String()+"/engine-server", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			addr, res := engineServe(t, cell, chain)
			msg := message(cell, "s_client")
			crep, cerr := e.o.runClient(context.Background(), cell, []tls13.Group{otherGroup(cell), cell.Group}, tls13.TLS_AES_128_GCM_SHA256, chain, testHost, addr, []string{msg}, t.TempDir())
			r := <-res
			if cerr != nil || r.err != nil {
				t.Fatalf("s_client: %v; engine server: %v", cerr, r.err)
			}
			if !r.state.HelloRetry || r.state.Group != cell.Group || r.state.Scheme != cell.Scheme {
				t.Errorf("engine server: HelloRetry %v group %v scheme %v, want a retry into %v", r.state.HelloRetry, r.state.Group, r.state.Scheme, cell)
			}
			checkClientReport(t, cell, crep, reverse(msg))
		})
	}
}

func dialWith(cfg *tls13.Config, addr, msg string) (tls13.State, error) {
	st, _, err := dialStats(cfg, addr, msg)
	return st, err
}

// TestRefusalsWithOpenSSL: the harness reports a failed verification as a failure, in both
// directions: the engine's client refuses s_server's leaf under another chain's CA with
// unknown_ca, and s_client refuses the engine's server for a host name its leaf lacks.
func TestRefusalsWithOpenSSL(t *testing.T) {
	e := setup(t)
	other := NewChains(testHost, time.Now())
	for _, cell := range retryCells {
		t.Run(cell.String()+"/untrusted-CA", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			stranger, err := other.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := e.o.StartOpenSSLServer(context.Background(), cell, chain, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			// The client lingers after its alert (half-close, then read to the end) so that
			// s_server reads the alert: closing with the server's flight unread would reset the
			// connection, and the reset can overtake the alert.
			cerr := func() error {
				raw, err := net.DialTimeout("tcp", srv.Addr, PeerTimeout)
				if err != nil {
					return err
				}
				defer raw.Close()
				_ = raw.SetDeadline(time.Now().Add(PeerTimeout))
				herr := tls13.Client(raw, EngineClientConfig(cell, stranger, testHost)).Handshake()
				_ = raw.(*net.TCPConn).CloseWrite()
				_, _ = io.Copy(io.Discard, raw)
				return herr
			}()
			_, serr := srv.Wait()
			var ae *tls13.AlertError
			if !errors.As(cerr, &ae) || ae.Remote || ae.Alert != tls13.AlertUnknownCA {
				t.Errorf("engine client under another CA: %v, want unknown_ca sent", cerr)
			}
			if serr == nil || !strings.Contains(serr.Error(), "unknown CA(48)") {
				t.Errorf("s_server after the client refused: %v, want no connection and unknown CA(48) received", serr)
			}
		})
		t.Run(cell.String()+"/wrong-host", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			addr, res := engineServe(t, cell, chain)
			_, cerr := e.o.runClient(context.Background(), cell, nil, tls13.TLS_AES_128_GCM_SHA256, chain, "other.test", addr, []string{"x"}, t.TempDir())
			r := <-res
			if cerr == nil || !strings.Contains(cerr.Error(), "hostname mismatch") {
				t.Errorf("s_client for the wrong host name: %v, want a hostname mismatch", cerr)
			}
			var ae *tls13.AlertError
			if !errors.As(r.err, &ae) || !ae.Remote {
				t.Errorf("engine server: %v, want the alert s_client sent", r.err)
			}
		})
	}
}

// TestHelloRetryWithCryptoTLS is TestHelloRetryWithOpenSSL against crypto/tls, on the retry
// cells crypto/tls has; crypto/tls reports the retry in ConnectionState.HelloRetryRequest.
func TestHelloRetryWithCryptoTLS(t *testing.T) {
	e := setup(t)
	for _, cell := range retryCells {
		if !cell.CryptoTLSSupports() {
			continue
		}
		other, _, _ := Cell{Group: otherGroup(cell), Scheme: cell.Scheme}.CryptoTLS()
		t.Run(cell.String()+"/engine-client", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			scfg, err := CryptoTLSServerConfig(cell, chain)
			if err != nil {
				t.Fatal(err)
			}
			addr, served := cryptoTLSServe(t, scfg)
			cfg := EngineClientConfig(cell, chain, testHost)
			cfg.Groups = []tls13.Group{otherGroup(cell), cell.Group}
			cfg.KeyShares = []tls13.Group{otherGroup(cell)}
			st, cerr := dialWith(cfg, addr, message(cell, "engine"))
			r := <-served
			if cerr != nil || r.err != nil {
				t.Fatalf("engine client: %v; crypto/tls server: %v", cerr, r.err)
			}
			if !st.HelloRetry || st.Group != cell.Group || st.Scheme != cell.Scheme {
				t.Errorf("engine client: HelloRetry %v group %v scheme %v, want a retry into %v", st.HelloRetry, st.Group, st.Scheme, cell)
			}
			if !r.state.HelloRetryRequest || r.state.CurveID != mustCurve(cell) {
				t.Errorf("crypto/tls server: HelloRetryRequest %v curve %v, want a retry into %v", r.state.HelloRetryRequest, r.state.CurveID, mustCurve(cell))
			}
		})
		t.Run(cell.String()+"/engine-server", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			addr, res := engineServe(t, cell, chain)
			cfg, err := CryptoTLSClientConfig(cell, chain, testHost)
			if err != nil {
				t.Fatal(err)
			}
			cfg.CurvePreferences = []tls.CurveID{other, mustCurve(cell)}
			var peer tls.ConnectionState
			cerr := func() error {
				conn, scheme, err := observedDial(addr, cfg)
				if err != nil {
					return fmt.Errorf("crypto/tls client handshake with the engine: %w", err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(PeerTimeout))
				peer = conn.ConnectionState()
				if s, err := scheme(); err != nil || s != uint16(cell.Scheme) {
					t.Errorf("crypto/tls client read CertificateVerify scheme %#04x (%v), want %#04x (%v)", s, err, uint16(cell.Scheme), cell.Scheme)
				}
				return lineExchange(conn, message(cell, "crypto/tls"))
			}()
			r := <-res
			if cerr != nil || r.err != nil {
				t.Fatalf("crypto/tls client: %v; engine server: %v", cerr, r.err)
			}
			// crypto/tls ignores the order of CurvePreferences and always sends its key share
			// for a post-quantum group it is given first: a retry happens only in an ECDH cell.
			wantRetry := cell.Group == tls13.X25519 || cell.Group == tls13.P256
			if r.state.HelloRetry != wantRetry || r.state.Group != cell.Group || r.state.Scheme != cell.Scheme {
				t.Errorf("engine server: HelloRetry %v group %v scheme %v, want retry %v into %v", r.state.HelloRetry, r.state.Group, r.state.Scheme, wantRetry, cell)
			}
			if peer.HelloRetryRequest != wantRetry || peer.CurveID != mustCurve(cell) {
				t.Errorf("crypto/tls client: HelloRetryRequest %v curve %v, want retry %v into %v", peer.HelloRetryRequest, peer.CurveID, wantRetry, mustCurve(cell))
			}
		})
	}
}

type cryptoTLSResult struct {
	state tls.ConnectionState
	err   error
}

// cryptoTLSServe starts a crypto/tls server on a loopback port for one connection: handshake,
// one line answered reversed, close.
func cryptoTLSServe(t *testing.T, cfg *tls.Config) (string, <-chan cryptoTLSResult) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	res := make(chan cryptoTLSResult, 1)
	go func() {
		var r cryptoTLSResult
		r.err = func() error {
			raw, err := ln.Accept()
			ln.Close()
			if err != nil {
				return err
			}
			conn := tls.Server(raw, cfg)
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(PeerTimeout))
			if err := conn.Handshake(); err != nil {
				return fmt.Errorf("crypto/tls server handshake: %w", err)
			}
			r.state = conn.ConnectionState()
			return answerLine(conn)
		}()
		res <- r
	}()
	return ln.Addr().String(), res
}

// TestCipherSuitesWithOpenSSL: the engine's two other suites (AES-256-GCM with SHA-384 and
// ChaCha20-Poly1305) against OpenSSL accepting or offering that suite alone, both directions,
// on one post-quantum cell.
func TestCipherSuitesWithOpenSSL(t *testing.T) {
	e := setup(t)
	cell := Cell{tls13.X25519MLKEM768, tls13.MLDSA65}
	for _, suite := range []tls13.CipherSuite{tls13.TLS_AES_256_GCM_SHA384, tls13.TLS_CHACHA20_POLY1305_SHA256} {
		t.Run(suite.String()+"/engine-client", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := e.o.startServer(context.Background(), cell, chain, t.TempDir(), suite)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cfg := EngineClientConfig(cell, chain, testHost)
			cfg.CipherSuites = []tls13.CipherSuite{suite}
			st, cerr := dialWith(cfg, srv.Addr, message(cell, "engine"))
			srep, serr := srv.Wait()
			if cerr != nil || serr != nil {
				t.Fatalf("engine client: %v; s_server: %v", cerr, serr)
			}
			if st.CipherSuite != suite || st.Group != cell.Group || st.Scheme != cell.Scheme {
				t.Errorf("engine client: %v %v %v, want %v in %v", st.CipherSuite, st.Group, st.Scheme, suite, cell)
			}
			if srep.CipherSuite != uint16(suite) || srep.Group != uint16(cell.Group) || srep.Scheme != uint16(cell.Scheme) {
				t.Errorf("s_server: suite %#04x group %d scheme %#04x, want %v in %v", srep.CipherSuite, srep.Group, srep.Scheme, suite, cell)
			}
		})
		t.Run(suite.String()+"/engine-server", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := EngineServerConfig(cell, chain)
			if err != nil {
				t.Fatal(err)
			}
			cfg.CipherSuites = []tls13.CipherSuite{suite}
			addr, res := engineServeConfig(t, cfg)
			msg := message(cell, "s_client")
			crep, cerr := e.o.runClient(context.Background(), cell, nil, suite, chain, testHost, addr, []string{msg}, t.TempDir())
			r := <-res
			if cerr != nil || r.err != nil {
				t.Fatalf("s_client: %v; engine server: %v", cerr, r.err)
			}
			if r.state.CipherSuite != suite {
				t.Errorf("engine server: suite %v, want %v", r.state.CipherSuite, suite)
			}
			if crep.Cipher != suite.String() || !hasLine(crep.Output, reverse(msg)) {
				t.Errorf("s_client: cipher %q, want %v; reply received %v", crep.Cipher, suite, hasLine(crep.Output, reverse(msg)))
			}
		})
	}
}
