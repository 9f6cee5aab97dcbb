package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/runner/qemu"
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
		alone: "this ELF is for pico-w or qemu-microbit: it is built for Armv6S-M",
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

// TestRunRefusesEmptyRun: paper000's TLS matrix on the emulated Cortex-M4 from the command
// line, with no TLS CA folder for the board's client to pin and no classical groups in that
// client, has no cell that runs: pqrepro run exits non-zero saying why for every cell, writes
// no bundle and keeps the run's log, as for a run that broke.
func TestRunRefusesEmptyRun(t *testing.T) {
	mps2, _ := qemu.LookupMachine("qemu-mps2-an386")
	fwDir := emulatedFirmware(t, mps2)
	out := filepath.Join(t.TempDir(), "matrix.tar.gz")
	code, stdout, stderr := pq(t, "run", "paper000/matrix", "--board", mps2.Class, "--firmware", filepath.Join(fwDir, mps2.Class, "pqrepro-fw.elf"),
		"--keys", filepath.Join(t.TempDir(), "keys"), "--out", out, "--quiet")
	if code == 0 || !strings.Contains(stderr, "no cell ran ok: ") || !strings.Contains(stderr, " of 36 cells: ") || !strings.Contains(stderr, "no bundle written") {
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
