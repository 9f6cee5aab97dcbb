package firmware

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"pqrepro/firmware/rpimage"
)

// rpBoard is what a Raspberry Pi image must hold.
type rpBoard struct {
	dir            string
	family         uint32
	vectorsAt      uint32 // offset of the vector table in flash
	ramLo, ramHi   uint32 // SRAM the initial stack pointer may point into
	boot2, picobin bool
}

var rpBoards = []rpBoard{
	{"build/pico-w", rpimage.FamilyRP2040, 0x100, 0x20000000, 0x20040000, true, false},
	{"build/rp2040js/pico-w", rpimage.FamilyRP2040, 0x100, 0x20000000, 0x20040000, true, false},
	{"build/pico2-w", rpimage.FamilyRP2350ArmS, 0, 0x20000000, 0x20080000, false, true},
}

// TestRPImages checks the built pico-w and pico2-w images: the UF2 (every block's magic
// numbers, the family flag and ID, 256-byte payloads at contiguous 256-aligned flash
// addresses, the block numbering) re-assembles to exactly the ELF's flash contents; the
// RP2040's boot2 carries the bootrom's CRC-32 and is followed by the vector table at
// 0x10000100; the RP2350's first 4 KiB hold an IMAGE_DEF block for an Arm Secure
// executable; the vector table's initial SP is in SRAM and its reset handler, a Thumb
// address, lies inside the flash image.
func TestRPImages(t *testing.T) {
	for _, b := range rpBoards {
		t.Run(b.dir, func(t *testing.T) {
			elfPath := filepath.Join(b.dir, "pqrepro-fw.elf")
			if _, err := os.Stat(elfPath); err != nil {
				t.Skipf("%s not built (make firmware)", elfPath)
			}
			f, err := elf.Open(elfPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			base, img, err := rpimage.FlashImage(f, 0x10000000, 0x11000000)
			if err != nil {
				t.Fatal(err)
			}
			if base != 0x10000000 {
				t.Fatalf("flash image starts at %#x, want 0x10000000", base)
			}
			raw, err := os.ReadFile(filepath.Join(b.dir, "pqrepro-fw.uf2"))
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := rpimage.ParseUF2(raw)
			if err != nil {
				t.Fatal(err)
			}
			ubase, data, err := rpimage.CheckUF2(blocks, b.family)
			if err != nil {
				t.Fatal(err)
			}
			pad := (rpimage.UF2Payload - len(img)%rpimage.UF2Payload) % rpimage.UF2Payload
			if ubase != base || !bytes.Equal(data, append(bytes.Clone(img), make([]byte, pad)...)) {
				t.Fatalf("the UF2's %d bytes at %#x are not the ELF's %d bytes of flash at %#x", len(data), ubase, len(img), base)
			}
			if b.boot2 {
				if err := rpimage.CheckBoot2(img); err != nil {
					t.Fatal(err)
				}
			}
			if b.picobin {
				blk, err := rpimage.FindBlock(img[:4096])
				if err != nil {
					t.Fatal(err)
				}
				if ty, ok := blk.ImageType(); !ok || ty != rpimage.ImageTypeArmSecureExeRP2350 {
					t.Fatalf("IMAGE_DEF image type %#x (present %v), want %#x", ty, ok, rpimage.ImageTypeArmSecureExeRP2350)
				}
				if blk.Link != 0 {
					t.Errorf("IMAGE_DEF links to %d, want 0 (a loop of one block)", blk.Link)
				}
			}
			v, err := rpimage.CheckVectors(img, base, b.vectorsAt, b.ramLo, b.ramHi)
			if err != nil {
				t.Fatal(err)
			}
			// The reset handler is the ELF's Reset_Handler (which runs from flash and copies
			// the code to SRAM).
			syms, err := f.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, s := range syms {
				if s.Name == "Reset_Handler" {
					found = true
					if uint32(s.Value)|1 != v.Reset {
						t.Errorf("reset vector %#x, Reset_Handler is at %#x", v.Reset, s.Value)
					}
				}
			}
			if !found {
				t.Error("no Reset_Handler symbol")
			}
			if binary.LittleEndian.Uint32(img[b.vectorsAt+4:]) != v.Reset {
				t.Fatal("vector table read twice differs")
			}
			t.Logf("%s: %d bytes of flash, %d UF2 blocks, SP %#x, reset %#x", b.dir, len(img), len(blocks), v.SP, v.Reset)
		})
	}
}
