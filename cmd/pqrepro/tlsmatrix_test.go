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
		"CLIENT CPU", "SERVER CPU", "X25519MLKEM768+ML-DSA-87  crypto/tls      ok  2",
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
