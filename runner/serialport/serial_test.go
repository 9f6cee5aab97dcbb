package serialport

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.bug.st/serial/enumerator"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/exec/kinds"
	"pqrepro/runner/qemu"
)

// flashScript writes a stand-in flasher: a real program that fails its first `fails` runs
// (as esptool does when it cannot sync), then "writes" the image by copying it, and logs its
// arguments.
func flashScript(t *testing.T, fails int, sleep string) (script, calls, flashed string) {
	t.Helper()
	dir := t.TempDir()
	calls, flashed = filepath.Join(dir, "calls"), filepath.Join(dir, "flashed.bin")
	script = filepath.Join(dir, "flash.sh")
	body := `#!/bin/sh
echo "$*" >> "` + calls + `"
n=$(wc -l < "` + calls + `")
if [ -n "` + sleep + `" ]; then sleep ` + sleep + `; fi
if [ "$n" -le ` + strconv.Itoa(fails) + ` ]; then echo "A fatal error occurred: Failed to connect to the chip: attempt $n" >&2; exit 2; fi
while [ $# -gt 0 ]; do if [ "$1" = "--image" ]; then cp "$2" "` + flashed + `"; fi; shift; done
echo "Wrote image, hash of data verified."
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, calls, flashed
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
}

func TestFlasher(t *testing.T) {
	image := filepath.Join(t.TempDir(), "fw.bin")
	os.WriteFile(image, []byte("image bytes"), 0o644)
	tests := []struct {
		name     string
		fails    int
		retries  int
		timeout  time.Duration
		sleep    string
		wantErr  bool
		attempts int
	}{
		{name: "first time", fails: 0, retries: 2, attempts: 1},
		{name: "succeeds on the third attempt", fails: 2, retries: 2, attempts: 3},
		{name: "gives up after its retries", fails: 5, retries: 2, wantErr: true, attempts: 3},
		{name: "an attempt that hangs is cut off", fails: 0, retries: 1, timeout: 300 * time.Millisecond, sleep: "5", wantErr: true, attempts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script, calls, flashed := flashScript(t, tt.fails, tt.sleep)
			f := &Flasher{Command: []string{script, "--port", "{port}", "--baud", "{baud}", "--image", "{image}"},
				Retries: tt.retries, Timeout: tt.timeout, Pause: 10 * time.Millisecond}
			var log bytes.Buffer
			t0 := time.Now()
			err := f.Flash(context.Background(), "/dev/ttyACM7", image, 460800, &log)
			got := lines(t, calls)
			if len(got) != tt.attempts {
				t.Errorf("%d attempts, want %d: %v", len(got), tt.attempts, got)
			}
			if len(got) > 0 && got[0] != "--port_/dev/ttyACM7_--baud_460800_--image_"+image {
				t.Errorf("arguments %q", got[0])
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Flash: %v\n%s", err, log.String())
				}
				if b, _ := os.ReadFile(flashed); string(b) != "image bytes" {
					t.Errorf("image not written")
				}
				return
			}
			var fe *FlashError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInfrastructure) || fe.Attempts != tt.attempts {
				t.Fatalf("err = %v, want a FlashError (infrastructure) after %d attempts", err, tt.attempts)
			}
			if tt.sleep != "" && time.Since(t0) > 4*time.Second {
				t.Errorf("hanging flasher not cut off: %v", time.Since(t0))
			}
			if tt.sleep == "" && (!strings.Contains(err.Error(), "Failed to connect") || !strings.Contains(log.String(), "flash: | A fatal error occurred")) {
				t.Errorf("error or log lacks the flasher's message: %v\n%s", err, log.String())
			}
		})
	}
}

func TestFlasherValidate(t *testing.T) {
	for _, f := range []Flasher{{}, {Command: []string{"esptool.py", "write_flash", "0x0"}}, {Command: []string{"x", "{image}"}, Retries: -1}} {
		if err := f.Validate(); err == nil {
			t.Errorf("%+v: no error", f)
		}
	}
	if err := (&Flasher{Command: []string{"picotool", "load", "-x", "{image}"}}).Validate(); err != nil {
		t.Error(err)
	}
}

func testManifest(t *testing.T, iterations int) *artifacts.Manifest {
	t.Helper()
	m, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: paper001, name: serial-test}
spec:
  algorithms: [ML-KEM-512, X25519]
  operations: [keygen, encaps, decaps]
  warmup: 1
  iterations: `+strconv.Itoa(iterations)+`
  seed: "serial driver test"
  boards: [bench-board]
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func execute(t *testing.T, b runner.Board, m *artifacts.Manifest) (*artifacts.Bundle, *artifacts.Result, error) {
	t.Helper()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a hang guard only: a busy host slows a run
	defer cancel()
	return runner.Execute(ctx, b, m, runner.Options{Identity: id, Version: "test"})
}

func runLog(err error) string {
	var re *runner.RunError
	if errors.As(err, &re) {
		return string(re.Log)
	}
	return ""
}

// TestHostFirmwareOnAPty drives the real host build of the firmware through a real pty,
// flashing with a real external program first: the whole serial path except the chip.
func TestHostFirmwareOnAPty(t *testing.T) {
	port, elf := startHostBoard(t)
	script, calls, flashed := flashScript(t, 1, "")
	b := &Serial{Name: "desk-1", Class: "bench-board", Port: port, Firmware: elf, RetryInterval: 300 * time.Millisecond,
		Flasher: &Flasher{Command: []string{script, "--port", "{port}", "--image", "{image}"}, Retries: 2, Pause: 10 * time.Millisecond}}
	bundle, res, err := execute(t, b, testManifest(t, 3))
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog(err))
	}
	if _, err := attest.Verify(bundle, nil); err != nil {
		t.Fatal(err)
	}
	if got := lines(t, calls); len(got) != 2 { // one failure, one success, and no second flash for Run
		t.Errorf("flasher ran %d times: %v", len(got), got)
	}
	if a, _ := os.ReadFile(flashed); !bytes.Equal(a, mustRead(t, elf)) {
		t.Error("the flasher did not get the image")
	}
	if res.Assurance != artifacts.AssuranceHardware || len(res.Cells) != 4 {
		t.Fatalf("assurance %s, %d cells", res.Assurance, len(res.Cells))
	}
	for _, c := range res.Cells {
		switch c.Algorithm {
		case "ML-KEM-512":
			if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitNanoseconds || c.Stats.N != 3 || *c.Memory.StackBytes <= 0 {
				t.Errorf("cell %+v", c)
			}
		case "X25519":
			if c.Status != artifacts.StatusSkipped || !strings.Contains(c.Error, "does not implement X25519") {
				t.Errorf("cell %+v", c)
			}
		}
	}
	var env artifacts.Environment
	json.Unmarshal(bundle.Files[artifacts.FileEnvironment], &env)
	img, _ := device.LoadImage(elf)
	if env.Board.Driver != "serial" || env.Board.Name != "desk-1" || env.Board.FirmwareDigest != img.Digest || env.Board.Firmware != "pqrepro-fw" {
		t.Errorf("board identity %+v", env.Board)
	}
	log := string(bundle.Files[artifacts.FileLog])
	for _, want := range []string{"identify: flash: attempt 1 of 3", "identify: flash: | A fatal error", "already written by this runner", "serial: opened " + port, "self-test: "} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFlashFailureIsInfrastructure: a flasher that never succeeds fails the run as an
// infrastructure failure, with its output in the kept log, and produces no bundle.
func TestFlashFailureIsInfrastructure(t *testing.T) {
	port, elf := startHostBoard(t)
	script, _, _ := flashScript(t, 9, "")
	b := &Serial{Name: "desk-1", Class: "bench-board", Port: port, Firmware: elf,
		Flasher: &Flasher{Command: []string{script, "{port}", "--image", "{image}"}, Retries: 1, Pause: 10 * time.Millisecond}}
	bundle, _, err := execute(t, b, testManifest(t, 2))
	if bundle != nil || !errors.Is(err, ErrInfrastructure) {
		t.Fatalf("err = %v, want an infrastructure failure and no bundle", err)
	}
	if log := runLog(err); !strings.Contains(log, "run failed") {
		t.Errorf("log:\n%s", log)
	}
}

// TestBoardRunsAnotherBuild: the board still runs another image than the one "flashed"
// (a flash that silently did nothing): the build-id check stops the run before measuring.
func TestBoardRunsAnotherBuild(t *testing.T) {
	port, elf := startHostBoard(t)
	img, err := device.LoadImage(elf)
	if err != nil {
		t.Fatal(err)
	}
	data := mustRead(t, elf)
	id, _ := hex.DecodeString(img.BuildID)
	i := bytes.Index(data, id)
	if i < 0 {
		t.Fatal("build-id not in the ELF")
	}
	other := bytes.Clone(data)
	other[i] ^= 0xff
	otherPath := filepath.Join(t.TempDir(), "pqrepro-fw")
	os.WriteFile(otherPath, other, 0o755)
	b := &Serial{Name: "desk-1", Class: "bench-board", Port: port, Firmware: otherPath}
	bundle, _, err := execute(t, b, testManifest(t, 2))
	if bundle != nil || !errors.Is(err, device.ErrFirmwareMismatch) || !strings.Contains(err.Error(), "the build-id the board reports") {
		t.Fatalf("err = %v, want a firmware mismatch", err)
	}
	if log := runLog(err); strings.Contains(log, ":BENCH:") {
		t.Errorf("measured despite the mismatch:\n%s", log)
	}
}

// TestResetOnAPtyFails: DTR/RTS reset needs modem-control lines; on a pty it fails as an
// infrastructure failure that says what to configure instead.
func TestResetOnAPtyFails(t *testing.T) {
	port, elf := startHostBoard(t)
	b := &Serial{Name: "desk-1", Class: "bench-board", Port: port, Firmware: elf, Reset: ResetDTRRTS}
	_, err := b.Identity(context.Background())
	if !errors.Is(err, ErrInfrastructure) || !strings.Contains(err.Error(), "reset: none") {
		t.Fatalf("err = %v", err)
	}
}

func TestPortResolution(t *testing.T) {
	ports, err := Ports()
	if err != nil {
		t.Fatalf("enumerator: %v", err)
	}
	t.Logf("%d serial ports on this machine", len(ports))
	b := &Serial{Name: "c6", USB: &USB{VID: "303a", PID: "ffff", Serial: "no-such-board"}}
	if _, err := b.ResolvePort(); !errors.Is(err, ErrInfrastructure) || !strings.Contains(err.Error(), "303a:ffff") {
		t.Errorf("absent USB device: %v", err)
	}
	if _, err := (&Serial{Port: "/dev/does-not-exist"}).ResolvePort(); !errors.Is(err, ErrInfrastructure) {
		t.Errorf("absent port: %v", err)
	}
	// Matching rules, on the enumerator's own type.
	list := []*enumerator.PortDetails{
		{Name: "/dev/ttyACM0", IsUSB: true, VID: "303A", PID: "1001", SerialNumber: "A"},
		{Name: "/dev/ttyACM1", IsUSB: true, VID: "303a", PID: "1001", SerialNumber: "B"},
		{Name: "/dev/ttyS0"},
	}
	if p, err := FindUSB(USB{VID: "303a", PID: "1001", Serial: "B"}, list); err != nil || p != "/dev/ttyACM1" {
		t.Errorf("by serial: %s %v", p, err)
	}
	if _, err := FindUSB(USB{VID: "303a", PID: "1001"}, list); err == nil || !strings.Contains(err.Error(), "2 USB serial devices") {
		t.Errorf("ambiguous: %v", err)
	}
}

// TestSerialDriverOnQEMU points the serial driver at an emulated board's pty: the same code
// path as a USB board, and the counts must equal the QEMU driver's for the same manifest.
func TestSerialDriverOnQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	mc, _ := qemu.LookupMachine("qemu-riscv32-virt")
	for _, tool := range []string{mc.Binary, "riscv64-unknown-elf-gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	elf := filepath.Join(buildFirmware(t, mc.Class, []string{mc.Class}), "pqrepro-fw.elf")
	m := testManifest(t, 3)
	pty := startQEMUBoard(t, mc.Binary, mc.Args, elf)
	sb := &Serial{Name: "emulated-on-serial", Class: mc.Class, Port: pty, Firmware: elf, RetryInterval: 300 * time.Millisecond, Executors: kinds.Board()}
	viaSerial, res, err := execute(t, sb, m)
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog(err))
	}
	if res.Assurance != artifacts.AssuranceEmulated {
		t.Errorf("instructions labelled %s", res.Assurance)
	}
	viaQEMU, _, err := execute(t, &qemu.QEMU{Class: mc.Class, Firmware: elf, Executors: kinds.Board()}, m)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := viaSerial.Files[artifacts.FileSamples], viaQEMU.Files[artifacts.FileSamples]; !bytes.Equal(a, b) {
		t.Fatalf("serial driver and QEMU driver counts differ:\n%s\n%s", a, b)
	}
}
