package rpimage

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// The CRC-32/MPEG-2 check value (the parameters the RP2040 datasheet gives for boot2:
// polynomial 0x04c11db7, no reflection, init 0xffffffff, no final XOR) is 0x0376e6e7 for
// "123456789"; the plain IEEE CRC-32 (reflected, final XOR) would give 0xcbf43926.
func TestCRC32Boot2CheckValue(t *testing.T) {
	if got := CRC32Boot2([]byte("123456789")); got != 0x0376e6e7 {
		t.Fatalf("CRC32Boot2(123456789) = %#08x, want 0x0376e6e7", got)
	}
	if got := CRC32Boot2(nil); got != 0xffffffff {
		t.Fatalf("CRC32Boot2(empty) = %#08x, want the initial value", got)
	}
}

func TestPadBoot2(t *testing.T) {
	code := []byte{0x01, 0x4b, 0x00, 0x21}
	b, err := PadBoot2(code)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != Boot2Size || !bytes.Equal(b[:4], code) || !bytes.Equal(b[4:252], make([]byte, 248)) {
		t.Fatalf("padded boot2 is not the code, zeros and a checksum: %x", b)
	}
	if err := CheckBoot2(b); err != nil {
		t.Fatal(err)
	}
	b[17] ^= 1
	if err := CheckBoot2(b); err == nil {
		t.Fatal("a flipped bit passed the boot2 checksum")
	}
	if _, err := PadBoot2(make([]byte, 253)); err == nil {
		t.Fatal("253 bytes of boot2 code accepted")
	}
}

func TestUF2RoundTrip(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	u, err := EncodeUF2(data, 0x10000000, FamilyRP2040)
	if err != nil {
		t.Fatal(err)
	}
	if len(u) != 4*UF2BlockSize {
		t.Fatalf("1000 bytes gave %d bytes of UF2, want 4 blocks", len(u))
	}
	blocks, err := ParseUF2(u)
	if err != nil {
		t.Fatal(err)
	}
	base, got, err := CheckUF2(blocks, FamilyRP2040)
	if err != nil {
		t.Fatal(err)
	}
	if base != 0x10000000 || !bytes.Equal(got[:1000], data) || !bytes.Equal(got[1000:], make([]byte, 24)) {
		t.Fatalf("round trip: base %#x, data differs", base)
	}
	if _, _, err := CheckUF2(blocks, FamilyRP2350ArmS); err == nil || !strings.Contains(err.Error(), "family") {
		t.Fatalf("RP2040 blocks passed as RP2350: %v", err)
	}
	// A gap in the addresses, a wrong block count and a bad magic are each refused.
	bad := bytes.Clone(u)
	binary.LittleEndian.PutUint32(bad[2*UF2BlockSize+12:], 0x10000300)
	if b2, _ := ParseUF2(bad); b2 != nil {
		if _, _, err := CheckUF2(b2, FamilyRP2040); err == nil || !strings.Contains(err.Error(), "contiguous") {
			t.Errorf("an address gap passed: %v", err)
		}
	}
	bad = bytes.Clone(u)
	binary.LittleEndian.PutUint32(bad[24:], 5)
	if b2, _ := ParseUF2(bad); b2 != nil {
		if _, _, err := CheckUF2(b2, FamilyRP2040); err == nil {
			t.Error("a wrong block count passed")
		}
	}
	bad = bytes.Clone(u)
	bad[UF2BlockSize+508] ^= 1
	if _, err := ParseUF2(bad); err == nil {
		t.Error("a bad end magic passed")
	}
	if _, err := EncodeUF2(data, 0x10000010, FamilyRP2040); err == nil {
		t.Error("an unaligned base accepted")
	}
}

func TestFindBlock(t *testing.T) {
	le := binary.LittleEndian
	var b []byte
	b = append(b, make([]byte, 0xc8)...) // a vector table
	for _, w := range []uint32{BlockMarkerStart, 0x10210142, 0x000001ff, 0, BlockMarkerEnd} {
		b = le.AppendUint32(b, w)
	}
	blk, err := FindBlock(b)
	if err != nil {
		t.Fatal(err)
	}
	if ty, ok := blk.ImageType(); blk.Offset != 0xc8 || !ok || ty != ImageTypeArmSecureExeRP2350 || blk.Link != 0 {
		t.Fatalf("block at %#x, image type %#x (%v), link %d", blk.Offset, ty, ok, blk.Link)
	}
	le.PutUint32(b[0xc8+8:], 0x000002ff) // LAST claims 2 words of items
	if _, err := FindBlock(b); err == nil {
		t.Fatal("a LAST item with the wrong size passed")
	}
	le.PutUint32(b[0xc8+8:], 0x000001ff)
	le.PutUint32(b[0xc8+16:], 0xab123578)
	if _, err := FindBlock(b); err == nil {
		t.Fatal("a wrong end marker passed")
	}
}

func FuzzParseUF2(f *testing.F) {
	u, _ := EncodeUF2(bytes.Repeat([]byte{0xa5}, 300), 0x10000000, FamilyRP2040)
	f.Add(u)
	f.Add(u[:512])
	f.Fuzz(func(t *testing.T, b []byte) {
		blocks, err := ParseUF2(b)
		if err != nil {
			return
		}
		if base, data, err := CheckUF2(blocks, FamilyRP2040); err == nil {
			if len(data) != len(blocks)*UF2Payload || base%UF2Payload != 0 {
				t.Fatalf("CheckUF2 accepted %d blocks giving %d bytes at %#x", len(blocks), len(data), base)
			}
		}
	})
}

func FuzzFindBlock(f *testing.F) {
	le := binary.LittleEndian
	var b []byte
	for _, w := range []uint32{BlockMarkerStart, 0x10210142, 0x000001ff, 0, BlockMarkerEnd} {
		b = le.AppendUint32(b, w)
	}
	f.Add(b)
	f.Add(b[:12])
	f.Fuzz(func(t *testing.T, b []byte) {
		blk, err := FindBlock(b)
		if err == nil && int(blk.Offset)+8 > len(b) {
			t.Fatalf("block at %#x past %d bytes", blk.Offset, len(b))
		}
	})
}
