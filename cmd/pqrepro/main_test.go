package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/internal/boardcat"
	"pqrepro/runner/exec/tlsmatrix"
	"pqrepro/runner/method/procop"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == procop.ChildOpArg {
		os.Exit(procop.ChildOp(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == tlsmatrix.TLSServerArg {
		os.Exit(tlsmatrix.TLSServer(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func pq(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// runOnce runs a small experiment into a fresh bundle directory and returns its path and
// the key directory that signed it.
func runOnce(t *testing.T, out string) (string, string) {
	t.Helper()
	keys := filepath.Join(t.TempDir(), "keys")
	code, stdout, stderr := pq(t, "run", "paper001/mlkem", "--iterations", "3", "--keys", keys, "--out", out)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"ML-KEM-768", "encaps", "COMPARISON with paper001", "C001-01", "bundle: " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run output lacks %q:\n%s", want, stdout)
		}
	}
	return out, keys
}

func TestRunThenVerify(t *testing.T) {
	dir, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle"))
	code, stdout, stderr := pq(t, "verify", dir, "--key", filepath.Join(keys, "runner.pub.json"))
	if code != 0 || !strings.Contains(stdout, "VERIFIED") || !strings.Contains(stdout, "pinned key") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = pq(t, "show", dir)
	if code != 0 || !strings.Contains(stdout, "ML-KEM-1024") || !strings.Contains(stdout, "C001-01") {
		t.Fatalf("show: exit %d\n%s%s", code, stdout, stderr)
	}
	os.WriteFile(filepath.Join(dir, artifacts.FileResult), []byte(`{"schema":"tampered"}`), 0o644)
	if code, _, stderr := pq(t, "show", dir); code == 0 || !strings.Contains(stderr, artifacts.FileResult) {
		t.Fatalf("show printed a tampered bundle: exit %d %s", code, stderr)
	}
	tgz, _ := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	if code, stdout, stderr := pq(t, "verify", tgz); code != 0 {
		t.Fatalf("verify tar.gz: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestVerifyNamesWhatFailed(t *testing.T) {
	orig, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle"))
	other := filepath.Join(t.TempDir(), "other")
	if code, _, stderr := pq(t, "keys", "--keys", other); code != 0 {
		t.Fatal(stderr)
	}
	copyBundle := func(t *testing.T) string {
		dst := filepath.Join(t.TempDir(), "b")
		b, err := artifacts.ReadBundle(orig)
		if err != nil {
			t.Fatal(err)
		}
		if err := artifacts.WriteDir(dst, b); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	editFile := func(name string, f func([]byte) []byte) func(string) {
		return func(dir string) {
			p := filepath.Join(dir, name)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, f(b), 0o644)
		}
	}
	flip := func(b []byte) []byte { b[len(b)/2] ^= 0x20; return b }
	dropSig := func(keep string) func([]byte) []byte {
		return func(b []byte) []byte {
			var env map[string]any
			json.Unmarshal(b, &env)
			var sigs []any
			for _, s := range env["signatures"].([]any) {
				if strings.HasPrefix(s.(map[string]any)["keyid"].(string), keep) {
					sigs = append(sigs, s)
				}
			}
			env["signatures"] = sigs
			out, _ := json.Marshal(env)
			return out
		}
	}
	tests := []struct {
		name string
		edit func(string)
		key  string
		want string
	}{
		{"manifest byte", editFile(artifacts.FileManifest, flip), "", artifacts.FileManifest},
		{"result byte", editFile(artifacts.FileResult, flip), "", artifacts.FileResult},
		{"samples byte", editFile(artifacts.FileSamples, flip), "", artifacts.FileSamples},
		{"environment byte", editFile(artifacts.FileEnvironment, flip), "", artifacts.FileEnvironment},
		{"log byte", editFile(artifacts.FileLog, flip), "", artifacts.FileLog},
		{"attestation byte", editFile(artifacts.FileAttestation, flip), "", artifacts.FileAttestation},
		{"removed ml-dsa signature", editFile(artifacts.FileAttestation, dropSig("ed25519")), "", "ml-dsa-65"},
		{"removed ed25519 signature", editFile(artifacts.FileAttestation, dropSig("ml-dsa-65")), "", "ed25519"},
		{"swapped key", func(string) {}, filepath.Join(other, "runner.pub.json"), "key"},
		{"missing file", func(d string) { os.Remove(filepath.Join(d, artifacts.FileLog)) }, filepath.Join(keys, "runner.pub.json"), artifacts.FileLog},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyBundle(t)
			tt.edit(dir)
			args := []string{"verify", dir}
			if tt.key != "" {
				args = append(args, "--key", tt.key)
			}
			code, stdout, stderr := pq(t, args...)
			if code == 0 {
				t.Fatalf("tampered bundle verified:\n%s", stdout)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Fatalf("error does not name %q: %s", tt.want, stderr)
			}
		})
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: pqrepro/v1\nkind: kem-bench\nmetadata: {paper: t, name: t}\nspec:\n  algorithms: [ML-KEM-999]\n  operations: [keygen]\n  iterations: 1\n  seed: s\n"), 0o644)
	code, _, stderr := pq(t, "run", bad, "--keys", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "line 5") || !strings.Contains(stderr, "ML-KEM-768") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if code, _, stderr := pq(t, "run", "paper001/nope"); code != 1 || !strings.Contains(stderr, "paper001/mlkem") {
		t.Fatalf("unknown experiment: exit %d: %s", code, stderr)
	}
	if code, _, _ := pq(t, "frobnicate"); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
}

// TestRunRefusesIterationsBelowOne checks --iterations 0 and -3 are refused with an error
// naming the flag, before anything runs, instead of silently running the manifest's count.
func TestRunRefusesIterationsBelowOne(t *testing.T) {
	for _, n := range []string{"0", "-3"} {
		out := filepath.Join(t.TempDir(), "b")
		code, stdout, stderr := pq(t, "run", "paper001/mlkem", "--iterations", n, "--keys", t.TempDir(), "--out", out, "--quiet")
		if code != 2 || !strings.Contains(stderr, "--iterations "+n+": want a count of at least 1") {
			t.Errorf("--iterations %s: exit %d\n%s\n%s", n, code, stdout, stderr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--iterations %s wrote a bundle", n)
		}
	}
	code, stdout, stderr := pq(t, "run", "paper001/mlkem", "--warmup", "-1", "--keys", t.TempDir(), "--quiet")
	if code != 2 || !strings.Contains(stderr, "--warmup -1: want 0 or more") {
		t.Errorf("--warmup -1: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestUsageListsEveryEmulatedBoard checks the run command's --board list names every
// emulated board of the catalogue.
func TestUsageListsEveryEmulatedBoard(t *testing.T) {
	line := usage[strings.Index(usage, "pqrepro run "):]
	line = line[:strings.Index(line, "\n")]
	for _, class := range boardcat.EmulatedClasses() {
		if !strings.Contains(line, "|"+class+"|") {
			t.Errorf("usage's --board list omits %s: %s", class, line)
		}
	}
}

func TestListShowsExperiments(t *testing.T) {
	code, out, _ := pq(t, "list")
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{"paper001/mlkem", "paper001/sequence", "paper002/signatures-process", "paper003"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %s", want)
		}
	}
}

func TestKeysFileMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "k")
	if code, out, _ := pq(t, "keys", "--keys", dir); code != 0 || !strings.Contains(out, "created") {
		t.Fatalf("keys: %d %s", code, out)
	}
	st, err := os.Stat(filepath.Join(dir, identity.IdentityKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if code, out, _ := pq(t, "keys", "--keys", dir); code != 0 || !strings.Contains(out, "existing") {
		t.Fatalf("second keys: %d %s", code, out)
	}
}

// TestRunKeyForm runs paper001/mlkem with the default key form and with --key-form parsed:
// each result records its cells' key form, and the manifest that ran says which.
func TestRunKeyForm(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys")
	for _, tc := range []struct{ flag, want string }{{"", artifacts.KeysEncoded}, {artifacts.KeysParsed, artifacts.KeysParsed}} {
		out := filepath.Join(t.TempDir(), "b")
		args := []string{"run", "paper001/mlkem", "--iterations", "3", "--keys", keys, "--out", out, "--quiet"}
		if tc.flag != "" {
			args = append(args, "--key-form", tc.flag)
		}
		if code, stdout, stderr := pq(t, args...); code != 0 {
			t.Fatalf("run %v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, artifacts.FileResult))
		if err != nil {
			t.Fatal(err)
		}
		res, err := artifacts.ParseResult(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Cells {
			want := tc.want
			if c.Operation == artifacts.OpKeygen {
				want = ""
			}
			if c.Keys != want {
				t.Errorf("--key-form %q: %s %s records keys %q, want %q", tc.flag, c.Algorithm, c.Operation, c.Keys, want)
			}
		}
		if mf, _ := os.ReadFile(filepath.Join(out, artifacts.FileManifest)); !strings.Contains(string(mf), "keys: "+tc.want) {
			t.Errorf("--key-form %q: manifest.yaml does not say keys: %s", tc.flag, tc.want)
		}
	}
	if code, _, stderr := pq(t, "run", "paper001/mlkem", "--key-form", "warm", "--keys", keys); code == 0 || !strings.Contains(stderr, "spec.keys") {
		t.Errorf("--key-form warm: exit %d, %s; want a manifest error naming spec.keys", code, stderr)
	}
}

// TestRunRefusesAMismatchingBoardClass: an amd64 machine is not a Raspberry Pi 4, so
// --board-class rpi4-b refuses the run, naming both sides, and writes no bundle.
func TestRunRefusesAMismatchingBoardClass(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the refusal is asserted on an amd64 machine")
	}
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := pq(t, "run", "paper001/mlkem", "--board-class", "rpi4-b", "--iterations", "5", "--keys", t.TempDir(), "--out", out)
	if code != 1 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"board class rpi4-b is a Raspberry Pi 4", "arm64, Cortex-A72", "this machine is amd64", "refusing to file its results under rpi4-b"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("refusal lacks %q: %s", want, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a bundle was written")
	}
}

// TestVerifyRefusesForgedStatistics: statistics re-signed with the runner's own key verify as
// signatures but not as a result: verify --key names result.json, the cell and the field.
func TestVerifyRefusesForgedStatistics(t *testing.T) {
	dir, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle"))
	id, err := identity.LoadIdentity(keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(r *artifacts.Result, samples *[]byte)
		want string
	}{
		{"halved median", func(r *artifacts.Result, _ *[]byte) { r.Cells[1].Stats.Median /= 2 }, "result.json cells[1]"},
		{"empty samples.csv", func(_ *artifacts.Result, s *[]byte) {
			*s = []byte("algorithm,operation,iteration,value,unit,variant\n")
		}, "samples.csv cells[0]"},
		{"a cell outside the manifest", func(r *artifacts.Result, _ *[]byte) { r.Cells[0].Operation = "sign" }, "the manifest does not ask for this cell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := artifacts.ReadBundle(dir)
			if err != nil {
				t.Fatal(err)
			}
			v, err := attest.Verify(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := artifacts.ParseResult(b.Files[artifacts.FileResult])
			samples := b.Files[artifacts.FileSamples]
			tc.edit(res, &samples)
			b.Files[artifacts.FileResult], _ = json.Marshal(res)
			b.Files[artifacts.FileSamples] = samples
			if err := attest.Sign(b, id, v.Statement.Predicate); err != nil {
				t.Fatal(err)
			}
			forged := filepath.Join(t.TempDir(), "forged")
			if err := artifacts.WriteDir(forged, b); err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := pq(t, "verify", forged, "--key", filepath.Join(keys, "runner.pub.json"))
			if code == 0 || !strings.Contains(stderr, "does not re-derive") || !strings.Contains(stderr, tc.want) {
				t.Fatalf("verify of forged statistics: exit %d\n%s%s", code, stdout, stderr)
			}
			if code, _, stderr := pq(t, "show", forged); code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("show of forged statistics: exit %d %s", code, stderr)
			}
		})
	}
}
