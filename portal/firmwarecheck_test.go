package portal

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// testELF is a minimal ELF header (no sections) of the given machine and class, padded to n
// bytes: what debug/elf reads of a firmware file.
func testELF(machine elf.Machine, class elf.Class, typ elf.Type, n int) []byte {
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(class), byte(elf.ELFDATA2LSB), 1, 0})
	b.Write(make([]byte, 8))
	le := binary.LittleEndian
	binary.Write(&b, le, uint16(typ))
	binary.Write(&b, le, uint16(machine))
	binary.Write(&b, le, uint32(1))
	if class == elf.ELFCLASS64 {
		binary.Write(&b, le, [3]uint64{}) // entry, phoff, shoff
		binary.Write(&b, le, uint32(0))
		binary.Write(&b, le, [6]uint16{64})
	} else {
		binary.Write(&b, le, [3]uint32{}) // entry, phoff, shoff
		binary.Write(&b, le, uint32(0))
		binary.Write(&b, le, [6]uint16{52})
	}
	if b.Len() < n {
		b.Write(make([]byte, n-b.Len()))
	}
	return b.Bytes()
}

func TestCheckFirmwareELF(t *testing.T) {
	arm := testELF(elf.EM_ARM, elf.ELFCLASS32, elf.ET_EXEC, 256)
	rv := testELF(elf.EM_RISCV, elf.ELFCLASS32, elf.ET_EXEC, 256)
	for _, tc := range []struct {
		name, class, arch string
		data              []byte
		want              string // "" accepted
	}{
		{"arm build for a cortex-m4 class", "qemu-mps2-an386", "arm32", arm, ""},
		{"risc-v build labelled cortex-m4", "qemu-mps2-an386", "arm32", rv, "the ELF is for EM_RISCV (ELFCLASS32), but board class qemu-mps2-an386 needs arm32 (EM_ARM, ELFCLASS32)"},
		// The Picos' rows in the catalogue name no architecture; their chips do.
		{"x86-64 build for a pico-w", "pico-w", "", testELF(elf.EM_X86_64, elf.ELFCLASS64, elf.ET_EXEC, 256), "board class pico-w needs arm32 (EM_ARM, ELFCLASS32)"},
		{"risc-v build for a pico-w", "pico-w", "", rv, "needs arm32"},
		{"arm build for a pico-w", "pico-w", "", arm, ""},
		{"x86-64 build for a pico2-w", "pico2-w", "", testELF(elf.EM_X86_64, elf.ELFCLASS64, elf.ET_EXEC, 256), "needs arm32 (EM_ARM, ELFCLASS32) or riscv32 (EM_RISCV, ELFCLASS32)"},
		{"arm build for a pico2-w", "pico2-w", "", arm, ""},
		{"risc-v build for a pico2-w (Hazard3 cores)", "pico2-w", "", rv, ""},
		{"17-byte text file", "qemu-mps2-an386", "arm32", []byte("not a firmware!!\n"), "17 bytes: too small"},
		{"text file", "qemu-riscv32-virt", "riscv32", bytes.Repeat([]byte("hello "), 20), "not an ELF"},
		{"object file", "qemu-mps2-an386", "arm32", testELF(elf.EM_ARM, elf.ELFCLASS32, elf.ET_REL, 256), "not an executable"},
		{"64-bit arm for a 32-bit class", "qemu-mps2-an386", "arm32", testELF(elf.EM_AARCH64, elf.ELFCLASS64, elf.ET_EXEC, 256), "needs arm32 (EM_ARM"},
		{"risc-v for risc-v", "qemu-riscv32-virt", "riscv32", rv, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkFirmwareELF(bytes.NewReader(tc.data), int64(len(tc.data)), tc.class, tc.arch)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	note, err := checkFirmwareELF(bytes.NewReader(arm), int64(len(arm)), "board-nobody-catalogued", "")
	if err != nil || !strings.Contains(note, "not checked") {
		t.Errorf("a class without a catalogued architecture: note %q, err %v", note, err)
	}
}

func TestCheckFirmwareMeta(t *testing.T) {
	elfData := testELF(elf.EM_ARM, elf.ELFCLASS32, elf.ET_EXEC, 128)
	sum := sha256.Sum256(elfData)
	meta := func(target, digest string) []byte {
		return fmt.Appendf(nil, `{"target":%q,"firmware":"pqrepro-fw","version":"0.1.0","elf_sha256":%q,"toolchain":"arm-none-eabi-gcc 12.2"}`, target, digest)
	}
	good := hex.EncodeToString(sum[:])
	if m, err := checkFirmwareMeta(meta("qemu-mps2-an386", good), "qemu-mps2-an386", bytes.NewReader(elfData)); err != nil || m.Toolchain == "" {
		t.Errorf("matching metadata refused: %v", err)
	}
	if _, err := checkFirmwareMeta(meta("qemu-mps2-an505", good), "qemu-mps2-an386", bytes.NewReader(elfData)); err == nil || !strings.Contains(err.Error(), "targets qemu-mps2-an505") {
		t.Errorf("another target: %v", err)
	}
	if _, err := checkFirmwareMeta(meta("qemu-mps2-an386", strings.Repeat("ab", 32)), "qemu-mps2-an386", bytes.NewReader(elfData)); err == nil || !strings.Contains(err.Error(), "different ELF") {
		t.Errorf("another ELF's metadata: %v", err)
	}
	if _, err := checkFirmwareMeta([]byte(`{`), "qemu-mps2-an386", bytes.NewReader(elfData)); err == nil {
		t.Error("malformed metadata accepted")
	}
}

// FuzzCheckFirmwareELF: any upload is accepted or refused with a reason, never a panic.
func FuzzCheckFirmwareELF(f *testing.F) {
	f.Add(testELF(elf.EM_ARM, elf.ELFCLASS32, elf.ET_EXEC, 64))
	f.Add(testELF(elf.EM_RISCV, elf.ELFCLASS64, elf.ET_EXEC, 64))
	f.Add([]byte("\x7fELF firmware"))
	f.Fuzz(func(t *testing.T, data []byte) {
		note, err := checkFirmwareELF(bytes.NewReader(data), int64(len(data)), "qemu-mps2-an386", "arm32")
		if err == nil && note == "" && (len(data) < 52 || !bytes.HasPrefix(data, []byte(elf.ELFMAG))) {
			t.Fatalf("accepted a file that is not an ELF: %q", data)
		}
	})
}
