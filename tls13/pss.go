package tls13

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
)

// signPSS is RSASSA-PSS-SIGN (RFC 8017 §8.1.1) with SHA-256, MGF1-SHA-256 and a 32-byte salt
// read from rand, for Config.Deterministic: crypto/rsa's SignPSS has drawn its salt from the
// system's generator whatever reader it is given since Go 1.26, so a seeded server encodes
// the message itself (emsaPSSEncode) and applies the private key with math/big. The signature
// is checked with rsa.VerifyPSS before it is returned, which also catches a faulty private
// operation.
//
// math/big is not constant-time: this path is for the seeded benchmark keys of
// tlscert.NewSeededCA, which are a function of a published seed and so hold no secret.
func signPSS(k *rsa.PrivateKey, digest []byte, rand io.Reader) ([]byte, error) {
	salt := make([]byte, sha256.Size)
	if _, err := io.ReadFull(rand, salt); err != nil {
		return nil, fmt.Errorf("read the PSS salt: %w", err)
	}
	em, err := emsaPSSEncode(digest, k.N.BitLen()-1, salt)
	if err != nil {
		return nil, err
	}
	s := rsaPrivate(k, new(big.Int).SetBytes(em))
	sig := s.FillBytes(make([]byte, k.Size()))
	if err := rsa.VerifyPSS(&k.PublicKey, crypto.SHA256, digest, sig, pssOptions); err != nil {
		return nil, fmt.Errorf("the deterministic PSS signature does not verify: %w", err)
	}
	return sig, nil
}

// emsaPSSEncode is EMSA-PSS-ENCODE (RFC 8017 §9.1.1) of the SHA-256 digest mHash into emBits
// bits with salt, hash and MGF1 both SHA-256.
func emsaPSSEncode(mHash []byte, emBits int, salt []byte) ([]byte, error) {
	hLen, sLen := sha256.Size, len(salt)
	emLen := (emBits + 7) / 8
	if len(mHash) != hLen {
		return nil, fmt.Errorf("PSS: digest is %d bytes, want %d", len(mHash), hLen)
	}
	if emLen < hLen+sLen+2 {
		return nil, errors.New("PSS: key too short for the digest and salt")
	}
	h := sha256.New()
	h.Write(make([]byte, 8))
	h.Write(mHash)
	h.Write(salt)
	hash := h.Sum(nil)

	em := make([]byte, emLen)
	db := em[:emLen-hLen-1]
	db[emLen-sLen-hLen-2] = 0x01
	copy(db[emLen-sLen-hLen-1:], salt)
	mgf1XOR(db, hash)
	db[0] &= 0xff >> (8*emLen - emBits)
	copy(em[emLen-hLen-1:], hash)
	em[emLen-1] = 0xbc
	return em, nil
}

// mgf1XOR XORs out with MGF1-SHA-256(seed) (RFC 8017 §B.2.1) of len(out) bytes.
func mgf1XOR(out, seed []byte) {
	var ctr [4]byte
	for done, i := 0, uint32(0); done < len(out); i++ {
		binary.BigEndian.PutUint32(ctr[:], i)
		h := sha256.New()
		h.Write(seed)
		h.Write(ctr[:])
		for _, b := range h.Sum(nil) {
			if done == len(out) {
				break
			}
			out[done] ^= b
			done++
		}
	}
}

// rsaPrivate is RSASP1 (RFC 8017 §5.2.1): m^d mod n, through the CRT values when the key has
// them (a parsed or generated key has; see rsa.PrivateKey.Precompute).
func rsaPrivate(k *rsa.PrivateKey, m *big.Int) *big.Int {
	pc := k.Precomputed
	if len(k.Primes) != 2 || pc.Dp == nil || pc.Dq == nil || pc.Qinv == nil {
		return new(big.Int).Exp(m, k.D, k.N)
	}
	p, q := k.Primes[0], k.Primes[1]
	m1 := new(big.Int).Exp(m, pc.Dp, p)
	m2 := new(big.Int).Exp(m, pc.Dq, q)
	h := m1.Sub(m1, m2)
	h.Mul(h, pc.Qinv).Mod(h, p)
	return h.Mul(h, q).Add(h, m2)
}
