package bench

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/cloudflare/circl/kem"
	"github.com/cloudflare/circl/kem/mlkem/mlkem1024"
	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/kem/mlkem/mlkem768"
	"github.com/cloudflare/circl/sign"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
	"github.com/cloudflare/circl/sign/slhdsa"

	"pqrepro/artifacts"
)

// KeyPair is a generated key in both forms: the library's object (used by timed calls) and
// its encoding (used for sizes and to hand keys to another process).
type KeyPair struct {
	Pub, Priv         any
	PubBytes, PrivKey []byte
}

// KEM is one key-establishment algorithm on the host. DH algorithms (X25519, ECDH) have
// derive instead of encaps/decaps.
type KEM struct {
	// Keygen draws all of its randomness from r (except where the library ignores r; see RNGNote).
	Keygen func(r io.Reader) (KeyPair, error)
	Encaps func(pub any, r io.Reader) (ct, ss []byte, err error)
	Decaps func(priv any, ct []byte) ([]byte, error)
	Derive func(priv, peerPub any) ([]byte, error)
	// ParsePub and ParsePriv decode KeyPair encodings.
	ParsePub, ParsePriv func([]byte) (any, error)
	// RNGNote says where randomness comes from when it is not the seeded stream.
	RNGNote string
}

// Sig is one signature algorithm on the host.
type Sig struct {
	Keygen              func(r io.Reader) (KeyPair, error)
	Sign                func(priv any, msg []byte, r io.Reader) ([]byte, error)
	Verify              func(pub any, msg, sig []byte) bool
	ParsePub, ParsePriv func([]byte) (any, error)
	// Pairs reports whether priv belongs to pub, the check on a timed keygen.
	Pairs   func(pub, priv any) bool
	RNGNote string
}

// Algorithms wires every catalogue name to its implementation: circl for the
// post-quantum sets, the standard library for the classical baselines.
func Algorithms() (map[string]*KEM, map[string]*Sig) {
	kems := map[string]*KEM{
		"ML-KEM-512":  circlKEM(mlkem512.Scheme()),
		"ML-KEM-768":  circlKEM(mlkem768.Scheme()),
		"ML-KEM-1024": circlKEM(mlkem1024.Scheme()),
		"X25519":      ecdhKEM(ecdh.X25519()),
		"ECDH-P256":   ecdhKEM(ecdh.P256()),
	}
	sigs := map[string]*Sig{
		"ML-DSA-44": mldsa(mldsa44.SeedSize, func(s []byte) (any, any, []byte, []byte) {
			pk, sk := mldsa44.NewKeyFromSeed((*[mldsa44.SeedSize]byte)(s))
			return pk, sk, pk.Bytes(), sk.Bytes()
		}, func(sk any, m []byte) ([]byte, error) {
			sig := make([]byte, mldsa44.SignatureSize)
			return sig, mldsa44.SignTo(sk.(*mldsa44.PrivateKey), m, nil, true, sig)
		}, func(pk any, m, s []byte) bool { return mldsa44.Verify(pk.(*mldsa44.PublicKey), m, nil, s) },
			mldsa44.Scheme()),
		"ML-DSA-65": mldsa(mldsa65.SeedSize, func(s []byte) (any, any, []byte, []byte) {
			pk, sk := mldsa65.NewKeyFromSeed((*[mldsa65.SeedSize]byte)(s))
			return pk, sk, pk.Bytes(), sk.Bytes()
		}, func(sk any, m []byte) ([]byte, error) {
			sig := make([]byte, mldsa65.SignatureSize)
			return sig, mldsa65.SignTo(sk.(*mldsa65.PrivateKey), m, nil, true, sig)
		}, func(pk any, m, s []byte) bool { return mldsa65.Verify(pk.(*mldsa65.PublicKey), m, nil, s) },
			mldsa65.Scheme()),
		"ML-DSA-87": mldsa(mldsa87.SeedSize, func(s []byte) (any, any, []byte, []byte) {
			pk, sk := mldsa87.NewKeyFromSeed((*[mldsa87.SeedSize]byte)(s))
			return pk, sk, pk.Bytes(), sk.Bytes()
		}, func(sk any, m []byte) ([]byte, error) {
			sig := make([]byte, mldsa87.SignatureSize)
			return sig, mldsa87.SignTo(sk.(*mldsa87.PrivateKey), m, nil, true, sig)
		}, func(pk any, m, s []byte) bool { return mldsa87.Verify(pk.(*mldsa87.PublicKey), m, nil, s) },
			mldsa87.Scheme()),
		"Ed25519":    ed25519Sig(),
		"ECDSA-P256": ecdsaSig(),
		"RSA-2048":   rsaSig(),
	}
	for _, id := range []slhdsa.ID{
		slhdsa.SHA2_128s, slhdsa.SHA2_128f, slhdsa.SHA2_192s, slhdsa.SHA2_192f, slhdsa.SHA2_256s, slhdsa.SHA2_256f,
		slhdsa.SHAKE_128s, slhdsa.SHAKE_128f, slhdsa.SHAKE_192s, slhdsa.SHAKE_192f, slhdsa.SHAKE_256s, slhdsa.SHAKE_256f,
	} {
		sigs[slhName(id)] = slhSig(id)
	}
	return kems, sigs
}

// slhName maps circl's "SLH-DSA-SHA2-128s" style names; checked against the catalogue in tests.
func slhName(id slhdsa.ID) string { return id.String() }

func circlKEM(s kem.Scheme) *KEM {
	return &KEM{
		Keygen: func(r io.Reader) (KeyPair, error) {
			seed := make([]byte, s.SeedSize()) // d || z for ML-KEM (FIPS 203 KeyGen_internal)
			if _, err := io.ReadFull(r, seed); err != nil {
				return KeyPair{}, err
			}
			pk, sk := s.DeriveKeyPair(seed)
			pb, _ := pk.MarshalBinary()
			sb, _ := sk.MarshalBinary()
			return KeyPair{pk, sk, pb, sb}, nil
		},
		Encaps: func(pub any, r io.Reader) ([]byte, []byte, error) {
			m := make([]byte, s.EncapsulationSeedSize()) // the message m of FIPS 203 Encaps_internal
			if _, err := io.ReadFull(r, m); err != nil {
				return nil, nil, err
			}
			return s.EncapsulateDeterministically(pub.(kem.PublicKey), m)
		},
		Decaps: func(priv any, ct []byte) ([]byte, error) { return s.Decapsulate(priv.(kem.PrivateKey), ct) },
		ParsePub: func(b []byte) (any, error) {
			return s.UnmarshalBinaryPublicKey(b)
		},
		ParsePriv: func(b []byte) (any, error) { return s.UnmarshalBinaryPrivateKey(b) },
	}
}

func ecdhKEM(c ecdh.Curve) *KEM {
	return &KEM{
		Keygen: func(r io.Reader) (KeyPair, error) {
			k, err := c.GenerateKey(r)
			if err != nil {
				return KeyPair{}, err
			}
			return KeyPair{k.PublicKey(), k, k.PublicKey().Bytes(), k.Bytes()}, nil
		},
		Derive: func(priv, peer any) ([]byte, error) {
			return priv.(*ecdh.PrivateKey).ECDH(peer.(*ecdh.PublicKey))
		},
		ParsePub:  func(b []byte) (any, error) { return c.NewPublicKey(b) },
		ParsePriv: func(b []byte) (any, error) { return c.NewPrivateKey(b) },
		RNGNote:   "the standard library draws key randomness from the OS RNG (it ignores a caller's reader)",
	}
}

func mldsa(seedSize int, fromSeed func([]byte) (any, any, []byte, []byte), sign func(any, []byte) ([]byte, error),
	verify func(any, []byte, []byte) bool, sch sign.Scheme) *Sig {
	return &Sig{
		Keygen: func(r io.Reader) (KeyPair, error) {
			seed := make([]byte, seedSize) // xi of FIPS 204 ML-DSA.KeyGen_internal
			if _, err := io.ReadFull(r, seed); err != nil {
				return KeyPair{}, err
			}
			pk, sk, pb, sb := fromSeed(seed)
			return KeyPair{pk, sk, pb, sb}, nil
		},
		Sign:      func(priv any, msg []byte, _ io.Reader) ([]byte, error) { return sign(priv, msg) },
		Verify:    verify,
		ParsePub:  func(b []byte) (any, error) { return sch.UnmarshalBinaryPublicKey(b) },
		ParsePriv: func(b []byte) (any, error) { return sch.UnmarshalBinaryPrivateKey(b) },
		Pairs: func(pub, priv any) bool {
			return priv.(crypto.Signer).Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(pub.(crypto.PublicKey))
		},
		RNGNote: "hedged signing randomness comes from the OS RNG (circl's ML-DSA API takes no reader); keys and messages come from the seed",
	}
}

func slhSig(id slhdsa.ID) *Sig {
	s := id.Scheme()
	return &Sig{
		Keygen: func(r io.Reader) (KeyPair, error) {
			pk, sk, err := slhdsa.GenerateKey(r, id) // reads SK.seed, SK.prf, PK.seed (FIPS 205 Alg. 21)
			if err != nil {
				return KeyPair{}, err
			}
			pb, _ := pk.MarshalBinary()
			sb, _ := sk.MarshalBinary()
			return KeyPair{&pk, &sk, pb, sb}, nil
		},
		Sign: func(priv any, msg []byte, r io.Reader) ([]byte, error) {
			return slhdsa.SignRandomized(priv.(*slhdsa.PrivateKey), r, slhdsa.NewMessage(msg), nil)
		},
		Verify: func(pub any, msg, sig []byte) bool {
			return slhdsa.Verify(pub.(*slhdsa.PublicKey), slhdsa.NewMessage(msg), sig, nil)
		},
		ParsePub: func(b []byte) (any, error) {
			k, err := s.UnmarshalBinaryPublicKey(b)
			if err != nil {
				return nil, err
			}
			pk := k.(slhdsa.PublicKey)
			return &pk, nil
		},
		ParsePriv: func(b []byte) (any, error) {
			k, err := s.UnmarshalBinaryPrivateKey(b)
			if err != nil {
				return nil, err
			}
			sk := k.(slhdsa.PrivateKey)
			return &sk, nil
		},
		Pairs: func(pub, priv any) bool {
			p := priv.(*slhdsa.PrivateKey).PublicKey()
			return p.Equal(*pub.(*slhdsa.PublicKey))
		},
	}
}

func ed25519Sig() *Sig {
	return &Sig{
		Keygen: func(r io.Reader) (KeyPair, error) {
			pub, priv, err := ed25519.GenerateKey(r)
			return KeyPair{pub, priv, []byte(pub), []byte(priv)}, err
		},
		Sign: func(priv any, msg []byte, _ io.Reader) ([]byte, error) {
			return ed25519.Sign(priv.(ed25519.PrivateKey), msg), nil
		},
		Verify: func(pub any, msg, sig []byte) bool { return ed25519.Verify(pub.(ed25519.PublicKey), msg, sig) },
		ParsePub: func(b []byte) (any, error) {
			if len(b) != ed25519.PublicKeySize {
				return nil, errors.New("ed25519: bad public key length")
			}
			return ed25519.PublicKey(b), nil
		},
		ParsePriv: func(b []byte) (any, error) {
			if len(b) != ed25519.PrivateKeySize {
				return nil, errors.New("ed25519: bad private key length")
			}
			return ed25519.PrivateKey(b), nil
		},
		Pairs: func(pub, priv any) bool {
			return bytes.Equal(priv.(ed25519.PrivateKey).Public().(ed25519.PublicKey), pub.(ed25519.PublicKey))
		},
	}
}

func ecdsaSig() *Sig {
	return &Sig{
		Keygen: func(r io.Reader) (KeyPair, error) {
			k, err := ecdsa.GenerateKey(elliptic.P256(), r)
			if err != nil {
				return KeyPair{}, err
			}
			pb, err := k.PublicKey.Bytes()
			if err != nil {
				return KeyPair{}, err
			}
			sb, err := k.Bytes()
			return KeyPair{&k.PublicKey, k, pb, sb}, err
		},
		Sign: func(priv any, msg []byte, _ io.Reader) ([]byte, error) {
			h := sha256.Sum256(msg)
			return ecdsa.SignASN1(rand.Reader, priv.(*ecdsa.PrivateKey), h[:])
		},
		Verify: func(pub any, msg, sig []byte) bool {
			h := sha256.Sum256(msg)
			return ecdsa.VerifyASN1(pub.(*ecdsa.PublicKey), h[:], sig)
		},
		ParsePub:  func(b []byte) (any, error) { return ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b) },
		ParsePriv: func(b []byte) (any, error) { return ecdsa.ParseRawPrivateKey(elliptic.P256(), b) },
		Pairs: func(pub, priv any) bool {
			return priv.(*ecdsa.PrivateKey).PublicKey.Equal(pub.(*ecdsa.PublicKey))
		},
		RNGNote: "ECDSA key and nonce randomness come from the OS RNG (the standard library ignores a caller's reader); messages come from the seed",
	}
}

func rsaSig() *Sig {
	pss := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}
	return &Sig{
		Keygen: func(r io.Reader) (KeyPair, error) {
			k, err := rsa.GenerateKey(r, 2048)
			if err != nil {
				return KeyPair{}, err
			}
			return KeyPair{&k.PublicKey, k, k.PublicKey.N.Bytes(), x509.MarshalPKCS1PrivateKey(k)}, nil
		},
		Sign: func(priv any, msg []byte, _ io.Reader) ([]byte, error) {
			h := sha256.Sum256(msg)
			return rsa.SignPSS(rand.Reader, priv.(*rsa.PrivateKey), crypto.SHA256, h[:], pss)
		},
		Verify: func(pub any, msg, sig []byte) bool {
			h := sha256.Sum256(msg)
			return rsa.VerifyPSS(pub.(*rsa.PublicKey), crypto.SHA256, h[:], sig, pss) == nil
		},
		// The public key's encoding is the 256-byte modulus (the exponent is always 65537 here).
		ParsePub: func(b []byte) (any, error) {
			if len(b) != 256 {
				return nil, fmt.Errorf("rsa: public modulus is %d bytes, want 256", len(b))
			}
			return &rsa.PublicKey{N: new(big.Int).SetBytes(b), E: 65537}, nil
		},
		ParsePriv: func(b []byte) (any, error) { return x509.ParsePKCS1PrivateKey(b) },
		Pairs: func(pub, priv any) bool {
			return priv.(*rsa.PrivateKey).PublicKey.Equal(pub.(*rsa.PublicKey))
		},
		RNGNote: "RSA key and PSS salt randomness come from the OS RNG (the standard library ignores a caller's reader); messages come from the seed",
	}
}

// checkCatalogue reports any catalogue name without an implementation, or the reverse.
func checkCatalogue(kems map[string]*KEM, sigs map[string]*Sig) error {
	var errs []error
	for _, a := range artifacts.Algorithms() {
		_, k := kems[a.Name]
		_, s := sigs[a.Name]
		if (a.KEM && !k) || (!a.KEM && !s) {
			errs = append(errs, fmt.Errorf("%s has no host implementation", a.Name))
		}
	}
	for n := range kems {
		if _, ok := artifacts.LookupAlgorithm(n); !ok {
			errs = append(errs, fmt.Errorf("host KEM %s is not in the catalogue", n))
		}
	}
	for n := range sigs {
		if _, ok := artifacts.LookupAlgorithm(n); !ok {
			errs = append(errs, fmt.Errorf("host signature %s is not in the catalogue", n))
		}
	}
	return errors.Join(errs...)
}
