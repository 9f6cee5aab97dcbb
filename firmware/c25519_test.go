package firmware

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The Curve25519 tests drive the host build of crypto/c25519 through test/c25519cli.c.
func startC25519(t testing.TB) *katcli { return startKatcliBuild(t, "build/host/c25519cli") }

// x25519Shared runs the C X25519 and returns its output and whether it refused it (all zero).
func x25519Shared(t testing.TB, k *katcli, scalar, point string) (out string, zero bool) {
	t.Helper()
	got := k.do(t, "x25519", scalar, point)
	st, out, ok := strings.Cut(got, " ")
	if !ok || (st != "ok" && st != "zero") || len(out) != 64 {
		t.Fatalf("x25519: malformed answer %q", got)
	}
	return out, st == "zero"
}

// TestX25519Wycheproof runs every case of Wycheproof's x25519_test.json through the C X25519.
// A valid case's output is the file's shared secret. Every acceptable case is decided by the
// rules of TLS 1.3, which validates an X25519 share only by refusing the all-zero shared secret
// (RFC 8446 section 7.4.2, RFC 7748 section 6.1):
//
//   - ZeroSharedSecret (a low-order public key; 31 in the file this was written against): the
//     shared secret is all zero, x25519 must report it (returns -1) and the client refuses it;
//   - Twist, NonCanonicalPublic, SmallPublicKey, LowOrderPublic with a non-zero result,
//     EdgeCaseShared, EdgeCaseMultiplication, SpecialPublicKey, Ktv: accepted, the output must
//     be the file's shared secret (X25519 is defined on the twist, a u-coordinate from p to
//     2^255 - 1 is taken mod p as RFC 7748 section 5 says, the top bit is masked).
//
// So: an acceptable case is refused exactly when its shared secret is all zero. The test also
// requires the file's flag to agree (a zero secret carries ZeroSharedSecret and a non-zero one
// does not), so a changed file is noticed rather than silently re-decided.
func TestX25519Wycheproof(t *testing.T) {
	k := startC25519(t)
	f := loadWycheproof(t, "x25519_test.json")
	zeroHex := strings.Repeat("00", 32)
	counts := map[string]int{}
	for _, g := range f.TestGroups {
		for _, tc := range g.Tests {
			id, res := string(tc["tcId"]), str(t, tc, "result")
			want := up(str(t, tc, "shared"))
			hasZeroFlag := strings.Contains(string(tc["flags"]), `"ZeroSharedSecret"`)
			out, zero := x25519Shared(t, k, str(t, tc, "private"), str(t, tc, "public"))
			if out != want {
				t.Errorf("tcId %s (%s, %s): C output %s, want %s", id, res, str(t, tc, "comment"), out, want)
				continue
			}
			if zero != (want == zeroHex) {
				t.Errorf("tcId %s: output %s, reported zero %v", id, out, zero)
				continue
			}
			switch res {
			case "valid":
				if zero {
					t.Errorf("tcId %s: valid case with an all-zero secret; TLS would refuse it", id)
					continue
				}
				counts["valid"]++
			case "acceptable":
				if zero != hasZeroFlag {
					t.Fatalf("tcId %s: all-zero %v but ZeroSharedSecret flag %v: decide this case anew", id, zero, hasZeroFlag)
				}
				if zero {
					counts["acceptable refused (all-zero secret)"]++
				} else {
					counts["acceptable accepted"]++
				}
			default:
				t.Fatalf("tcId %s: result %q has no decision here", id, res)
			}
		}
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	if n != f.NumberOfTests {
		t.Fatalf("%v: %d of %d cases passed", counts, n, f.NumberOfTests)
	}
	t.Logf("C X25519: %d/%d Wycheproof cases passed: %v", n, f.NumberOfTests, counts)
}

// TestEd25519Wycheproof runs every case of Wycheproof's ed25519_test.json through the C
// verifier: valid cases verify, invalid ones (truncated or padded signatures, S >= L, a
// modified or non-canonical R, special values) are refused. The file has no acceptable case;
// one appearing fails the test until it is decided here.
func TestEd25519Wycheproof(t *testing.T) {
	k := startC25519(t)
	f := loadWycheproof(t, "ed25519_test.json")
	keys := edGroupKeys(t)
	if len(keys) != len(f.TestGroups) {
		t.Fatalf("ed25519_test.json: %d public keys for %d groups", len(keys), len(f.TestGroups))
	}
	counts := map[string]int{}
	for gi, g := range f.TestGroups {
		pk := keys[gi]
		for _, tc := range g.Tests {
			id, res := string(tc["tcId"]), str(t, tc, "result")
			got := k.do(t, "ed25519-verify", pk, str(t, tc, "msg"), str(t, tc, "sig"))
			switch {
			case res == "valid" && got != "ok":
				t.Errorf("tcId %s (valid, %s): C says %s", id, str(t, tc, "comment"), got)
				continue
			case res == "invalid" && got != "fail":
				t.Errorf("tcId %s (invalid, %s): C says %s", id, str(t, tc, "comment"), got)
				continue
			case res != "valid" && res != "invalid":
				t.Fatalf("tcId %s: result %q has no decision here", id, res)
			}
			counts[res]++
		}
	}
	if counts["valid"]+counts["invalid"] != f.NumberOfTests {
		t.Fatalf("%v of %d cases passed", counts, f.NumberOfTests)
	}
	t.Logf("C Ed25519 verify: %d/%d Wycheproof cases passed (%d valid accepted, %d invalid refused)",
		f.NumberOfTests, f.NumberOfTests, counts["valid"], counts["invalid"])
}

// edGroupKeys reads each group's public key (publicKey.pk) from ed25519_test.json, which the
// generic wycheproofFile does not keep.
func edGroupKeys(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(wycheproofDir, "ed25519_test.json"))
	if err != nil {
		t.Skipf("Wycheproof vectors not available: %v", err)
	}
	var f struct {
		TestGroups []struct {
			PublicKey struct {
				PK string `json:"pk"`
			} `json:"publicKey"`
		} `json:"testGroups"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("ed25519_test.json: %v", err)
	}
	var keys []string
	for i, g := range f.TestGroups {
		if len(g.PublicKey.PK) != 64 {
			t.Fatalf("ed25519_test.json: group %d: public key %q is not 32 bytes", i, g.PublicKey.PK)
		}
		keys = append(keys, g.PublicKey.PK)
	}
	return keys
}

// TestX25519RFC7748 checks the examples of RFC 7748: the two single-step vectors of section
// 5.2 (the second with bit 255 of u set, which must be masked), the iterated test of section
// 5.2 after 1 and 1,000 iterations (k = u = 9; k, u = X25519(k, u), k), and the Diffie-Hellman
// example of section 6.1 (both public keys and the shared secret).
func TestX25519RFC7748(t *testing.T) {
	k := startC25519(t)
	for _, v := range []struct{ scalar, u, out string }{
		{"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
			"e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
			"c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
		{"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
			"e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
			"95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
	} {
		if out, zero := x25519Shared(t, k, v.scalar, v.u); out != up(v.out) || zero {
			t.Errorf("RFC 7748 5.2: X25519(%s, %s) = %s (zero %v), want %s", v.scalar[:8], v.u[:8], out, zero, v.out)
		}
	}

	kk := up("09" + strings.Repeat("00", 31))
	u := kk
	for i := 1; i <= 1000; i++ {
		out, _ := x25519Shared(t, k, kk, u)
		kk, u = out, kk
		switch i {
		case 1:
			if want := up("422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079"); kk != want {
				t.Fatalf("RFC 7748 5.2, after 1 iteration: %s, want %s", kk, want)
			}
		case 1000:
			if want := up("684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51"); kk != want {
				t.Fatalf("RFC 7748 5.2, after 1,000 iterations: %s, want %s", kk, want)
			}
		}
	}

	alice, bob := "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
		"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
	alicePub, bobPub := up("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"),
		up("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
	shared := up("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
	if got := k.do(t, "x25519-base", alice); got != alicePub {
		t.Errorf("RFC 7748 6.1: Alice's public key %s, want %s", got, alicePub)
	}
	if got := k.do(t, "x25519-base", bob); got != bobPub {
		t.Errorf("RFC 7748 6.1: Bob's public key %s, want %s", got, bobPub)
	}
	if got, _ := x25519Shared(t, k, alice, bobPub); got != shared {
		t.Errorf("RFC 7748 6.1: Alice's shared secret %s, want %s", got, shared)
	}
	if got, _ := x25519Shared(t, k, bob, alicePub); got != shared {
		t.Errorf("RFC 7748 6.1: Bob's shared secret %s, want %s", got, shared)
	}
}

// TestEd25519RFC8032 checks RFC 8032 section 7.1, TEST 1 to TEST 3 (public key, message,
// signature): each verifies, and each with one bit of the signature's R, of S or of the message
// changed does not. Go's crypto/ed25519 signs the RFC's secret keys to the same signatures, a
// check on the vectors as written here.
func TestEd25519RFC8032(t *testing.T) {
	k := startC25519(t)
	for _, v := range []struct{ name, sk, pk, msg, sig string }{
		{"TEST 1", "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"TEST 2", "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
			"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{"TEST 3", "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
			"fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
	} {
		seed, msg, sig := c25519Hex(t, v.sk), c25519Hex(t, v.msg), c25519Hex(t, v.sig)
		priv := ed25519.NewKeyFromSeed(seed)
		if hex.EncodeToString(priv.Public().(ed25519.PublicKey)) != v.pk || !bytes.Equal(ed25519.Sign(priv, msg), sig) {
			t.Fatalf("%s: Go's crypto/ed25519 disagrees with the vector as written", v.name)
		}
		if got := k.do(t, "ed25519-verify", v.pk, v.msg, v.sig); got != "ok" {
			t.Errorf("RFC 8032 7.1 %s: C says %s", v.name, got)
		}
		for _, bit := range []int{0, 255, 256, 300} {
			bad := bytes.Clone(sig)
			bad[bit/8] ^= 1 << (bit % 8)
			if got := k.do(t, "ed25519-verify", v.pk, v.msg, hex.EncodeToString(bad)); got != "fail" {
				t.Errorf("RFC 8032 7.1 %s with signature bit %d flipped: C says %s", v.name, bit, got)
			}
		}
		badMsg := hex.EncodeToString(append(bytes.Clone(msg), 0))
		if got := k.do(t, "ed25519-verify", v.pk, badMsg, v.sig); got != "fail" {
			t.Errorf("RFC 8032 7.1 %s with a byte appended to the message: C says %s", v.name, got)
		}
	}
}

// TestC25519AgainstGo compares the C code with Go's crypto/ecdh and crypto/ed25519 on random
// keys: public keys and shared secrets equal, Go's signatures verify in C, and a signature on
// another message does not.
func TestC25519AgainstGo(t *testing.T) {
	k := startC25519(t)
	for i := 0; i < 64; i++ {
		a, err := ecdh.X25519().GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ecdh.X25519().GenerateKey(rand.Reader)
		if got := k.do(t, "x25519-base", hex.EncodeToString(a.Bytes())); got != up(hex.EncodeToString(a.PublicKey().Bytes())) {
			t.Fatalf("public key of %x: C %s, Go %x", a.Bytes(), got, a.PublicKey().Bytes())
		}
		want, err := a.ECDH(b.PublicKey())
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := x25519Shared(t, k, hex.EncodeToString(a.Bytes()), hex.EncodeToString(b.PublicKey().Bytes())); got != up(hex.EncodeToString(want)) {
			t.Fatalf("shared secret: C %s, Go %x", got, want)
		}

		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		msg := make([]byte, i*7)
		rand.Read(msg)
		sig := ed25519.Sign(priv, msg)
		if got := k.do(t, "ed25519-verify", hex.EncodeToString(pub), hex.EncodeToString(msg), hex.EncodeToString(sig)); got != "ok" {
			t.Fatalf("Go's signature on %d bytes: C says %s", len(msg), got)
		}
		other := append(bytes.Clone(msg), 1)
		if got := k.do(t, "ed25519-verify", hex.EncodeToString(pub), hex.EncodeToString(other), hex.EncodeToString(sig)); got != "fail" {
			t.Fatalf("signature on another message: C says %s", got)
		}
	}
}

// edDecodeRef decodes a point as RFC 8032 section 5.1.3 says, in math/big: the reference the
// fuzz target compares the C decoder with. It returns the canonical encoding, or nil.
func edDecodeRef(s []byte) []byte {
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	le := func(b []byte) *big.Int {
		r := make([]byte, len(b))
		for i := range b {
			r[len(b)-1-i] = b[i]
		}
		return new(big.Int).SetBytes(r)
	}
	sign := uint(s[31] >> 7)
	yb := bytes.Clone(s)
	yb[31] &= 0x7f
	y := le(yb)
	if y.Cmp(p) >= 0 {
		return nil
	}
	// d = -121665/121666; x^2 = (y^2 - 1) / (d y^2 + 1).
	d := new(big.Int).Mul(big.NewInt(-121665), new(big.Int).ModInverse(big.NewInt(121666), p))
	y2 := new(big.Int).Mul(y, y)
	u := new(big.Int).Sub(y2, big.NewInt(1))
	v := new(big.Int).Add(new(big.Int).Mul(d, y2), big.NewInt(1))
	v.Mod(v, p)
	x2 := new(big.Int).Mul(u, new(big.Int).ModInverse(v, p)) // v != 0: d is not a square
	x2.Mod(x2, p)
	x := new(big.Int).ModSqrt(x2, p)
	if x == nil {
		return nil
	}
	if x.Sign() == 0 && sign == 1 {
		return nil
	}
	if x.Bit(0) != sign {
		x.Sub(p, x)
	}
	out := make([]byte, 32)
	yb = y.FillBytes(make([]byte, 32))
	for i := range out {
		out[i] = yb[31-i]
	}
	out[31] |= byte(x.Bit(0) << 7)
	return out
}

// FuzzC25519Decode drives the C Ed25519 point decoder (RFC 8032 section 5.1.3: y < p, a square
// root, the sign of x, no x = 0 with the sign bit set) with arbitrary 32-byte strings and
// compares it with edDecodeRef: both refuse, or both decode and re-encode to the input. The
// driver is built with AddressSanitizer and UBSan (build/host/c25519cli-asan).
func FuzzC25519Decode(f *testing.F) {
	k := startKatcliBuild(f, "build/host/c25519cli-asan")
	for _, s := range []string{
		"5866666666666666666666666666666666666666666666666666666666666666", // the base point B
		"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", // RFC 8032 TEST 1's key
		"0100000000000000000000000000000000000000000000000000000000000000", // the identity
		"0100000000000000000000000000000000000000000000000000000000000080", // y = 1, sign set
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p
		"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p + 1
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p - 1 (order 2)
		"0000000000000000000000000000000000000000000000000000000000000080", // y = 0, sign set
		"0200000000000000000000000000000000000000000000000000000000000000", // y = 2: not on the curve
	} {
		f.Add(c25519HexF(f, s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if len(s) != 32 {
			return
		}
		got := k.do(t, "ed25519-decode", hex.EncodeToString(s))
		ref := edDecodeRef(s)
		switch {
		case ref == nil && got != "fail":
			t.Fatalf("%x: C decodes to %s, the reference refuses", s, got)
		case ref != nil && got != up(hex.EncodeToString(ref)):
			t.Fatalf("%x: C says %s, the reference decodes to %x", s, got, ref)
		case ref != nil && !bytes.Equal(ref, s):
			t.Fatalf("%x: decoded to another encoding %x", s, ref)
		}
	})
}

func c25519Hex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func c25519HexF(f *testing.F, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// TestX25519ConstantTimeValgrind builds test/c25519ct.c with the host build's flags and runs it
// under valgrind's memcheck with the scalar and the point marked undefined: a branch or a memory
// index that depends on them is a memcheck error, and the test fails on any error. It covers
// x25519 and x25519_base, eight scalars and points including the all-zero (low-order) path, as
// the host compiler builds them; the boards' cross compilers are not checked by it.
func TestX25519ConstantTimeValgrind(t *testing.T) {
	run := valgrindConstantTime(t, []string{"-Wshadow", "-Wvla"},
		"test/c25519ct.c", "crypto/c25519/fe25519.c", "crypto/c25519/x25519.c")
	out, code := run("7")
	if code != 0 {
		t.Fatalf("memcheck found secret-dependent branches or indexes (exit %d):\n%s", code, out)
	}
	if strings.Contains(out, "==") || !strings.Contains(out, "7 -1\n") {
		t.Fatalf("unexpected memcheck output (the low-order case must report -1):\n%s", out)
	}
}

// TestC25519OnBoards builds the count image (make c25519-bench: test/c25519bench.c, the board's
// port and crypto/c25519, not the firmware) for qemu-mps2-an386, qemu-mps2-an505 and
// qemu-riscv32-virt, boots each under -icount shift=0 and checks that X25519 gives RFC 7748
// section 6.1's shared secret and Alice's public key, that RFC 8032 TEST 3 verifies, that the key
// derivation and signing give TEST 3's public key and signature, and a second seed's signature of
// the same message Go's; that two runs give identical counts and stack marks, and that the two
// signatures (other seeds, same message) cost the same count: the cross compilers' code does not
// vary with the secret there. It logs the counts (docs/BOARDS.md).
func TestC25519OnBoards(t *testing.T) {
	makeCountImages(t, "c25519-bench")
	seed1 := c25519Hex(t, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	want := map[string]string{
		"x25519":         "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
		"x25519-base":    "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
		"ed25519-verify": strings.Repeat("00", 32),
		"ed25519-pubkey": "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
		"ed25519-sign-3": "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
		"ed25519-sign-1": hex.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed1), []byte{0xaf, 0x82})),
	}
	ops := []string{"x25519", "x25519-base", "ed25519-verify", "ed25519-pubkey", "ed25519-sign-3", "ed25519-sign-1"}
	for _, b := range countBoards {
		t.Run(b.name, func(t *testing.T) {
			runs := map[string][]map[string]string{}
			lines := bootCountImage(t, b, filepath.Join("build", "c25519-bench", b.name, "c25519bench.elf"))
			for _, m := range countRecords(lines, "c25519") {
				runs[m["op"]] = append(runs[m["op"]], m)
			}
			var summary []string
			for _, op := range ops {
				r := runs[op]
				if len(r) != 2 {
					t.Fatalf("%s: %d runs printed, want 2", op, len(r))
				}
				for _, m := range r {
					if m["ok"] != "1" || m["out"] != want[op] {
						t.Fatalf("%s on the board: ok %s, out %s, want %s", op, m["ok"], m["out"], want[op])
					}
				}
				if r[0]["count"] != r[1]["count"] || r[0]["stack"] != r[1]["stack"] {
					t.Errorf("%s: two runs differ: count %s/%s, stack %s/%s", op, r[0]["count"], r[1]["count"], r[0]["stack"], r[1]["stack"])
				}
				summary = append(summary, op+" "+r[0]["count"]+" "+r[0]["unit"]+" (stack "+r[0]["stack"]+" B)")
			}
			if c3, c1 := runs["ed25519-sign-3"][0]["count"], runs["ed25519-sign-1"][0]["count"]; c3 != c1 {
				t.Errorf("Ed25519 signing costs %s with one seed and %s with another: the count depends on the secret", c3, c1)
			}
			t.Logf("%s: %s", b.name, strings.Join(summary, ", "))
		})
	}
}

// edSign runs the C ed25519_pubkey and ed25519_sign for seed and msg and returns both in hex
// (lower case), failing on a malformed answer.
func edSign(t *testing.T, k *katcli, seed, msg []byte) (pk, sig string) {
	t.Helper()
	m := "-"
	if len(msg) > 0 {
		m = hex.EncodeToString(msg)
	}
	pk = strings.ToLower(k.do(t, "ed25519-pubkey", hex.EncodeToString(seed)))
	sig = strings.ToLower(k.do(t, "ed25519-sign", hex.EncodeToString(seed), pk, m))
	if len(pk) != 64 || len(sig) != 128 {
		t.Fatalf("ed25519 with seed %x: malformed answers %q, %q", seed, pk, sig)
	}
	return pk, sig
}

// edCheckAgainstGo signs msg with seed in C and requires Go's crypto/ed25519 to derive the same
// public key, to sign to the same 64 bytes (Ed25519 is deterministic) and to verify the C
// signature, and the C verifier to accept it.
func edCheckAgainstGo(t *testing.T, k *katcli, what string, seed, msg []byte) {
	t.Helper()
	pk, sig := edSign(t, k, seed, msg)
	priv := ed25519.NewKeyFromSeed(seed)
	if want := hex.EncodeToString(priv.Public().(ed25519.PublicKey)); pk != want {
		t.Fatalf("%s: C public key %s, Go %s", what, pk, want)
	}
	if want := hex.EncodeToString(ed25519.Sign(priv, msg)); sig != want {
		t.Fatalf("%s: C signature %s, Go %s", what, sig, want)
	}
	if !ed25519.Verify(priv.Public().(ed25519.PublicKey), msg, c25519Hex(t, sig)) {
		t.Fatalf("%s: Go refuses the C signature", what)
	}
	m := "-"
	if len(msg) > 0 {
		m = hex.EncodeToString(msg)
	}
	if got := k.do(t, "ed25519-verify", pk, m, sig); got != "ok" {
		t.Fatalf("%s: the C verifier says %s", what, got)
	}
}

// rfc8032Test1024Msg is the 1023-byte message of RFC 8032 section 7.1, TEST 1024.
const rfc8032Test1024Msg = "08b8b2b733424243760fe426a4b54908632110a66c2f6591eabd3345e3e4eb98fa6e264bf09efe12ee50f8f54e9f77b1" +
	"e355f6c50544e23fb1433ddf73be84d879de7c0046dc4996d9e773f4bc9efe5738829adb26c81b37c93a1b270b20329d" +
	"658675fc6ea534e0810a4432826bf58c941efb65d57a338bbd2e26640f89ffbc1a858efcb8550ee3a5e1998bd177e93a" +
	"7363c344fe6b199ee5d02e82d522c4feba15452f80288a821a579116ec6dad2b3b310da903401aa62100ab5d1a36553e" +
	"06203b33890cc9b832f79ef80560ccb9a39ce767967ed628c6ad573cb116dbefefd75499da96bd68a8a97b928a8bbc10" +
	"3b6621fcde2beca1231d206be6cd9ec7aff6f6c94fcd7204ed3455c68c83f4a41da4af2b74ef5c53f1d8ac70bdcb7ed1" +
	"85ce81bd84359d44254d95629e9855a94a7c1958d1f8ada5d0532ed8a5aa3fb2d17ba70eb6248e594e1a2297acbbb39d" +
	"502f1a8c6eb6f1ce22b3de1a1f40cc24554119a831a9aad6079cad88425de6bde1a9187ebb6092cf67bf2b13fd65f270" +
	"88d78b7e883c8759d2c4f5c65adb7553878ad575f9fad878e80a0c9ba63bcbcc2732e69485bbc9c90bfbd62481d9089b" +
	"eccf80cfe2df16a2cf65bd92dd597b0707e0917af48bbb75fed413d238f5555a7a569d80c3414a8d0859dc65a46128ba" +
	"b27af87a71314f318c782b23ebfe808b82b0ce26401d2e22f04d83d1255dc51addd3b75a2b1ae0784504df543af8969b" +
	"e3ea7082ff7fc9888c144da2af58429ec96031dbcad3dad9af0dcbaaaf268cb8fcffead94f3c7ca495e056a9b47acdb7" +
	"51fb73e666c6c655ade8297297d07ad1ba5e43f1bca32301651339e22904cc8c42f58c30c04aafdb038dda0847dd988d" +
	"cda6f3bfd15c4b4c4525004aa06eeff8ca61783aacec57fb3d1f92b0fe2fd1a85f6724517b65e614ad6808d6f6ee34df" +
	"f7310fdc82aebfd904b01e1dc54b2927094b2db68d6f903b68401adebf5a7e08d78ff4ef5d63653a65040cf9bfd4aca7" +
	"984a74d37145986780fc0b16ac451649de6188a7dbdf191f64b5fc5e2ab47b57f7f7276cd419c17a3ca8e1b939ae49e4" +
	"88acba6b965610b5480109c8b17b80e1b7b750dfc7598d5d5011fd2dcc5600a32ef5b52a1ecc820e308aa342721aac09" +
	"43bf6686b64b2579376504ccc493d97e6aed3fb0f9cd71a43dd497f01f17c0e2cb3797aa2a2f256656168e6c496afc5f" +
	"b93246f6b1116398a346f1a641f3b041e989f7914f90cc2c7fff357876e506b50d334ba77c225bc307ba537152f3f161" +
	"0e4eafe595f6d9d90d11faa933a15ef1369546868a7f3a45a96768d40fd9d03412c091c6315cf4fde7cb68606937380d" +
	"b2eaaa707b4c4185c32eddcdd306705e4dc1ffc872eeee475a64dfac86aba41c0618983f8741c5ef68d3a101e8a3b8ca" +
	"c60c905c15fc910840b94c00a0b9d0"

// TestEd25519SignRFC8032 checks the C key derivation and signing on RFC 8032 section 7.1's
// Ed25519 vectors, TEST 1, 2, 3, 1024 and SHA(abc): the public key and the signature byte for
// byte. Go's crypto/ed25519 must give the same from the vector's secret key (a check on the
// vectors as transcribed here).
func TestEd25519SignRFC8032(t *testing.T) {
	k := startC25519(t)
	for _, v := range []struct{ name, sk, pk, msg, sig string }{
		{"TEST 1", "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
			"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"TEST 2", "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
			"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{"TEST 3", "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
			"fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
		{"TEST 1024", "f5e5767cf153319517630f226876b86c8160cc583bc013744c6bf255f5cc0ee5",
			"278117fc144c72340f67d0f2316e8386ceffbf2b2428c9c51fef7c597f1d426e", rfc8032Test1024Msg,
			"0aab4c900501b3e24d7cdf4663326a3a87df5e4843b2cbdb67cbf6e460fec350aa5371b1508f9f4528ecea23c436d94b5e8fcd4f681e30a6ac00a9704a188a03"},
		{"TEST SHA(abc)", "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
			"ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
			"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
			"dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"},
	} {
		seed, msg := c25519Hex(t, v.sk), c25519Hex(t, v.msg)
		priv := ed25519.NewKeyFromSeed(seed)
		if hex.EncodeToString(priv.Public().(ed25519.PublicKey)) != v.pk || hex.EncodeToString(ed25519.Sign(priv, msg)) != v.sig {
			t.Fatalf("%s: Go's crypto/ed25519 disagrees with the vector as written", v.name)
		}
		if v.name == "TEST 1024" && len(msg) != 1023 {
			t.Fatalf("TEST 1024: message of %d bytes, want 1023", len(msg))
		}
		pk, sig := edSign(t, k, seed, msg)
		if pk != v.pk {
			t.Errorf("RFC 8032 7.1 %s: C public key %s, want %s", v.name, pk, v.pk)
		}
		if sig != v.sig {
			t.Errorf("RFC 8032 7.1 %s: C signature %s, want %s", v.name, sig, v.sig)
		}
	}
}

// TestEd25519SignWycheproof signs the message of every valid case of ed25519_test.json (the
// file carries public keys only, so the keys are this test's: three fixed seeds, all zero, all
// 0xff and one derived from the case id) and requires each signature to equal Go's byte for byte
// and to verify with Go and with the C verifier.
func TestEd25519SignWycheproof(t *testing.T) {
	k := startC25519(t)
	f := loadWycheproof(t, "ed25519_test.json")
	zero, ones := make([]byte, 32), bytes.Repeat([]byte{0xff}, 32)
	n := 0
	for _, g := range f.TestGroups {
		for _, tc := range g.Tests {
			if str(t, tc, "result") != "valid" {
				continue
			}
			id := string(tc["tcId"])
			msg := c25519Hex(t, str(t, tc, "msg"))
			derived := sha256.Sum256([]byte("pqrepro ed25519 sign " + id))
			for _, seed := range [][]byte{zero, ones, derived[:]} {
				edCheckAgainstGo(t, k, "tcId "+id, seed, msg)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no valid case in ed25519_test.json")
	}
	t.Logf("C Ed25519 sign: the messages of %d valid Wycheproof cases, 3 keys each, equal to Go's signatures and verified", n)
}

// TestEd25519SignAgainstGo compares the C signing with Go's crypto/ed25519 on random seeds and
// messages of 0 to 300 bytes (SHA-512's block edges among them).
func TestEd25519SignAgainstGo(t *testing.T) {
	k := startC25519(t)
	for _, l := range []int{0, 1, 31, 32, 63, 64, 111, 112, 127, 128, 129, 130, 239, 240, 255, 256, 300} {
		seed, msg := make([]byte, 32), make([]byte, l)
		rand.Read(seed)
		rand.Read(msg)
		edCheckAgainstGo(t, k, "random seed, "+strconv.Itoa(l)+"-byte message", seed, msg)
	}
}

// TestEd25519SignConstantTimeValgrind builds test/ed25519ct.c with crypto/c25519 (-O2) and runs
// it under valgrind memcheck with each seed marked undefined through ed25519_pubkey and
// ed25519_sign: a branch or a memory index that depends on the seed, the secret scalar, the
// prefix or the nonce is a memcheck error, and the test fails on any. Eight seeds (all zero
// among them) and message lengths 0 to 130; every signature must verify. Two controls must be
// reported, so the check is live: "control" branches on the seed in the harness, and
// "control-output" verifies each signature before marking it defined (the verification branches
// on S), which shows the seed's taint reaches the output through the signing code. As for
// X25519, this covers the host compiler's code; the equal counts on the boards
// (TestC25519OnBoards) cover the cross compilers' for one pair of keys.
func TestEd25519SignConstantTimeValgrind(t *testing.T) {
	run := valgrindConstantTime(t, []string{"-Wshadow", "-Wvla"},
		"test/ed25519ct.c", "crypto/c25519/fe25519.c", "crypto/c25519/ed25519.c", "crypto/sha2/sha2.c")
	out, code := run()
	if code != 0 || strings.Contains(out, "==") || !strings.Contains(out, "ed25519ct 8/8") {
		t.Fatalf("memcheck with the seeds undefined: exit %d\n%s", code, out)
	}
	for _, control := range []string{"control", "control-output"} {
		out, code = run(control)
		if code != valgrindErrExit || !strings.Contains(out, "uninitialised value") {
			t.Fatalf("%s: the branch on the secret was not reported: exit %d\n%s", control, code, out)
		}
	}
}
