package tls13

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"testing"
)

// deterministicServerBytes runs one handshake and echo with both sides' randomness drawn from
// seeded ChaCha8 streams (the server Deterministic) and returns every byte the client read from the server.
func deterministicServerBytes(t *testing.T, g Group, s SignatureScheme, seed byte, deterministic bool) []byte {
	t.Helper()
	cc, sc := tcpPair(t)
	var fromServer bytes.Buffer
	scfg := serverConfig(t, s, g)
	scfg.Rand, scfg.Deterministic = mrand.NewChaCha8([32]byte{seed}), deterministic
	ccfg := clientConfig(t, s, g)
	// The client deterministic too: its X25519 and P-256 shares (which the server's keys and
	// so its encrypted records depend on) come from its own seeded stream, as a seeded board's do.
	ccfg.Rand, ccfg.Deterministic = mrand.NewChaCha8([32]byte{seed, 1}), true
	client, server := Client(&recordingConn{cc, &fromServer}, ccfg), Server(sc, scfg)
	errc := make(chan error, 1)
	go func() {
		if err := server.Handshake(); err != nil {
			errc <- err
			return
		}
		buf := make([]byte, 5)
		if _, err := server.Read(buf); err != nil {
			errc <- err
			return
		}
		_, err := server.Write(buf)
		errc <- err
	}()
	if err := client.Handshake(); err != nil {
		t.Fatalf("%s + %s: client: %v (server: %v)", g, s, err, <-errc)
	}
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := client.Read(got); err != nil || string(got) != "hello" {
		t.Fatalf("%s + %s: echo %q, %v", g, s, got, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("%s + %s: server: %v", g, s, err)
	}
	if st := server.State(); st.Group != g || st.Scheme != s {
		t.Fatalf("negotiated %s + %s, want %s + %s", st.Group, st.Scheme, g, s)
	}
	return fromServer.Bytes()
}

// TestDeterministicServer: with Config.Deterministic and a seeded Rand the server's bytes
// (ServerHello random, ML-KEM ciphertext and ECDH share, the CertificateVerify of every scheme,
// every encrypted record) are identical from one handshake to the next in all eight groups and
// six schemes (a superset of the matrix's 36 cells), the client still agrees on the keys and
// accepts the signature with Go's verifiers (the handshake and the echo complete), and another
// seed or the default randomised server gives other bytes.
func TestDeterministicServer(t *testing.T) {
	for _, g := range Groups() {
		for _, s := range SignatureSchemes() {
			t.Run(g.String()+"+"+s.String(), func(t *testing.T) {
				a := deterministicServerBytes(t, g, s, 7, true)
				if len(a) < 500 {
					t.Fatalf("the server wrote %d bytes", len(a))
				}
				b := deterministicServerBytes(t, g, s, 7, true)
				if !bytes.Equal(a, b) {
					t.Errorf("two seeded deterministic servers wrote different bytes (%d and %d; first difference at %d)", len(a), len(b), firstDifference(a, b))
				}
				if c := deterministicServerBytes(t, g, s, 8, true); bytes.Equal(a, c) {
					t.Errorf("another seed wrote the same bytes")
				}
				if d := deterministicServerBytes(t, g, s, 7, false); bytes.Equal(a, d) {
					t.Errorf("the randomised server wrote the deterministic one's bytes")
				}
			})
		}
	}
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDeterministicECDSA: a deterministic ECDSA CertificateVerify is RFC 6979's signature —
// RFC 6979 §A.2.5's P-256/SHA-256 vectors for "sample" and "test" — whatever reader sign is
// given, and crypto/ecdsa verifies it.
func TestDeterministicECDSA(t *testing.T) {
	x, _ := hex.DecodeString("C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721")
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), x)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ msg, r, s string }{
		{"sample", "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716", "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"},
		{"test", "F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367", "019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083"},
	} {
		for _, seed := range []byte{1, 2} {
			sig, err := sign(ECDSAP256SHA256, key, mrand.NewChaCha8([32]byte{seed}), []byte(v.msg), true)
			if err != nil {
				t.Fatal(err)
			}
			var rs struct{ R, S *big.Int }
			if _, err := asn1.Unmarshal(sig, &rs); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%064X %064X", rs.R, rs.S); got != v.r+" "+v.s {
				t.Errorf("%q: r s = %s, want RFC 6979's %s %s", v.msg, got, v.r, v.s)
			}
			if err := verify(ECDSAP256SHA256, key.Public(), []byte(v.msg), sig); err != nil {
				t.Errorf("%q: %v", v.msg, err)
			}
		}
	}
	if a, _ := sign(ECDSAP256SHA256, key, rand.Reader, []byte("sample"), false); a != nil {
		if b, _ := sign(ECDSAP256SHA256, key, rand.Reader, []byte("sample"), false); bytes.Equal(a, b) {
			t.Errorf("two randomised ECDSA signatures are equal")
		}
	}
	if _, err := sign(ECDSAP256SHA256, opaqueSigner{key}, rand.Reader, []byte("sample"), true); err == nil {
		t.Errorf("a deterministic ECDSA signature from a signer whose nonces cannot be steered")
	}
}

// opaqueSigner hides its key's type.
type opaqueSigner struct{ crypto.Signer }

// TestDeterministicPSS: a deterministic RSA-PSS CertificateVerify is a function of the key,
// the content and the first 32 bytes read from the reader, which are its salt (recovered here
// by the public operation and unmasking, RFC 8017 §9.1.2); crypto/rsa verifies it. This holds
// the standard library to reading the salt from the reader it is given, which Go 1.27 does
// without promising it.
func TestDeterministicPSS(t *testing.T) {
	key := chainFor(t, RSAPSSRSAESHA256).key.(*rsa.PrivateKey)
	content := signedContent(serverSignatureContext, bytes.Repeat([]byte{0x5a}, 32))
	signWith := func(seed byte) []byte {
		t.Helper()
		sig, err := sign(RSAPSSRSAESHA256, key, mrand.NewChaCha8([32]byte{seed}), content, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := verify(RSAPSSRSAESHA256, key.Public(), content, sig); err != nil {
			t.Fatal(err)
		}
		return sig
	}
	a, b, c := signWith(1), signWith(1), signWith(2)
	if !bytes.Equal(a, b) || bytes.Equal(a, c) {
		t.Fatalf("PSS signatures not a function of the seed: same seed equal %v, another seed equal %v", bytes.Equal(a, b), bytes.Equal(a, c))
	}
	em := new(big.Int).Exp(new(big.Int).SetBytes(a), big.NewInt(int64(key.E)), key.N).FillBytes(make([]byte, key.Size()))
	h := em[len(em)-1-sha256.Size : len(em)-1]
	db := bytes.Clone(em[:len(em)-1-sha256.Size])
	mgf1XOR(db, h)
	want := make([]byte, 32)
	mrand.NewChaCha8([32]byte{1}).Read(want)
	if salt := db[len(db)-32:]; !bytes.Equal(salt, want) {
		t.Errorf("salt %x, want the reader's first 32 bytes %x", salt, want)
	}
	if _, err := sign(RSAPSSRSAESHA256, opaqueSigner{key}, rand.Reader, content, true); err == nil {
		t.Errorf("a deterministic PSS signature from a signer whose salt cannot be steered")
	}
}

// onesThen reads 0xff bytes n times, then from r.
type onesThen struct {
	n int
	r io.Reader
}

func (o *onesThen) Read(p []byte) (int, error) {
	if o.n == 0 {
		return o.r.Read(p)
	}
	o.n--
	for i := range p {
		p[i] = 0xff
	}
	return len(p), nil
}

// TestDeterministicECDHKey: a deterministic ECDH key is the bytes read, a NIST scalar out of
// range (all 0xff is above the group order) is drawn again, and a reader that never gives one
// in range is an error, not a loop.
func TestDeterministicECDHKey(t *testing.T) {
	for _, c := range []ecdh.Curve{ecdh.X25519(), ecdh.P256(), ecdh.P384()} {
		a, err := ecdhKey(c, mrand.NewChaCha8([32]byte{3}), true)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ecdhKey(c, mrand.NewChaCha8([32]byte{3}), true)
		if !a.Equal(b) {
			t.Errorf("%v: two keys from one seed differ", c)
		}
		if r, _ := ecdhKey(c, mrand.NewChaCha8([32]byte{3}), false); r.Equal(a) {
			t.Errorf("%v: the randomised key is the seeded one", c)
		}
		if c == ecdh.X25519() {
			continue
		}
		redrawn, err := ecdhKey(c, &onesThen{1, mrand.NewChaCha8([32]byte{3})}, true)
		if err != nil || !redrawn.Equal(a) {
			t.Errorf("%v: after an out-of-range scalar: %v, same key %v", c, err, err == nil && redrawn.Equal(a))
		}
		if _, err := ecdhKey(c, &onesThen{1 << 30, nil}, true); err == nil {
			t.Errorf("%v: a key from a reader of 0xff bytes", c)
		}
	}
}

// mgf1XOR XORs out with MGF1-SHA-256(seed) (RFC 8017 §B.2.1) of len(out) bytes.
func mgf1XOR(out, seed []byte) {
	for i, done := uint32(0), 0; done < len(out); i++ {
		h := sha256.New()
		h.Write(seed)
		h.Write(binary.BigEndian.AppendUint32(nil, i))
		for _, b := range h.Sum(nil) {
			if done < len(out) {
				out[done] ^= b
				done++
			}
		}
	}
}
