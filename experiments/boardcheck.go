package experiments

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/internal/boardcat"
)

// ClassCheck is the outcome of checking a board class against the board catalogue.
type ClassCheck struct {
	// Status is artifacts.ClassVerified or artifacts.ClassDeclared.
	Status string
	// Note says what was compared (verified) or why the class could not be checked (declared).
	Note string
}

// ClassMismatchError refuses a board class the machine clearly is not: its architecture or
// its CPU differs from the catalogue's.
type ClassMismatchError struct {
	// Class is the declared class; Board what the catalogue says it is ("" for a class the
	// catalogue reserves, such as qemu-*).
	Class, Board string
	// Machine describes the machine as its environment reports it.
	Machine string
	// Differs names what disagrees ("its architecture differs").
	Differs string
}

func (e *ClassMismatchError) Error() string {
	return fmt.Sprintf("board class %s is %s; this machine is %s; %s: refusing to file its results under %s",
		e.Class, e.Board, e.Machine, e.Differs, e.Class)
}

// CheckBoardClass checks class against the embedded board catalogue using what env says
// the machine is (see Catalog.CheckClass).
func CheckBoardClass(class string, env artifacts.Environment) (status string, err error) {
	c, err := CheckClassEmbedded(class, env)
	return c.Status, err
}

// CheckClassEmbedded is Catalog.CheckClass on the embedded board catalogue.
func CheckClassEmbedded(class string, env artifacts.Environment) (ClassCheck, error) {
	b, err := embedded.ReadFile("boards.csv")
	if err != nil {
		return ClassCheck{}, fmt.Errorf("read the board catalogue: %w", err)
	}
	boards, err := parseBoards(b)
	if err != nil {
		return ClassCheck{}, err
	}
	return checkClass(boards, class, env)
}

// CheckClass checks a board class against the catalogue, from what env (an
// environment.json) says the machine is; never from what a bundle says its class status is.
//
//   - Intrinsic classes are verified: "host", and the class of an emulated (qemu) or
//     firmware (serial) board, which its driver establishes. A qemu-* class on another driver,
//     or the qemu driver with another class, is refused.
//   - A class the catalogue does not list is declared: nothing can check it.
//   - A catalogue class is compared on architecture (boards.csv arch against GOARCH and the
//     kernel's machine name), CPU (its cpu text against /proc/cpuinfo's ARM part number or
//     model name) and clock (clock_mhz against cpufreq's maximum, where both are known). A
//     clear architecture or CPU difference is a *ClassMismatchError. Verified needs arch and
//     CPU both checked and agreeing, the clock agreeing within 10% where known, and a bare
//     (not virtualized) machine; anything less is declared, with the reason in Note.
func (c *Catalog) CheckClass(class string, env artifacts.Environment) (ClassCheck, error) {
	return checkClass(c.Boards, class, env)
}

func checkClass(boards []Board, class string, env artifacts.Environment) (ClassCheck, error) {
	driver := env.Board.Driver
	_, catalogued := boardcat.LookupEmulated(class)
	qemuClass := strings.HasPrefix(class, "qemu-") || catalogued // an emulated board class
	if want := driver.Level(); want != "" && env.Board.Assurance != "" && env.Board.Assurance != want {
		return ClassCheck{}, &ClassMismatchError{Class: class, Board: "filed by a " + string(driver) + " driver", Machine: "reported at assurance " + string(env.Board.Assurance),
			Differs: "a " + string(driver) + " board's assurance is " + string(want)}
	}
	switch {
	case driver == artifacts.DriverQEMU && !qemuClass:
		return ClassCheck{}, &ClassMismatchError{Class: class, Board: "not an emulated board class", Machine: "an emulated board (driver qemu)",
			Differs: "emulated boards are filed under their emulated class (qemu-*, rp2040js-*)"}
	case driver != "" && driver != artifacts.DriverHost:
		return ClassCheck{Status: artifacts.ClassVerified, Note: "intrinsic: the " + string(driver) + " driver's own board class"}, nil
	case class == artifacts.HostBoard || class == "":
		return ClassCheck{Status: artifacts.ClassVerified, Note: "intrinsic: the host board"}, nil
	case qemuClass:
		return ClassCheck{}, &ClassMismatchError{Class: class, Board: "an emulated board class", Machine: describeMachine(env),
			Differs: "it runs the host driver, not the emulator"}
	}
	if what, ok := microcontrollers[class]; ok {
		// The host driver is a process on an operating system; these boards run firmware.
		return ClassCheck{}, &ClassMismatchError{Class: class, Board: what, Machine: describeMachine(env),
			Differs: "a microcontroller runs the project's firmware (a serial board), never the host driver's Linux process"}
	}
	var b *Board
	for i := range boards {
		if boards[i].Slug == class {
			b = &boards[i]
		}
	}
	if b == nil {
		return ClassCheck{Status: artifacts.ClassDeclared, Note: "board class " + class + " is not in the board catalogue, so nothing can check it"}, nil
	}
	if members, ok := families[class]; ok && b.Arch == "" && b.CPU == "" {
		return checkFamily(boards, class, members, env)
	}
	core := catalogueCore(b.CPU)
	mismatch := func(differs string) (ClassCheck, error) {
		return ClassCheck{}, &ClassMismatchError{Class: class, Board: "a " + b.Name + " (" + catalogueSummary(b, core) + ")", Machine: describeMachine(env), Differs: differs}
	}
	var unchecked, checked []string
	arch := machineArch(env)
	switch {
	case b.Arch == "":
		unchecked = append(unchecked, "the catalogue gives no architecture")
	case arch == "":
		unchecked = append(unchecked, "the machine reports no architecture")
	case !archCompatible(b.Arch, arch):
		return mismatch(fmt.Sprintf("its architecture differs (%s, the catalogue says %s)", arch, b.Arch))
	default:
		checked = append(checked, "arch "+arch)
	}
	mc := machineCPU(env)
	switch {
	case core.key == "":
		unchecked = append(unchecked, "the catalogue gives no CPU")
	case mc.name == "":
		unchecked = append(unchecked, "the machine reports no CPU model")
	case !cpuMatches(core, mc):
		return mismatch(fmt.Sprintf("its CPU differs (%s, the catalogue says %s)", mc.name, core.key))
	default:
		checked = append(checked, "CPU "+mc.name)
	}
	if want, err := strconv.ParseFloat(b.ClockMHz, 64); err == nil && want > 0 && env.Timing != nil && env.Timing.MaxFrequencyKHz > 0 {
		got := float64(env.Timing.MaxFrequencyKHz) / 1000
		if got < want*0.9 || got > want*1.1 {
			unchecked = append(unchecked, fmt.Sprintf("its maximum clock is %.0f MHz, the catalogue's %.0f MHz (overclocked, underclocked or another board)", got, want))
		} else {
			checked = append(checked, fmt.Sprintf("clock %.0f MHz", got))
		}
	}
	if v := virtualization(env); v != "" {
		unchecked = append(unchecked, "the machine is virtualized ("+v+"); the catalogue's boards are bare machines")
	}
	if len(unchecked) > 0 {
		note := "board class " + class + " declared, not verified: " + strings.Join(unchecked, "; ")
		if len(checked) > 0 {
			note += " (agrees: " + strings.Join(checked, ", ") + ")"
		}
		return ClassCheck{Status: artifacts.ClassDeclared, Note: note}, nil
	}
	return ClassCheck{Status: artifacts.ClassVerified, Note: "checked against the board catalogue: " + strings.Join(checked, ", ")}, nil
}

// microcontrollers are the catalogue's board classes that run firmware on a microcontroller,
// with what each is. The shared catalogue leaves the Pico boards' CPU blank (paper000's abstract
// gives no spec); the project's own firmware for them (firmware/, docs/BOARDS.md) is RP2040
// and RP2350 code, and the ESP32 family runs ESP-IDF. A host run filed under one of these
// would be a Linux process claiming to be a microcontroller, so it is refused outright.
var microcontrollers = map[string]string{
	"pico-w":  "a Raspberry Pi Pico W (RP2040 microcontroller, dual Cortex-M0+)",
	"pico2-w": "a Raspberry Pi Pico 2 W (RP2350 microcontroller, Cortex-M33 or Hazard3 RISC-V cores)",
	"esp32":   "an Espressif ESP32 (Xtensa microcontroller, ESP-IDF firmware)",
	"esp32c3": "an Espressif ESP32-C3 (RISC-V microcontroller, ESP-IDF firmware)",
	"esp32c6": "an Espressif ESP32-C6 (RISC-V microcontroller, ESP-IDF firmware)",
}

// IsMicrocontroller reports whether a board class is a microcontroller (it runs firmware,
// never the host driver).
func IsMicrocontroller(class string) bool { _, ok := microcontrollers[class]; return ok }

// families are catalogue classes that name a board without its variant (paper000's "Raspberry
// Pi Zero (variant not stated)"), with the catalogue classes of the variants it may be. Such a
// class is checked against every variant: a machine none of them could be is refused; one
// that agrees with a variant stays declared, since the paper's variant is unknown.
var families = map[string][]string{
	"rpi-zero": {"rpi-zero-wh", "rpi-zero-2-wh"},
}

func checkFamily(boards []Board, class string, members []string, env artifacts.Environment) (ClassCheck, error) {
	var refusals []string
	for _, m := range members {
		c, err := checkClass(boards, m, env)
		if err != nil {
			var me *ClassMismatchError
			if errors.As(err, &me) {
				refusals = append(refusals, m+": "+me.Differs)
				continue
			}
			return ClassCheck{}, err
		}
		return ClassCheck{Status: artifacts.ClassDeclared, Note: fmt.Sprintf("board class %s declared, not verified: the catalogue does not say which variant it is; this machine agrees with %s (%s)",
			class, m, strings.TrimPrefix(c.Note, "checked against the board catalogue: "))}, nil
	}
	return ClassCheck{}, &ClassMismatchError{Class: class, Board: "a board of the variants " + strings.Join(members, ", "), Machine: describeMachine(env),
		Differs: "it is none of them (" + strings.Join(refusals, "; ") + ")"}
}

// core is what the catalogue's cpu text names: an ARM core (with its part number) or a
// model name to find in the machine's.
type core struct {
	key  string // "Cortex-A72", "Intel Core i7-8550U"; "" when the text names no CPU
	part string // "0x41:0xd08" for an ARM core of the parts table
}

var (
	armCoreRE = regexp.MustCompile(`(?i)\b(ARM1176|Cortex-A\d+)\b`)
	clockRE   = regexp.MustCompile(`(?i)^\s*[\d.]+\s*[GM]Hz\s*`)
	countRE   = regexp.MustCompile(`(?i)^\s*(single|dual|quad|hexa|octa)-core\s*`)
)

func catalogueCore(cpu string) core {
	if m := armCoreRE.FindString(cpu); m != "" {
		for k, v := range boardcat.ARMParts {
			if strings.EqualFold(v, m) {
				return core{key: v, part: k}
			}
		}
		return core{key: m}
	}
	s, _, _ := strings.Cut(cpu, ";")
	s = countRE.ReplaceAllString(clockRE.ReplaceAllString(s, ""), "")
	return core{key: strings.TrimSpace(s)}
}

// machineCore is the CPU the machine reports: from the ARM part table, else its model name.
type machineCore struct {
	name  string // "" when the machine reports nothing that names a CPU
	part  string // "0x41:0xd08" when the machine reports an ARM part
	table bool   // name came from the parts table
}

func machineCPU(env artifacts.Environment) machineCore {
	var mc machineCore
	if env.CPUPart != "" {
		mc.part = strings.ToLower(strings.TrimSpace(env.CPUImplementer)) + ":" + strings.ToLower(strings.TrimSpace(env.CPUPart))
		if n := boardcat.ARMParts[mc.part]; n != "" {
			mc.name, mc.table = n, true
			return mc
		}
	}
	m := strings.TrimSpace(env.CPUModel)
	lm := strings.ToLower(m)
	// A 32-bit ARM kernel's model name ("ARMv7 Processor rev 3 (v7l)") names the
	// architecture, not the core; so does the runner's placeholder.
	if m == "" || strings.Contains(lm, "model not reported") || strings.HasPrefix(lm, "armv") {
		if mc.part != "" {
			mc.name = "ARM implementer " + strings.TrimSpace(env.CPUImplementer) + " part " + strings.TrimSpace(env.CPUPart)
		}
		return mc
	}
	mc.name = m
	return mc
}

func cpuMatches(c core, mc machineCore) bool {
	if c.part != "" && mc.part != "" {
		return c.part == mc.part
	}
	if mc.table {
		return strings.EqualFold(c.key, mc.name)
	}
	want, got := cpuTokens(c.key), cpuTokens(mc.name)
	if len(want) == 0 {
		return false
	}
	for i := 0; i+len(want) <= len(got); i++ {
		if strings.Join(got[i:i+len(want)], " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}

var nonWordRE = regexp.MustCompile(`[^a-z0-9-]+`)

// cpuTokens lower-cases a model name and drops trademarks and filler words, so "Intel(R)
// Core(TM) i7-8550U CPU @ 1.80GHz" and "Intel Core i7-8550U" share the tokens that matter.
func cpuTokens(s string) []string {
	s = strings.ToLower(s)
	for _, r := range []string{"(r)", "(tm)", "®", "™"} {
		s = strings.ReplaceAll(s, r, " ")
	}
	var out []string
	for _, t := range strings.Fields(nonWordRE.ReplaceAllString(s, " ")) {
		if t != "cpu" && t != "processor" && t != "arm" {
			out = append(out, t)
		}
	}
	return out
}

// machineArch is the catalogue's name for the machine's architecture: GOARCH mapped, with
// the kernel's machine name used when GOARCH is missing.
func machineArch(env artifacts.Environment) string {
	switch env.Arch {
	case "amd64":
		return "x86_64"
	case "386":
		return "x86"
	case "arm64":
		return "arm64"
	case "arm":
		return "arm32"
	case "riscv64":
		return "riscv64"
	case "":
	default:
		return env.Arch
	}
	switch m := env.Machine; {
	case m == "x86_64":
		return "x86_64"
	case m == "aarch64" || m == "arm64":
		return "arm64"
	case strings.HasPrefix(m, "armv"):
		return "arm32"
	}
	return env.Machine
}

// archCompatible: the same architecture, or a 32-bit ARM OS on a 64-bit ARM board (a
// Raspberry Pi 4 running a 32-bit OS reports arm; the CPU check then decides).
func archCompatible(catalogue, machine string) bool {
	return catalogue == machine || (catalogue == "arm64" && machine == "arm32")
}

func virtualization(env artifacts.Environment) string {
	if env.Timing != nil && env.Timing.Virtualization != "" && env.Timing.Virtualization != "none" {
		return env.Timing.Virtualization
	}
	if env.Virtualized {
		return "hypervisor"
	}
	return ""
}

func catalogueSummary(b *Board, c core) string {
	parts := []string{}
	if b.Arch != "" {
		parts = append(parts, b.Arch)
	}
	if c.key != "" {
		parts = append(parts, c.key)
	}
	if len(parts) == 0 {
		return "no arch or CPU given"
	}
	return strings.Join(parts, ", ")
}

// describeMachine is the machine in one phrase: "amd64, AMD EPYC, 2 CPUs, virtualized (hypervisor)".
func describeMachine(env artifacts.Environment) string {
	parts := []string{env.Arch}
	if env.Arch == "" {
		parts[0] = "of unknown architecture"
	}
	if env.Machine != "" && machineArch(artifacts.Environment{Machine: env.Machine}) != machineArch(artifacts.Environment{Arch: env.Arch}) {
		parts[0] += " (kernel " + env.Machine + ")"
	}
	mc := machineCPU(env)
	switch {
	case mc.table:
		parts = append(parts, mc.name+" (CPU part "+env.CPUPart+")")
	case mc.name != "":
		parts = append(parts, mc.name)
	default:
		parts = append(parts, "CPU model not reported")
	}
	if env.BoardModel != "" {
		parts = append(parts, env.BoardModel)
	}
	if env.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d CPUs", env.CPUs))
	}
	if v := virtualization(env); v != "" {
		parts = append(parts, "virtualized ("+v+")")
	}
	return strings.Join(parts, ", ")
}

// BoardCanRun says why a board cannot run a manifest, or "" when it can: a board that lists
// its experiment kinds runs only those, and a board with a declared algorithm subset runs a
// manifest only when every cell's algorithm is in it (the portal offers such a board for
// nothing else, so no job on it ends with cells skipped for want of an algorithm).
func BoardCanRun(b protocol.BoardInfo, m *artifacts.Manifest) string {
	if len(b.Kinds) > 0 && !slices.Contains(b.Kinds, m.Kind) {
		return fmt.Sprintf("it runs only %s experiments", artifacts.Join(b.Kinds, ", "))
	}
	// A board running the project's firmware (not the host) and listing its kinds runs only
	// what that firmware implements of a kind (mqtt-telemetry: the pinned mode).
	if b.Driver != artifacts.DriverHost && len(b.Kinds) > 0 {
		if k, ok := artifacts.LookupKind(m.Kind); ok && k.Firmware {
			if why := k.FirmwareCannot(m); why != "" {
				return why
			}
		}
	}
	if len(b.Algorithms) == 0 {
		return ""
	}
	var missing []string
	for _, c := range m.Cells() {
		if !slices.Contains(b.Algorithms, c.Algorithm) && !slices.Contains(missing, c.Algorithm) {
			missing = append(missing, c.Algorithm)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("its firmware declares only %s; the experiment needs %s", strings.Join(b.Algorithms, ", "), strings.Join(missing, ", "))
	}
	return ""
}
