package interop

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// TestDeterministicEngineServer: on the 36 paper cells, the engine's server as a seeded board
// cell runs it — a chain made by NewSeededCA and IssueSeeded, Config.Deterministic with a
// seeded Rand — is accepted by s_client (the seeded CA and leaf verified, the RFC 6979 ECDSA
// and seeded-salt RSA-PSS CertificateVerify checked by OpenSSL) and, on the cells it has, by
// crypto/tls's client.
func TestDeterministicEngineServer(t *testing.T) {
	e := setup(t)
	chains := map[tls13.SignatureScheme]*tlscert.Chain{}
	for _, s := range tls13.SignatureSchemes() {
		ca, err := tlscert.NewSeededCA(s, []byte("interop seed"))
		if err != nil {
			t.Fatal(err)
		}
		if chains[s], err = ca.IssueSeeded(testHost, []byte("interop seed")); err != nil {
			t.Fatal(err)
		}
	}
	seeded := func(t *testing.T, cell Cell, chain *tlscert.Chain) (string, <-chan engineResult) {
		cfg, err := EngineServerConfig(cell, chain)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Rand, cfg.Deterministic = mrand.NewChaCha8([32]byte{byte(cell.Group), byte(cell.Scheme)}), true
		return engineServeConfig(t, cfg)
	}
	for _, cell := range PaperCells() {
		chain := chains[cell.Scheme]
		t.Run(cell.String()+"/s_client", func(t *testing.T) {
			t.Parallel()
			addr, res := seeded(t, cell, chain)
			msg := message(cell, "s_client")
			crep, cerr := e.o.RunOpenSSLClient(context.Background(), cell, chain, testHost, addr, []string{msg}, t.TempDir())
			r := <-res
			if cerr != nil || r.err != nil {
				t.Fatalf("s_client: %v; deterministic engine server: %v", cerr, r.err)
			}
			checkEngineState(t, "server", cell, r.state, chain)
			checkClientReport(t, cell, crep, reverse(msg))
		})
		if !cell.CryptoTLSSupports() {
			continue
		}
		t.Run(cell.String()+"/crypto-tls", func(t *testing.T) {
			t.Parallel()
			addr, res := seeded(t, cell, chain)
			cfg, err := CryptoTLSClientConfig(cell, chain, testHost)
			if err != nil {
				t.Fatal(err)
			}
			cerr := func() error {
				conn, _, err := observedDial(addr, cfg)
				if err != nil {
					return fmt.Errorf("crypto/tls client handshake: %w", err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(PeerTimeout))
				return lineExchange(conn, message(cell, "crypto/tls"))
			}()
			r := <-res
			if cerr != nil || r.err != nil {
				t.Fatalf("crypto/tls client: %v; deterministic engine server: %v", cerr, r.err)
			}
			checkEngineState(t, "server", cell, r.state, chain)
		})
	}
}
