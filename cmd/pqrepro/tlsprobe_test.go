package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

const probeHost = "outside.pqrepro.test"

// cryptoTLSServer serves cell with Go's crypto/tls on a loopback port until the test ends:
// every connection is handshaken, then read until the client closes.
func cryptoTLSServer(t *testing.T, cell interop.Cell) (addr, caFile string, chain *tlscert.Chain) {
	t.Helper()
	chain, err := tlscert.New(cell.Scheme, probeHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := interop.CryptoTLSServerConfig(cell, chain)
	if err != nil {
		t.Fatal(err)
	}
	ln := serveLoopback(t, func(c net.Conn) {
		io.Copy(io.Discard, tls.Server(c, cfg))
	})
	caFile, _, _, err = chain.WritePEM(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), caFile, chain
}

// serveLoopback listens on a loopback port until the test ends and runs serve on each
// connection (closed after it, within a minute).
func serveLoopback(t *testing.T, serve func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(time.Minute))
				serve(c)
			}()
		}
	}()
	return ln
}

// TestTLSProbeCryptoTLS: tls-probe against Go's crypto/tls server for an X25519 cell prints
// what was negotiated, the server's leaf and the engine's phases.
func TestTLSProbeCryptoTLS(t *testing.T) {
	cell := interop.Cell{Group: tls13.X25519, Scheme: tls13.ECDSAP256SHA256}
	addr, ca, _ := cryptoTLSServer(t, cell)
	code, stdout, stderr := pq(t, "tls-probe", addr, "--group", "X25519", "--sig", "ECDSA-P256", "--ca", ca, "--servername", probeHost, "--n", "3")
	if code != 0 {
		t.Fatalf("tls-probe: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"group X25519, signature ECDSA-P256, cipher suite TLS_AES_128_GCM_SHA256",
		"SAN " + probeHost, "key ECDSA P-256", "timings over 3 handshake(s)", "chain-verify", "wait (peer + network)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tls-probe output lacks %q:\n%s", want, stdout)
		}
	}
	t.Log("\n" + stdout)
}

// TestTLSProbeErrors: each way a probe fails says which.
func TestTLSProbeErrors(t *testing.T) {
	cell := interop.Cell{Group: tls13.X25519, Scheme: tls13.Ed25519}
	addr, ca, _ := cryptoTLSServer(t, cell)
	other, err := tlscert.New(tls13.Ed25519, probeHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _, _, err := other.WritePEM(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: listen, take the port, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	// A server that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := silent.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"refused", []string{closed, "--group", "X25519", "--sig", "Ed25519", "--ca", ca}, "connection refused: nothing listens there"},
		{"silent", []string{silent.Addr().String(), "--group", "X25519", "--sig", "Ed25519", "--ca", ca, "--timeout", "300ms"}, "timed out after 300ms"},
		{"alert", []string{addr, "--group", "P-256", "--sig", "Ed25519", "--ca", ca, "--servername", probeHost}, "the server sent alert handshake_failure"},
		{"untrusted", []string{addr, "--group", "X25519", "--sig", "Ed25519", "--ca", otherCA, "--servername", probeHost}, "certificate not trusted by the given CA"},
		{"wrong name", []string{addr, "--group", "X25519", "--sig", "Ed25519", "--ca", ca, "--servername", "other.test"}, "bad_certificate"},
		{"no ca", []string{addr, "--group", "X25519", "--sig", "Ed25519"}, "--ca FILE is required"},
		{"not host:port", []string{"localhost", "--group", "X25519", "--sig", "Ed25519", "--ca", ca}, "is not HOST:PORT"},
		{"group", []string{addr, "--group", "X448", "--sig", "Ed25519", "--ca", ca}, "--group \"X448\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := pq(t, append([]string{"tls-probe"}, tt.args...)...)
			if code == 0 || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, want an error containing %q:\n%s%s", code, tt.want, stdout, stderr)
			}
		})
	}
}

// outsideManifest writes a one-cell tls-matrix manifest of group × scheme.
func outsideManifest(t *testing.T, group, scheme string, n int) string {
	t.Helper()
	src := fmt.Sprintf(`apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: outside}
spec:
  tls:
    groups: [%s]
    signatures: [%s]
    batch: 2
  iterations: %d
  warmup: 1
  seed: outside
`, group, scheme, n)
	p := filepath.Join(t.TempDir(), "outside.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runOutside runs manifest against addr and returns the bundle's one cell after verify.
func runOutside(t *testing.T, manifest, addr, ca string) (artifacts.Cell, string) {
	t.Helper()
	cells, out := runOutsideCells(t, manifest, addr, ca)
	if len(cells) != 1 {
		t.Fatalf("%d cells", len(cells))
	}
	return cells[0], out
}

// runOutsideCells runs manifest against addr and returns the bundle's cells after verify.
func runOutsideCells(t *testing.T, manifest, addr, ca string) ([]artifacts.Cell, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := pq(t, "run", manifest, "--tls-server", addr, "--tls-ca", ca, "--tls-servername", probeHost,
		"--keys", filepath.Join(t.TempDir(), "keys"), "--out", out)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	return verifiedResult(t, out).Cells, stdout
}

// verifiedResult checks the bundle at out with pqrepro verify and returns its result.json.
func verifiedResult(t *testing.T, out string) artifacts.Result {
	t.Helper()
	code, vout, verr := pq(t, "verify", out)
	if code != 0 || !strings.Contains(vout, "VERIFIED") {
		t.Fatalf("verify: exit %d\n%s%s", code, vout, verr)
	}
	data, err := os.ReadFile(filepath.Join(out, artifacts.FileResult))
	if err != nil {
		t.Fatal(err)
	}
	var res artifacts.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRunAgainstCryptoTLS: run --tls-server sends an X25519 cell's handshakes to Go's crypto/tls
// server; the cell records the peer, no server CPU, and the bundle verifies.
func TestRunAgainstCryptoTLS(t *testing.T) {
	cell := interop.Cell{Group: tls13.X25519, Scheme: tls13.ECDSAP256SHA256}
	addr, ca, chain := cryptoTLSServer(t, cell)
	m := outsideManifest(t, "X25519", "ECDSA-P256", 4)
	data, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	// Both client stacks, each against the same outside server.
	data = []byte(strings.Replace(string(data), "    batch: 2", "    batch: 2\n    stacks: [pqrepro, crypto/tls]", 1))
	if err := os.WriteFile(m, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cells, _ := runOutsideCells(t, m, addr, ca)
	if len(cells) != 2 || cells[1].Variant != "stack: crypto/tls" {
		t.Fatalf("cells %+v", cells)
	}
	for _, c := range cells {
		checkOutsideCell(t, c, addr, "ECDSA P-256", chain, 4)
	}
}

func checkOutsideCell(t *testing.T, c artifacts.Cell, addr, key string, chain *tlscert.Chain, n int) {
	t.Helper()
	if c.Status != artifacts.StatusOK || c.Stats == nil || c.Stats.N != n {
		t.Fatalf("cell %s: %s %s, stats %+v", c.Algorithm, c.Status, c.Error, c.Stats)
	}
	p := c.TLS.Server
	switch {
	case p == nil:
		t.Fatal("no peer recorded")
	case p.Address != addr || p.KeyAlgorithm != key || p.Leaf != artifacts.Digest(chain.LeafDER):
		t.Fatalf("peer %+v, want %s, %s, the leaf's digest", p, addr, key)
	case c.TLS.ServerCPU != nil:
		t.Fatal("server CPU recorded for an outside server")
	}
	if !strings.Contains(c.Counter, addr) {
		t.Errorf("counter %q does not name the server", c.Counter)
	}
}

// TestOutsideOnlyOnHost: --tls-ca without an outside server, and --tls-server on another kind,
// are refused.
func TestOutsideFlagsRefused(t *testing.T) {
	m := outsideManifest(t, "X25519", "Ed25519", 2)
	code, _, stderr := pq(t, "run", m, "--tls-ca", "x.pem", "--keys", filepath.Join(t.TempDir(), "k"))
	if code == 0 || !strings.Contains(stderr, "apply only to a tls-matrix against an outside server") {
		t.Fatalf("--tls-ca alone: exit %d: %s", code, stderr)
	}
	code, _, stderr = pq(t, "run", "paper001/mlkem", "--tls-server", "127.0.0.1:1", "--keys", filepath.Join(t.TempDir(), "k"))
	if code == 0 || !strings.Contains(stderr, "not a tls-matrix") {
		t.Fatalf("--tls-server on a kem-bench: exit %d: %s", code, stderr)
	}
	code, _, stderr = pq(t, "run", m, "--tls-server", "nowhere", "--keys", filepath.Join(t.TempDir(), "k"))
	if code == 0 || !strings.Contains(stderr, "neither engine nor HOST:PORT") {
		t.Fatalf("--tls-server nowhere: exit %d: %s", code, stderr)
	}
}

// findOpenSSL is the Debian 13 root's OpenSSL; the test skips only when no root exists.
func findOpenSSL(t *testing.T) *interop.OpenSSL {
	t.Helper()
	o, err := interop.FindOpenSSL(context.Background())
	if errors.Is(err, interop.ErrNoOpenSSL) {
		t.Skipf("no OpenSSL root: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestProbeAndRunAgainstOpenSSL: OpenSSL 3.5's s_server for ML-KEM-768 × ML-DSA-44 answers
// tls-probe, then a run's cell (1 warm-up + 4 timed handshakes) through --tls-server.
func TestProbeAndRunAgainstOpenSSL(t *testing.T) {
	o := findOpenSSL(t)
	cell := interop.Cell{Group: tls13.MLKEM768, Scheme: tls13.MLDSA44}
	chain, err := tlscert.New(cell.Scheme, probeHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile, _, _, err := chain.WritePEM(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := o.StartOpenSSLServerN(context.Background(), cell, chain, dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, stdout, stderr := pq(t, "tls-probe", srv.Addr, "--group", "ML-KEM-768", "--sig", "ML-DSA-44", "--ca", caFile, "--servername", probeHost, "--n", "3")
	if code != 0 {
		t.Fatalf("tls-probe against %s: exit %d\n%s%s", o.Version, code, stdout, stderr)
	}
	for _, want := range []string{"group ML-KEM-768, signature ML-DSA-44", "key ML-DSA-44", "SAN " + probeHost} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tls-probe output lacks %q:\n%s", want, stdout)
		}
	}
	t.Logf("tls-probe against %s:\n%s", o.Version, stdout)
	if _, err := srv.Wait(); err != nil {
		t.Fatalf("s_server: %v", err)
	}

	srv, err = o.StartOpenSSLServerN(context.Background(), cell, chain, t.TempDir(), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, runOut := runOutside(t, outsideManifest(t, "ML-KEM-768", "ML-DSA-44", 4), srv.Addr, caFile)
	checkOutsideCell(t, c, srv.Addr, "ML-DSA-44", chain, 4)
	if !strings.Contains(runOut, "server: the outside server at "+srv.Addr+" answered") {
		t.Errorf("run does not name the server that answered:\n%s", runOut)
	}
	if len(c.TLS.Phases) == 0 {
		t.Error("no client phases recorded")
	}
	for _, p := range c.TLS.Phases {
		if p.Side != artifacts.SideClient {
			t.Errorf("a %s %s phase against an outside server", p.Side, p.Name)
		}
	}
	t.Logf("run against %s:\n%s", o.Version, runOut)
}

// TestBundleBeforeServerFieldVerifies: a tls-matrix bundle made by the build before
// spec.tls.server existed (main at 53632ef, one cell ML-KEM-768+ML-DSA-44, n=4, the engine's own
// server) still verifies and re-derives, and its manifest keeps its identity.
func TestBundleBeforeServerFieldVerifies(t *testing.T) {
	code, stdout, stderr := pq(t, "verify", filepath.Join("testdata", "tls-matrix-before-server-field.tar.gz"))
	if code != 0 || !strings.Contains(stdout, "VERIFIED") || !strings.Contains(stdout, "re-derives from samples.csv, tls.csv") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}
