package portal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/qemu"
)

// makeFirmware runs make in the firmware folder with args, under the lock every test that
// runs make on the firmware takes. It skips the test when make, the board's compiler or its
// emulator is missing.
func makeFirmware(t *testing.T, class string, args ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds firmware and boots QEMU")
	}
	mc, _ := qemu.LookupMachine(class)
	for _, tool := range []string{"make", "go", mc.Binary, mc.Toolchain} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make firmware installs the toolchains)", tool)
		}
	}
	root, err := filepath.Abs(repoFirmware)
	if err != nil {
		t.Fatal(err)
	}
	fwBuildMu.Lock()
	defer fwBuildMu.Unlock()
	os.MkdirAll(filepath.Join(root, "build"), 0o755)
	lock, err := os.OpenFile(filepath.Join(root, "build", ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
	out, err := exec.Command("make", append([]string{"-C", root}, args...)...).CombinedOutput()
	lock.Close()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// byoiLibrary makes the SDK's example implementation in a folder of its own, as BYOI.md
// tells an implementer (make byoi-example DEST=dir): the project's ML-KEM-768 and its Keccak,
// copied out of the firmware's tree, behind the NIST KEM API. edit, when set, changes a file
// of the copy before anything is built from it.
func byoiLibrary(t *testing.T, edit func(dir string)) string {
	return byoiExample(t, "mlkem768-nist", edit)
}

// byoiExample makes one of the SDK's example implementations (make byoi-example EXAMPLE=... DEST=dir).
func byoiExample(t *testing.T, example string, edit func(dir string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), example)
	makeFirmware(t, "qemu-mps2-an386", "byoi-example", "EXAMPLE="+example, "DEST="+dir)
	if edit != nil {
		edit(dir)
	}
	return dir
}

// runBYOI builds the firmware for class with the implementation of lib/impl.mk (the
// documented command, make IMPL=... <board>, into build/<build>), and runs m on it with the
// self-test on, as pqrepro run does.
func runBYOI(t *testing.T, class, lib, build string, id *identity.Identity, m *artifacts.Manifest, extra ...string) (*artifacts.Bundle, *artifacts.Result, error) {
	t.Helper()
	makeFirmware(t, class, append([]string{"IMPL=" + filepath.Join(lib, "impl.mk"), "BUILD=" + build, class}, extra...)...)
	fw := filepath.Join(repoFirmware, build, class, "pqrepro-fw.elf")
	board := &qemu.QEMU{Class: class, Firmware: fw}
	return runner.Execute(context.Background(), board, m, runner.Options{Identity: id, Version: "test", Origin: attest.OriginLocal})
}

// TestBYOIRankedApart builds the project's ML-KEM-768 as a separate library (its own folder
// and objects) behind the SDK's NIST KEM adapter for qemu-mps2-an386, runs it through the
// runner with the self-test, submits it beside a run of the built-in implementation, and
// checks that the bundle, the run page, the leaderboard and the schemes page name it, and
// that the leaderboard ranks the two implementations as two rows.
func TestBYOIRankedApart(t *testing.T) {
	lib := byoiLibrary(t, nil)
	own := buildFirmware(t, "build", nil)
	id := mustIdentity(t)
	m := implManifest(t)
	b, res, err := runBYOI(t, "qemu-mps2-an386", lib, "build/byoi-test", id, m)
	if err != nil {
		t.Fatal(err)
	}
	im := res.Cells[0].Implementation
	if im == nil || im.Name != "mlkem768-example" || im.Version != "1.0.0" || im.DigestOf != artifacts.DigestSource {
		t.Fatalf("the bundle's cell names %+v, want mlkem768-example 1.0.0 with its source digest", im)
	}
	if !strings.Contains(string(b.Files["log.txt"]), "self-test: ") {
		t.Fatalf("the run's log has no self-test line:\n%s", b.Files["log.txt"])
	}
	checkBYOIEnvironment(t, b)
	board := &qemu.QEMU{Class: "qemu-mps2-an386", Firmware: own, SkipSelfTest: true}
	b0, res0, err := runner.Execute(context.Background(), board, m, runner.Options{Identity: id, Version: "test", Origin: attest.OriginLocal})
	if err != nil {
		t.Fatal(err)
	}
	checkBYOIHashing(t, res.Cells[0].Hashing, res0.Cells[0].Hashing)
	labels := []string{artifacts.ShortImplementation(im.Key()), artifacts.ShortImplementation(res0.Cells[0].Implementation.Key())}
	if labels[0] == labels[1] || !strings.HasPrefix(labels[0], "mlkem768-example 1.0.0") || !strings.HasPrefix(labels[1], "pqrepro-fw 0.1.0") {
		t.Fatalf("labels %q", labels)
	}

	p := portaltest.Start(t, nil)
	sub := registeredSubmitter(t, p, "byoi", id)
	var runs []int64
	for _, bb := range []*artifacts.Bundle{b, b0} {
		var buf bytes.Buffer
		if err := artifacts.WriteTarGz(&buf, bb); err != nil {
			t.Fatal(err)
		}
		cr, err := sub.Submit(context.Background(), buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, cr.RunID)
	}
	var lb portal.Leaderboard
	getJSON(t, p.URL+"/api/v1/leaderboards?algorithm=ML-KEM-768&operation=keygen", &lb)
	var impls []string
	for _, r := range lb.Measured {
		if r.Board == "qemu-mps2-an386" {
			impls = append(impls, artifacts.ShortImplementation(r.Implementation))
			if r.Runs != 1 {
				t.Errorf("row %q pools %d runs", r.Implementation, r.Runs)
			}
		}
	}
	slices.Sort(impls)
	if want := slices.Sorted(slices.Values(labels)); !slices.Equal(impls, want) {
		t.Fatalf("leaderboard rows of qemu-mps2-an386: %q, want one per implementation %q", impls, want)
	}
	for _, path := range []string{"/leaderboards?algorithm=ML-KEM-768&operation=keygen", "/schemes"} {
		_, page := get(t, p.URL+path)
		for _, l := range labels {
			if !strings.Contains(page, l) {
				t.Errorf("%s does not name %q", path, l)
			}
		}
		// The schemes table compares the two side by side: one over the other, on the board.
		if path == "/schemes" && !strings.Contains(page, `data-side="emulated"`) {
			t.Errorf("/schemes has no ratio between the two implementations")
		}
		// Its hashing column: the built-in implementation's share of instructions, "not
		// measured" for the one with its own hash, and pqm4's share of cycles beside, apart.
		if path == "/schemes" {
			for _, want := range []string{"Hashing (share of instructions)", "not measured", "Hashing (share of cycles)", " of cycles</td>"} {
				if !strings.Contains(page, want) {
					t.Errorf("/schemes lacks %q", want)
				}
			}
		}
	}
	for i, run := range runs {
		_, page := get(t, p.URL+"/runs/"+itoa(run))
		if !strings.Contains(page, labels[i]) || strings.Contains(page, labels[1-i]) {
			t.Errorf("run %d's page does not name its implementation %q alone", run, labels[i])
		}
		// The run page's hashing column: "not measured" for the brought implementation, a
		// percentage of instructions for the built-in one; pqm4's share of cycles beside.
		want := []string{"not measured", "% ± "}[i]
		if !strings.Contains(page, "Hashing (share of instructions)") || !strings.Contains(page, want) ||
			!strings.Contains(page, "clean 48.5 %, m4fspeed 74.5 %, m4fstack 74.4 % of cycles") {
			t.Errorf("run %d's page: no hashing column with %q and pqm4's beside", run, want)
		}
	}
}

// checkBYOIHashing checks the cells' hashing shares: absent for the implementation that
// brings its own hash functions (the firmware's pass cannot see them), measured for the
// built-in one, with a bound from the board's 40-instruction counter steps.
func checkBYOIHashing(t *testing.T, own, builtin *artifacts.Hashing) {
	t.Helper()
	if own == nil || own.Absent != device.HashingOwnHash {
		t.Errorf("the brought implementation's hashing share: %+v, want absent: %q", own, device.HashingOwnHash)
	}
	if builtin == nil || builtin.Absent != "" || builtin.Share < 0.3 || builtin.Share > 0.95 || builtin.Bound <= 0 || builtin.Bound > 0.05 {
		t.Errorf("the built-in implementation's hashing share: %+v, want a measured share with a bound", builtin)
	}
}

// checkBYOIEnvironment checks what the bundle says of the image: the firmware name the build
// set (FW_NAME, default pqrepro-byoi) and, in the build's metadata, ML-KEM-768's code size
// counted from the implementation's own symbols (fw_user_*, its Keccak included).
func checkBYOIEnvironment(t *testing.T, b *artifacts.Bundle) {
	t.Helper()
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files["environment.json"], &env); err != nil {
		t.Fatal(err)
	}
	if env.Board.Firmware != "pqrepro-byoi" || env.Board.FirmwareVersion != "0.1.0" {
		t.Errorf("the board says it runs %s %s, want pqrepro-byoi 0.1.0", env.Board.Firmware, env.Board.FirmwareVersion)
	}
	type codeGroup struct {
		Group      string `json:"group"`
		Total      uint64 `json:"total"`
		WithShared uint64 `json:"with_shared"`
	}
	var meta struct {
		Firmware string      `json:"firmware"`
		CodeSize []codeGroup `json:"code_size"`
	}
	if err := json.Unmarshal(env.Board.FirmwareBuild, &meta); err != nil {
		t.Fatalf("firmwareBuild: %v", err)
	}
	i := slices.IndexFunc(meta.CodeSize, func(g codeGroup) bool { return g.Group == "ML-KEM-768" })
	if meta.Firmware != "pqrepro-byoi" || i < 0 || meta.CodeSize[i].Total < 4000 || meta.CodeSize[i].WithShared != 0 {
		t.Errorf("metadata: firmware %q, ML-KEM-768's code size %+v (want the implementation's own code, its Keccak included, no shared Keccak added)", meta.Firmware, meta.CodeSize)
	}
}

// TestBYOIBrokenRefused builds two broken implementations, each refused by the self-test
// before any cell is timed, naming the failing groups and their first failing vectors: one
// whose decapsulation flips a byte of the shared secret (the ACVP decapsulation group and the
// Wycheproof keyGen+decaps group fail), and one whose encapsulation skips FIPS 203's modulus
// check of the key (Wycheproof's encaps vectors with a coefficient at or above q are accepted).
func TestBYOIBrokenRefused(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           []string // in the refusal
	}{
		{"decaps", "return mlkem768_decaps(ss, ct, sk);", "int rc = mlkem768_decaps(ss, ct, sk);\n\tss[5] ^= 0x40;\n\treturn rc;",
			[]string{"ML-KEM-768/decapsulation 0/", "ML-KEM-768/wycheproof-keyGenDecaps 0/", "(first failure Wycheproof tcId "}},
		{"encaps", "return mlkem768_encaps(ct, ss, pk, coins);", "return mlkem768_encaps_internal(ct, ss, pk, coins);",
			[]string{"ML-KEM-768/wycheproof-encaps ", "(first failure Wycheproof tcId 2)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := byoiLibrary(t, func(dir string) {
				kem := filepath.Join(dir, "kem.c")
				src, err := os.ReadFile(kem)
				if err != nil {
					t.Fatal(err)
				}
				broken := strings.Replace(string(src), tt.from, tt.to, 1)
				if broken == string(src) {
					t.Fatalf("kem.c has no %q to break", tt.from)
				}
				os.WriteFile(kem, []byte(broken), 0o644)
				mk := filepath.Join(dir, "impl.mk")
				spec, _ := os.ReadFile(mk)
				os.WriteFile(mk, []byte(strings.Replace(string(spec), "mlkem768-example", "mlkem768-broken-"+tt.name, 1)), 0o644)
			})
			_, res, err := runBYOI(t, "qemu-mps2-an386", lib, "build/byoi-broken-"+tt.name, mustIdentity(t), implManifest(t))
			if err == nil {
				t.Fatalf("a broken implementation was timed: %+v", res.Cells)
			}
			msg := err.Error()
			t.Logf("refused: %s", msg)
			if !strings.Contains(msg, "known-answer self-test") || !strings.Contains(msg, "first failure") {
				t.Fatalf("the refusal does not name the failing vector: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Fatalf("the refusal lacks %q: %v", w, err)
				}
			}
			if res != nil && len(res.Cells) > 0 {
				t.Fatalf("cells were measured: %+v", res.Cells)
			}
		})
	}
}

// TestBYOIRISCV builds the same separate library for qemu-riscv32-virt through its
// randomized-only API (IMPL_API=nist-kem: the coins reach it through the firmware's
// randombytes, from the seeded DRBG) and runs it: the self-test passes and the cell names it.
func TestBYOIRISCV(t *testing.T) {
	lib := byoiLibrary(t, nil)
	_, res, err := runBYOI(t, "qemu-riscv32-virt", lib, "build/byoi-test", mustIdentity(t), implManifest(t), "IMPL_API=nist-kem")
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cells[0]
	if c.Status != artifacts.StatusOK || c.Implementation == nil || c.Implementation.Name != "mlkem768-example" {
		t.Fatalf("cell %s %s: status %s, implementation %+v", c.Algorithm, c.Operation, c.Status, c.Implementation)
	}
}

// TestBYOISignature builds the project's ML-DSA-44 as a separate library behind the SDK's NIST
// signature adapter (crypto_sign_keypair, crypto_sign_signature_ctx, crypto_sign_verify_ctx;
// the seed and rnd through randombytes) for qemu-mps2-an386 and runs keygen, sign and verify
// after the self-test: every cell is ok and names the implementation.
func TestBYOISignature(t *testing.T) {
	lib := byoiExample(t, "mldsa44-nist", nil)
	m, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: paper001, name: byoi-sig-test}
spec:
  algorithms: [ML-DSA-44]
  operations: [keygen, sign, verify]
  warmup: 0
  iterations: 3
  seed: byoi-sig-test
  message: {size: 32}
`), "byoi-sig-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := runBYOI(t, "qemu-mps2-an386", lib, "build/byoi-test", mustIdentity(t), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 3 {
		t.Fatalf("%d cells, want 3", len(res.Cells))
	}
	for _, c := range res.Cells {
		if c.Status != artifacts.StatusOK || c.Implementation == nil || c.Implementation.Name != "mldsa44-example" {
			t.Errorf("cell %s %s: status %s (%s), implementation %+v", c.Algorithm, c.Operation, c.Status, c.Error, c.Implementation)
		}
	}
}
