package tls13

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
)

func TestKeyShareSizes(t *testing.T) {
	for _, g := range Groups() {
		ks, err := generateKeyShare(g, rand.Reader, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(ks.share) != clientShareSize(g) {
			t.Errorf("%s: client share %d bytes, want %d", g, len(ks.share), clientShareSize(g))
		}
		ss, secret, err := encapsulate(g, ks.share, rand.Reader, false)
		if err != nil {
			t.Fatalf("%s: encapsulate: %v", g, err)
		}
		if len(ss) != serverShareSize(g) {
			t.Errorf("%s: server share %d bytes, want %d", g, len(ss), serverShareSize(g))
		}
		got, err := ks.decapsulate(ss)
		if err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("%s: decapsulate: %v, secrets equal %v", g, err, bytes.Equal(got, secret))
		}
		want := map[Group]int{X25519MLKEM768: 64, SecP256r1MLKEM768: 64, SecP384r1MLKEM1024: 80}[g]
		if want == 0 {
			want = 32
		}
		if len(secret) != want {
			t.Errorf("%s: secret %d bytes, want %d", g, len(secret), want)
		}
	}
}

func TestCheckModulus(t *testing.T) {
	pk, _, err := mlkem512.GenerateKeyPair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ek, _ := pk.MarshalBinary()
	if err := checkModulus(ek, 2); err != nil {
		t.Fatalf("valid key rejected: %v", err)
	}
	for _, off := range []int{0, 1, 765, 766} { // both coefficients of a 3-byte group, first and last
		bad := bytes.Clone(ek)
		i := off / 3 * 3
		if off%3 == 0 {
			bad[i], bad[i+1] = 0x01, bad[i+1]|0x0d // a = 0xd01 = 3329 = q
		} else {
			bad[i+1], bad[i+2] = bad[i+1]|0xf0, 0xff // b = 4095
		}
		if err := checkModulus(bad, 2); err == nil {
			t.Errorf("coefficient ≥ q at byte %d accepted", off)
		}
	}
	if err := checkModulus(ek[:799], 2); err == nil {
		t.Error("short key accepted")
	}
}
