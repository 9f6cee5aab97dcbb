package tlscert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/mldsa"
	"crypto/rsa"
	"encoding/binary"
	"math/big"
	"testing"
	"time"

	"pqrepro/tls13"
)

// TestKeyBlob checks each scheme's blob by rebuilding the key from it with Go's own
// constructors (ML-DSA and Ed25519 from the seed, P-256 from d, RSA from n, e, p, q) and
// comparing it with the chain's key; the CRT values are checked against p, q and d.
func TestKeyBlob(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, s := range []tls13.SignatureScheme{tls13.MLDSA44, tls13.MLDSA65, tls13.MLDSA87, tls13.Ed25519, tls13.ECDSAP256SHA256, tls13.RSAPSSRSAESHA256} {
		ch, err := New(s, "board.pqrepro.test", now)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ch.KeyBlob()
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		if got := tls13.SignatureScheme(binary.BigEndian.Uint16(b)); got != s {
			t.Fatalf("%v: blob scheme %v", s, got)
		}
		m := b[2:]
		switch k := ch.Key.(type) {
		case *mldsa.PrivateKey:
			k2, err := mldsa.NewPrivateKey(k.PublicKey().Parameters(), m)
			if err != nil || !k2.Equal(k) {
				t.Fatalf("%v: the seed does not give the key (%v)", s, err)
			}
		case ed25519.PrivateKey:
			if !ed25519.NewKeyFromSeed(m).Equal(k) {
				t.Fatalf("%v: the seed does not give the key", s)
			}
		case *ecdsa.PrivateKey:
			k2, err := ecdsa.ParseRawPrivateKey(k.Curve, m)
			if err != nil || !k2.Equal(k) {
				t.Fatalf("%v: d does not give the key (%v)", s, err)
			}
		case *rsa.PrivateKey:
			checkRSABlob(t, k, m)
		}
	}
}

func checkRSABlob(t *testing.T, k *rsa.PrivateKey, m []byte) {
	t.Helper()
	if len(m) != 256+4+5*128 {
		t.Fatalf("RSA blob of %d bytes", len(m))
	}
	n := new(big.Int).SetBytes(m[:256])
	e := binary.BigEndian.Uint32(m[256:260])
	part := func(i int) *big.Int { return new(big.Int).SetBytes(m[260+128*i : 260+128*(i+1)]) }
	p, q, dp, dq, qinv := part(0), part(1), part(2), part(3), part(4)
	one := big.NewInt(1)
	if n.Cmp(k.N) != 0 || int(e) != k.E || new(big.Int).Mul(p, q).Cmp(n) != 0 {
		t.Fatal("RSA blob: n, e or p*q differ from the key")
	}
	if dp.Cmp(new(big.Int).Mod(k.D, new(big.Int).Sub(p, one))) != 0 || dq.Cmp(new(big.Int).Mod(k.D, new(big.Int).Sub(q, one))) != 0 ||
		new(big.Int).Mod(new(big.Int).Mul(qinv, q), p).Cmp(one) != 0 {
		t.Fatal("RSA blob: dp, dq or qinv wrong")
	}
	if !bytes.Equal(m[:256], k.N.FillBytes(make([]byte, 256))) {
		t.Fatal("RSA blob: n not big-endian of 256 bytes")
	}
}
