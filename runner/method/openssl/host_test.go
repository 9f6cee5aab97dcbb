package openssl_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/method/openssl"
)

func TestOpenSSLCLICells(t *testing.T) {
	cfg := openssl.TestConfig(t)
	const n = 3
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind artifacts.Kind
		algs []string
		ops  []string
	}{
		{artifacts.KindKEMBench, []string{"ML-KEM-768"}, []string{"keygen", "encaps", "decaps"}},
		{artifacts.KindSigBench, []string{"ML-DSA-44", "Ed25519"}, []string{"keygen", "sign", "verify"}},
	} {
		m := openssl.TestManifest(t, tc.kind, tc.algs, tc.ops, n)
		b, res, err := runner.Execute(context.Background(), &host.Host{OpenSSL: cfg}, m, runner.Options{Identity: id, Version: "test"})
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

// paper002's ECDSA sign command fails as the paper ran it; the corrected variant beside it
// works, is checked, and says it is not the paper's method.
func TestOpenSSLCLIPaperECDSASignFailsAndVariantWorks(t *testing.T) {
	cfg := openssl.TestConfig(t)
	m := openssl.TestManifest(t, artifacts.KindSigBench, []string{"ECDSA-P256"}, []string{"sign", "verify"}, 3)
	cells, err := (&host.Host{OpenSSL: cfg}).Run(context.Background(), m, runner.NopObserver{}, io.Discard)
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

func TestOpenSSLOlderThan35IsRefused(t *testing.T) {
	bin := openssl.FakeOpenSSL(t, "OpenSSL 3.0.19 27 Jan 2026 (Library: OpenSSL 3.0.19 27 Jan 2026)")
	_, err := openssl.Resolve(context.Background(), openssl.Config{Path: bin})
	if !errors.Is(err, openssl.ErrTooOld) || !strings.Contains(err.Error(), "3.0.19") || !strings.Contains(err.Error(), "scripts/openssl-root") {
		t.Fatalf("err = %v, want a refusal naming 3.0.19 and saying how to get 3.5", err)
	}
	c := openssl.Probe(context.Background(), openssl.Config{Path: bin})
	if c.OpenSSLUsable || !strings.HasPrefix(c.OpenSSL, "OpenSSL 3.0.19") || c.OpenSSLReason == "" {
		t.Fatalf("capabilities %+v", c)
	}
	if slices.Contains(host.Methods(c), artifacts.MethodOpenSSLCLI) {
		t.Fatal("a host with OpenSSL 3.0 offers openssl-cli")
	}
	m := openssl.TestManifest(t, artifacts.KindKEMBench, []string{"ML-KEM-768"}, []string{"keygen"}, 1)
	cells, err := (&host.Host{OpenSSL: openssl.Config{Path: bin}}).Run(context.Background(), m, runner.NopObserver{}, io.Discard)
	if !errors.Is(err, openssl.ErrTooOld) || len(cells) != 0 {
		t.Fatalf("run with OpenSSL 3.0: %d cells, err %v; want refused up front", len(cells), err)
	}
}
