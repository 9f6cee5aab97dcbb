package ascon

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of Ascon-AEAD128 and of the v1.2 modes (all three share them).
const (
	KeySize       = 16 // bytes; NewAEAD128 also takes 32 for nonce masking
	MaskedKeySize = 32 // key || second key, for nonce masking
	NonceSize     = 16
	TagSize       = 16 // the full tag; NewAEAD128WithTagSize truncates it
	MinTagSize    = 4  // SP 800-232 allows tags down to 32 bits
)

// ErrOpen is returned by Open when the tag does not verify.
var ErrOpen = errors.New("ascon: message authentication failed")

// mode is one Ascon AEAD specification: its IV, rate, intermediate rounds
// and byte order. All modes run the same permutation and the same code below,
// so two modes differ exactly where their specifications do.
type mode struct {
	name string
	iv   uint64
	rate int  // bytes per block: 8 or 16
	b    int  // rounds of the intermediate permutation p^b
	be   bool // v1.2: big-endian words, padding and domain bit at the other end
}

var (
	// modeAEAD128 is Ascon-AEAD128, SP 800-232 section 4.
	modeAEAD128 = &mode{name: "Ascon-AEAD128", iv: 0x00001000808c0001, rate: 16, b: 8}
	// mode128v12 is Ascon-128 of the v1.2 submission.
	mode128v12 = &mode{name: "Ascon-128 v1.2", iv: 0x80400c0600000000, rate: 8, b: 6, be: true}
	// mode128av12 is Ascon-128a of the v1.2 submission.
	mode128av12 = &mode{name: "Ascon-128a v1.2", iv: 0x80800c0800000000, rate: 16, b: 8, be: true}
)

func (m *mode) load(b []byte) uint64 {
	if m.be {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

func (m *mode) store(b []byte, v uint64) {
	if m.be {
		binary.BigEndian.PutUint64(b, v)
	} else {
		binary.LittleEndian.PutUint64(b, v)
	}
}

// bit returns the word with only bit i (0..63) of the byte string it
// represents set: bit i counts from the least significant bit of the first
// byte for SP 800-232 and from the most significant one for v1.2.
func (m *mode) bit(i int) uint64 {
	if m.be {
		return 1 << (63 - i)
	}
	return 1 << i
}

// wordMask returns the word whose first n bits (0..64) are set, in the same
// bit order as bit.
func (m *mode) wordMask(n int) uint64 {
	switch {
	case n <= 0:
		return 0
	case n >= 64:
		return ^uint64(0)
	case m.be:
		return ^(^uint64(0) >> n)
	default:
		return 1<<n - 1
	}
}

// byteMask keeps the first n (1..7) bits of a byte; 0 keeps all eight.
func (m *mode) byteMask(n int) byte {
	if n == 0 {
		return 0xff
	}
	if m.be {
		return 0xff << (8 - n)
	}
	return 1<<n - 1
}

// domainBit is the domain-separation constant XORed into S4 after the
// associated data: the last bit of the 320-bit state.
func (m *mode) domainBit() uint64 { return m.bit(63) }

// partial copies the first nbits bits of p into a zeroed block buffer.
func (m *mode) partial(buf *[16]byte, p []byte, nbits int) int {
	n := (nbits + 7) / 8
	*buf = [16]byte{}
	copy(buf[:], p[:n])
	if n > 0 {
		buf[n-1] &= m.byteMask(nbits % 8)
	}
	return n
}

// absorb XORs a final block of nbits < 8*rate bits, with its padding, into s.
func (m *mode) absorbLast(s *state, p []byte, nbits int) {
	var buf [16]byte
	m.partial(&buf, p, nbits)
	for w := 0; w < m.rate/8; w++ {
		s[w] ^= m.load(buf[8*w:])
	}
	s[nbits/64] ^= m.bit(nbits % 64)
}

// AEAD is one of the Ascon authenticated ciphers with a fixed key. Its
// methods follow crypto/cipher.AEAD and are safe for concurrent use.
type AEAD struct {
	m        *mode
	k0, k1   uint64 // key words
	masked   bool   // nonce masking: the nonce is XORed with the second key
	n0, n1   uint64 // second-key words
	tagBytes int
}

// NewAEAD128 returns Ascon-AEAD128 (SP 800-232) with a 16-byte tag. A
// 16-byte key is the plain mode; a 32-byte key K||K2 selects nonce masking
// (the nonce-masking option of SP 800-232): the nonce is XORed with K2 before use, under the
// 128-bit key K (ACVP's "key" and "secondKey").
func NewAEAD128(key []byte) (*AEAD, error) {
	return NewAEAD128WithTagSize(key, TagSize)
}

// NewAEAD128WithTagSize is NewAEAD128 with the tag truncated to tagSize
// bytes (MinTagSize to TagSize): Seal emits, and Open expects, the first
// tagSize bytes of the full tag.
func NewAEAD128WithTagSize(key []byte, tagSize int) (*AEAD, error) {
	if tagSize < MinTagSize || tagSize > TagSize {
		return nil, fmt.Errorf("ascon: tag size %d bytes, want %d to %d", tagSize, MinTagSize, TagSize)
	}
	if len(key) != KeySize && len(key) != MaskedKeySize {
		return nil, fmt.Errorf("ascon: Ascon-AEAD128 key is %d bytes, want %d (or %d with nonce masking)", len(key), KeySize, MaskedKeySize)
	}
	a := newAEAD(modeAEAD128, key[:KeySize], tagSize)
	if len(key) == MaskedKeySize {
		a.masked = true
		a.n0, a.n1 = a.m.load(key[16:]), a.m.load(key[24:])
	}
	return a, nil
}

// NewAscon128 returns Ascon-128 of the pre-standard v1.2 specification
// (rate 64 bits, p^6, big-endian). It is not SP 800-232; it is here as the
// "before" of a before/after comparison.
func NewAscon128(key []byte) (*AEAD, error) { return newV12(mode128v12, key) }

// NewAscon128a returns Ascon-128a of the pre-standard v1.2 specification
// (rate 128 bits, p^8, big-endian), the predecessor of Ascon-AEAD128.
func NewAscon128a(key []byte) (*AEAD, error) { return newV12(mode128av12, key) }

func newV12(m *mode, key []byte) (*AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("ascon: %s key is %d bytes, want %d", m.name, len(key), KeySize)
	}
	return newAEAD(m, key, TagSize), nil
}

func newAEAD(m *mode, key []byte, tagBytes int) *AEAD {
	return &AEAD{m: m, k0: m.load(key[0:]), k1: m.load(key[8:]), tagBytes: tagBytes}
}

// Name is the specification's name for the mode.
func (a *AEAD) Name() string { return a.m.name }

// NonceSize is 16 bytes.
func (a *AEAD) NonceSize() int { return NonceSize }

// Overhead is the tag length in bytes.
func (a *AEAD) Overhead() int { return a.tagBytes }

// Seal encrypts and authenticates plaintext with additional data and appends
// the ciphertext and tag to dst. The nonce must be NonceSize bytes and must
// never repeat under one key. dst and plaintext may overlap exactly or not at
// all.
func (a *AEAD) Seal(dst, nonce, plaintext, additionalData []byte) []byte {
	if len(nonce) != NonceSize {
		panic("ascon: nonce is not 16 bytes")
	}
	return a.seal(dst, nonce, plaintext, 8*len(plaintext), additionalData, 8*len(additionalData), 8*a.tagBytes)
}

// Open authenticates and decrypts ciphertext (which ends in the tag) and
// appends the plaintext to dst. On a bad tag it returns ErrOpen and appends
// nothing; any bytes it wrote into dst's spare capacity are zeroed. dst and
// ciphertext may overlap exactly or not at all.
func (a *AEAD) Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	if len(nonce) != NonceSize {
		return nil, fmt.Errorf("ascon: open: nonce is %d bytes, want %d", len(nonce), NonceSize)
	}
	if len(ciphertext) < a.tagBytes {
		return nil, ErrOpen
	}
	n := len(ciphertext) - a.tagBytes
	return a.open(dst, nonce, ciphertext[:n], 8*n, ciphertext[n:], 8*a.tagBytes, additionalData, 8*len(additionalData))
}

// start runs the initialization and the associated-data phase.
func (a *AEAD) start(nonce, ad []byte, adBits int) state {
	m := a.m
	n0, n1 := m.load(nonce[0:]), m.load(nonce[8:])
	if a.masked {
		n0 ^= a.n0
		n1 ^= a.n1
	}
	s := state{m.iv, a.k0, a.k1, n0, n1}
	s.permute(12)
	s[3] ^= a.k0
	s[4] ^= a.k1
	if adBits > 0 {
		r := m.rate
		for ; adBits >= 8*r; adBits -= 8 * r {
			s[0] ^= m.load(ad)
			if r == 16 {
				s[1] ^= m.load(ad[8:])
			}
			s.permute(m.b)
			ad = ad[r:]
		}
		m.absorbLast(&s, ad, adBits)
		s.permute(m.b)
	}
	s[4] ^= m.domainBit()
	return s
}

// finish runs the finalization and writes the full 16-byte tag.
func (a *AEAD) finish(s *state, tag *[16]byte) {
	w := a.m.rate / 8
	s[w] ^= a.k0
	s[w+1] ^= a.k1
	s.permute(12)
	a.m.store(tag[0:], s[3]^a.k0)
	a.m.store(tag[8:], s[4]^a.k1)
}

// truncTag returns the first tagBits bits of the full tag.
func (a *AEAD) truncTag(tag *[16]byte, tagBits int) []byte {
	n := (tagBits + 7) / 8
	t := tag[:n]
	t[n-1] &= a.m.byteMask(tagBits % 8)
	return t
}

// seal is Seal on bit lengths. Only the last byte of a string may be
// partial (ACVP's bit-length vectors); its unused bits come out zero.
func (a *AEAD) seal(dst, nonce, pt []byte, ptBits int, ad []byte, adBits, tagBits int) []byte {
	m := a.m
	ptBytes := (ptBits + 7) / 8
	ret, out := grow(dst, ptBytes+(tagBits+7)/8)
	s := a.start(nonce, ad, adBits)
	r := m.rate
	for ; ptBits >= 8*r; ptBits -= 8 * r {
		s[0] ^= m.load(pt)
		m.store(out, s[0])
		if r == 16 {
			s[1] ^= m.load(pt[8:])
			m.store(out[8:], s[1])
		}
		s.permute(m.b)
		pt, out = pt[r:], out[r:]
	}
	m.absorbLast(&s, pt, ptBits)
	var buf [16]byte
	m.store(buf[0:], s[0])
	m.store(buf[8:], s[1])
	n := copy(out, buf[:(ptBits+7)/8])
	if n > 0 {
		out[n-1] &= m.byteMask(ptBits % 8)
	}
	var tag [16]byte
	a.finish(&s, &tag)
	copy(out[n:], a.truncTag(&tag, tagBits))
	return ret
}

// open is Open on bit lengths, with the tag given apart.
func (a *AEAD) open(dst, nonce, ct []byte, ctBits int, tagIn []byte, tagBits int, ad []byte, adBits int) ([]byte, error) {
	m := a.m
	ctBytes := (ctBits + 7) / 8
	if len(tagIn) != (tagBits+7)/8 {
		return nil, ErrOpen
	}
	ret, out := grow(dst, ctBytes)
	whole := out
	s := a.start(nonce, ad, adBits)
	r := m.rate
	for ; ctBits >= 8*r; ctBits -= 8 * r {
		c0 := m.load(ct)
		m.store(out, s[0]^c0)
		s[0] = c0
		if r == 16 {
			c1 := m.load(ct[8:])
			m.store(out[8:], s[1]^c1)
			s[1] = c1
		}
		s.permute(m.b)
		ct, out = ct[r:], out[r:]
	}
	var cb, pb [16]byte
	n := m.partial(&cb, ct, ctBits)
	for w := 0; w < r/8; w++ {
		c := m.load(cb[8*w:])
		mask := m.wordMask(ctBits - 64*w)
		m.store(pb[8*w:], (s[w]^c)&mask)
		s[w] = s[w]&^mask | c
	}
	s[ctBits/64] ^= m.bit(ctBits % 64)
	copy(out, pb[:n])
	var tag [16]byte
	a.finish(&s, &tag)
	if subtle.ConstantTimeCompare(a.truncTag(&tag, tagBits), tagIn) != 1 {
		clear(whole)
		return nil, ErrOpen
	}
	return ret, nil
}

// grow extends in by n bytes, returning the whole slice and the new tail.
func grow(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	return head, head[len(in):]
}
