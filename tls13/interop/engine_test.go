package interop

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// checkEngineState checks what the engine says it negotiated in cell.
func checkEngineState(t *testing.T, side string, cell Cell, st tls13.State, chain *tlscert.Chain) {
	t.Helper()
	if st.Group != cell.Group {
		t.Errorf("engine %s negotiated group %v, want %v", side, st.Group, cell.Group)
	}
	if st.Scheme != cell.Scheme {
		t.Errorf("engine %s CertificateVerify scheme %v, want %v", side, st.Scheme, cell.Scheme)
	}
	if st.CipherSuite != tls13.TLS_AES_128_GCM_SHA256 {
		t.Errorf("engine %s cipher suite %v, want TLS_AES_128_GCM_SHA256", side, st.CipherSuite)
	}
	if st.HelloRetry {
		t.Errorf("engine %s: HelloRetryRequest, though the client's key share was the cell's group", side)
	}
	if side == "client" && (len(st.PeerCertificates) != 1 || !st.PeerCertificates[0].Equal(chain.Leaf)) {
		t.Errorf("engine client: peer certificates %d, want the chain's leaf alone", len(st.PeerCertificates))
	}
}

// engineDial runs the engine's client for cell against addr: handshake, msg out, msg reversed
// back, close_notify. It returns the engine's State.
func engineDial(cell Cell, chain *tlscert.Chain, addr, msg string) (tls13.State, error) {
	raw, err := net.DialTimeout("tcp", addr, PeerTimeout)
	if err != nil {
		return tls13.State{}, err
	}
	_ = raw.SetDeadline(time.Now().Add(PeerTimeout))
	conn := tls13.Client(raw, EngineClientConfig(cell, chain, testHost))
	defer conn.Close()
	if err := conn.Handshake(); err != nil {
		return tls13.State{}, fmt.Errorf("engine client handshake: %w", err)
	}
	if err := lineExchange(conn, msg); err != nil {
		return conn.State(), fmt.Errorf("engine client: %w", err)
	}
	return conn.State(), nil
}

// engineServe starts the engine's server for cell on a loopback port; it serves one
// connection (handshake, one line answered reversed, close_notify) and reports on the channel.
func engineServe(t *testing.T, cell Cell, chain *tlscert.Chain) (string, <-chan engineResult) {
	t.Helper()
	cfg, err := EngineServerConfig(cell, chain)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	res := make(chan engineResult, 1)
	go func() {
		var r engineResult
		r.err = func() error {
			raw, err := ln.Accept()
			ln.Close()
			if err != nil {
				return err
			}
			_ = raw.SetDeadline(time.Now().Add(PeerTimeout))
			conn := tls13.Server(raw, cfg)
			defer conn.Close()
			if err := conn.Handshake(); err != nil {
				return fmt.Errorf("engine server handshake: %w", err)
			}
			r.state = conn.State()
			if err := answerLine(conn); err != nil {
				return fmt.Errorf("engine server: %w", err)
			}
			return nil
		}()
		res <- r
	}()
	return ln.Addr().String(), res
}

type engineResult struct {
	state tls13.State
	err   error
}

// TestEngineWithCryptoTLS: on every cell crypto/tls has, the engine's client against a
// crypto/tls server and a crypto/tls client against the engine's server.
func TestEngineWithCryptoTLS(t *testing.T) {
	e := setup(t)
	for _, cell := range Cells() {
		if !cell.CryptoTLSSupports() {
			continue
		}
		t.Run(cell.String()+"/engine-client", func(t *testing.T) {
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
			var peer tls.ConnectionState
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
						return fmt.Errorf("crypto/tls server handshake with the engine: %w", err)
					}
					peer = conn.ConnectionState()
					return answerLine(conn)
				}()
			}()
			st, cerr := engineDial(cell, chain, ln.Addr().String(), message(cell, "engine"))
			ln.Close()
			serr := <-served
			if cerr != nil || serr != nil {
				t.Fatalf("engine client: %v; crypto/tls server: %v", cerr, serr)
			}
			checkEngineState(t, "client", cell, st, chain)
			checkCryptoTLSState(t, "server", cell, peer)
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
			var peer tls.ConnectionState
			cerr := func() error {
				conn, err := tls.Dial("tcp", addr, cfg)
				if err != nil {
					return fmt.Errorf("crypto/tls client handshake with the engine: %w", err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(PeerTimeout))
				peer = conn.ConnectionState()
				return lineExchange(conn, message(cell, "crypto/tls"))
			}()
			r := <-res
			if cerr != nil || r.err != nil {
				t.Fatalf("crypto/tls client: %v; engine server: %v", cerr, r.err)
			}
			checkEngineState(t, "server", cell, r.state, chain)
			checkCryptoTLSState(t, "client", cell, peer)
			if len(peer.PeerCertificates) != 1 || !peer.PeerCertificates[0].Equal(chain.Leaf) || len(peer.VerifiedChains) != 1 {
				t.Errorf("crypto/tls client: %d peer certificates, %d verified chains; want the leaf, one chain", len(peer.PeerCertificates), len(peer.VerifiedChains))
			}
		})
	}
}

// checkCryptoTLSState checks what crypto/tls negotiated (it reports no signature scheme).
func checkCryptoTLSState(t *testing.T, side string, cell Cell, st tls.ConnectionState) {
	t.Helper()
	if st.CurveID != mustCurve(cell) {
		t.Errorf("crypto/tls %s negotiated %v, want %v", side, st.CurveID, mustCurve(cell))
	}
	if st.Version != tls.VersionTLS13 || st.CipherSuite != tls.TLS_AES_128_GCM_SHA256 {
		t.Errorf("crypto/tls %s: version %#x suite %#x, want TLS 1.3 with TLS_AES_128_GCM_SHA256", side, st.Version, st.CipherSuite)
	}
	if st.DidResume {
		t.Errorf("crypto/tls %s: resumed", side)
	}
}

// TestEngineWithOpenSSL: on all 48 cells, the engine's client against s_server and s_client
// against the engine's server.
func TestEngineWithOpenSSL(t *testing.T) {
	e := setup(t)
	for _, cell := range Cells() {
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
			st, cerr := engineDial(cell, chain, srv.Addr, message(cell, "engine"))
			srep, serr := srv.Wait()
			if cerr != nil || serr != nil {
				t.Fatalf("engine client: %v; s_server: %v", cerr, serr)
			}
			checkEngineState(t, "client", cell, st, chain)
			checkServerReport(t, cell, srep)
		})
		t.Run(cell.String()+"/engine-server", func(t *testing.T) {
			t.Parallel()
			chain, err := e.chains.Get(cell.Scheme)
			if err != nil {
				t.Fatal(err)
			}
			addr, res := engineServe(t, cell, chain)
			msg := message(cell, "s_client")
			crep, cerr := e.o.RunOpenSSLClient(context.Background(), cell, chain, testHost, addr, []string{msg}, t.TempDir())
			r := <-res
			if cerr != nil || r.err != nil {
				t.Fatalf("s_client: %v; engine server: %v", cerr, r.err)
			}
			checkEngineState(t, "server", cell, r.state, chain)
			checkClientReport(t, cell, crep, reverse(msg))
		})
	}
}
