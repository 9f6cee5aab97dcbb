package boards

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/exec/kinds"
	"pqrepro/runner/host"
	"pqrepro/runner/meter/attach"
	"pqrepro/runner/qemu"
	"pqrepro/runner/serialport"
)

// FirmwareFile is the name of the firmware ELF in a build directory (firmware/Makefile).
const FirmwareFile = "pqrepro-fw.elf"

// Config says where Discover looks.
type Config struct {
	// Map is the hardware map; nil means DefaultMap().
	Map *Map
	// FirmwareDir holds <class>/pqrepro-fw.elf for boards whose map entry names no firmware.
	// Empty: the directories FirmwareDirs lists (firmware/build of the working directory, of
	// the repository above it, of the executable's checkout and of the source checkout).
	FirmwareDir string
	// HostClass declares the host's board class (default "host", or the map's).
	HostClass string
	// RP2040JSDir is where `make rp2040js` installed rp2040js (internal/cachedir's
	// "rp2040js"), for the boards the catalogue boots in it; "" when it is not installed.
	RP2040JSDir string
}

// Entry is one board of the runner: how it is described to the portal, and how to open it.
type Entry struct {
	// Info is what the portal is told: name, class, driver, available, and why not.
	Info protocol.BoardInfo
	// Detail is for people: emulator version, firmware digest and path, port.
	Detail string
	// Spec is the map entry the board came from.
	Spec Spec
	// Firmware is the image found for the board ("" when none).
	Firmware string
	// KindFirmware are the images the board boots for some kinds instead of Firmware (the
	// catalogue's KindImages, beside it), whether or not they are built; nil when none.
	KindFirmware map[artifacts.Kind]string
	// Meter is the board's power meter for people: kind, device and whether it is present,
	// or why the board has none (NoMeter).
	Meter string

	// unusable is why the board cannot run even with a firmware image given ("" if it can).
	unusable string
	// rp2040jsDir is Config.RP2040JSDir, for an rp2040js board.
	rp2040jsDir string
}

// UsableWithFirmware reports whether the board can run once it is given a firmware image:
// it is available, or it lacks only its firmware (not built, not in the map). The host takes
// no firmware and reports false.
func (e *Entry) UsableWithFirmware() bool {
	return e.Spec.Driver != artifacts.DriverHost && e.unusable == ""
}

// Board opens the entry as a runner.Board. firmware, when not empty, replaces the image the
// map or the build directory gave (an uploaded build chosen for a re-run); a board that is
// unavailable only for want of firmware becomes usable that way. Otherwise an unavailable
// board returns an error with the reason.
func (e *Entry) Board(firmware string) (runner.Board, error) {
	fw := e.Firmware
	if firmware != "" {
		fw = firmware
		if _, err := device.LoadImage(fw); err != nil {
			return nil, fmt.Errorf("board %s: %w", e.Info.Name, err)
		}
	}
	switch {
	case firmware == "" && !e.Info.Available:
		return nil, fmt.Errorf("board %s is unavailable: %s", e.Info.Name, e.Info.Reason)
	case firmware != "" && e.unusable != "":
		return nil, fmt.Errorf("board %s is unavailable: %s", e.Info.Name, e.unusable)
	case firmware != "" && e.Spec.Driver == artifacts.DriverHost:
		return nil, fmt.Errorf("board %s runs in-process and takes no firmware", e.Info.Name)
	}
	s := e.Spec
	switch s.Driver {
	case artifacts.DriverHost:
		h := &host.Host{Class: e.Info.Class}
		if s.Meter != nil {
			// Attached unchecked: a meter absent at run time fails its windows with the reason.
			h.Meter = attach.New(s.Meter.Attach())
		}
		return h, nil
	case artifacts.DriverQEMU:
		q := &qemu.QEMU{Name: s.Name, Class: s.Class, Firmware: fw, Binary: s.Emulator, Executors: kinds.Board(), RP2040JSDir: e.rp2040jsDir}
		if firmware == "" {
			// The board's own build: a kind with its own image boots that (a chosen image runs as it is).
			q.KindFirmware = e.KindFirmware
		}
		return q, nil
	case artifacts.DriverSerial:
		b := &serialport.Serial{Name: s.Name, Class: s.Class, Port: s.Port, Baud: s.Baud, Firmware: fw, Reset: serialport.ResetNone, Executors: kinds.Board()}
		if s.USB != nil {
			b.USB = &serialport.USB{VID: s.USB.VID, PID: s.USB.PID, Serial: s.USB.Serial}
		}
		if s.Reset != nil {
			b.Reset = s.Reset.Method
		}
		if s.TLS != nil {
			b.TLS = serialport.TLS{Listen: s.TLS.Listen, Host: s.TLS.Host, CADir: s.TLS.CADir, Name: s.TLS.Name}
		}
		if s.Meter != nil {
			// As the host's: the board runs LOOP in each load window (device.Metered).
			b.Meter = attach.New(s.Meter.Attach())
		}
		if s.Flasher != nil {
			b.Flasher = &serialport.Flasher{Command: s.Flasher.Command, Retries: 2, Timeout: time.Duration(s.Flasher.Timeout)}
			if s.Flasher.Retries != nil {
				b.Flasher.Retries = *s.Flasher.Retries
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("board %s: unknown driver %q", s.Name, s.Driver)
}

// Discover lists the boards of cfg.Map (or the defaults) and checks each one: QEMU installed
// and its firmware built, a serial port present and its flasher installed. It never fails:
// a board that cannot be used here is listed with Available false and the reason.
func Discover(ctx context.Context, cfg Config) []Entry {
	m := cfg.Map
	if m == nil {
		m = DefaultMap()
	}
	specs := m.Boards
	if !slices.ContainsFunc(specs, func(s Spec) bool { return s.Driver == artifacts.DriverHost }) {
		// The host is always there, so a runner works with nothing plugged in.
		specs = append([]Spec{{Name: artifacts.HostBoard, Driver: artifacts.DriverHost, Class: artifacts.HostBoard}}, specs...)
	}
	var out []Entry
	for _, s := range specs {
		e := Entry{Spec: s, Info: protocol.BoardInfo{Name: s.Name, Class: s.Class, Driver: s.Driver},
			Meter: meterStatus(ctx, s.Meter), rp2040jsDir: cfg.RP2040JSDir}
		var other, fwReason string
		switch s.Driver {
		case artifacts.DriverHost:
			if cfg.HostClass != "" {
				e.Info.Class = cfg.HostClass
			}
			if e.Info.Class == "" {
				e.Info.Class = artifacts.HostBoard
			}
			e.Detail = "this machine's CPU, in-process"
			if chk, err := (&host.Host{Class: e.Info.Class}).CheckClass(); err != nil {
				other = err.Error()
			} else {
				e.Info.ClassStatus = chk.Status
			}
		case artifacts.DriverQEMU:
			e.Firmware, e.Detail, other, fwReason = checkQEMU(ctx, s, cfg)
			e.Info.ClassStatus = artifacts.ClassVerified
			if mc, ok := qemu.LookupMachine(s.Class); ok {
				// A small board's declared subset: the portal offers it only what it can run.
				e.Info.Algorithms, e.Info.Kinds = mc.Algorithms, mc.Kinds
				e.KindFirmware, e.Detail = kindImages(mc, e.Firmware, e.Detail)
			}
		case artifacts.DriverSerial:
			e.Firmware, e.Detail, other, fwReason = checkSerial(s)
			e.Info.ClassStatus = artifacts.ClassVerified
		default:
			other = fmt.Sprintf("unknown driver %q", s.Driver)
		}
		e.unusable = other
		reason := joinReasons(other, fwReason)
		e.Info.Available, e.Info.Reason = reason == "", reason
		out = append(out, e)
	}
	return out
}

// checkQEMU finds the firmware and the emulator; it reports problems with the emulator and
// with the firmware apart, since a firmware chosen for a run fixes the latter.
func checkQEMU(ctx context.Context, s Spec, cfg Config) (fw, detail, other, fwReason string) {
	mc, ok := qemu.LookupMachine(s.Class)
	if !ok {
		return "", "", fmt.Sprintf("no QEMU machine for class %s", s.Class), ""
	}
	bin := mc.Binary
	if s.Emulator != "" {
		bin = s.Emulator
	}
	path, err := exec.LookPath(bin)
	switch {
	case err != nil && mc.IsRP2040JS():
		other = fmt.Sprintf("%s not installed (apt-get install %s, then make rp2040js)", bin, mc.Package)
	case err != nil:
		other = fmt.Sprintf("%s not installed (apt-get install %s, or make firmware-qemu)", bin, mc.Package)
	case mc.IsRP2040JS():
		q := &qemu.QEMU{Class: s.Class, Binary: path, RP2040JSDir: cfg.RP2040JSDir}
		if v, err := q.EmulatorVersion(ctx); err != nil {
			other = err.Error()
		} else {
			detail = v
		}
	default:
		if v, err := qemu.Version(ctx, path); err != nil {
			other = err.Error()
		} else {
			detail = v
		}
	}
	fw = s.Firmware
	if fw == "" {
		fw = findFirmware(s.Class, cfg.FirmwareDir)
	}
	switch {
	case fw == "":
		fwReason = notBuilt(s.Class, cfg.FirmwareDir)
	default:
		img, err := device.LoadImage(fw)
		switch {
		case errors.Is(err, os.ErrNotExist):
			fwReason = fmt.Sprintf("firmware not built: no %s (run make firmware)", fw)
			fw = ""
		case err != nil:
			fwReason = err.Error()
			fw = ""
		case mc.IsRP2040JS() && !fileExists(qemu.UF2Beside(fw)):
			fwReason = fmt.Sprintf("firmware not built: no %s beside %s (rp2040js boots the UF2; run make firmware)", filepath.Base(qemu.UF2Beside(fw)), relPath(fw))
			fw = ""
		default:
			detail = joinDetail(detail, "firmware "+artifacts.ShortDigest(img.Digest)+" ("+relPath(fw)+")")
		}
	}
	return fw, detail, other, fwReason
}

// kindImages finds the images a class boots for some kinds (boardcat's KindImages) beside its
// image fw, and adds each one's digest to the board's detail, or that it is not built: the
// board still runs its other kinds, and a run of that kind says what is missing.
func kindImages(mc qemu.Machine, fw, detail string) (map[artifacts.Kind]string, string) {
	if fw == "" || len(mc.KindImages) == 0 {
		return nil, detail
	}
	out := map[artifacts.Kind]string{}
	for _, k := range slices.Sorted(maps.Keys(mc.KindImages)) {
		p := filepath.Join(filepath.Dir(fw), mc.KindImages[k], FirmwareFile)
		out[k] = p
		img, err := device.LoadImage(p)
		switch {
		case err != nil:
			detail = joinDetail(detail, fmt.Sprintf("%s firmware not built (%s)", k, relPath(p)))
		case mc.IsRP2040JS() && !fileExists(qemu.UF2Beside(p)):
			detail = joinDetail(detail, fmt.Sprintf("%s firmware: no %s beside %s", k, filepath.Base(qemu.UF2Beside(p)), relPath(p)))
		default:
			detail = joinDetail(detail, fmt.Sprintf("%s firmware %s (%s)", k, artifacts.ShortDigest(img.Digest), relPath(p)))
		}
	}
	return out, detail
}

func joinReasons(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

func checkSerial(s Spec) (fw, detail, other, fwReason string) {
	var problems []string
	b := &serialport.Serial{Name: s.Name, Port: s.Port}
	if s.USB != nil {
		b.USB = &serialport.USB{VID: s.USB.VID, PID: s.USB.PID, Serial: s.USB.Serial}
	}
	if port, err := b.ResolvePort(); err != nil {
		problems = append(problems, strings.TrimPrefix(err.Error(), serialport.ErrInfrastructure.Error()+": "))
	} else {
		detail = "port " + port
	}
	if s.Flasher != nil && len(s.Flasher.Command) > 0 {
		if _, err := exec.LookPath(s.Flasher.Command[0]); err != nil {
			problems = append(problems, fmt.Sprintf("flasher %s not installed", s.Flasher.Command[0]))
		} else {
			detail = joinDetail(detail, "flasher "+s.Flasher.Command[0])
		}
	}
	switch fw = s.Firmware; {
	case fw == "":
		fwReason = "no firmware image: give firmware: PATH in the hardware map, or choose a build for the run"
	default:
		if img, err := device.LoadImage(fw); err != nil {
			fwReason = "firmware: " + err.Error()
			fw = ""
		} else {
			detail = joinDetail(detail, "firmware "+artifacts.ShortDigest(img.Digest)+" ("+relPath(fw)+")")
		}
	}
	return fw, detail, strings.Join(problems, "; "), fwReason
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func relPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return p
}

// findFirmware returns <dir>/<class>/pqrepro-fw.elf from the first directory that has it.
func findFirmware(class, dir string) string {
	for _, d := range FirmwareDirs(dir) {
		p := filepath.Join(d, class, FirmwareFile)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// notBuilt is the reason a board has no firmware: every place FirmwareDirs looked.
func notBuilt(class, dir string) string {
	var where []string
	for _, d := range FirmwareDirs(dir) {
		where = append(where, filepath.Join(d, class, FirmwareFile))
	}
	if len(where) == 0 {
		return fmt.Sprintf("firmware not built: no %s (no directory to look in; run make firmware, or give --firmware-dir)", filepath.Join("firmware", "build", class, FirmwareFile))
	}
	return fmt.Sprintf("firmware not built: looked for %s (run make firmware, or give --firmware-dir)", strings.Join(where, ", "))
}

// FirmwareDirs lists where firmware builds are looked for, each once, in this order: dir when
// given (and only it); else firmware/build under the working directory, under the repository
// root above it, under the checkout holding this executable (a binary built in the repository,
// `go build -o pqrepro ./cmd/pqrepro`), and under the checkout this binary was built from (its
// source directory as the compiler recorded it, when that is still a pqrepro module on disk:
// `go run ./cmd/pqrepro` from anywhere, or a binary copied elsewhere). So the command line finds
// its checkout's firmware from any working directory.
func FirmwareDirs(dir string) []string {
	if dir != "" {
		return []string{dir}
	}
	var dirs []string
	add := func(root string) {
		if root == "" {
			return
		}
		d := filepath.Join(root, "firmware", "build")
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if wd, err := os.Getwd(); err == nil {
		add(wd)
		add(repoRoot(wd))
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		add(repoRoot(filepath.Dir(exe)))
	}
	add(sourceRoot())
	return dirs
}

// sourceRoot is the module root this package was compiled from, as the compiler recorded this
// file's path, when that directory is still a pqrepro module; "" otherwise (a -trimpath build
// records no directory).
func sourceRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(file))) // runner/boards/discover.go
	if repoRoot(root) != root {
		return ""
	}
	return root
}

// repoRoot is the nearest directory at or above dir whose go.mod declares module pqrepro.
func repoRoot(dir string) string {
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			mod := ""
			if sc.Scan() {
				mod = strings.TrimSpace(sc.Text())
			}
			f.Close()
			if mod == "module pqrepro" {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Find returns the entry named name, or else the first entry of that class.
func Find(entries []Entry, name string) (*Entry, error) {
	for i := range entries {
		if entries[i].Info.Name == name {
			return &entries[i], nil
		}
	}
	for i := range entries {
		if entries[i].Info.Class == name {
			return &entries[i], nil
		}
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Info.Name)
	}
	return nil, fmt.Errorf("no board %q on this runner (boards: %s)", name, strings.Join(names, ", "))
}

// AgentBoards turns entries into the agent's board list: every board is offered to the
// portal with its availability, and the available ones carry their runner.Board.
func AgentBoards(entries []Entry) []runner.AgentBoard {
	var out []runner.AgentBoard
	for i := range entries {
		ab := runner.AgentBoard{Info: entries[i].Info}
		if entries[i].Info.Available {
			b, err := entries[i].Board("")
			if err != nil {
				ab.Info.Available, ab.Info.Reason = false, err.Error()
			} else {
				ab.Board = b
			}
		}
		out = append(out, ab)
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
