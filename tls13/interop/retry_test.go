package interop

import (
	"context"
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
			crep, cerr := e.o.runClient(context.Background(), cell, []tls13.Group{otherGroup(cell), cell.Group}, chain, testHost, addr, []string{msg}, t.TempDir())
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
	raw, err := net.DialTimeout("tcp", addr, PeerTimeout)
	if err != nil {
		return tls13.State{}, err
	}
	_ = raw.SetDeadline(time.Now().Add(PeerTimeout))
	conn := tls13.Client(raw, cfg)
	defer conn.Close()
	if err := conn.Handshake(); err != nil {
		return tls13.State{}, fmt.Errorf("engine client handshake: %w", err)
	}
	if err := lineExchange(conn, msg); err != nil {
		return conn.State(), fmt.Errorf("engine client: %w", err)
	}
	return conn.State(), nil
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
			_, cerr := e.o.runClient(context.Background(), cell, nil, chain, "other.test", addr, []string{"x"}, t.TempDir())
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
