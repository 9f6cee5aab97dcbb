package portal

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// armAttributes is an .ARM.attributes section as GCC writes it: a CPU name string before
// Tag_CPU_arch, so the parser must skip strings to find it.
func armAttributes(cpuName string, cpuArch byte) []byte {
	var attrs bytes.Buffer
	attrs.WriteByte(5) // Tag_CPU_name
	attrs.WriteString(cpuName + "\x00")
	attrs.Write([]byte{6, cpuArch, 7, 'M', 9, 1}) // Tag_CPU_arch, Tag_CPU_arch_profile, Tag_THUMB_ISA_use
	var file bytes.Buffer
	file.WriteByte(1) // File attributes
	binary.Write(&file, binary.LittleEndian, uint32(5+attrs.Len()))
	file.Write(attrs.Bytes())
	var sub bytes.Buffer
	binary.Write(&sub, binary.LittleEndian, uint32(4+6+file.Len()))
	sub.WriteString("aeabi\x00")
	sub.Write(file.Bytes())
	return append([]byte{'A'}, sub.Bytes()...)
}

// armELFWithAttrs is an Arm ELF32 executable whose one section is .ARM.attributes holding attrs.
func armELFWithAttrs(attrs []byte) []byte {
	shstr := []byte("\x00.ARM.attributes\x00.shstrtab\x00")
	const ehsize, shentsize = 52, 40
	attrOff := ehsize
	strOff := attrOff + len(attrs)
	shOff := strOff + len(shstr)
	var b bytes.Buffer
	le := binary.LittleEndian
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS32), byte(elf.ELFDATA2LSB), 1, 0})
	b.Write(make([]byte, 8))
	binary.Write(&b, le, uint16(elf.ET_EXEC))
	binary.Write(&b, le, uint16(elf.EM_ARM))
	binary.Write(&b, le, uint32(1))
	binary.Write(&b, le, [3]uint32{0, 0, uint32(shOff)}) // entry, phoff, shoff
	binary.Write(&b, le, uint32(0x5000200))
	binary.Write(&b, le, [6]uint16{ehsize, 0, 0, shentsize, 3, 2})
	b.Write(attrs)
	b.Write(shstr)
	section := func(name, typ, off, size uint32) {
		binary.Write(&b, le, [10]uint32{name, typ, 0, 0, off, size, 0, 0, 1, 0})
	}
	section(0, 0, 0, 0)
	section(1, 0x70000003, uint32(attrOff), uint32(len(attrs))) // SHT_ARM_ATTRIBUTES
	section(17, uint32(elf.SHT_STRTAB), uint32(strOff), uint32(len(shstr)))
	return b.Bytes()
}

// An Arm build for another board's CPU (a micro:bit's Armv6S-M image for the Cortex-M4 MPS2
// board) has the right ELF machine and used to be accepted, then failed at boot: it is refused
// at upload and before a run, naming the board it is for.
func TestFirmwareForAnotherBoardsCPU(t *testing.T) {
	microbit := armELFWithAttrs(armAttributes("6S-M", 12))
	m4 := armELFWithAttrs(armAttributes("7E-M", 13))
	if _, err := elf.NewFile(bytes.NewReader(microbit)); err != nil {
		t.Fatalf("test ELF unreadable: %v", err)
	}
	if _, err := checkFirmwareELF(bytes.NewReader(m4), int64(len(m4)), "qemu-mps2-an386", "arm32"); err != nil {
		t.Errorf("a Cortex-M4 build for the Cortex-M4 board refused: %v", err)
	}
	_, err := checkFirmwareELF(bytes.NewReader(microbit), int64(len(microbit)), "qemu-mps2-an386", "arm32")
	if err == nil || !strings.Contains(err.Error(), "this ELF is for pico-w or qemu-microbit or rp2040js-picow: it is built for Armv6S-M") ||
		!strings.Contains(err.Error(), "qemu-mps2-an386 has an Armv7E-M CPU") {
		t.Errorf("a micro:bit build for the Cortex-M4 board: %v", err)
	}
	if _, err := checkFirmwareELF(bytes.NewReader(microbit), int64(len(microbit)), "qemu-microbit", "arm32"); err != nil {
		t.Errorf("a micro:bit build for the micro:bit refused: %v", err)
	}

	// On disk, the build's metadata.json beside the ELF names its board exactly.
	dir := t.TempDir()
	path := filepath.Join(dir, "pqrepro-fw.elf")
	if err := os.WriteFile(path, m4, 0o644); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(firmwareMeta{Target: "qemu-mps2-an505", ELFSHA256: sha256hex(m4)})
	if err := os.WriteFile(filepath.Join(dir, "metadata.json"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckFirmwareFile(path, "qemu-mps2-an386", "arm32"); err == nil || !strings.Contains(err.Error(), "this ELF is for qemu-mps2-an505") {
		t.Errorf("metadata naming another board: %v", err)
	}
	if err := CheckFirmwareFile(path, "qemu-mps2-an505", "arm32"); err == nil || !strings.Contains(err.Error(), "built for Armv7E-M") {
		t.Errorf("an Armv7E-M ELF for the Cortex-M33 board: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "metadata.json"), []byte(`{"target":"qemu-mps2-an505","elf_sha256":"00"}`), 0o644)
	if err := CheckFirmwareFile(path, "qemu-mps2-an386", "arm32"); err != nil {
		t.Errorf("metadata of another file says nothing of this one: %v", err)
	}
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
