package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner/qemu"
	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

var (
	fwBuildMu sync.Mutex
	fwBuilt   = map[string]error{}
	fwOut     = map[string]string{}
)

// emulatedFirmware builds the firmware of an emulated board (under the lock file the other
// packages' firmware tests take) and returns firmware/build, or skips when QEMU or the
// cross compiler is missing.
func emulatedFirmware(t *testing.T, mc qemu.Machine) string {
	t.Helper()
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	for _, tool := range []string{"make", mc.Binary, mc.Toolchain} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make firmware firmware-qemu installs it)", tool)
		}
	}
	root, err := filepath.Abs("../../firmware")
	if err != nil {
		t.Fatal(err)
	}
	fwBuildMu.Lock()
	defer fwBuildMu.Unlock()
	if _, done := fwBuilt[mc.Class]; !done {
		os.MkdirAll(filepath.Join(root, "build"), 0o755)
		lock, err := os.OpenFile(filepath.Join(root, "build", ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		out, err := exec.Command("make", "-C", root, mc.Class).CombinedOutput()
		lock.Close()
		fwBuilt[mc.Class], fwOut[mc.Class] = err, string(out)
	}
	if err := fwBuilt[mc.Class]; err != nil {
		t.Fatalf("make %s: %v\n%s", mc.Class, err, fwOut[mc.Class])
	}
	return filepath.Join(root, "build")
}

// TestEmulatedBoardsEndToEnd builds the firmware, runs paper001/mlkem on each emulated board
// through the real binary's run command (QEMU, pty, firmware) twice, verifies both bundles
// against the pinned key and requires identical instruction counts.
func TestEmulatedBoardsEndToEnd(t *testing.T) {
	for _, mc := range qemu.Machines() {
		t.Run(mc.Class, func(t *testing.T) {
			if mc.IsRP2040JS() {
				t.Skip("counts cycles of rp2040js's model, not instructions: runner/qemu's TestRP2040JSBoard runs it")
			}
			fwDir := emulatedFirmware(t, mc)
			keys := filepath.Join(t.TempDir(), "keys")
			var samples [][]byte
			for i := 0; i < 2; i++ {
				out := filepath.Join(t.TempDir(), "bundle")
				code, stdout, stderr := pq(t, "run", "paper001/mlkem", "--board", mc.Class, "--iterations", "3", "--keys", keys,
					"--out", out, "--firmware-dir", fwDir, "--quiet")
				if code != 0 {
					t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
				}
				for _, want := range []string{"on " + mc.Class, "ML-KEM-1024", " instructions", "C001-01", "bundle: " + out} {
					if !strings.Contains(stdout, want) {
						t.Errorf("run output lacks %q:\n%s", want, stdout)
					}
				}
				if strings.Contains(strings.ReplaceAll(stdout, "not cycles", ""), "cycles") {
					t.Errorf("emulated counts called cycles:\n%s", stdout)
				}
				code, vout, verr := pq(t, "verify", out, "--key", filepath.Join(keys, "runner.pub.json"))
				if code != 0 || !strings.Contains(vout, "VERIFIED") || !strings.Contains(vout, "on "+mc.Class) {
					t.Fatalf("verify: exit %d\n%s%s", code, vout, verr)
				}
				b, err := artifacts.ReadBundle(out)
				if err != nil {
					t.Fatal(err)
				}
				var env artifacts.Environment
				if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
					t.Fatal(err)
				}
				meta, err := os.ReadFile(filepath.Join(fwDir, mc.Class, "metadata.json"))
				if err != nil {
					t.Fatal(err)
				}
				var md struct {
					ELFSHA256 string `json:"elf_sha256"`
				}
				json.Unmarshal(meta, &md)
				if env.Board.FirmwareDigest != "sha256:"+md.ELFSHA256 || !strings.HasPrefix(env.Board.Emulator, "QEMU emulator version") ||
					env.Board.Assurance != artifacts.AssuranceEmulated {
					t.Errorf("environment board %+v (metadata elf_sha256 %s)", env.Board, md.ELFSHA256)
				}
				samples = append(samples, b.Files[artifacts.FileSamples])
			}
			if !bytes.Equal(samples[0], samples[1]) {
				t.Fatalf("two runs of the same manifest gave different counts:\n%s\n%s", samples[0], samples[1])
			}
		})
	}
}

// TestRunStopsOnFirmwareMismatch: --firmware with metadata of another build beside it stops
// the run before anything is measured, and writes no bundle.
func TestRunStopsOnFirmwareMismatch(t *testing.T) {
	mps2, _ := qemu.LookupMachine("qemu-mps2-an386")
	rv, _ := qemu.LookupMachine("qemu-riscv32-virt")
	fwDir := emulatedFirmware(t, mps2)
	emulatedFirmware(t, rv)
	dir := t.TempDir()
	elf, _ := os.ReadFile(filepath.Join(fwDir, mps2.Class, "pqrepro-fw.elf"))
	meta, _ := os.ReadFile(filepath.Join(fwDir, rv.Class, "metadata.json"))
	os.WriteFile(filepath.Join(dir, "pqrepro-fw.elf"), elf, 0o644)
	os.WriteFile(filepath.Join(dir, "metadata.json"), meta, 0o644)
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := pq(t, "run", "paper001/mlkem", "--board", mps2.Class, "--firmware", filepath.Join(dir, "pqrepro-fw.elf"),
		"--iterations", "2", "--keys", filepath.Join(t.TempDir(), "keys"), "--out", out, "--quiet")
	if code != 1 || !strings.Contains(stderr, "firmware mismatch") || !strings.Contains(stderr, "describes another build") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a bundle was written")
	}
}

// TestRunRefusesFirmwareOfAnotherBoard: the micro:bit's firmware given to the Cortex-M4 board
// used to boot and fail with "identify board: QMP cont: … connection reset by peer"; the run
// now stops first, saying which board the ELF is for: from the build's metadata.json beside
// it, or, alone, from the CPU its build attributes name.
func TestRunRefusesFirmwareOfAnotherBoard(t *testing.T) {
	mps2, _ := qemu.LookupMachine("qemu-mps2-an386")
	microbit, _ := qemu.LookupMachine("qemu-microbit")
	fwDir := emulatedFirmware(t, microbit)
	built := filepath.Join(fwDir, microbit.Class, "pqrepro-fw.elf")
	alone := filepath.Join(t.TempDir(), "pqrepro-fw.elf")
	elf, _ := os.ReadFile(built)
	os.WriteFile(alone, elf, 0o644)
	for fw, want := range map[string]string{
		built: "this ELF is for qemu-microbit (its build's metadata.json",
		alone: "this ELF is for pico-w or qemu-microbit or rp2040js-picow: it is built for Armv6S-M",
	} {
		out := filepath.Join(t.TempDir(), "bundle")
		code, stdout, stderr := pq(t, "run", "paper001/mlkem", "--board", mps2.Class, "--firmware", fw,
			"--iterations", "2", "--keys", filepath.Join(t.TempDir(), "keys"), "--out", out, "--quiet")
		if code != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "QMP") {
			t.Errorf("%s on %s: exit %d, want %q\n%s\n%s", fw, mps2.Class, code, want, stdout, stderr)
		}
	}
}

func TestBoardsCommand(t *testing.T) {
	code, stdout, stderr := pq(t, "boards", "--firmware-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"NAME", "host", "qemu-mps2-an386", "qemu-riscv32-virt", "firmware not built", "boards usable", "serial ports:",
		"meters (energy needs one; it is never estimated):\n  host: none: no meter in the hardware map"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("boards output lacks %q:\n%s", want, stdout)
		}
	}
	hw := filepath.Join(t.TempDir(), "lab.yaml")
	os.WriteFile(hw, []byte("boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n    usb: {vid: \"303a\", pid: \"fffe\"}\n    firmware: fw.elf\n    meter: {kind: fnb58, device: /dev/hidraw249}\n"), 0o644)
	code, stdout, _ = pq(t, "boards", "--map", hw)
	if code != 0 || !strings.Contains(stdout, "no USB serial device 303a:fffe") || !strings.Contains(stdout, "hardware map "+hw) ||
		!strings.Contains(stdout, "  c6: fnb58 /dev/hidraw249 absent: ") {
		t.Errorf("boards --map: exit %d\n%s", code, stdout)
	}
	os.WriteFile(hw, []byte("boards:\n  - name: c6\n    driver: serial\n    clas: esp32c6\n"), 0o644)
	if code, _, stderr := pq(t, "boards", "--map", hw); code != 1 || !strings.Contains(stderr, "line 4: boards[0].clas: unknown field") {
		t.Errorf("bad map: exit %d %s", code, stderr)
	}
	if code, _, stderr := pq(t, "run", "paper001/mlkem", "--board", "esp32-on-mars"); code != 2 || !strings.Contains(stderr, "no board \"esp32-on-mars\"") {
		t.Errorf("unknown board: exit %d %s", code, stderr)
	}
}

// TestRunRefusesEmptyRun: a TLS matrix on the emulated Cortex-M4 from the command line whose
// cells are all of groups the board's client does not offer (the NIST hybrids, which the
// engine speaks and the board's C client does not) has no cell that runs: pqrepro run exits
// non-zero saying why for every cell, writes no bundle and keeps the run's log, as for a run
// that broke.
func TestRunRefusesEmptyRun(t *testing.T) {
	mps2, _ := qemu.LookupMachine("qemu-mps2-an386")
	fwDir := emulatedFirmware(t, mps2)
	manifest := filepath.Join(t.TempDir(), "classical.yaml")
	os.WriteFile(manifest, []byte(`apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: classical}
spec:
  tls: {groups: [SecP256r1MLKEM768, SecP384r1MLKEM1024], signatures: [Ed25519, ECDSA-P256], batch: 5, echo: 16}
  iterations: 5
  seed: classical
  boards: [qemu-mps2-an386]
`), 0o644)
	out := filepath.Join(t.TempDir(), "matrix.tar.gz")
	code, stdout, stderr := pq(t, "run", manifest, "--board", mps2.Class, "--firmware", filepath.Join(fwDir, mps2.Class, "pqrepro-fw.elf"),
		"--keys", filepath.Join(t.TempDir(), "keys"), "--out", out, "--quiet")
	if code == 0 || !strings.Contains(stderr, "no cell ran ok: ") || !strings.Contains(stderr, " of 4 cells: ") ||
		!strings.Contains(stderr, "does not offer SecP256r1MLKEM768") || !strings.Contains(stderr, "no bundle written") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a bundle was written")
	}
	log, err := os.ReadFile(strings.TrimSuffix(out, ".tar.gz") + ".failed-log.txt")
	if err != nil || !strings.Contains(string(log), "run failed: no cell ran ok") {
		t.Fatalf("the run's log was not kept: %v\n%s", err, log)
	}
}

// TestBoardMatrixRepeats: paper000's matrix on the emulated Cortex-M33 from the command line,
// twice. All 36 cells run on the board's own C client over the serial line (the CA made from
// the manifest's seed and given to the board over the line, the leaf issued from the seed, the
// engine server deterministic: its ECDH shares, ECDSA nonces and PSS salts drawn from the seed
// too), in instructions, each with the board's phase split summing to its count; and the two
// runs' samples.csv are byte-identical, the classical and hybrid cells' included.
func TestBoardMatrixRepeats(t *testing.T) {
	m, _ := qemu.LookupMachine("qemu-mps2-an505")
	fwDir := emulatedFirmware(t, m)
	keys := filepath.Join(t.TempDir(), "keys")
	var samples [2][]byte
	for i := range samples {
		out := filepath.Join(t.TempDir(), "run")
		code, stdout, stderr := pq(t, "run", "paper000/matrix", "--board", m.Class, "--iterations", "1", "--warmup", "0", "--firmware", filepath.Join(fwDir, m.Class, "pqrepro-fw.elf"),
			"--keys", keys, "--out", out, "--quiet")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, code, stdout, stderr)
		}
		// The printed grid is in the board's unit, never labelled as a time.
		if !strings.Contains(stdout, "MEDIAN HANDSHAKE (instructions), stack pqrepro") || strings.Contains(stdout, "(µs)") ||
			!strings.Contains(stdout, "WHERE THE BOARD'S COUNT GOES (instructions") {
			t.Fatalf("run %d printed:\n%s", i, stdout)
		}
		var err error
		if samples[i], err = os.ReadFile(filepath.Join(out, artifacts.FileSamples)); err != nil {
			t.Fatal(err)
		}
		res, err := os.ReadFile(filepath.Join(out, artifacts.FileResult))
		if err != nil {
			t.Fatal(err)
		}
		var r artifacts.Result
		if err := json.Unmarshal(res, &r); err != nil {
			t.Fatal(err)
		}
		checkBoardMatrix(t, r)
	}
	if !bytes.Equal(samples[0], samples[1]) {
		t.Fatalf("two runs' samples.csv differ:\n%s\n%s", samples[0], samples[1])
	}
}

// checkBoardMatrix checks a board's paper000 matrix: 36 cells in instructions from the C client
// with a full phase split.
func checkBoardMatrix(t *testing.T, r artifacts.Result) {
	t.Helper()
	ok, skipped := 0, 0
	for _, c := range r.Cells {
		switch c.Status {
		case artifacts.StatusOK:
			ok++
			if c.Unit != artifacts.UnitInstructions || c.TLS == nil || !strings.HasPrefix(c.TLS.Client, artifacts.SerialTLSClient) {
				t.Fatalf("cell %s: unit %s, tls %+v", c.Algorithm, c.Unit, c.TLS)
			}
			sum := 0.0
			for _, p := range c.TLS.Phases {
				if p.Side == artifacts.SideClient {
					if p.Unit != artifacts.UnitInstructions {
						t.Fatalf("cell %s: client phase %s in %q", c.Algorithm, p.Name, p.Unit)
					}
					sum += p.Stats.Median
				}
			}
			if sum != c.Stats.Median {
				t.Fatalf("cell %s: the board's phases sum to %v, its count is %v", c.Algorithm, sum, c.Stats.Median)
			}
		case artifacts.StatusSkipped:
			skipped++
			if !strings.Contains(c.Error, "the board's TLS client does not") {
				t.Fatalf("cell %s skipped: %s", c.Algorithm, c.Error)
			}
		default:
			t.Fatalf("cell %s: %s %s", c.Algorithm, c.Status, c.Error)
		}
	}
	if ok != 36 || skipped != 0 {
		t.Fatalf("%d cells ok, %d skipped; want all 36 ok", ok, skipped)
	}
}

// engineServer serves TLS 1.3 with pqrepro's engine on a loopback port until the test ends,
// for an ML-DSA-44 leaf issued for probeHost and every ML-KEM group: each connection is
// handshaken, then read until the client closes. It returns the address and the CA's PEM file.
func engineServer(t *testing.T) (addr, caFile string) {
	t.Helper()
	chain, err := tlscert.New(tls13.MLDSA44, probeHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls13.Config{Groups: []tls13.Group{tls13.MLKEM512, tls13.MLKEM768, tls13.MLKEM1024}, SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44},
		Certificates: chain.Certificates(), PrivateKey: chain.Key}
	ln := serveLoopback(t, func(c net.Conn) {
		s := tls13.Server(c, cfg)
		if s.Handshake() != nil {
			return
		}
		io.Copy(io.Discard, s)
	})
	if caFile, _, _, err = chain.WritePEM(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), caFile
}

// TestBoardMatrixOutsideServer: run --tls-server HOST:PORT on an emulated board: the board's
// own client handshakes, over the serial line and the runner's relay, with a server the runner
// did not start (here the engine on a port of its own, for ML-DSA-44 only), given the CA of
// --tls-ca; each cell records who answered and the relayed bytes, no server CPU or phases, and
// the bundle verifies. The ML-DSA-65 cell fails naming the missing CA; without --tls-ca the run
// is refused.
func TestBoardMatrixOutsideServer(t *testing.T) {
	m, _ := qemu.LookupMachine("qemu-mps2-an386")
	fwDir := emulatedFirmware(t, m)
	addr, ca := engineServer(t)
	manifest := filepath.Join(t.TempDir(), "outside.yaml")
	os.WriteFile(manifest, []byte(`apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: board-outside}
spec:
  tls: {groups: [ML-KEM-512, ML-KEM-768], signatures: [ML-DSA-44, ML-DSA-65], batch: 2}
  warmup: 1
  iterations: 2
  seed: board-outside
`), 0o644)
	elf := filepath.Join(fwDir, m.Class, "pqrepro-fw.elf")
	keys := filepath.Join(t.TempDir(), "keys")
	if code, _, stderr := pq(t, "run", manifest, "--board", m.Class, "--firmware", elf, "--tls-server", addr, "--keys", keys); code != 2 || !strings.Contains(stderr, "--tls-ca FILE") {
		t.Fatalf("without --tls-ca: exit %d: %s", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := pq(t, "run", manifest, "--board", m.Class, "--firmware", elf, "--tls-server", addr, "--tls-ca", ca, "--tls-servername", probeHost,
		"--keys", keys, "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	res := verifiedResult(t, out)
	ok := 0
	for _, c := range res.Cells {
		if strings.HasSuffix(c.Algorithm, "ML-DSA-65") {
			if c.Status != artifacts.StatusFailed || !strings.Contains(c.Error, "no CA with an ML-DSA-65 key") {
				t.Fatalf("cell %s: %s %s", c.Algorithm, c.Status, c.Error)
			}
			continue
		}
		tc := c.TLS
		if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitInstructions || tc == nil || tc.Server == nil || tc.Server.Address != addr ||
			!strings.Contains(tc.Server.Subject, probeHost) || tc.Server.KeyAlgorithm != "ML-DSA-44" || tc.ServerCPU != nil || tc.BytesServer < tc.ChainBytes {
			t.Fatalf("cell %s: %s %s %+v", c.Algorithm, c.Status, c.Error, tc)
		}
		for _, p := range tc.Phases {
			if p.Side == artifacts.SideServer {
				t.Fatalf("cell %s: a server phase %s against an outside server", c.Algorithm, p.Name)
			}
		}
		ok++
	}
	if ok != 2 {
		t.Fatalf("%d cells ok, want 2", ok)
	}
}
