// Package rpimage makes and checks the Raspberry Pi boards' flash images: the RP2040's
// checksummed second-stage boot, the RP2350's IMAGE_DEF block, the vector table, and UF2
// files (the format the boards' USB bootloaders and picotool take). The command
// firmware/tools/rpimage uses it at build time; the firmware tests use it to check the
// built images.
package rpimage

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// CRC32Boot2 is the RP2040 bootrom's checksum of boot2 (datasheet, "Flash Second Stage",
// Checksum): polynomial 0x04c11db7, input and output not reflected, initial value
// 0xffffffff, no final XOR (the CRC-32/MPEG-2 parameters).
func CRC32Boot2(data []byte) uint32 {
	crc := uint32(0xffffffff)
	for _, b := range data {
		crc ^= uint32(b) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Boot2Size is the RP2040 second stage: 252 bytes of code, then the CRC-32.
const Boot2Size = 256

// PadBoot2 pads code to 252 bytes with zeros and appends its CRC-32, little-endian.
func PadBoot2(code []byte) ([]byte, error) {
	if len(code) == 0 {
		return nil, errors.New("boot2: no code")
	}
	if len(code) > Boot2Size-4 {
		return nil, fmt.Errorf("boot2: %d bytes of code, at most %d fit before the checksum", len(code), Boot2Size-4)
	}
	out := make([]byte, Boot2Size)
	copy(out, code)
	binary.LittleEndian.PutUint32(out[Boot2Size-4:], CRC32Boot2(out[:Boot2Size-4]))
	return out, nil
}

// CheckBoot2 reports whether b (the first 256 bytes of an RP2040 flash image) carries the
// checksum the bootrom expects.
func CheckBoot2(b []byte) error {
	if len(b) < Boot2Size {
		return fmt.Errorf("boot2: %d bytes, want %d", len(b), Boot2Size)
	}
	want := CRC32Boot2(b[:Boot2Size-4])
	if got := binary.LittleEndian.Uint32(b[Boot2Size-4:]); got != want {
		return fmt.Errorf("boot2: checksum %#08x in the image, the first 252 bytes give %#08x", got, want)
	}
	return nil
}

// Family IDs of the UF2 family list, as the boards' bootloaders check them.
const (
	FamilyRP2040     = 0xe48bff56
	FamilyRP2350ArmS = 0xe48bff59
)

// UF2 block layout (the UF2 specification): 512 bytes, little-endian words.
const (
	UF2BlockSize     = 512
	UF2Payload       = 256 // bytes of flash per block, as the RP bootloaders require
	UF2Magic0        = 0x0a324655
	UF2Magic1        = 0x9e5d5157
	UF2MagicEnd      = 0x0ab16f30
	UF2FlagFamilyID  = 0x00002000
	uf2DataMax       = 476
	uf2MaxBlockCount = 1 << 16 // 16 MiB of flash at 256 bytes a block
)

// Block is one UF2 block.
type Block struct {
	Flags     uint32
	Addr      uint32
	Size      uint32
	BlockNo   uint32
	NumBlocks uint32
	FamilyID  uint32
	Payload   []byte
	Index     int // the block's place in the file
}

// EncodeUF2 writes data (the flash contents starting at base) as UF2 blocks of 256 bytes
// with the family ID. base must be 256-aligned; the last block is padded with zeros.
func EncodeUF2(data []byte, base, family uint32) ([]byte, error) {
	if base%UF2Payload != 0 {
		return nil, fmt.Errorf("uf2: base %#x is not 256-aligned", base)
	}
	if len(data) == 0 {
		return nil, errors.New("uf2: empty image")
	}
	n := (len(data) + UF2Payload - 1) / UF2Payload
	if n > uf2MaxBlockCount {
		return nil, fmt.Errorf("uf2: %d bytes need %d blocks, more than %d", len(data), n, uf2MaxBlockCount)
	}
	out := make([]byte, 0, n*UF2BlockSize)
	for i := range n {
		var blk [UF2BlockSize]byte
		le := binary.LittleEndian
		le.PutUint32(blk[0:], UF2Magic0)
		le.PutUint32(blk[4:], UF2Magic1)
		le.PutUint32(blk[8:], UF2FlagFamilyID)
		le.PutUint32(blk[12:], base+uint32(i*UF2Payload))
		le.PutUint32(blk[16:], UF2Payload)
		le.PutUint32(blk[20:], uint32(i))
		le.PutUint32(blk[24:], uint32(n))
		le.PutUint32(blk[28:], family)
		copy(blk[32:32+UF2Payload], data[i*UF2Payload:min(len(data), (i+1)*UF2Payload)])
		le.PutUint32(blk[508:], UF2MagicEnd)
		out = append(out, blk[:]...)
	}
	return out, nil
}

// ParseUF2 splits a UF2 file into blocks, checking each block's magic numbers and sizes.
func ParseUF2(b []byte) ([]Block, error) {
	if len(b) == 0 || len(b)%UF2BlockSize != 0 {
		return nil, fmt.Errorf("uf2: %d bytes is not a whole number of %d-byte blocks", len(b), UF2BlockSize)
	}
	le := binary.LittleEndian
	var blocks []Block
	for i := 0; i < len(b); i += UF2BlockSize {
		blk := b[i : i+UF2BlockSize]
		n := i / UF2BlockSize
		if le.Uint32(blk[0:]) != UF2Magic0 || le.Uint32(blk[4:]) != UF2Magic1 || le.Uint32(blk[508:]) != UF2MagicEnd {
			return nil, fmt.Errorf("uf2: block %d: bad magic numbers", n)
		}
		size := le.Uint32(blk[16:])
		if size > uf2DataMax {
			return nil, fmt.Errorf("uf2: block %d: payload size %d exceeds %d", n, size, uf2DataMax)
		}
		blocks = append(blocks, Block{
			Flags: le.Uint32(blk[8:]), Addr: le.Uint32(blk[12:]), Size: size,
			BlockNo: le.Uint32(blk[20:]), NumBlocks: le.Uint32(blk[24:]), FamilyID: le.Uint32(blk[28:]),
			Payload: slices.Clone(blk[32 : 32+size]), Index: n,
		})
	}
	return blocks, nil
}

// CheckUF2 checks what an RP bootloader needs of a whole file: every block has the family
// flag and ID, a 256-byte payload at a 256-aligned address, consecutive block numbers and
// the same block count, and the addresses follow each other with no gap or overlap. It
// returns the flash contents and their base address.
func CheckUF2(blocks []Block, family uint32) (base uint32, data []byte, err error) {
	if len(blocks) == 0 {
		return 0, nil, errors.New("uf2: no blocks")
	}
	base = blocks[0].Addr
	for i, b := range blocks {
		switch {
		case b.Flags != UF2FlagFamilyID:
			return 0, nil, fmt.Errorf("uf2: block %d: flags %#x, want %#x (family ID present)", i, b.Flags, UF2FlagFamilyID)
		case b.FamilyID != family:
			return 0, nil, fmt.Errorf("uf2: block %d: family %#08x, want %#08x", i, b.FamilyID, family)
		case b.Size != UF2Payload:
			return 0, nil, fmt.Errorf("uf2: block %d: payload %d bytes, want %d", i, b.Size, UF2Payload)
		case b.BlockNo != uint32(i) || b.NumBlocks != uint32(len(blocks)):
			return 0, nil, fmt.Errorf("uf2: block %d: numbered %d of %d, want %d of %d", i, b.BlockNo, b.NumBlocks, i, len(blocks))
		case b.Addr%UF2Payload != 0:
			return 0, nil, fmt.Errorf("uf2: block %d: address %#x is not 256-aligned", i, b.Addr)
		case b.Addr != base+uint32(i*UF2Payload):
			return 0, nil, fmt.Errorf("uf2: block %d: address %#x, want %#x (contiguous)", i, b.Addr, base+uint32(i*UF2Payload))
		}
		data = append(data, b.Payload...)
	}
	return base, data, nil
}

// FlashImage returns the bytes an ELF puts in flash ([lo, hi) of physical addresses): every
// loadable segment's file contents at its physical (load) address, gaps filled with 0xff
// (erased flash). It fails when a loadable segment with contents lies outside flash.
func FlashImage(f *elf.File, lo, hi uint32) (base uint32, data []byte, err error) {
	type seg struct {
		addr uint64
		b    []byte
	}
	var segs []seg
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Filesz == 0 {
			continue
		}
		if p.Paddr < uint64(lo) || p.Paddr+p.Filesz > uint64(hi) {
			return 0, nil, fmt.Errorf("elf: segment at %#x (%d bytes) is outside flash [%#x, %#x)", p.Paddr, p.Filesz, lo, hi)
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return 0, nil, fmt.Errorf("elf: read segment at %#x: %w", p.Paddr, err)
		}
		segs = append(segs, seg{p.Paddr, b})
	}
	if len(segs) == 0 {
		return 0, nil, errors.New("elf: nothing to put in flash")
	}
	slices.SortFunc(segs, func(a, b seg) int { return int(a.addr) - int(b.addr) })
	start, end := segs[0].addr, uint64(0)
	for _, s := range segs {
		end = max(end, s.addr+uint64(len(s.b)))
	}
	img := bytes.Repeat([]byte{0xff}, int(end-start))
	for i, s := range segs {
		if i > 0 && s.addr < segs[i-1].addr+uint64(len(segs[i-1].b)) {
			return 0, nil, fmt.Errorf("elf: segments at %#x and %#x overlap", segs[i-1].addr, s.addr)
		}
		copy(img[s.addr-start:], s.b)
	}
	return uint32(start), img, nil
}

// Vectors is what the first two words of a vector table say.
type Vectors struct {
	SP, Reset uint32
}

// CheckVectors reads the vector table at off in the flash image (based at base): the
// initial stack pointer must lie in [ramLo, ramHi] and be 8-aligned, the reset handler
// must have the Thumb bit set and point into the image.
func CheckVectors(img []byte, base, off, ramLo, ramHi uint32) (Vectors, error) {
	if uint64(off)+8 > uint64(len(img)) {
		return Vectors{}, fmt.Errorf("vectors: offset %#x is past the image (%d bytes)", off, len(img))
	}
	v := Vectors{binary.LittleEndian.Uint32(img[off:]), binary.LittleEndian.Uint32(img[off+4:])}
	if v.SP < ramLo || v.SP > ramHi || v.SP%8 != 0 {
		return v, fmt.Errorf("vectors: initial SP %#x is not an 8-aligned SRAM address in [%#x, %#x]", v.SP, ramLo, ramHi)
	}
	if v.Reset&1 == 0 {
		return v, fmt.Errorf("vectors: reset handler %#x has no Thumb bit", v.Reset)
	}
	if pc := v.Reset &^ 1; pc < base || pc >= base+uint32(len(img)) {
		return v, fmt.Errorf("vectors: reset handler %#x is outside the image [%#x, %#x)", v.Reset, base, base+uint32(len(img)))
	}
	return v, nil
}

// Picobin block markers and items (RP2350 datasheet, "Blocks").
const (
	BlockMarkerStart = 0xffffded3
	BlockMarkerEnd   = 0xab123579
	ItemImageType    = 0x42
	ItemVectorTable  = 0x03
	ItemLast         = 0xff
	// ImageTypeArmSecureExeRP2350 is the IMAGE_TYPE flags of an Arm Secure executable for
	// the RP2350: EXE (0x0001) | EXE_SECURITY_S (0x0020) | EXE_CPU_ARM (0) | EXE_CHIP_RP2350 (0x1000).
	ImageTypeArmSecureExeRP2350 = 0x1021
)

// Item is one item of a block.
type Item struct {
	Type  byte
	Words []uint32 // the item's words, its header included
}

// PicobinBlock is a parsed block.
type PicobinBlock struct {
	Offset uint32 // of the start marker in the searched bytes
	Items  []Item
	Link   int32 // relative offset of the next block (0: this one)
}

// FindBlock finds the first well-formed block in b (the first 4 KiB of a flash image are
// what the RP2350 bootrom searches): a start marker on a word boundary, items whose sizes
// add up to what the LAST item says, then the link and the end marker.
func FindBlock(b []byte) (PicobinBlock, error) {
	le := binary.LittleEndian
	var firstErr error
	for off := 0; off+4 <= len(b); off += 4 {
		if le.Uint32(b[off:]) != BlockMarkerStart {
			continue
		}
		blk, err := parseBlock(b, off)
		if err == nil {
			return blk, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return PicobinBlock{}, firstErr
	}
	return PicobinBlock{}, errors.New("picobin: no block start marker")
}

func parseBlock(b []byte, off int) (PicobinBlock, error) {
	le := binary.LittleEndian
	blk := PicobinBlock{Offset: uint32(off)}
	p := off + 4
	words := 0
	for {
		if p+4 > len(b) {
			return blk, fmt.Errorf("picobin: block at %#x: runs past the data", off)
		}
		h := le.Uint32(b[p:])
		typ := byte(h)
		var size int
		if typ&0x80 == 0 { // one-byte size
			size = int(byte(h >> 8))
		} else { // two-byte size
			size = int(uint16(h >> 8))
		}
		if typ == ItemLast {
			if size != words {
				return blk, fmt.Errorf("picobin: block at %#x: LAST item says %d words of items, found %d", off, size, words)
			}
			p += 4
			break
		}
		if size == 0 || p+4*size > len(b) {
			return blk, fmt.Errorf("picobin: block at %#x: item %#x at %#x has size %d words", off, typ, p, size)
		}
		it := Item{Type: typ}
		for i := range size {
			it.Words = append(it.Words, le.Uint32(b[p+4*i:]))
		}
		blk.Items = append(blk.Items, it)
		words += size
		p += 4 * size
		if len(blk.Items) > 64 {
			return blk, fmt.Errorf("picobin: block at %#x: too many items", off)
		}
	}
	if p+8 > len(b) {
		return blk, fmt.Errorf("picobin: block at %#x: no link and end marker", off)
	}
	blk.Link = int32(le.Uint32(b[p:]))
	if le.Uint32(b[p+4:]) != BlockMarkerEnd {
		return blk, fmt.Errorf("picobin: block at %#x: end marker %#08x, want %#08x", off, le.Uint32(b[p+4:]), uint32(BlockMarkerEnd))
	}
	return blk, nil
}

// ImageType returns the flags of the block's IMAGE_TYPE item.
func (b PicobinBlock) ImageType() (uint16, bool) {
	for _, it := range b.Items {
		if it.Type == ItemImageType && len(it.Words) == 1 {
			return uint16(it.Words[0] >> 16), true
		}
	}
	return 0, false
}
