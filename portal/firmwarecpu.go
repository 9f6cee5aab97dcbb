package portal

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// armCPUArch names the Arm architecture values of an ELF's Tag_CPU_arch build attribute that
// firmware boards use (Arm's "Addenda to the ABI", build attributes).
var armCPUArch = map[uint64]string{
	11: "Armv6-M", 12: "Armv6S-M", 13: "Armv7E-M", 16: "Armv8-M baseline", 17: "Armv8-M mainline", 21: "Armv8.1-M mainline",
}

// classCPUArchs is, per Arm firmware board class, the Tag_CPU_arch values a build for its CPU
// carries. An Arm ELF of the right machine but built for another board's CPU (an Armv6-M
// micro:bit image for a Cortex-M4 MPS2 board) passes the machine check and fails only when it
// boots; the CPU architecture tells them apart before.
var classCPUArchs = map[string][]uint64{
	"qemu-microbit":   {11, 12},     // nRF51: Cortex-M0
	"qemu-mps2-an386": {13},         // Cortex-M4
	"qemu-mps2-an505": {16, 17},     // Cortex-M33
	"pico-w":          {11, 12},     // RP2040: Cortex-M0+
	"pico2-w":         {16, 17, 21}, // RP2350: Cortex-M33
	"rp2040js-picow":  {11, 12},     // rp2040js's RP2040: Cortex-M0+
}

// elfARMCPUArch reads Tag_CPU_arch from an Arm ELF's .ARM.attributes section; ok is false
// when the ELF has none (then the CPU is not checked).
func elfARMCPUArch(f *elf.File) (arch uint64, ok bool) {
	s := f.Section(".ARM.attributes")
	if s == nil || s.Size > 1<<16 {
		return 0, false
	}
	data, err := s.Data()
	if err != nil || len(data) < 1 || data[0] != 'A' {
		return 0, false
	}
	data = data[1:]
	for len(data) >= 4 {
		n := int(binary.LittleEndian.Uint32(data))
		if n < 4 || n > len(data) {
			return 0, false
		}
		sub := data[4:n]
		data = data[n:]
		vendor, rest, found := bytes.Cut(sub, []byte{0})
		if !found || string(vendor) != "aeabi" {
			continue
		}
		if a, ok := fileCPUArch(rest); ok {
			return a, true
		}
	}
	return 0, false
}

// fileCPUArch finds Tag_CPU_arch (6) in an aeabi subsection's File attributes (tag 1).
func fileCPUArch(b []byte) (uint64, bool) {
	for len(b) >= 5 {
		tag, n := b[0], int(binary.LittleEndian.Uint32(b[1:]))
		if n < 5 || n > len(b) {
			return 0, false
		}
		attrs := b[5:n]
		b = b[n:]
		if tag != 1 {
			continue
		}
		for len(attrs) > 0 {
			t, k := uleb(attrs)
			if k == 0 {
				return 0, false
			}
			attrs = attrs[k:]
			// Tags 4, 5 and 67 and odd tags above 32 are NUL-terminated strings; 32 is a
			// number and a string; the rest numbers.
			if t == 4 || t == 5 || t == 67 || (t > 32 && t%2 == 1) {
				i := bytes.IndexByte(attrs, 0)
				if i < 0 {
					return 0, false
				}
				attrs = attrs[i+1:]
				continue
			}
			v, k := uleb(attrs)
			if k == 0 {
				return 0, false
			}
			attrs = attrs[k:]
			if t == 6 {
				return v, true
			}
			if t == 32 {
				if i := bytes.IndexByte(attrs, 0); i >= 0 {
					attrs = attrs[i+1:]
				}
			}
		}
	}
	return 0, false
}

func uleb(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// checkARMCPU refuses an Arm ELF built for a CPU the board class does not have, naming the
// CPU it was built for and the classes that have it.
func checkARMCPU(f *elf.File, class string) error {
	want, known := classCPUArchs[class]
	if !known || f.Machine != elf.EM_ARM {
		return nil
	}
	got, ok := elfARMCPUArch(f)
	if !ok || slices.Contains(want, got) {
		return nil
	}
	name := armCPUArch[got]
	if name == "" {
		name = fmt.Sprintf("Arm CPU architecture %d", got)
	}
	var fits []string
	for _, c := range slices.Sorted(maps.Keys(classCPUArchs)) {
		if slices.Contains(classCPUArchs[c], got) {
			fits = append(fits, c)
		}
	}
	for_ := "no board class this portal knows"
	if len(fits) > 0 {
		for_ = strings.Join(fits, " or ")
	}
	return fmt.Errorf("this ELF is for %s: it is built for %s (its Tag_CPU_arch build attribute), and board class %s has an %s CPU: choose the board class the firmware was built for, or build it for %s",
		for_, name, class, armCPUArch[want[len(want)-1]], class)
}

// CheckFirmwareFile checks a firmware ELF on disk before a board boots it: an executable for
// the class's architecture (arch as the catalogue names it) and CPU, and, when the build's
// metadata.json lies beside it describing this very file, built for this class. A refusal
// says which board the ELF is for.
func CheckFirmwareFile(path, class, arch string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	// The build's own metadata, when it describes this very file, names the board exactly.
	if raw, err := os.ReadFile(filepath.Join(filepath.Dir(path), "metadata.json")); err == nil {
		var m firmwareMeta
		if json.Unmarshal(raw, &m) == nil && m.Target != "" && m.Target != class {
			if _, err := checkFirmwareMeta(raw, m.Target, f); err == nil {
				return fmt.Errorf("firmware %s: this ELF is for %s (its build's metadata.json, elf_sha256 matching), not %s: choose --board %s, or build the firmware for %s",
					path, m.Target, class, m.Target, class)
			}
		}
	}
	if _, err := checkFirmwareELF(f, st.Size(), class, arch); err != nil {
		return fmt.Errorf("firmware %s: %w", path, err)
	}
	return nil
}
