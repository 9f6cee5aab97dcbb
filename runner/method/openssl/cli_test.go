package openssl

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/runner/trial"
)

// A sign command that cannot work (an ML-KEM key given to pkeyutl -sign) fails the cell with
// OpenSSL's own message and leaves no samples.
func TestOpenSSLCLIFailingCommandIsNeverTimed(t *testing.T) {
	cfg := testOpenSSL(t)
	o, err := Resolve(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := opensslManifest(t, artifacts.KindSigBench, []string{"ML-DSA-44"}, []string{"sign"}, 3)
	wrong := osslRecipe{alg: "ML-DSA-44", keyAlg: "ML-DSA-44", gen: []string{"genpkey", "-algorithm", "ML-KEM-768", "-out", osslPriv}}
	r, err := o.osslCell(context.Background(), t.TempDir(), m, artifacts.CellRef{Algorithm: "ML-DSA-44", Operation: "sign"}, wrong, nil,
		trial.Plan{Warmup: 1, Iterations: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Cell.Status != artifacts.StatusFailed || len(r.Samples) != 0 || r.Cell.Stats != nil || r.Cell.Commands != nil {
		t.Fatalf("cell %+v with %d samples, want failed and untimed", r.Cell, len(r.Samples))
	}
	if !strings.HasPrefix(r.Cell.Error, "the paper's command fails: `openssl pkeyutl -sign") || !strings.Contains(r.Cell.Error, "not supported for this keytype") {
		t.Fatalf("reason %q does not carry OpenSSL's message", r.Cell.Error)
	}
}

func TestParseOpenSSLVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		ok35 bool
		bad  bool
	}{
		{in: "OpenSSL 3.5.9 29 Sep 2026 (Library: OpenSSL 3.5.9 29 Sep 2026)\n", want: Version{3, 5, 9}, ok35: true},
		{in: "OpenSSL 3.6.0 1 Oct 2025", want: Version{3, 6, 0}, ok35: true},
		{in: "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)", want: Version{3, 0, 19}},
		{in: "OpenSSL 3.5.0 8 Apr 2025 (Library: OpenSSL 3.0.2 15 Mar 2022)", want: Version{3, 0, 2}}, // the library decides
		{in: "OpenSSL 1.1.1w  11 Sep 2023", want: Version{1, 1, 1}},
		{in: "OpenSSL 4.0.0 1 Apr 2026", want: Version{4, 0, 0}, ok35: true},
		{in: "LibreSSL 3.8.2", bad: true},
		{in: "", bad: true},
	} {
		v, err := ParseVersion(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed as %v", tc.in, v)
			}
			continue
		}
		if err != nil || v != tc.want || v.AtLeast(3, 5) != tc.ok35 {
			t.Errorf("%q: %v, %v (3.5+ %v), want %v", tc.in, v, err, v.AtLeast(3, 5), tc.want)
		}
	}
}

func TestParseOpenSSLProviders(t *testing.T) {
	out := "Providers:\n  default\n    name: OpenSSL Default Provider\n    version: 3.5.9\n    status: active\n  legacy\n    name: OpenSSL Legacy Provider\n    version: 3.5.9\n    status: active\n"
	got := ParseProviders(out)
	want := []string{"default: OpenSSL Default Provider 3.5.9 (active)", "legacy: OpenSSL Legacy Provider 3.5.9 (active)"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestOpenSSLAlgorithmsMatchManifestValidation(t *testing.T) {
	if got, want := OpenSSLAlgorithms(), artifacts.OpenSSLCLIAlgorithms(); !slices.Equal(got, want) {
		t.Fatalf("the executor runs %q, manifests allow %q", got, want)
	}
}

func FuzzParseOpenSSLVersion(f *testing.F) {
	for _, s := range []string{"OpenSSL 3.5.9 29 Sep 2026 (Library: OpenSSL 3.5.9 29 Sep 2026)", "OpenSSL 3.0.19 27 Jan 2026", "LibreSSL 3.8.2", "OpenSSL 99999.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err == nil && (v.Major < 0 || v.Minor < 0 || v.Patch < 0) {
			t.Fatalf("%q: negative version %v", s, v)
		}
	})
}

func FuzzParseOpenSSLProviders(f *testing.F) {
	f.Add("Providers:\n  default\n    name: OpenSSL Default Provider\n    version: 3.5.9\n    status: active\n")
	f.Add("  x\n  y: z\n\t\tname:")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range ParseProviders(s) {
			if p == "" || len(p) > 300 {
				t.Fatalf("provider line %q", p)
			}
		}
	})
}

func FuzzParsePEMKeyPair(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	pk8, _ := x509.MarshalPKCS8PrivateKey(priv)
	spki, _ := x509.MarshalPKIXPublicKey(pub)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk8}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"), []byte{})
	f.Fuzz(func(t *testing.T, privPEM, pubPEM []byte) {
		k, err := parsePEMKeyPair(privPEM, pubPEM)
		if err == nil && (k.alg == "" || len(k.pubRaw) == 0 || k.pub == nil || k.priv == nil) {
			t.Fatalf("accepted an incomplete key %+v", k)
		}
	})
}

// testOpenSSL is the OpenSSL 3.5 root the tests run: $PQREPRO_OPENSSL_ROOT (scripts/test
// makes it with scripts/openssl-root). Unset, the test is skipped; set but missing or
// broken, the test fails.
func testOpenSSL(t *testing.T) Config {
	t.Helper()
	root := os.Getenv("PQREPRO_OPENSSL_ROOT")
	if root == "" {
		t.Skip("PQREPRO_OPENSSL_ROOT is not set: make an OpenSSL 3.5 root with scripts/openssl-root and set PQREPRO_OPENSSL_ROOT to the root it prints (scripts/test does both)")
	}
	cfg := Config{Root: root}
	if _, err := Resolve(context.Background(), cfg); err != nil {
		t.Fatalf("PQREPRO_OPENSSL_ROOT=%s is not a usable OpenSSL 3.5 root (rebuild it with scripts/openssl-root): %v", root, err)
	}
	return cfg
}

func opensslManifest(t *testing.T, kind artifacts.Kind, algs, ops []string, iterations int) *artifacts.Manifest {
	t.Helper()
	m := &artifacts.Manifest{APIVersion: artifacts.APIVersion, Kind: kind,
		Metadata: artifacts.Metadata{Paper: "test", Name: "openssl"},
		Spec: artifacts.Spec{BenchSpec: artifacts.BenchSpec{Algorithms: algs, Operations: ops}, Warmup: 1, Iterations: iterations,
			Method: artifacts.MethodOpenSSLCLI, Seed: "test/openssl", Boards: []string{"host"}}}
	if kind == artifacts.KindSigBench {
		m.Spec.Message.Size = 19600
	}
	m, err := artifacts.ParseManifest(m.YAML(), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// fakeOpenSSL writes a script that prints version as `openssl version` would.
func fakeOpenSSL(t *testing.T, version string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "openssl")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+version+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
