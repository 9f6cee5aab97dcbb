package portal

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"pqrepro/firmware/impltable"
)

// archMachines is, per catalogue architecture (boards.csv arch), the ELF machine and class a
// build for it must have.
var archMachines = map[string]struct {
	machine elf.Machine
	class   elf.Class
}{
	"arm32":   {elf.EM_ARM, elf.ELFCLASS32},
	"arm64":   {elf.EM_AARCH64, elf.ELFCLASS64},
	"riscv32": {elf.EM_RISCV, elf.ELFCLASS32},
	"riscv64": {elf.EM_RISCV, elf.ELFCLASS64},
	"xtensa":  {elf.EM_XTENSA, elf.ELFCLASS32},
	"x86_64":  {elf.EM_X86_64, elf.ELFCLASS64},
}

// siliconArchs gives, for the board classes whose catalogue row (the papers' specifications)
// names no architecture but whose chip is known, the architectures a firmware for them can be
// built for: this project builds both Pico images itself (firmware/Makefile).
var siliconArchs = map[string][]string{
	"pico-w":  {"arm32"},            // RP2040: two Cortex-M0+ cores
	"pico2-w": {"arm32", "riscv32"}, // RP2350: two Cortex-M33 or two Hazard3 RISC-V cores, chosen at boot
}

// firmwareMeta is the part of a build's metadata.json (firmware/tools/fwmeta) an upload is
// checked against.
type firmwareMeta struct {
	Target    string `json:"target"`
	Firmware  string `json:"firmware"`
	Version   string `json:"version"`
	ELFSHA256 string `json:"elf_sha256"`
	Toolchain string `json:"toolchain"`
}

// checkFirmwareELF checks an uploaded file is an ELF executable for the board class's
// architecture (arch as the catalogue names it; "" when the catalogue does not know it: then
// the chip's (siliconArchs), and when that is unknown too the machine is not checked and note
// says so). Every refusal says what the file is and what the class needs.
func checkFirmwareELF(r io.ReaderAt, size int64, class, arch string) (note string, err error) {
	if size < 52 { // an ELF32 header alone is 52 bytes
		return "", fmt.Errorf("the file is %d bytes: too small to be a firmware ELF (build the firmware with make in firmware/ and upload its .elf)", size)
	}
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil {
		return "", fmt.Errorf("read the file: %w", err)
	}
	if !bytes.Equal(magic[:], []byte(elf.ELFMAG)) {
		return "", fmt.Errorf("the file is not an ELF (it starts %q): upload the firmware's .elf, not a binary image or text", magic[:])
	}
	f, err := elf.NewFile(r)
	if err != nil {
		return "", fmt.Errorf("the file is not a readable ELF: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return "", fmt.Errorf("the ELF is %s, not an executable (ET_EXEC): upload the linked firmware, not an object file or library", f.Type)
	}
	archs := []string{arch}
	if arch == "" {
		archs = siliconArchs[class]
	}
	var needs []string
	for _, a := range archs {
		want, ok := archMachines[a]
		if !ok {
			continue
		}
		if f.Machine == want.machine && f.Class == want.class {
			return "", checkARMCPU(f, class)
		}
		needs = append(needs, fmt.Sprintf("%s (%s, %s)", a, want.machine, want.class))
	}
	if len(needs) == 0 {
		return fmt.Sprintf("ELF machine %s not checked: the board catalogue gives no architecture for %s", f.Machine, class), nil
	}
	return "", fmt.Errorf("the ELF is for %s (%s), but board class %s needs %s: choose the board class the firmware was built for, or build it for %s",
		f.Machine, f.Class, class, strings.Join(needs, " or "), class)
}

// checkFirmwareMeta checks a build's metadata.json against the upload: the target is the
// board class, and elf_sha256 the uploaded file's.
func checkFirmwareMeta(raw []byte, class string, file io.Reader) (firmwareMeta, error) {
	var m firmwareMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("metadata.json is not the build's metadata: %w", err)
	}
	if m.Target == "" || m.ELFSHA256 == "" {
		return m, fmt.Errorf("metadata.json names no target or elf_sha256: upload the metadata.json written beside the ELF by the firmware build")
	}
	if m.Target != class {
		return m, fmt.Errorf("metadata.json says the build targets %s, not %s: choose %s as the board class, or upload that board's build", m.Target, class, m.Target)
	}
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return m, fmt.Errorf("hash the uploaded firmware: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, m.ELFSHA256) {
		return m, fmt.Errorf("metadata.json describes a different ELF (elf_sha256 %s…, the file's is %s…): upload the ELF and the metadata.json of the same build",
			m.ELFSHA256[:min(12, len(m.ELFSHA256))], got[:12])
	}
	return m, nil
}

// declaredLibraries splits an upload's declared libraries ("mlkem-native 1.0.0, pqrepro-fw
// 0.1.0": entries separated by commas, semicolons or new lines) into entries with single
// spaces, in the order given, each once.
func declaredLibraries(s string) []string {
	var out []string
	for _, e := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == '\n' || r == '\r' }) {
		e = strings.Join(strings.Fields(e), " ")
		if e != "" && !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, e) }) {
			out = append(out, e)
		}
	}
	return out
}

// checkLibraries checks an upload's declared libraries against the implementation table the
// ELF carries (firmware/impltable: section .pqrepro_impl) and returns the libraries to record:
// the table's when nothing was declared, the declaration when it names exactly the table's
// implementations (in any order), else an error naming both. An ELF without a table (a build
// made before it existed, or another project's firmware) is recorded as declared, and note
// says it could not be checked (or, with nothing declared, that they are unknown).
func checkLibraries(declared string, elfFile io.ReaderAt) (libraries, note string, err error) {
	table, err := impltable.ReadELF(elfFile)
	switch {
	case errors.Is(err, impltable.ErrNoTable):
		if declared == "" {
			return "", fmt.Sprintf("its implementations are unknown: no libraries were declared and the ELF has no implementation table (section %s)", impltable.Section), nil
		}
		return declared, fmt.Sprintf("its libraries are as declared: the ELF has no implementation table (section %s) to check them against", impltable.Section), nil
	case err != nil:
		return "", "", fmt.Errorf("the ELF's implementation table (section %s) is unreadable: %w", impltable.Section, err)
	}
	built := impltable.Libraries(table)
	if declared == "" {
		return strings.Join(built, ", "), "", nil
	}
	decl := declaredLibraries(declared)
	same := len(decl) == len(built)
	for _, d := range decl {
		same = same && slices.ContainsFunc(built, func(b string) bool { return strings.EqualFold(b, d) })
	}
	if !same {
		return "", "", fmt.Errorf("the declared libraries (%s) are not what the ELF's implementation table (section %s) says it links (%s): declare what the build links, or leave the field empty to take the table's",
			strings.Join(decl, ", "), impltable.Section, strings.Join(built, ", "))
	}
	return strings.Join(decl, ", "), "", nil
}
