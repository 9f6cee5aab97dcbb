package artifacts

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

const goodManifest = `apiVersion: pqrepro/v1
kind: sig-bench
metadata:
  paper: paper001
  name: mldsa
spec:
  algorithms: [ML-DSA-44, ML-DSA-65]
  operations: [keygen, sign, verify]
  message:
    text: "Test message for ML-DSA benchmark"
  warmup: 5
  iterations: 100
  seed: "s1"
  boards: [esp32c6, host, rpi2-b-v1.1]
  reference:
    dataset: paper001
    claims: [C001-02]
`

func TestParseManifestGood(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		cells     int
	}{
		{"sig", goodManifest, 6},
		{"kem with classical", strings.NewReplacer("sig-bench", "kem-bench", "[ML-DSA-44, ML-DSA-65]", "[ML-KEM-512, X25519]",
			"[keygen, sign, verify]", "[keygen, encaps, decaps, derive]", "  message:\n    text: \"Test message for ML-DSA benchmark\"\n", "").Replace(goodManifest), 3 + 2},
		{"sequence", strings.NewReplacer("sig-bench", "kem-sig-sequence", "[ML-DSA-44, ML-DSA-65]", "[ML-KEM-512+ML-DSA-44]",
			"  operations: [keygen, sign, verify]\n", "").Replace(goodManifest), 1},
		{"budget", strings.Replace(goodManifest, "  seed:", "  budget: 30s\n  minIterations: 5\n  seed:", 1), 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tc.src), "test")
			if err != nil {
				t.Fatal(err)
			}
			if got := len(m.Cells()); got != tc.cells {
				t.Errorf("%d cells, want %d", got, tc.cells)
			}
			if m.Spec.Method != MethodInProcess || m.Spec.Reference.Tolerance != DefaultTolerance {
				t.Errorf("defaults not applied: %+v", m.Spec)
			}
			// The canonical form round-trips through the bundle's manifest.yaml to the same identity.
			again, err := ParseManifest(m.YAML(), "again")
			if err != nil {
				t.Fatalf("re-parse of manifest.yaml: %v\n%s", err, m.YAML())
			}
			if again.ID() != m.ID() {
				t.Errorf("identity changed across manifest.yaml: %s vs %s", again.ID(), m.ID())
			}
		})
	}
}

func TestManifestIdentity(t *testing.T) {
	a, _ := ParseManifest([]byte(goodManifest), "a")
	// Comments, key order and flow/block style do not change the identity...
	b, err := ParseManifest([]byte("# a comment\n"+strings.Replace(goodManifest, "  warmup: 5\n  iterations: 100\n", "  iterations: 100\n  warmup: 5\n", 1)), "b")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID() != b.ID() {
		t.Error("reordering keys changed the identity")
	}
	// ...but anything that changes what runs does.
	c, _ := ParseManifest([]byte(strings.Replace(goodManifest, "iterations: 100", "iterations: 101", 1)), "c")
	if a.ID() == c.ID() {
		t.Error("changing iterations kept the identity")
	}
	if !strings.HasPrefix(a.ID(), "sha256:") || len(a.ID()) != 7+64 {
		t.Errorf("identity %q", a.ID())
	}
}

func TestParseManifestBad(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(string) string
		line      int
		field     string
		msgSubstr string
	}{
		{"unknown top field", func(s string) string { return s + "extra: 1\n" }, 18, "extra", "unknown field"},
		{"unknown spec field", func(s string) string { return strings.Replace(s, "  warmup: 5", "  warmpu: 5", 1) }, 11, "spec.warmpu", "known fields: algorithms"},
		{"unknown algorithm lists valid names", func(s string) string { return strings.Replace(s, "ML-DSA-65]", "ML-DSA-66]", 1) }, 7, "spec.algorithms[1]", "ML-DSA-87"},
		{"KEM in sig-bench", func(s string) string { return strings.Replace(s, "ML-DSA-65]", "ML-KEM-768]", 1) }, 7, "spec.algorithms[1]", "unknown signature algorithm"},
		{"duplicate algorithm", func(s string) string { return strings.Replace(s, "ML-DSA-65]", "ML-DSA-44]", 1) }, 7, "spec.algorithms[1]", "twice"},
		{"bad version", func(s string) string { return strings.Replace(s, "pqrepro/v1", "pqrepro/v9", 1) }, 1, "apiVersion", "must be"},
		{"bad kind", func(s string) string { return strings.Replace(s, "sig-bench", "tls-handshakes", 1) }, 2, "kind", "valid: kem-bench"},
		{"zero iterations", func(s string) string { return strings.Replace(s, "iterations: 100", "iterations: 0", 1) }, 12, "spec.iterations", "between 1"},
		{"negative warmup", func(s string) string { return strings.Replace(s, "warmup: 5", "warmup: -1", 1) }, 11, "spec.warmup", "between 0"},
		{"iterations not a number", func(s string) string { return strings.Replace(s, "iterations: 100", "iterations: many", 1) }, 12, "(value)", "cannot unmarshal"},
		{"bad duration", func(s string) string { return strings.Replace(s, "  seed:", "  budget: soon\n  seed:", 1) }, 13, "(value)", "not a duration"},

		{"energy load too short", func(s string) string {
			return strings.Replace(s, "  seed:", "  energy:\n    idle: 30s\n    load: 100ms\n  seed:", 1)
		}, 15, "spec.energy.load", "between 5s and 1h0m0s, got 100ms"},
		{"energy idle too long", func(s string) string { return strings.Replace(s, "  seed:", "  energy:\n    idle: 2h\n  seed:", 1) }, 14, "spec.energy.idle", "between 5s"},
		{"energy unknown field", func(s string) string { return strings.Replace(s, "  seed:", "  energy:\n    idel: 2s\n  seed:", 1) }, 14, "spec.energy.idel", "unknown field"},

		{"no seed", func(s string) string { return strings.Replace(s, "  seed: \"s1\"\n", "", 1) }, 0, "spec.seed", "required"},
		{"no message for sig-bench", func(s string) string {
			return strings.Replace(s, "  message:\n    text: \"Test message for ML-DSA benchmark\"\n", "", 1)
		}, 0, "spec.message", "needs a message"},
		{"size and text", func(s string) string { return strings.Replace(s, "    text:", "    size: 10\n    text:", 1) }, 9, "spec.message", "not both"},
		{"unknown operation", func(s string) string { return strings.Replace(s, "keygen, sign, verify", "keygen, encaps", 1) }, 8, "spec.operations[1]", "valid for sig-bench"},
		{"unknown method", func(s string) string { return strings.Replace(s, "  seed:", "  method: openssl\n  seed:", 1) }, 13, "spec.method", "process-per-operation"},
		{"unknown key form", func(s string) string { return strings.Replace(s, "  seed:", "  keys: cached\n  seed:", 1) }, 13, "spec.keys", "valid: encoded, parsed"},
		{"parsed keys in a child process", func(s string) string {
			return strings.Replace(s, "  seed:", "  method: process-per-operation\n  keys: parsed\n  seed:", 1)
		}, 14, "spec.keys", "in-process runs only"},
		{"sequence in a child process", func(s string) string {
			s = strings.Replace(s, "kind: sig-bench", "kind: kem-sig-sequence", 1)
			s = strings.Replace(s, "[ML-DSA-44, ML-DSA-65]", "[ML-KEM-512+ML-DSA-44]", 1)
			s = strings.Replace(s, "operations: [keygen, sign, verify]", "operations: [sequence]", 1)
			return strings.Replace(s, "  seed:", "  method: process-per-operation\n  seed:", 1)
		}, 13, "spec.method", "a kem-sig-sequence cannot be timed with process-per-operation (valid: in-process)"},
		{"bad paper slug", func(s string) string { return strings.Replace(s, "paper: paper001", "paper: Paper 1", 1) }, 4, "metadata.paper", "slug"},
		{"claims without dataset", func(s string) string { return strings.Replace(s, "    dataset: paper001\n", "", 1) }, 16, "spec.reference.claims", "dataset"},
		{"not a mapping", func(string) string { return "- a\n- b\n" }, 1, "(document)", "mapping"},
		{"yaml syntax", func(string) string { return "apiVersion: [\n" }, 0, "(document)", ""},
		{"duplicate key", func(s string) string { return s + "kind: sig-bench\n" }, 18, "kind", "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseManifest([]byte(tt.edit(goodManifest)), "m.yaml")
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("want *ManifestError, got %v", err)
			}
			for _, p := range me.Problems {
				if p.Field == tt.field && (tt.line == 0 || p.Line == tt.line) && strings.Contains(p.Msg, tt.msgSubstr) {
					if !strings.Contains(err.Error(), "m.yaml") {
						t.Errorf("error does not name the source: %v", err)
					}
					return
				}
			}
			t.Fatalf("no problem with field %q line %d containing %q in:\n%v", tt.field, tt.line, tt.msgSubstr, err)
		})
	}
}

// TestMinIterationsProblem: a budgeted manifest that checks claims and could stop a cell
// below the samples a check needs says so; it still parses (bundles published before the rule
// must), and the default minIterations meets the rule.
func TestMinIterationsProblem(t *testing.T) {
	low, err := ParseManifest([]byte(strings.Replace(goodManifest, "  seed:", "  budget: 30s\n  minIterations: 3\n  seed:", 1)), "m.yaml")
	if err != nil {
		t.Fatalf("a manifest from before the rule no longer parses: %v", err)
	}
	if why := low.MinIterationsProblem(); !strings.Contains(why, "below the 5 samples a claim check needs") {
		t.Errorf("problem %q", why)
	}
	def, err := ParseManifest([]byte(strings.Replace(goodManifest, "  seed:", "  budget: 30s\n  seed:", 1)), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if def.Spec.MinIterations != MinClaimSamples || def.MinIterationsProblem() != "" {
		t.Errorf("default minIterations %d, problem %q", def.Spec.MinIterations, def.MinIterationsProblem())
	}
}

// A value of the wrong type does not hide the manifest's other problems: every one is
// reported in one pass, in the file's order, and the line that did not decode once only.
func TestEveryManifestProblemInOnePass(t *testing.T) {
	src := `apiVersion: pqrepro/v1
kind: kem-bench
metadata:
  paper: paper001
  name: mlkem
spec:
  algorithms: [ML-KEM-999]
  operations: [keygen, frob]
  iterations: lots
  seed: "s"
  bogus: 1
`
	_, err := ParseManifest([]byte(src), "bad.yaml")
	var me *ManifestError
	if !errors.As(err, &me) {
		t.Fatalf("want a ManifestError, got %v", err)
	}
	var lines []int
	for _, p := range me.Problems {
		lines = append(lines, p.Line)
	}
	want := []int{7, 8, 9, 11}
	if !slices.Equal(lines, want) {
		t.Fatalf("problems on lines %v, want %v (one each, in order):\n%v", lines, want, err)
	}
	if !strings.Contains(err.Error(), `unknown operation "frob"`) {
		t.Errorf("an unknown operation beside an unknown algorithm is not reported: %v", err)
	}
}

// TestEnergyWindows: the windows from spec.energy, with the stated defaults for those unset.
func TestEnergyWindows(t *testing.T) {
	m, err := ParseManifest([]byte(strings.Replace(goodManifest, "  seed:", "  energy:\n    load: 7s\n  seed:", 1)), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if idle, load := m.Spec.EnergyWindows(); idle != 60*time.Second || load != 7*time.Second {
		t.Errorf("windows %v, %v: want the default 60s idle and the manifest's 7s load", idle, load)
	}
	var none Spec
	if idle, load := none.EnergyWindows(); idle != 60*time.Second || load != 10*time.Second {
		t.Errorf("default windows %v, %v, want 60s and 10s", idle, load)
	}
}
