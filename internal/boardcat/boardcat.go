// Package boardcat is the one catalogue of emulated boards: each class with the emulator and
// machine that boot its firmware, the counter its samples count, the toolchain its firmware
// is built with, and the declared subset (algorithms, experiment kinds) a small board holds.
// The runner's QEMU driver boots these boards and the portal offers firmware builds for them;
// the descriptive catalogue of every board class (names, CPUs, the papers' boards) is
// experiments/boards.csv, which lists each of these classes too (a test checks it).
package boardcat

import (
	"pqrepro/artifacts"
	"strings"
)

// Emulators: what boots an emulated board's firmware.
const (
	// EmulatorQEMU boots the ELF in a QEMU system emulator, the UART on a pty the runner allocates.
	EmulatorQEMU = "qemu"
	// EmulatorRP2040JS boots the UF2 beside the ELF in rp2040js (the RP2040 emulator, a
	// Node package) through the harness of firmware/tools/rp2040js, the UART on its stdio.
	EmulatorRP2040JS = "rp2040js"
)

// Emulated is one emulated board class: the emulator and machine options that boot the
// firmware built for it (firmware/build/<class>/), and what its counter counts.
type Emulated struct {
	// Class is the board class, also the firmware's build target.
	Class string
	// Emulator is EmulatorQEMU ("" too) or EmulatorRP2040JS.
	Emulator string
	// Binary is the QEMU system emulator, or node for rp2040js, looked up in PATH.
	Binary string
	// Args select the machine.
	Args []string
	// Counter labels the samples.
	Counter string
	// Package is the Debian package that provides Binary.
	Package string
	// Toolchain is the cross compiler `make -C firmware <Class>` builds the firmware with.
	Toolchain string
	// Algorithms is the declared subset the firmware of a small board holds (nil: the
	// whole table), and Kinds the experiment kinds it runs (nil: every kind).
	Algorithms []string
	Kinds      []artifacts.Kind
	// KindImages are the experiment kinds whose firmware is another build than the class's
	// image: the folder, beside that image, that holds it (pqrepro-fw.elf, and the UF2 for
	// rp2040js). The runner boots it for a manifest of the kind.
	KindImages map[artifacts.Kind]string
}

// fullKinds are the experiment kinds the whole firmware runs on an emulated board: the
// BENCH kinds, the telemetry device (mqtt-telemetry, pinned mode) and the TLS matrix (the
// firmware's own C client over the serial line: the ML-KEM x ML-DSA cells; the others are
// skipped with the reason). It has no combined sequence (kem-sig-sequence).
var fullKinds = []artifacts.Kind{artifacts.KindKEMBench, artifacts.KindSigBench, artifacts.KindMQTTTelemetry, artifacts.KindTLSMatrix}

var emulated = []Emulated{
	{Class: "qemu-mps2-an386", Binary: "qemu-system-arm", Args: []string{"-M", "mps2-an386"}, Package: "qemu-system-arm",
		Counter: "SysTick under QEMU -icount shift=0, 40-instruction steps (emulated instructions, not cycles)", Toolchain: "arm-none-eabi-gcc", Kinds: fullKinds},
	// rv32imac, the ISA of the ESP32-C6's high-performance core; not an ESP32-C6: no caches,
	// no flash, no radio, and QEMU's instruction count, not cycles.
	{Class: "qemu-riscv32-virt", Binary: "qemu-system-riscv32", Args: []string{"-M", "virt", "-bios", "none"}, Package: "qemu-system-misc",
		Counter: "minstret under QEMU -icount shift=0 (emulated retired instructions, not cycles)", Toolchain: "riscv64-unknown-elf-gcc", Kinds: fullKinds},
	// The Pico 2 W's RP2350 stand-in: a Cortex-M33 (Armv8-M mainline) in the Secure state;
	// not an RP2350: no caches, no XIP flash or its wait states, no radio.
	{Class: "qemu-mps2-an505", Binary: "qemu-system-arm", Args: []string{"-M", "mps2-an505"}, Package: "qemu-system-arm",
		Counter: "SysTick under QEMU -icount shift=0, 50-instruction steps (emulated instructions, not cycles)", Toolchain: "arm-none-eabi-gcc", Kinds: fullKinds},
	// The Pico W's RP2040 stand-in, a Cortex-M0 (Armv6-M) with 16 KiB of RAM: it holds
	// ML-KEM-512 only (docs/BOARDS.md says what does not fit); not an RP2040: one core, no
	// caches, no XIP flash or its wait states, no radio. No Ascon either (ML-KEM-512 fills its
	// RAM), so no telemetry device: mqtt-telemetry is not among its kinds.
	{Class: "qemu-microbit", Binary: "qemu-system-arm", Args: []string{"-M", "microbit"}, Package: "qemu-system-arm",
		Counter: "nRF51 TIMER0 at 8 MHz under QEMU -icount shift=0, 125-instruction steps (emulated instructions, not cycles)", Toolchain: "arm-none-eabi-gcc",
		Algorithms: []string{"ML-KEM-512"}, Kinds: []artifacts.Kind{artifacts.KindKEMBench}},
	// The Pico W's own core: the pico-w image (its rp2040js build, one vector per group) in
	// rp2040js, whose Cortex-M0+ adds each instruction's cycles from a table. The firmware's
	// SysTick counts those cycles at clk_sys 125 MHz (plus one a 2^24-cycle wrap: rp2040js
	// reloads SysTick a cycle early), so its unit is cycles, of the model, not of silicon.
	// The TLS matrix boots the TLS image of tls/ (the TLS client with ML-KEM and ML-DSA, no
	// SLH-DSA and no telemetry device: both do not fit the RP2040's SRAM beside the client).
	{Class: "rp2040js-picow", Emulator: EmulatorRP2040JS, Binary: "node", Package: "nodejs npm",
		Counter: RP2040JSCycleModel, Toolchain: "arm-none-eabi-gcc",
		Kinds:      []artifacts.Kind{artifacts.KindKEMBench, artifacts.KindSigBench, artifacts.KindTLSMatrix},
		KindImages: map[artifacts.Kind]string{artifacts.KindTLSMatrix: "tls"}},
}

// RP2040JSCycleModel labels the rp2040js board's counts wherever they are shown.
const RP2040JSCycleModel = "rp2040js cycle model: SysTick at clk_sys 125 MHz over rp2040js's per-instruction cycle table; " +
	"no XIP-flash wait states, no exception-entry cycles, no bus contention. Never compared with silicon cycles or QEMU instruction counts"

// IsRP2040JS reports whether m boots in rp2040js.
func (m Emulated) IsRP2040JS() bool { return m.Emulator == EmulatorRP2040JS }

// EmulatedBoards lists the emulated board classes, in a stable order.
func EmulatedBoards() []Emulated { return append([]Emulated(nil), emulated...) }

// EmulatedClasses are the emulated boards' classes, in the same order.
func EmulatedClasses() []string {
	classes := make([]string, len(emulated))
	for i, m := range emulated {
		classes[i] = m.Class
	}
	return classes
}

// LookupEmulated returns the emulated board of a class.
func LookupEmulated(class string) (Emulated, bool) {
	for _, m := range emulated {
		if m.Class == class {
			return m, true
		}
	}
	return Emulated{}, false
}

// ARMParts maps /proc/cpuinfo's "CPU implementer" and "CPU part" to the core's name, for
// the cores of the catalogue's boards and their common neighbours (the kernel's cputype.h).
var ARMParts = map[string]string{
	"0x41:0xb76": "ARM1176", "0x41:0xc07": "Cortex-A7", "0x41:0xc08": "Cortex-A8", "0x41:0xc09": "Cortex-A9",
	"0x41:0xc0f": "Cortex-A15", "0x41:0xd03": "Cortex-A53", "0x41:0xd04": "Cortex-A35", "0x41:0xd05": "Cortex-A55",
	"0x41:0xd07": "Cortex-A57", "0x41:0xd08": "Cortex-A72", "0x41:0xd09": "Cortex-A73", "0x41:0xd0a": "Cortex-A75",
	"0x41:0xd0b": "Cortex-A76", "0x41:0xd0c": "Neoverse-N1", "0x41:0xd40": "Neoverse-V1", "0x41:0xd49": "Neoverse-N2",
	"0x61:0x022": "Apple M1", "0x61:0x023": "Apple M1", "0x61:0x024": "Apple M1 Pro", "0x61:0x025": "Apple M1 Pro",
	"0x61:0x028": "Apple M1 Max", "0x61:0x029": "Apple M1 Max", "0x61:0x032": "Apple M2", "0x61:0x033": "Apple M2",
}

// ARMCore names the core of an ARM implementer and part ("0x41", "0xd08" → "Cortex-A72"),
// or "" when the pair is not in the table.
func ARMCore(implementer, part string) string {
	return ARMParts[strings.ToLower(strings.TrimSpace(implementer))+":"+strings.ToLower(strings.TrimSpace(part))]
}
