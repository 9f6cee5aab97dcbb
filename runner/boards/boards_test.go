package boards

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/runner/host"
	"pqrepro/runner/qemu"
	"pqrepro/runner/serialport"
)

const goodMap = `# the boards of one lab runner
boards:
  - name: host
    driver: host
    class: rpi4-b
  - name: mps2
    driver: qemu
    class: qemu-mps2-an386
    firmware: fw/mps2.elf
  - name: desk-c6-1
    driver: serial
    class: esp32c6
    usb: {vid: "303a", pid: "1001", serial: "F4:12:FA:00:11:22"}
    baud: 115200
    flasher:
      command: [esptool.py, --chip, esp32c6, --port, "{port}", write_flash, "0x0", "{image}"]
      retries: 3
      timeout: 2m
    reset: {method: dtr-rts}
  - name: pico
    driver: serial
    class: rpi-pico-w
    port: /dev/ttyACM1
    flasher:
      command: [picotool, load, -x, "{image}"]
`

func TestParseMap(t *testing.T) {
	m, err := ParseMap([]byte(goodMap), "lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Boards) != 4 || m.Boards[2].USB.VID != "303a" || *m.Boards[2].Flasher.Retries != 3 || m.Boards[2].Reset.Method != "dtr-rts" ||
		m.Boards[3].Port != "/dev/ttyACM1" {
		t.Fatalf("map = %+v", m)
	}
}

func TestParseMapErrorsNameLineAndField(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // each "line N: field" must appear
	}{
		{"unknown field", "boards:\n  - name: a\n    driver: host\n    colour: red\n", []string{"line 4: boards[0].colour: unknown field"}},
		{"bad driver", "boards:\n  - name: a\n    driver: jtag\n    class: x\n", []string{"line 3: boards[0].driver: must be host, qemu or serial"}},
		{"unknown qemu machine", "boards:\n  - name: a\n    driver: qemu\n    class: qemu-esp32\n", []string{"line 4: boards[0].class: qemu boards are one of"}},
		{"duplicate name", "boards:\n  - {name: a, driver: host}\n  - {name: a, driver: host}\n", []string{"line 3: boards[1].name:"}},
		{"serial without port", "boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n", []string{"line 2: boards[0]: a serial board needs port"}},
		{"port and usb", "boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n    port: /dev/x\n    usb: {vid: \"303a\", pid: \"1001\"}\n",
			[]string{"line 6: boards[0].usb: give port or usb"}},
		{"vid not hex", "boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n    usb:\n      vid: 12345\n      pid: \"1001\"\n",
			[]string{"line 6: boards[0].usb.vid: must be 4 hex digits"}},
		{"flasher without image", "boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n    port: /dev/x\n    flasher:\n      command: [esptool.py, write_flash]\n",
			[]string{"line 6: boards[0].flasher: command must contain {image}"}},
		{"reset method", "boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n    port: /dev/x\n    reset: {method: power}\n",
			[]string{"line 6: boards[0].reset.method: must be none or dtr-rts"}},
		{"serial field on a qemu board", "boards:\n  - name: q\n    driver: qemu\n    class: qemu-riscv32-virt\n    port: /dev/x\n",
			[]string{"line 5: boards[0].port: only serial boards have port"}},
		{"bad timeout", "boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n    port: /dev/x\n    flasher:\n      command: [x, \"{image}\"]\n      timeout: soon\n",
			[]string{"line 8"}},
		{"not a mapping", "- a\n- b\n", []string{"line 1: (document)"}},
		{"empty", "boards: []\n", []string{"boards: list at least one board"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMap([]byte(tt.yaml), "lab.yaml")
			var me *MapError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a MapError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestLoadMapResolvesFirmwareNextToTheMap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lab.yaml")
	os.WriteFile(p, []byte(goodMap), 0o644)
	m, err := LoadMap(p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Boards[1].Firmware != filepath.Join(dir, "fw/mps2.elf") {
		t.Fatalf("firmware = %s", m.Boards[1].Firmware)
	}
}

// TestDiscoverWithoutQEMU: with no QEMU (or node, for rp2040js) on PATH the emulated boards
// are listed as unavailable with the reason, not hidden; the host is always there.
func TestDiscoverWithoutQEMU(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	entries := Discover(context.Background(), Config{FirmwareDir: t.TempDir(), HostClass: "rpi5"})
	if len(entries) != 6 {
		t.Fatalf("%d entries", len(entries))
	}
	if e := entries[0]; e.Info.Name != "host" || e.Info.Class != "rpi5" || !e.Info.Available {
		t.Errorf("host = %+v", e.Info)
	}
	for _, e := range entries[1:] {
		if e.Info.Available || !strings.Contains(e.Info.Reason, "not installed") || !strings.Contains(e.Info.Reason, "firmware not built") ||
			!strings.Contains(e.Info.Reason, "make firmware") {
			t.Errorf("%s = %+v", e.Info.Name, e.Info)
		}
		if e.UsableWithFirmware() {
			t.Errorf("%s usable with firmware but without QEMU", e.Info.Name)
		}
		if _, err := e.Board(""); err == nil || !strings.Contains(err.Error(), "unavailable") {
			t.Errorf("%s opened without QEMU: %v", e.Info.Name, err)
		}
	}
	ab := AgentBoards(entries)
	if len(ab) != 6 || ab[0].Board == nil || ab[1].Board != nil || ab[1].Info.Available {
		t.Errorf("agent boards = %+v", ab)
	}
	if _, err := Find(entries, "qemu-riscv32-virt"); err != nil {
		t.Error(err)
	}
	if _, err := Find(entries, "esp32"); err == nil || !strings.Contains(err.Error(), "host, qemu-mps2-an386, qemu-riscv32-virt, qemu-mps2-an505, qemu-microbit, rp2040js-picow") {
		t.Errorf("Find unknown: %v", err)
	}
}

// TestDiscoverEmulatedBoards finds QEMU and the firmware built in the repository and opens
// the boards; a firmware given for a run replaces the found one.
func TestDiscoverEmulatedBoards(t *testing.T) {
	for _, mc := range qemu.Machines() {
		if _, err := exec.LookPath(mc.Binary); err != nil {
			t.Skipf("%s not installed", mc.Binary)
		}
	}
	fwDir := t.TempDir()
	// Only the riscv build is present here.
	rv := filepath.Join(fwDir, "qemu-riscv32-virt")
	os.MkdirAll(rv, 0o755)
	elf := buildELF(t, rv)
	entries := Discover(context.Background(), Config{FirmwareDir: fwDir})
	mps2, riscv := entries[1], entries[2]
	if mps2.Info.Available || !strings.Contains(mps2.Info.Reason, "firmware not built") || strings.Contains(mps2.Info.Reason, "not installed") {
		t.Errorf("mps2 = %+v", mps2.Info)
	}
	if mb := entries[4]; mb.Info.Class != "qemu-microbit" || strings.Join(mb.Info.Algorithms, ",") != "ML-KEM-512" || len(riscv.Info.Algorithms) != 0 {
		t.Errorf("declared subsets: microbit %+v, riscv %+v", mb.Info, riscv.Info)
	}
	if !riscv.Info.Available || riscv.Firmware != elf || !strings.Contains(riscv.Detail, "QEMU emulator version") || !strings.Contains(riscv.Detail, "sha256:") {
		t.Errorf("riscv = %+v detail %q", riscv.Info, riscv.Detail)
	}
	b, err := riscv.Board("")
	if q, ok := b.(*qemu.QEMU); err != nil || !ok || q.Firmware != elf || q.Class != "qemu-riscv32-virt" {
		t.Fatalf("Board = %#v, %v", b, err)
	}
	// A board missing only its firmware can run a build chosen for the run.
	if !mps2.UsableWithFirmware() || entries[0].UsableWithFirmware() {
		t.Errorf("UsableWithFirmware: mps2 %v, host %v", mps2.UsableWithFirmware(), entries[0].UsableWithFirmware())
	}
	if b, err := mps2.Board(elf); err != nil || b.(*qemu.QEMU).Firmware != elf {
		t.Errorf("mps2 with a chosen firmware: %v", err)
	}
	if _, err := mps2.Board(filepath.Join(fwDir, "missing.elf")); err == nil {
		t.Error("a missing chosen firmware was accepted")
	}
}

// buildELF puts a real ELF with a build-id note in dir: the host's own C compiler output.
func buildELF(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("cc not installed")
	}
	src := filepath.Join(t.TempDir(), "x.c")
	os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
	elf := filepath.Join(dir, FirmwareFile)
	if out, err := exec.Command("cc", "-Wl,--build-id=sha1", "-o", elf, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return elf
}

// TestDiscoverSerialBoards checks ports, flashers and firmware of serial boards for real:
// a pty stands for a present port, a USB id nobody has for an absent board.
func TestDiscoverSerialBoards(t *testing.T) {
	port := "/dev/ptmx" // exists on every Linux machine; the check is that the path is there
	fwDir := t.TempDir()
	elf := buildELF(t, fwDir)
	sh, _ := exec.LookPath("sh")
	m := &Map{Boards: []Spec{
		{Name: "ok", Driver: artifacts.DriverSerial, Class: "esp32c6", Port: port, Firmware: elf,
			Flasher: &FlasherSpec{Command: []string{sh, "-c", "true", "{image}"}}, Reset: &ResetSpec{Method: "dtr-rts"}},
		{Name: "unplugged", Driver: artifacts.DriverSerial, Class: "esp32c6", USB: &USBSpec{VID: "303a", PID: "fffe"}, Firmware: elf},
		{Name: "no-flasher", Driver: artifacts.DriverSerial, Class: "rpi-pico-w", Port: port, Firmware: elf,
			Flasher: &FlasherSpec{Command: []string{"picotool-not-here", "load", "{image}"}}},
		{Name: "no-firmware", Driver: artifacts.DriverSerial, Class: "esp32c6", Port: port},
	}}
	e := Discover(context.Background(), Config{Map: m})
	if e[0].Info.Name != "host" || !e[0].Info.Available {
		t.Fatalf("a map without the host: first entry %+v", e[0].Info)
	}
	e = e[1:]
	if !e[0].Info.Available || !strings.Contains(e[0].Detail, "port /dev/ptmx") {
		t.Errorf("ok = %+v %q", e[0].Info, e[0].Detail)
	}
	b, err := e[0].Board("")
	s, _ := b.(*serialport.Serial)
	if err != nil || s == nil || s.Reset != serialport.ResetDTRRTS || s.Flasher.Retries != 2 || s.Firmware != elf {
		t.Errorf("serial board = %#v, %v", b, err)
	}
	if e[1].Info.Available || !strings.Contains(e[1].Info.Reason, "no USB serial device 303a:fffe is connected") {
		t.Errorf("unplugged = %+v", e[1].Info)
	}
	if e[2].Info.Available || !strings.Contains(e[2].Info.Reason, "flasher picotool-not-here not installed") {
		t.Errorf("no-flasher = %+v", e[2].Info)
	}
	if e[3].Info.Available || !strings.Contains(e[3].Info.Reason, "no firmware image") {
		t.Errorf("no-firmware = %+v", e[3].Info)
	}
	if _, err := e[3].Board(elf); err != nil {
		t.Errorf("a board lacking only firmware refused a chosen build: %v", err)
	}
	if _, err := e[1].Board(elf); err == nil {
		t.Error("an unplugged board opened")
	}
}

func TestHostEntryIsTheHostBoard(t *testing.T) {
	// A class the catalogue does not list runs, as declared.
	e := Discover(context.Background(), Config{HostClass: "lab-box-7", FirmwareDir: t.TempDir()})
	b, err := e[0].Board("")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := b.Identity(context.Background())
	if _, ok := b.(*host.Host); !ok || id.Class != "lab-box-7" || id.Assurance != artifacts.AssuranceHost || id.ClassStatus != artifacts.ClassDeclared {
		t.Fatalf("host board %#v %+v", b, id)
	}
	if e[0].Info.ClassStatus != artifacts.ClassDeclared {
		t.Errorf("the host entry offers lab-box-7 as %q", e[0].Info.ClassStatus)
	}
}

// TestFirmwareDirsFromAnyWorkingDirectory: without a firmware directory given, firmware is
// looked for under the working directory, the pqrepro checkout above it, and the checkout
// this binary was built from, so a command run from anywhere finds its checkout's builds; a
// build under the working directory comes first; "firmware not built" names every place.
func TestFirmwareDirsFromAnyWorkingDirectory(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "..", "firmware", "build"))
	if err != nil {
		t.Fatal(err)
	}
	if got := FirmwareDirs("/given"); len(got) != 1 || got[0] != "/given" {
		t.Errorf("FirmwareDirs with a directory given: %v", got)
	}
	tmp := t.TempDir()
	os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module pqrepro\n\ngo 1.27\n"), 0o644)
	wd := filepath.Join(tmp, "a", "b")
	os.MkdirAll(wd, 0o755)
	t.Chdir(wd)
	dirs := FirmwareDirs("")
	want := []string{filepath.Join(wd, "firmware", "build"), filepath.Join(tmp, "firmware", "build")}
	if len(dirs) < 3 || dirs[0] != want[0] || dirs[1] != want[1] || !slices.Contains(dirs, src) {
		t.Fatalf("FirmwareDirs from %s = %v, want %v and then the source checkout's %s", wd, dirs, want, src)
	}
	why := notBuilt("qemu-nowhere", "")
	for _, d := range dirs {
		if !strings.Contains(why, filepath.Join(d, "qemu-nowhere", FirmwareFile)) {
			t.Errorf("reason %q does not name %s", why, d)
		}
	}
	// A build in the working directory's firmware/build is found first.
	mb := filepath.Join(wd, "firmware", "build", "qemu-microbit")
	os.MkdirAll(mb, 0o755)
	elf := buildELF(t, mb)
	if got := findFirmware("qemu-microbit", ""); got != elf {
		t.Errorf("findFirmware = %q, want %q", got, elf)
	}
}

// TestDiscoverRP2040JS: the rp2040js board is available only with node, an rp2040js install
// and both its ELF and the UF2 beside it; each missing part is named, and the board opens
// with the install's folder.
func TestDiscoverRP2040JS(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	fwDir := t.TempDir()
	dir := filepath.Join(fwDir, "rp2040js-picow")
	os.MkdirAll(dir, 0o755)
	elf := buildELF(t, dir)
	mods := t.TempDir()
	os.MkdirAll(filepath.Join(mods, "node_modules", "rp2040js"), 0o755)
	os.WriteFile(filepath.Join(mods, "node_modules", "rp2040js", "package.json"), []byte(`{"name":"rp2040js","version":"1.4.1"}`), 0o644)
	find := func(cfg Config) Entry {
		t.Helper()
		e, err := Find(Discover(context.Background(), cfg), "rp2040js-picow")
		if err != nil {
			t.Fatal(err)
		}
		return *e
	}
	if e := find(Config{FirmwareDir: fwDir, RP2040JSDir: mods}); e.Info.Available || !strings.Contains(e.Info.Reason, "pqrepro-fw.uf2") {
		t.Errorf("without the UF2: %+v", e.Info)
	}
	os.WriteFile(filepath.Join(dir, "pqrepro-fw.uf2"), make([]byte, 512), 0o644)
	if e := find(Config{FirmwareDir: fwDir}); e.Info.Available || !strings.Contains(e.Info.Reason, "rp2040js not installed") {
		t.Errorf("without rp2040js: %+v", e.Info)
	}
	e := find(Config{FirmwareDir: fwDir, RP2040JSDir: mods})
	if !e.Info.Available || e.Firmware != elf || !strings.Contains(e.Detail, "rp2040js 1.4.1 (node v") || e.Info.Driver != artifacts.DriverQEMU {
		t.Fatalf("with everything: %+v detail %q", e.Info, e.Detail)
	}
	b, err := e.Board("")
	if q, ok := b.(*qemu.QEMU); err != nil || !ok || q.RP2040JSDir != mods || q.Class != "rp2040js-picow" {
		t.Fatalf("Board = %#v, %v", b, err)
	}
	// The TLS matrix boots the image of tls/ beside the board's: named when it is not built (the
	// board stays available for its other kinds), its digest when it is; a chosen image runs
	// every kind itself.
	tlsELF := filepath.Join(dir, "tls", FirmwareFile)
	if e.KindFirmware[artifacts.KindTLSMatrix] != tlsELF || !strings.Contains(e.Detail, "tls-matrix firmware not built") {
		t.Errorf("without the TLS image: %v, detail %q", e.KindFirmware, e.Detail)
	}
	os.MkdirAll(filepath.Dir(tlsELF), 0o755)
	buildELF(t, filepath.Dir(tlsELF))
	os.WriteFile(filepath.Join(dir, "tls", "pqrepro-fw.uf2"), make([]byte, 512), 0o644)
	e = find(Config{FirmwareDir: fwDir, RP2040JSDir: mods})
	if !e.Info.Available || !strings.Contains(e.Detail, "tls-matrix firmware sha256:") {
		t.Errorf("with the TLS image: %+v, detail %q", e.Info, e.Detail)
	}
	if b, _ := e.Board(""); b.(*qemu.QEMU).KindFirmware[artifacts.KindTLSMatrix] != tlsELF {
		t.Errorf("the board's own build: %+v", b)
	}
	if b, err := e.Board(elf); err != nil || b.(*qemu.QEMU).KindFirmware != nil {
		t.Errorf("a chosen image: %+v, %v", b, err)
	}
}
