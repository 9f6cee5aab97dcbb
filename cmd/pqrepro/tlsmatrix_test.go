package main

import (
	"path/filepath"
	"pqrepro/artifacts"
	"strings"
	"testing"
)

// TestRunTLSMatrixStacks runs paper000/matrix-stacks at n=2 from the command line (real
// loopback handshakes, server children of the test binary) and checks the grids and ratios
// are printed and the bundle verifies.
func TestRunTLSMatrixStacks(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := pq(t, "run", "paper000/matrix-stacks", "--iterations", "2", "--keys", keys, "--out", out)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "spec.tls.batch lowered to 2") {
		t.Errorf("no note of the lowered batch in:\n%s", stderr)
	}
	for _, want := range []string{
		"CLIENT CPU", "SERVER CPU", "X25519MLKEM768+ML-DSA-87  crypto/tls  client      ok  2", "role client: latency is the client's Handshake call",
		"MEDIAN HANDSHAKE (µs), stack pqrepro", "MEDIAN HANDSHAKE (µs), stack crypto/tls",
		"RATIO OF MEDIANS pqrepro / crypto/tls", "24 cells: ratio min",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run output lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = pq(t, "verify", out)
	if code != 0 || !strings.Contains(stdout, "VERIFIED") || !strings.Contains(stdout, "re-derives from samples.csv, tls.csv") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestEveryKindHasACellPrinter: run prints every experiment kind's cells with its own printer.
func TestEveryKindHasACellPrinter(t *testing.T) {
	for _, k := range artifacts.Kinds() {
		if cellPrinters[k] == nil {
			t.Errorf("kind %s has no cell printer", k)
		}
	}
}

// TestRunTLSMatrixServer runs paper000/matrix-server at n=2 from the command line: every row
// names the server role, MEDIAN is said to be the server's own time, the absent rounds say
// why, and the bundle verifies.
func TestRunTLSMatrixServer(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := pq(t, "run", "paper000/matrix-server", "--iterations", "2", "--keys", keys, "--out", out)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"ROLE", "ROUNDS", "X25519MLKEM768+ML-DSA-87  pqrepro  server      ok  2",
		"role server: MEDIAN is the server's own time in its handshake",
		"ROUNDS (ML-DSA rejection rounds per signature, min/median/max): not measured: the engine server's signer, Go's crypto/mldsa",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run output lacks %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, "  server  "); n != 36 {
		t.Errorf("%d rows in the server role, want 36:\n%s", n, stdout)
	}
	code, stdout, stderr = pq(t, "verify", out)
	if code != 0 || !strings.Contains(stdout, "VERIFIED") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}
