package ascon

import (
	"encoding/binary"
	"fmt"
	"hash"
)

// IVs of the SP 800-232 hash functions (as little-endian words).
const (
	ivHash256 = 0x0000080100cc0002
	ivXOF128  = 0x0000080000cc0003
	ivCXOF128 = 0x0000080000cc0004
)

// Sizes of the hash functions.
const (
	Hash256Size   = 32  // bytes of Ascon-Hash256 output
	hashRate      = 8   // bytes absorbed or squeezed per permutation
	MaxCustomSize = 256 // bytes: SP 800-232 limits the CXOF128 customization string to 2048 bits
)

// sponge is the absorb/squeeze engine shared by Ascon-Hash256, Ascon-XOF128
// and Ascon-CXOF128: rate 64 bits, Ascon-p[12] throughout, little-endian.
type sponge struct {
	s         state
	initial   state // after initialization (and the customization string), for Reset
	buf       [hashRate]byte
	n         int  // absorbing: bytes buffered; squeezing: bytes of buf already read
	squeezing bool // set by the first Read
}

func newSponge(iv uint64) sponge {
	s := state{iv}
	s.permute(12)
	return sponge{s: s, initial: s}
}

// absorbAll absorbs a whole string of nbits bits with its padding into s (the
// last byte may be partial; its first nbits%8 low-order bits count).
func absorbAll(s *state, p []byte, nbits int) {
	for ; nbits >= 64; nbits -= 64 {
		s[0] ^= binary.LittleEndian.Uint64(p)
		s.permute(12)
		p = p[8:]
	}
	var buf [16]byte
	modeAEAD128.partial(&buf, p, nbits)
	s[0] ^= binary.LittleEndian.Uint64(buf[:]) ^ 1<<nbits
	s.permute(12)
}

func (h *sponge) Write(p []byte) (int, error) {
	if h.squeezing {
		panic("ascon: Write after Read")
	}
	n := len(p)
	if h.n > 0 {
		k := copy(h.buf[h.n:], p)
		h.n += k
		p = p[k:]
		if h.n < hashRate {
			return n, nil
		}
		h.s[0] ^= binary.LittleEndian.Uint64(h.buf[:])
		h.s.permute(12)
		h.n = 0
	}
	for ; len(p) >= hashRate; p = p[hashRate:] {
		h.s[0] ^= binary.LittleEndian.Uint64(p)
		h.s.permute(12)
	}
	h.n = copy(h.buf[:], p)
	return n, nil
}

// pad absorbs the buffered bytes and the padding; the sponge then squeezes.
func (h *sponge) pad() {
	absorbAll(&h.s, h.buf[:h.n], 8*h.n)
	h.squeezing = true
	binary.LittleEndian.PutUint64(h.buf[:], h.s[0])
	h.n = 0
}

func (h *sponge) Read(p []byte) (int, error) {
	if !h.squeezing {
		h.pad()
	}
	n := len(p)
	for len(p) > 0 {
		if h.n == hashRate {
			h.s.permute(12)
			binary.LittleEndian.PutUint64(h.buf[:], h.s[0])
			h.n = 0
		}
		k := copy(p, h.buf[h.n:])
		h.n += k
		p = p[k:]
	}
	return n, nil
}

func (h *sponge) Reset() {
	*h = sponge{s: h.initial, initial: h.initial}
}

// Hash256 is Ascon-Hash256 (SP 800-232 section 5.1) as a hash.Hash.
type Hash256 struct{ sp sponge }

var _ hash.Hash = (*Hash256)(nil)

// NewHash256 returns a new Ascon-Hash256.
func NewHash256() *Hash256 { return &Hash256{sp: newSponge(ivHash256)} }

// Sum256 returns the Ascon-Hash256 digest of msg.
func Sum256(msg []byte) [Hash256Size]byte {
	h := NewHash256()
	h.Write(msg)
	var out [Hash256Size]byte
	h.sp.Read(out[:])
	return out
}

// Write absorbs more data; it never fails.
func (h *Hash256) Write(p []byte) (int, error) { return h.sp.Write(p) }

// Sum appends the digest of what was written so far; the state is unchanged.
func (h *Hash256) Sum(b []byte) []byte {
	c := h.sp
	var out [Hash256Size]byte
	c.Read(out[:])
	return append(b, out[:]...)
}

// Reset returns the hash to its initial state.
func (h *Hash256) Reset() { h.sp.Reset() }

// Size is 32 bytes.
func (h *Hash256) Size() int { return Hash256Size }

// BlockSize is the rate, 8 bytes.
func (h *Hash256) BlockSize() int { return hashRate }

// XOF is Ascon-XOF128 or Ascon-CXOF128: Write absorbs, Read squeezes any
// amount (Write after the first Read panics), Reset starts over with the same
// customization string.
type XOF struct{ sp sponge }

// NewXOF128 returns a new Ascon-XOF128 (SP 800-232 section 5.2).
func NewXOF128() *XOF { return &XOF{sp: newSponge(ivXOF128)} }

// NewCXOF128 returns a new Ascon-CXOF128 (SP 800-232 section 5.3) with the
// customization string z (at most MaxCustomSize bytes).
func NewCXOF128(z []byte) (*XOF, error) {
	if len(z) > MaxCustomSize {
		return nil, fmt.Errorf("ascon: CXOF128 customization string is %d bytes, at most %d", len(z), MaxCustomSize)
	}
	return newCXOFBits(z, 8*len(z)), nil
}

func newCXOFBits(z []byte, zBits int) *XOF {
	sp := newSponge(ivCXOF128)
	sp.s[0] ^= uint64(zBits)
	sp.s.permute(12)
	absorbAll(&sp.s, z, zBits)
	sp.initial = sp.s
	return &XOF{sp: sp}
}

// Write absorbs more data; it never fails.
func (x *XOF) Write(p []byte) (int, error) { return x.sp.Write(p) }

// Read squeezes output; it never fails.
func (x *XOF) Read(p []byte) (int, error) { return x.sp.Read(p) }

// Reset returns the XOF to its state before any Write.
func (x *XOF) Reset() { x.sp.Reset() }

// sumBits is the one-shot hash, on a fresh sponge, of a message of msgBits bits into outBits
// bits of output (ACVP's bit-length vectors); the last output byte keeps
// its low-order outBits%8 bits.
func (h *sponge) sumBits(msg []byte, msgBits, outBits int) []byte {
	absorbAll(&h.s, msg, msgBits)
	h.squeezing = true
	binary.LittleEndian.PutUint64(h.buf[:], h.s[0])
	h.n = 0
	out := make([]byte, (outBits+7)/8)
	h.Read(out)
	if outBits%8 != 0 {
		out[len(out)-1] &= 1<<(outBits%8) - 1
	}
	return out
}
