package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"sync"
)

// seedStream is an endless byte stream that is a function of a label and a seed alone:
// block i is SHA-256(label || 0 || seed || i as 8 big-endian bytes). It is written out here,
// rather than taken from a generator of the standard library, so that the keys it makes stay
// the same across Go releases.
type seedStream struct {
	label string
	seed  [32]byte
	block uint64
	buf   []byte
}

// Read fills p; it never fails.
func (s *seedStream) Read(p []byte) (int, error) {
	for n := 0; n < len(p); {
		if len(s.buf) == 0 {
			h := sha256.New()
			h.Write([]byte(s.label))
			h.Write([]byte{0})
			h.Write(s.seed[:])
			h.Write(binary.BigEndian.AppendUint64(nil, s.block))
			s.buf, s.block = h.Sum(nil), s.block+1
		}
		c := copy(p[n:], s.buf)
		s.buf, n = s.buf[c:], n+c
	}
	return len(p), nil
}

// maxDraws bounds the redraws of a seeded ECDSA scalar: one is out of range about once in
// 2^32 draws.
const maxDraws = 64

// seededECDSA is the P-256 key whose scalar is the first 32-byte block of seed's stream that
// lies in [1, n-1] (rejection sampling, so the scalar is uniform).
func seededECDSA(seed [32]byte) (*ecdsa.PrivateKey, error) {
	st := &seedStream{label: "pqrepro ECDSA-P256 scalar", seed: seed}
	d := make([]byte, 32)
	for range maxDraws {
		st.Read(d)
		if k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d); err == nil {
			return k, nil
		}
	}
	return nil, errors.New("no P-256 scalar in range")
}

// rsaKeys keeps the seeded RSA keys made so far, by seed: a key is a function of its seed and
// its prime search takes a few hundred milliseconds, while a run issues the same CA and leaf
// for every RSA-PSS cell. The keys are only read once made.
var rsaKeys sync.Map // [32]byte -> *rsa.PrivateKey

// seededRSA is seededRSAKey(seed), made once per seed.
func seededRSA(seed [32]byte) (*rsa.PrivateKey, error) {
	if k, ok := rsaKeys.Load(seed); ok {
		return k.(*rsa.PrivateKey), nil
	}
	k, err := seededRSAKey(seed)
	if err != nil {
		return nil, err
	}
	got, _ := rsaKeys.LoadOrStore(seed, k)
	return got.(*rsa.PrivateKey), nil
}

// seededRSAKey is the RSABits-bit key with e = 65537 whose primes are the first two probable
// primes of seed's stream: each candidate is RSABits/2 bits from the stream with its top two
// bits set (so that n has exactly RSABits bits) and its lowest set, kept when it is not 1
// modulo e and passes 20 Miller-Rabin rounds and the Baillie-PSW test (big.Int.ProbablyPrime).
// d is e's inverse modulo lcm(p-1, q-1); the CRT values come from Precompute and the whole
// key is checked by Validate.
func seededRSAKey(seed [32]byte) (*rsa.PrivateKey, error) {
	const e = 65537
	st := &seedStream{label: "pqrepro RSA primes", seed: seed}
	one, bigE := big.NewInt(1), big.NewInt(e)
	prime := func() *big.Int {
		b := make([]byte, RSABits/16)
		for {
			st.Read(b)
			b[0] |= 0xc0
			b[len(b)-1] |= 1
			p := new(big.Int).SetBytes(b)
			if new(big.Int).Mod(p, bigE).Cmp(one) != 0 && p.ProbablyPrime(20) {
				return p
			}
		}
	}
	p, q := prime(), prime()
	for p.Cmp(q) == 0 {
		q = prime()
	}
	if p.Cmp(q) < 0 {
		p, q = q, p
	}
	pm1, qm1 := new(big.Int).Sub(p, one), new(big.Int).Sub(q, one)
	gcd := new(big.Int).GCD(nil, nil, pm1, qm1)
	lambda := new(big.Int).Mul(pm1, qm1)
	lambda.Quo(lambda, gcd)
	d := new(big.Int).ModInverse(bigE, lambda)
	if d == nil {
		return nil, errors.New("seeded RSA: e is not invertible")
	}
	k := &rsa.PrivateKey{
		PublicKey: rsa.PublicKey{N: new(big.Int).Mul(p, q), E: e},
		D:         d,
		Primes:    []*big.Int{p, q},
	}
	k.Precompute()
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("seeded RSA key: %w", err)
	}
	return k, nil
}
