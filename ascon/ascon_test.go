package ascon

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	circl "github.com/cloudflare/circl/cipher/ascon"
)

var _ cipher.AEAD = (*AEAD)(nil)

// TestCirclCrossCheck compares the v1.2 modes with circl's implementation of
// the same specification on random keys, nonces and lengths.
func TestCirclCrossCheck(t *testing.T) {
	for _, c := range []struct {
		ours  func([]byte) (*AEAD, error)
		circl circl.Mode
	}{
		{NewAscon128, circl.Ascon128},
		{NewAscon128a, circl.Ascon128a},
	} {
		key := make([]byte, KeySize)
		rand.Read(key)
		ours, err := c.ours(key)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := circl.New(key, c.circl)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(ours.Name(), func(t *testing.T) {
			for i := 0; i < 500; i++ {
				nonce, pt, ad := make([]byte, NonceSize), make([]byte, i%97), make([]byte, (i*7)%41)
				rand.Read(nonce)
				rand.Read(pt)
				rand.Read(ad)
				got, want := ours.Seal(nil, nonce, pt, ad), theirs.Seal(nil, nonce, pt, ad)
				if !bytes.Equal(got, want) {
					t.Fatalf("pt %d ad %d bytes: ours %X, circl %X", len(pt), len(ad), got, want)
				}
				if p, err := theirs.Open(nil, nonce, got, ad); err != nil || !bytes.Equal(p, pt) {
					t.Fatalf("circl cannot open our ciphertext: %v", err)
				}
			}
		})
	}
}

// TestAEADOptions covers the constructors' checks, truncated tags through
// the public API, and that a failed Open leaves nothing readable in dst.
func TestAEADOptions(t *testing.T) {
	key := make([]byte, MaskedKeySize+1)
	rand.Read(key)
	for _, n := range []int{0, 15, 17, 31, 33} {
		if _, err := NewAEAD128(key[:n]); err == nil {
			t.Errorf("NewAEAD128 accepted a %d-byte key", n)
		}
	}
	for _, n := range []int{15, 32} {
		if _, err := NewAscon128(key[:n]); err == nil {
			t.Errorf("NewAscon128 accepted a %d-byte key", n)
		}
		if _, err := NewAscon128a(key[:n]); err == nil {
			t.Errorf("NewAscon128a accepted a %d-byte key", n)
		}
	}
	for _, n := range []int{-1, 0, 3, 17} {
		if _, err := NewAEAD128WithTagSize(key[:16], n); err == nil {
			t.Errorf("accepted a %d-byte tag", n)
		}
	}
	nonce, pt, ad := make([]byte, NonceSize), []byte("telemetry payload, 33 bytes long."), []byte("device/topic")
	full, _ := NewAEAD128(key[:16])
	masked, _ := NewAEAD128(key[:MaskedKeySize])
	if bytes.Equal(full.Seal(nil, nonce, pt, ad), masked.Seal(nil, nonce, pt, ad)) {
		t.Error("nonce masking changed nothing")
	}
	ref := full.Seal(nil, nonce, pt, ad)
	for tag := MinTagSize; tag <= TagSize; tag++ {
		a, err := NewAEAD128WithTagSize(key[:16], tag)
		if err != nil {
			t.Fatal(err)
		}
		ct := a.Seal(nil, nonce, pt, ad)
		if a.Overhead() != tag || len(ct) != len(pt)+tag || !bytes.Equal(ct, ref[:len(pt)+tag]) {
			t.Fatalf("tag %d: ciphertext is not the full one truncated", tag)
		}
		if p, err := a.Open(nil, nonce, ct, ad); err != nil || !bytes.Equal(p, pt) {
			t.Fatalf("tag %d: Open: %v", tag, err)
		}
		ct[len(ct)-1] ^= 1
		dst := make([]byte, 3, 100)
		if p, err := a.Open(dst, nonce, ct, ad); !errors.Is(err, ErrOpen) || p != nil {
			t.Fatalf("tag %d: forged tag opened", tag)
		}
		if !bytes.Equal(dst[:cap(dst)], make([]byte, cap(dst))) {
			t.Fatalf("tag %d: plaintext left in dst after a failed Open", tag)
		}
	}
	if _, err := full.Open(nil, nonce, ref[:TagSize-1], ad); !errors.Is(err, ErrOpen) {
		t.Error("a ciphertext shorter than the tag opened")
	}
	if _, err := full.Open(nil, nonce[:12], ref, ad); err == nil {
		t.Error("a 12-byte nonce was accepted")
	}
	// In place, as crypto/cipher allows.
	buf := append(make([]byte, 0, len(pt)+TagSize), pt...)
	ct := full.Seal(buf[:0], nonce, buf, ad)
	if !bytes.Equal(ct, ref) {
		t.Fatal("in-place Seal differs")
	}
	if p, err := full.Open(ct[:0], nonce, ct, ad); err != nil || !bytes.Equal(p, pt) {
		t.Fatalf("in-place Open: %v", err)
	}
}

// TestHashIncremental checks Reset, Sum leaving the state alone, and
// output read in many small pieces against one large read.
func TestHashIncremental(t *testing.T) {
	msg := make([]byte, 300)
	rand.Read(msg)
	h := NewHash256()
	h.Write(msg[:100])
	first := h.Sum(nil)
	h.Write(msg[100:])
	want := Sum256(msg)
	if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatal("Sum changed the state or Write lost bytes")
	}
	h.Reset()
	h.Write(msg[:100])
	if !bytes.Equal(h.Sum(nil), first) {
		t.Fatal("Reset did not restore the initial state")
	}
	for _, z := range [][]byte{nil, []byte("custom")} {
		x, err := NewCXOF128(z)
		if err != nil {
			t.Fatal(err)
		}
		x.Write(msg)
		big := make([]byte, 200)
		x.Read(big)
		x.Reset()
		x.Write(msg)
		var small []byte
		for len(small) < len(big) {
			b := make([]byte, 1+len(small)%5)
			x.Read(b)
			small = append(small, b...)
		}
		if !bytes.Equal(small[:len(big)], big) {
			t.Fatalf("z %q: piecewise reads differ", z)
		}
	}
	if _, err := NewCXOF128(make([]byte, MaxCustomSize+1)); err == nil {
		t.Error("an oversized customization string was accepted")
	}
}

func FuzzSealOpen(f *testing.F) {
	f.Add([]byte("key material 16B"), []byte("nonce 16 bytes.."), []byte("plaintext"), []byte("ad"), uint8(0), uint8(16))
	f.Fuzz(func(t *testing.T, key, nonce, pt, ad []byte, which, tag uint8) {
		if len(key) < MaskedKeySize {
			key = append(key, make([]byte, MaskedKeySize-len(key))...)
		}
		key = key[:MaskedKeySize]
		if len(nonce) < NonceSize {
			nonce = append(nonce, make([]byte, NonceSize-len(nonce))...)
		}
		nonce = nonce[:NonceSize]
		var a *AEAD
		var err error
		switch which % 4 {
		case 0:
			a, err = NewAEAD128WithTagSize(key[:KeySize], MinTagSize+int(tag)%(TagSize-MinTagSize+1))
		case 1:
			a, err = NewAEAD128(key)
		case 2:
			a, err = NewAscon128(key[:KeySize])
		default:
			a, err = NewAscon128a(key[:KeySize])
		}
		if err != nil {
			t.Fatal(err)
		}
		ct := a.Seal(nil, nonce, pt, ad)
		if len(ct) != len(pt)+a.Overhead() {
			t.Fatalf("ciphertext is %d bytes for %d of plaintext", len(ct), len(pt))
		}
		got, err := a.Open(nil, nonce, ct, ad)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("round trip failed: %v", err)
		}
		ct[int(tag)%len(ct)] ^= 1 << (which % 8)
		if _, err := a.Open(nil, nonce, ct, ad); err == nil {
			t.Fatal("a flipped bit was accepted")
		}
	})
}

// FuzzOpen feeds arbitrary ciphertexts to Open: it must never panic, and
// must refuse them (a random forgery passes with probability 2^-128).
func FuzzOpen(f *testing.F) {
	f.Add([]byte{}, []byte{}, []byte{})
	f.Add(bytes.Repeat([]byte{1}, 40), []byte("nonce 16 bytes.."), []byte("ad"))
	a128, _ := NewAEAD128(make([]byte, KeySize))
	v12, _ := NewAscon128(make([]byte, KeySize))
	f.Fuzz(func(t *testing.T, ct, nonce, ad []byte) {
		for _, a := range []*AEAD{a128, v12} {
			p, err := a.Open(nil, nonce, ct, ad)
			if err == nil || p != nil {
				t.Fatalf("%s opened a random ciphertext", a.Name())
			}
		}
	})
}

func BenchmarkSeal(b *testing.B) {
	key, nonce := make([]byte, KeySize), make([]byte, NonceSize)
	for _, c := range []struct {
		name string
		new  func([]byte) (*AEAD, error)
	}{
		{"AEAD128", NewAEAD128},
		{"128a-v1.2", NewAscon128a},
		{"128-v1.2", NewAscon128},
	} {
		a, _ := c.new(key)
		for _, size := range []int{16, 64, 256, 1024} {
			b.Run(fmt.Sprintf("%s/%d", c.name, size), func(b *testing.B) {
				pt, ad := make([]byte, size), make([]byte, 0)
				out := make([]byte, 0, size+TagSize)
				b.SetBytes(int64(size))
				for b.Loop() {
					out = a.Seal(out[:0], nonce, pt, ad)
				}
				if _, err := a.Open(nil, nonce, out, ad); err != nil {
					b.Fatal("the timed ciphertext does not open")
				}
			})
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	key, nonce := make([]byte, KeySize), make([]byte, NonceSize)
	for _, c := range []struct {
		name string
		new  func([]byte) (*AEAD, error)
	}{
		{"AEAD128", NewAEAD128},
		{"128a-v1.2", NewAscon128a},
		{"128-v1.2", NewAscon128},
	} {
		a, _ := c.new(key)
		for _, size := range []int{16, 64, 256, 1024} {
			b.Run(fmt.Sprintf("%s/%d", c.name, size), func(b *testing.B) {
				pt := make([]byte, size)
				ct := a.Seal(nil, nonce, pt, nil)
				out := make([]byte, 0, size)
				b.SetBytes(int64(size))
				var err error
				for b.Loop() {
					if out, err = a.Open(out[:0], nonce, ct, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkHash256(b *testing.B) {
	msg := make([]byte, 1024)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		Sum256(msg)
	}
}
