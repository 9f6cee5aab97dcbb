package host

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/runner"
	"pqrepro/runner/trial"
)

// testOpenSSL is the OpenSSL 3.5 root the tests run: $PQREPRO_OPENSSL_ROOT (scripts/test
// makes it with scripts/openssl-root). Unset, the test is skipped; set but missing or
// broken, the test fails.
func testOpenSSL(t *testing.T) OpenSSLConfig {
	t.Helper()
	root := os.Getenv("PQREPRO_OPENSSL_ROOT")
	if root == "" {
		t.Skip("PQREPRO_OPENSSL_ROOT is not set: make an OpenSSL 3.5 root with scripts/openssl-root and set PQREPRO_OPENSSL_ROOT to the root it prints (scripts/test does both)")
	}
	cfg := OpenSSLConfig{Root: root}
	if _, err := ResolveOpenSSL(context.Background(), cfg); err != nil {
		t.Fatalf("PQREPRO_OPENSSL_ROOT=%s is not a usable OpenSSL 3.5 root (rebuild it with scripts/openssl-root): %v", root, err)
	}
	return cfg
}

func opensslManifest(t *testing.T, kind string, algs, ops []string, iterations int) *artifacts.Manifest {
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

func TestOpenSSLCLICells(t *testing.T) {
	cfg := testOpenSSL(t)
	const n = 3
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		algs []string
		ops  []string
	}{
		{artifacts.KindKEMBench, []string{"ML-KEM-768"}, []string{"keygen", "encaps", "decaps"}},
		{artifacts.KindSigBench, []string{"ML-DSA-44", "Ed25519"}, []string{"keygen", "sign", "verify"}},
	} {
		m := opensslManifest(t, tc.kind, tc.algs, tc.ops, n)
		b, res, err := runner.Execute(context.Background(), &Host{OpenSSL: cfg}, m, runner.Options{Identity: id, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Cells) != len(tc.algs)*len(tc.ops) {
			t.Fatalf("%d cells, want %d", len(res.Cells), len(tc.algs)*len(tc.ops))
		}
		for _, c := range res.Cells {
			name := c.Algorithm + " " + c.Operation
			if c.Status != artifacts.StatusOK || c.Stats == nil || c.Stats.N != n {
				t.Fatalf("%s: %s n=%v: %s", name, c.Status, c.Stats, c.Error)
			}
			wantCmds := 1
			if c.Operation == artifacts.OpKeygen {
				wantCmds = 2 // genpkey, then pkey -pubout, as paper002's script
			}
			if len(c.Commands) != wantCmds {
				t.Fatalf("%s: %d commands recorded, want %d", name, len(c.Commands), wantCmds)
			}
			sum := 0.0
			for _, cs := range c.Commands {
				if !strings.HasPrefix(cs.Command, "openssl ") || strings.Contains(cs.Command, "/") || cs.Stats == nil || cs.Stats.N != n || cs.Stats.Min <= 0 {
					t.Fatalf("%s: command record %+v", name, cs)
				}
				sum += cs.Stats.Mean
			}
			if math.Abs(sum-c.Stats.Mean) > 1e-6*c.Stats.Mean {
				t.Fatalf("%s: per-command means sum to %.0f ns, the iteration mean is %.0f ns", name, sum, c.Stats.Mean)
			}
			if c.Operation == artifacts.OpKeygen {
				if !strings.HasPrefix(c.Commands[0].Command, "openssl genpkey -algorithm ") || !strings.HasPrefix(c.Commands[1].Command, "openssl pkey -in priv.pem -pubout") {
					t.Fatalf("%s: commands %q, %q", name, c.Commands[0].Command, c.Commands[1].Command)
				}
			} else if c.Keys != artifacts.KeysEncoded {
				t.Fatalf("%s: keys %q, want encoded", name, c.Keys)
			}
			a, _ := artifacts.LookupAlgorithm(c.Algorithm)
			switch c.Operation {
			case artifacts.OpKeygen:
				if c.Sizes.PublicKey != a.PublicKey || c.Sizes.PrivateKey != a.PrivateKey {
					t.Fatalf("%s: sizes %+v, want public %d private %d", name, c.Sizes, a.PublicKey, a.PrivateKey)
				}
			case artifacts.OpSign:
				if c.Sizes.Signature != a.Signature || c.Sizes.Message != 19600 {
					t.Fatalf("%s: sizes %+v", name, c.Sizes)
				}
			case artifacts.OpEncaps:
				if c.Sizes.Ciphertext != a.Ciphertext || c.Sizes.SharedSecret != 32 {
					t.Fatalf("%s: sizes %+v", name, c.Sizes)
				}
			}
		}
		var env artifacts.Environment
		if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
			t.Fatal(err)
		}
		o := env.OpenSSL
		if o == nil || !strings.HasPrefix(o.Version, "OpenSSL 3.") || len(o.Providers) == 0 {
			t.Fatalf("environment openssl: %+v", o)
		}
		root, _ := filepath.Abs(cfg.Root)
		if len(o.Invocation) != 4 || !strings.HasPrefix(o.Invocation[0], root) || !strings.Contains(filepath.Base(o.Invocation[0]), "ld-linux") ||
			o.Invocation[1] != "--library-path" || o.Invocation[3] != filepath.Join(root, "usr/bin/openssl") {
			t.Fatalf("invocation %q does not exec the root's loader on the root's openssl", o.Invocation)
		}
		if !slices.ContainsFunc(o.Env, func(e string) bool { return strings.HasPrefix(e, "OPENSSL_MODULES="+root) }) ||
			!slices.ContainsFunc(o.Env, func(e string) bool { return strings.HasPrefix(e, "OPENSSL_CONF="+root) }) {
			t.Fatalf("env %q does not point OPENSSL_MODULES and OPENSSL_CONF into the root", o.Env)
		}
		if o.LoaderOverheadMethod == "" || strings.HasPrefix(o.LoaderOverheadMethod, "not measured") {
			t.Fatalf("loader overhead not measured: %q", o.LoaderOverheadMethod)
		}
	}
}

// A sign command that cannot work (an ML-KEM key given to pkeyutl -sign) fails the cell with
// OpenSSL's own message and leaves no samples.
func TestOpenSSLCLIFailingCommandIsNeverTimed(t *testing.T) {
	cfg := testOpenSSL(t)
	o, err := ResolveOpenSSL(context.Background(), cfg)
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

// paper002's ECDSA sign command fails as the paper ran it; the corrected variant beside it
// works, is checked, and says it is not the paper's method.
func TestOpenSSLCLIPaperECDSASignFailsAndVariantWorks(t *testing.T) {
	cfg := testOpenSSL(t)
	m := opensslManifest(t, artifacts.KindSigBench, []string{"ECDSA-P256"}, []string{"sign", "verify"}, 3)
	cells, err := (&Host{OpenSSL: cfg}).Run(context.Background(), m, runner.NopObserver{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 4 {
		t.Fatalf("%d cells, want paper and corrected cells for sign and verify", len(cells))
	}
	for i, op := range []string{"sign", "verify"} {
		paper, fixed := cells[2*i], cells[2*i+1]
		if paper.Cell.Operation != op || paper.Cell.Status != artifacts.StatusFailed || len(paper.Samples) != 0 || paper.Cell.Variant != "" ||
			!strings.HasPrefix(paper.Cell.Error, "the paper's command fails: `openssl pkeyutl -"+op) {
			t.Fatalf("paper's %s cell: %+v", op, paper.Cell)
		}
		if fixed.Cell.Operation != op || fixed.Cell.Status != artifacts.StatusOK || len(fixed.Samples) != 3 ||
			!strings.HasPrefix(fixed.Cell.Variant, "corrected: -rawin -digest sha256") || !strings.Contains(fixed.Cell.Commands[0].Command, "-rawin -digest sha256") {
			t.Fatalf("corrected %s cell: %+v", op, fixed.Cell)
		}
	}
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

func TestOpenSSLOlderThan35IsRefused(t *testing.T) {
	bin := fakeOpenSSL(t, "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)")
	_, err := ResolveOpenSSL(context.Background(), OpenSSLConfig{Path: bin})
	if !errors.Is(err, ErrOpenSSLTooOld) || !strings.Contains(err.Error(), "3.0.19") || !strings.Contains(err.Error(), "scripts/openssl-root") {
		t.Fatalf("err = %v, want a refusal naming 3.0.19 and saying how to get 3.5", err)
	}
	c := ProbeOpenSSL(context.Background(), OpenSSLConfig{Path: bin})
	if c.OpenSSLUsable || !strings.HasPrefix(c.OpenSSL, "OpenSSL 3.0.19") || c.OpenSSLReason == "" {
		t.Fatalf("capabilities %+v", c)
	}
	if slices.Contains(HostMethods(c), artifacts.MethodOpenSSLCLI) {
		t.Fatal("a host with OpenSSL 3.0 offers openssl-cli")
	}
	m := opensslManifest(t, artifacts.KindKEMBench, []string{"ML-KEM-768"}, []string{"keygen"}, 1)
	cells, err := (&Host{OpenSSL: OpenSSLConfig{Path: bin}}).Run(context.Background(), m, runner.NopObserver{}, io.Discard)
	if !errors.Is(err, ErrOpenSSLTooOld) || len(cells) != 0 {
		t.Fatalf("run with OpenSSL 3.0: %d cells, err %v; want refused up front", len(cells), err)
	}
}

func TestParseOpenSSLVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want OpenSSLVersion
		ok35 bool
		bad  bool
	}{
		{in: "OpenSSL 3.5.9 29 Sep 2026 (Library: OpenSSL 3.5.9 29 Sep 2026)\n", want: OpenSSLVersion{3, 5, 9}, ok35: true},
		{in: "OpenSSL 3.6.0 1 Oct 2025", want: OpenSSLVersion{3, 6, 0}, ok35: true},
		{in: "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)", want: OpenSSLVersion{3, 0, 19}},
		{in: "OpenSSL 3.5.0 8 Apr 2025 (Library: OpenSSL 3.0.2 15 Mar 2022)", want: OpenSSLVersion{3, 0, 2}}, // the library decides
		{in: "OpenSSL 1.1.1w  11 Sep 2023", want: OpenSSLVersion{1, 1, 1}},
		{in: "OpenSSL 4.0.0 1 Apr 2026", want: OpenSSLVersion{4, 0, 0}, ok35: true},
		{in: "LibreSSL 3.8.2", bad: true},
		{in: "", bad: true},
	} {
		v, err := ParseOpenSSLVersion(tc.in)
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
	got := ParseOpenSSLProviders(out)
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
		v, err := ParseOpenSSLVersion(s)
		if err == nil && (v.Major < 0 || v.Minor < 0 || v.Patch < 0) {
			t.Fatalf("%q: negative version %v", s, v)
		}
	})
}

func FuzzParseOpenSSLProviders(f *testing.F) {
	f.Add("Providers:\n  default\n    name: OpenSSL Default Provider\n    version: 3.5.9\n    status: active\n")
	f.Add("  x\n  y: z\n\t\tname:")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range ParseOpenSSLProviders(s) {
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
