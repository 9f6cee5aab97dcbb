package tls13

import (
	"crypto/ecdh"
	"crypto/mlkem"
	"errors"
	"fmt"
	"io"

	"github.com/cloudflare/circl/kem"
	"github.com/cloudflare/circl/kem/mlkem/mlkem1024"
	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/kem/mlkem/mlkem768"
)

// Key-exchange sizes per group (../shared/specs/tls-pq-codepoints.md).
const (
	mlkem512EKSize = 800
	mlkem512CTSize = 768
	x25519Size     = 32
	p256PointSize  = 65
	p384PointSize  = 97
)

// clientShareSize and serverShareSize are the exact key_exchange lengths of each group.
func clientShareSize(g Group) int {
	switch g {
	case MLKEM512:
		return mlkem512EKSize
	case MLKEM768:
		return mlkem.EncapsulationKeySize768
	case MLKEM1024:
		return mlkem.EncapsulationKeySize1024
	case X25519:
		return x25519Size
	case P256:
		return p256PointSize
	case X25519MLKEM768:
		return mlkem.EncapsulationKeySize768 + x25519Size
	case SecP256r1MLKEM768:
		return p256PointSize + mlkem.EncapsulationKeySize768
	case SecP384r1MLKEM1024:
		return p384PointSize + mlkem.EncapsulationKeySize1024
	}
	return -1
}

func serverShareSize(g Group) int {
	switch g {
	case MLKEM512:
		return mlkem512CTSize
	case MLKEM768:
		return mlkem.CiphertextSize768
	case MLKEM1024:
		return mlkem.CiphertextSize1024
	case X25519:
		return x25519Size
	case P256:
		return p256PointSize
	case X25519MLKEM768:
		return mlkem.CiphertextSize768 + x25519Size
	case SecP256r1MLKEM768:
		return p256PointSize + mlkem.CiphertextSize768
	case SecP384r1MLKEM1024:
		return p384PointSize + mlkem.CiphertextSize1024
	}
	return -1
}

// keyShare is the client's private half of one key share it sent.
type keyShare struct {
	group Group
	share []byte // the key_exchange bytes sent in the ClientHello
	ecdh  *ecdh.PrivateKey
	dk512 *mlkem512.PrivateKey
	dk768 *mlkem.DecapsulationKey768
	dk1k  *mlkem.DecapsulationKey1024
}

// generateKeyShare makes a fresh key share for g, drawing seeds from rand. deterministic draws
// the ECDH private keys from rand too (ecdhKey); ML-KEM keys always come from rand's seeds.
func generateKeyShare(g Group, rand io.Reader, deterministic bool) (*keyShare, error) {
	ks := &keyShare{group: g}
	var seed [64]byte
	mlkemPart := func(size int) ([]byte, error) {
		if _, err := io.ReadFull(rand, seed[:]); err != nil {
			return nil, fmt.Errorf("read ML-KEM seed: %w", err)
		}
		switch size {
		case 512:
			pk, sk := mlkem512.NewKeyFromSeed(seed[:])
			ks.dk512 = sk
			b, err := pk.MarshalBinary()
			return b, err
		case 768:
			dk, err := mlkem.NewDecapsulationKey768(seed[:])
			if err != nil {
				return nil, err
			}
			ks.dk768 = dk
			return dk.EncapsulationKey().Bytes(), nil
		default:
			dk, err := mlkem.NewDecapsulationKey1024(seed[:])
			if err != nil {
				return nil, err
			}
			ks.dk1k = dk
			return dk.EncapsulationKey().Bytes(), nil
		}
	}
	ecdhPart := func(c ecdh.Curve) ([]byte, error) {
		k, err := ecdhKey(c, rand, deterministic)
		if err != nil {
			return nil, fmt.Errorf("generate ECDH key: %w", err)
		}
		ks.ecdh = k
		return k.PublicKey().Bytes(), nil
	}
	var err error
	switch g {
	case MLKEM512:
		ks.share, err = mlkemPart(512)
	case MLKEM768:
		ks.share, err = mlkemPart(768)
	case MLKEM1024:
		ks.share, err = mlkemPart(1024)
	case X25519:
		ks.share, err = ecdhPart(ecdh.X25519())
	case P256:
		ks.share, err = ecdhPart(ecdh.P256())
	case X25519MLKEM768:
		var ek, pub []byte
		if ek, err = mlkemPart(768); err == nil {
			if pub, err = ecdhPart(ecdh.X25519()); err == nil {
				ks.share = append(ek, pub...)
			}
		}
	case SecP256r1MLKEM768:
		var ek, pub []byte
		if pub, err = ecdhPart(ecdh.P256()); err == nil {
			if ek, err = mlkemPart(768); err == nil {
				ks.share = append(pub, ek...)
			}
		}
	case SecP384r1MLKEM1024:
		var ek, pub []byte
		if pub, err = ecdhPart(ecdh.P384()); err == nil {
			if ek, err = mlkemPart(1024); err == nil {
				ks.share = append(pub, ek...)
			}
		}
	default:
		return nil, fmt.Errorf("generate key share: unsupported group %s", g)
	}
	if err != nil {
		return nil, fmt.Errorf("generate %s key share: %w", g, err)
	}
	return ks, nil
}

func illegal(format string, args ...any) error {
	return &alertCause{AlertIllegalParameter, fmt.Errorf(format, args...)}
}

func internal(err error) error { return &alertCause{AlertInternalError, err} }

// decapsulate combines the server's key_exchange with the client's private share and returns
// the shared secret fed into the key schedule. A share of the wrong length or an invalid ECDH
// point is illegal_parameter; any other failure internal_error (a *alertCause either way).
func (ks *keyShare) decapsulate(server []byte) ([]byte, error) {
	g := ks.group
	if n := serverShareSize(g); len(server) != n {
		return nil, illegal("%s server key share is %d bytes, want %d", g, len(server), n)
	}
	switch g {
	case MLKEM512, MLKEM768, MLKEM1024:
		return ks.mlkemDecap(server)
	case X25519, P256:
		return ks.ecdhShared(server)
	case X25519MLKEM768:
		n := mlkem.CiphertextSize768
		ss, err := ks.mlkemDecap(server[:n])
		if err != nil {
			return nil, err
		}
		e, err := ks.ecdhShared(server[n:])
		if err != nil {
			return nil, err
		}
		return append(ss, e...), nil
	case SecP256r1MLKEM768, SecP384r1MLKEM1024:
		n := p256PointSize
		if g == SecP384r1MLKEM1024 {
			n = p384PointSize
		}
		e, err := ks.ecdhShared(server[:n])
		if err != nil {
			return nil, err
		}
		ss, err := ks.mlkemDecap(server[n:])
		if err != nil {
			return nil, err
		}
		return append(e, ss...), nil
	}
	return nil, internal(fmt.Errorf("decapsulate: unsupported group %s", g))
}

func (ks *keyShare) mlkemDecap(ct []byte) ([]byte, error) {
	var ss []byte
	var err error
	switch {
	case ks.dk512 != nil:
		ss, err = mlkem512.Scheme().Decapsulate(ks.dk512, ct)
	case ks.dk768 != nil:
		ss, err = ks.dk768.Decapsulate(ct)
	case ks.dk1k != nil:
		ss, err = ks.dk1k.Decapsulate(ct)
	default:
		err = errors.New("no ML-KEM key")
	}
	if err != nil {
		return nil, internal(fmt.Errorf("ML-KEM decapsulation: %w", err))
	}
	return ss, nil
}

func (ks *keyShare) ecdhShared(peer []byte) ([]byte, error) {
	pub, err := ks.ecdh.Curve().NewPublicKey(peer)
	if err != nil {
		return nil, illegal("server ECDH share: %w", err)
	}
	s, err := ks.ecdh.ECDH(pub)
	if err != nil {
		return nil, illegal("ECDH with server share: %w", err)
	}
	return s, nil
}

// encapsulate is the server side: it checks the client's key_exchange for g (length, the FIPS
// 203 §7.2 encapsulation-key modulus check, ECDH point validity: illegal_parameter otherwise)
// and returns the server's key_exchange and the shared secret. deterministic draws the ML-KEM
// message and the ECDH private keys from rand too (Config.Deterministic).
func encapsulate(g Group, client []byte, rand io.Reader, deterministic bool) (share, secret []byte, err error) {
	var coins io.Reader // nil: ML-KEM draws its own message
	if deterministic {
		coins = rand
	}
	if n := clientShareSize(g); len(client) != n {
		return nil, nil, illegal("%s client key share is %d bytes, want %d", g, len(client), n)
	}
	switch g {
	case MLKEM512, MLKEM768, MLKEM1024:
		return mlkemEncap(g, client, coins)
	case X25519:
		return ecdhEncap(ecdh.X25519(), client, rand, deterministic)
	case P256:
		return ecdhEncap(ecdh.P256(), client, rand, deterministic)
	case X25519MLKEM768:
		n := mlkem.EncapsulationKeySize768
		ct, ss, err := mlkemEncap(MLKEM768, client[:n], coins)
		if err != nil {
			return nil, nil, err
		}
		pub, e, err := ecdhEncap(ecdh.X25519(), client[n:], rand, deterministic)
		if err != nil {
			return nil, nil, err
		}
		return append(ct, pub...), append(ss, e...), nil
	case SecP256r1MLKEM768, SecP384r1MLKEM1024:
		curve, n, kem := ecdh.P256(), p256PointSize, MLKEM768
		if g == SecP384r1MLKEM1024 {
			curve, n, kem = ecdh.P384(), p384PointSize, MLKEM1024
		}
		pub, e, err := ecdhEncap(curve, client[:n], rand, deterministic)
		if err != nil {
			return nil, nil, err
		}
		ct, ss, err := mlkemEncap(kem, client[n:], coins)
		if err != nil {
			return nil, nil, err
		}
		return append(pub, ct...), append(e, ss...), nil
	}
	return nil, nil, internal(fmt.Errorf("encapsulate: unsupported group %s", g))
}

// mlkemEncap encapsulates to ek (checked first). With coins it is FIPS 203's
// ML-KEM.Encaps_internal on a 32-byte message read from coins, through circl's
// EncapsulateDeterministically for all three sizes (the standard library keeps its
// derandomised encapsulation for known-answer tests); without, the usual randomised one.
func mlkemEncap(g Group, ek []byte, coins io.Reader) (ct, ss []byte, err error) {
	if coins != nil {
		return mlkemEncapFrom(g, ek, coins)
	}
	switch g {
	case MLKEM512:
		if err := checkModulus(ek, 2); err != nil {
			return nil, nil, illegal("ML-KEM-512 encapsulation key: %w", err)
		}
		pk, err := mlkem512.Scheme().UnmarshalBinaryPublicKey(ek)
		if err != nil {
			return nil, nil, illegal("ML-KEM-512 encapsulation key: %w", err)
		}
		ct, ss, err = mlkem512.Scheme().Encapsulate(pk)
		if err != nil {
			return nil, nil, internal(fmt.Errorf("ML-KEM-512 encapsulation: %w", err))
		}
		return ct, ss, nil
	case MLKEM768:
		k, err := mlkem.NewEncapsulationKey768(ek)
		if err != nil {
			return nil, nil, illegal("ML-KEM-768 encapsulation key: %w", err)
		}
		ss, ct = k.Encapsulate()
		return ct, ss, nil
	case MLKEM1024:
		k, err := mlkem.NewEncapsulationKey1024(ek)
		if err != nil {
			return nil, nil, illegal("ML-KEM-1024 encapsulation key: %w", err)
		}
		ss, ct = k.Encapsulate()
		return ct, ss, nil
	}
	return nil, nil, internal(fmt.Errorf("ML-KEM encapsulation: unsupported group %s", g))
}

func mlkemEncapFrom(g Group, ek []byte, coins io.Reader) (ct, ss []byte, err error) {
	var scheme kem.Scheme
	switch g {
	case MLKEM512:
		scheme = mlkem512.Scheme()
	case MLKEM768:
		scheme = mlkem768.Scheme()
	case MLKEM1024:
		scheme = mlkem1024.Scheme()
	default:
		return nil, nil, internal(fmt.Errorf("ML-KEM encapsulation: unsupported group %s", g))
	}
	if err := checkModulus(ek, scheme.PublicKeySize()/384); err != nil {
		return nil, nil, illegal("%s encapsulation key: %w", g, err)
	}
	pk, err := scheme.UnmarshalBinaryPublicKey(ek)
	if err != nil {
		return nil, nil, illegal("%s encapsulation key: %w", g, err)
	}
	m := make([]byte, scheme.EncapsulationSeedSize())
	if _, err := io.ReadFull(coins, m); err != nil {
		return nil, nil, internal(fmt.Errorf("read the encapsulation message: %w", err))
	}
	ct, ss, err = scheme.EncapsulateDeterministically(pk, m)
	if err != nil {
		return nil, nil, internal(fmt.Errorf("%s encapsulation: %w", g, err))
	}
	return ct, ss, nil
}

// checkModulus is the FIPS 203 §7.2 encapsulation-key check: every 12-bit coefficient of the
// k·256 encoded in the first 384·k bytes of ek must be below q = 3329 (ByteEncode12 of
// ByteDecode12 must give back the input).
func checkModulus(ek []byte, k int) error {
	const q = 3329
	n := 384 * k
	if len(ek) != n+32 {
		return fmt.Errorf("length %d, want %d", len(ek), n+32)
	}
	for i := 0; i < n; i += 3 {
		a := uint16(ek[i]) | uint16(ek[i+1]&0x0f)<<8
		b := uint16(ek[i+1]>>4) | uint16(ek[i+2])<<4
		if a >= q || b >= q {
			return fmt.Errorf("coefficient at byte %d is not reduced modulo %d", i, q)
		}
	}
	return nil
}

func ecdhEncap(c ecdh.Curve, peer []byte, rand io.Reader, deterministic bool) (pub, secret []byte, err error) {
	p, err := c.NewPublicKey(peer)
	if err != nil {
		return nil, nil, illegal("client ECDH share: %w", err)
	}
	k, err := ecdhKey(c, rand, deterministic)
	if err != nil {
		return nil, nil, internal(fmt.Errorf("generate ECDH key: %w", err))
	}
	s, err := k.ECDH(p)
	if err != nil {
		return nil, nil, illegal("ECDH with client share: %w", err)
	}
	return k.PublicKey().Bytes(), s, nil
}

// maxScalarDraws bounds ecdhKey's redraws: a NIST scalar out of range happens about once in
// 2^32 draws, so reaching it means rand is broken (say, all 0xff).
const maxScalarDraws = 64

// ecdhKey makes a private key on c. Without deterministic it is c.GenerateKey, which since Go
// 1.26 ignores rand and draws from the system's generator. With deterministic the private key
// is bytes read from rand: 32 for X25519 (clamped by the curve), the scalar's length for P-256
// and P-384, drawn again while it is zero or not below the group order, so the key is a
// function of rand alone.
func ecdhKey(c ecdh.Curve, rand io.Reader, deterministic bool) (*ecdh.PrivateKey, error) {
	if !deterministic {
		return c.GenerateKey(rand)
	}
	var size int
	switch c {
	case ecdh.X25519(), ecdh.P256():
		size = 32
	case ecdh.P384():
		size = 48
	default:
		return nil, fmt.Errorf("no deterministic ECDH keys on %v", c)
	}
	b := make([]byte, size)
	for range maxScalarDraws {
		if _, err := io.ReadFull(rand, b); err != nil {
			return nil, fmt.Errorf("read an ECDH private key: %w", err)
		}
		if k, err := c.NewPrivateKey(b); err == nil {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no %v scalar in range after %d draws", c, maxScalarDraws)
}
