package firmware

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
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
// section 6.1's shared secret and Alice's public key and that RFC 8032 TEST 3 verifies, that two
// runs give identical counts and stack marks, and logs them (docs/BOARDS.md).
func TestC25519OnBoards(t *testing.T) {
	makeCountImages(t, "c25519-bench")
	want := map[string]string{
		"x25519":         "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
		"x25519-base":    "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
		"ed25519-verify": strings.Repeat("00", 32),
	}
	for _, b := range countBoards {
		t.Run(b.name, func(t *testing.T) {
			runs := map[string][]map[string]string{}
			lines := bootCountImage(t, b, filepath.Join("build", "c25519-bench", b.name, "c25519bench.elf"))
			for _, m := range countRecords(lines, "c25519") {
				runs[m["op"]] = append(runs[m["op"]], m)
			}
			var summary []string
			for _, op := range []string{"x25519", "x25519-base", "ed25519-verify"} {
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
			t.Logf("%s: %s", b.name, strings.Join(summary, ", "))
		})
	}
}
