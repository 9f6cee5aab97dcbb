package tlscert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/mldsa"
	"crypto/rsa"
	"encoding/binary"
	"fmt"
	"math/big"

	"pqrepro/tls13"
)

// KeyBlob is the leaf's private key as a board's TLS server takes it (firmware/PROTOCOL.md,
// TLSKEY; crypto/tls13/tls13s.h tls13s_key_set): the scheme (2 bytes, big-endian), then ML-DSA:
// the 32-byte seed xi (FIPS 204 KeyGen); Ed25519: the 32-byte seed (RFC 8032); ECDSA-P256: d
// (32 bytes, big-endian); RSA-PSS: n (k bytes) || e (4 bytes) || p || q || dp || dq || qinv
// (k/2 bytes each), all big-endian, k the modulus' bytes. The key is no secret of anyone's: the
// chains a board is given are the runner's own test chains.
func (c *Chain) KeyBlob() ([]byte, error) {
	return KeyBlob(c.Scheme, c.Key)
}

// KeyBlob is key's blob for scheme (Chain.KeyBlob).
func KeyBlob(scheme tls13.SignatureScheme, key crypto.Signer) ([]byte, error) {
	out := binary.BigEndian.AppendUint16(nil, uint16(scheme))
	switch k := key.(type) {
	case *mldsa.PrivateKey:
		if scheme != tls13.MLDSA44 && scheme != tls13.MLDSA65 && scheme != tls13.MLDSA87 {
			break
		}
		return append(out, k.Bytes()...), nil
	case ed25519.PrivateKey:
		if scheme != tls13.Ed25519 {
			break
		}
		return append(out, k.Seed()...), nil
	case *ecdsa.PrivateKey:
		if scheme != tls13.ECDSAP256SHA256 {
			break
		}
		d, err := k.Bytes()
		if err != nil {
			return nil, err
		}
		return append(out, d...), nil
	case *rsa.PrivateKey:
		if scheme != tls13.RSAPSSRSAESHA256 {
			break
		}
		return rsaBlob(out, k)
	}
	return nil, fmt.Errorf("tlscert: no key blob for a %T with scheme %v", key, scheme)
}

// rsaBlob appends an RSA key of two primes of half the modulus' bytes each to out.
func rsaBlob(out []byte, k *rsa.PrivateKey) ([]byte, error) {
	n := (k.N.BitLen() + 7) / 8
	if len(k.Primes) != 2 || n%2 != 0 || k.E < 3 || k.E > 1<<31-1 {
		return nil, fmt.Errorf("tlscert: an RSA key of %d primes, %d bytes, e=%d has no key blob", len(k.Primes), n, k.E)
	}
	p, q := k.Primes[0], k.Primes[1]
	one := big.NewInt(1)
	dp := new(big.Int).Mod(k.D, new(big.Int).Sub(p, one))
	dq := new(big.Int).Mod(k.D, new(big.Int).Sub(q, one))
	qinv := new(big.Int).ModInverse(q, p)
	if qinv == nil || (p.BitLen()+7)/8 != n/2 || (q.BitLen()+7)/8 != n/2 {
		return nil, fmt.Errorf("tlscert: an RSA key whose primes are not of %d bytes each", n/2)
	}
	out = append(out, k.N.FillBytes(make([]byte, n))...)
	out = binary.BigEndian.AppendUint32(out, uint32(k.E))
	for _, v := range []*big.Int{p, q, dp, dq, qinv} {
		out = append(out, v.FillBytes(make([]byte, n/2))...)
	}
	return out, nil
}
