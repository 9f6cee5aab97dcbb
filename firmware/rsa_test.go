package firmware

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// The C RSA verification (crypto/rsa) through its host driver test/rsacli.c. rsa.h's error codes:
const (
	rsaEDER      = "-1"
	rsaESize     = "-2"
	rsaEModulus  = "-3"
	rsaEExponent = "-4"
	rsaELength   = "-5"
	rsaERange    = "-6"
	rsaEInvalid  = "-7"
)

func startRSACLI(t testing.TB) *katcli { return startKatcliBuild(t, "build/host/rsacli") }

// rsaWycheproofFile is the part of Wycheproof's RSA signature files the tests read.
type rsaWycheproofFile struct {
	Algorithm     string               `json:"algorithm"`
	NumberOfTests int                  `json:"numberOfTests"`
	TestGroups    []rsaWycheproofGroup `json:"testGroups"`
}

// rsaWycheproofGroup is one key and its tests.
type rsaWycheproofGroup struct {
	KeySize      int    `json:"keySize"`
	SHA          string `json:"sha"`
	MGF          string `json:"mgf"`
	MGFSHA       string `json:"mgfSha"`
	SLen         int    `json:"sLen"`
	PublicKeyAsn string `json:"publicKeyAsn"`
	PublicKey    struct {
		Modulus        string `json:"modulus"`
		PublicExponent string `json:"publicExponent"`
	} `json:"publicKey"`
	Tests []struct {
		TcID    int      `json:"tcId"`
		Comment string   `json:"comment"`
		Flags   []string `json:"flags"`
		Msg     string   `json:"msg"`
		Sig     string   `json:"sig"`
		Result  string   `json:"result"`
	} `json:"tests"`
}

// rsaAcceptable decides Wycheproof's "acceptable" cases by the strict rule a TLS client wants
// (RFC 8017's one encoding, nothing a lenient library tolerates). Decisions, by flag:
//
//   - MissingNull (PKCS #1 v1.5, DigestInfo without the NULL parameters): refused. RFC 8017 9.2
//     note 1 gives the DigestInfo with NULL; the verifier builds that one encoding and compares
//     it whole, so the variant without NULL cannot match (as Go's crypto/rsa and BoringSSL).
//
// A case with another flag fails the test until it gets a decision here.
var rsaAcceptable = map[string]bool{"MissingNull": false}

// TestRSAWycheproof runs every case of Wycheproof's RSA-2048 SHA-256 files through the C
// verifier: RSASSA-PKCS1-v1_5 (rsa_signature_2048_sha256_test.json, the certificates' scheme)
// and RSASSA-PSS with MGF1-SHA-256 and a 32-byte salt (rsa_pss_2048_sha256_mgf1_32_test.json,
// TLS 1.3's rsa_pss_rsae_sha256). Each group's RSAPublicKey goes through the C DER parser, which
// must give the group's modulus and exponent; a valid case must verify, an invalid one must be
// refused, an acceptable one as rsaAcceptable decides.
func TestRSAWycheproof(t *testing.T) {
	k := startRSACLI(t)
	for _, c := range []struct{ file, cmd, alg string }{
		{"rsa_signature_2048_sha256_test.json", "pkcs1", "RSASSA-PKCS1-v1_5"},
		{"rsa_pss_2048_sha256_mgf1_32_test.json", "pss", "RSASSA-PSS"},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(wycheproofDir, c.file))
			if err != nil {
				t.Skipf("Wycheproof vectors not available: %v", err)
			}
			var f rsaWycheproofFile
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			if f.Algorithm != c.alg {
				t.Fatalf("%s: algorithm %q", c.file, f.Algorithm)
			}
			counts := map[string]int{}
			total := 0
			for gi, g := range f.TestGroups {
				if g.SHA != "SHA-256" || (c.cmd == "pss" && (g.MGF != "MGF1" || g.MGFSHA != "SHA-256" || g.SLen != 32)) {
					t.Fatalf("%s group %d: %s %s %s sLen %d is not what the C code verifies", c.file, gi, g.SHA, g.MGF, g.MGFSHA, g.SLen)
				}
				checkRSAKey(t, k, g.PublicKeyAsn, g.PublicKey.Modulus, g.PublicKey.PublicExponent)
				for _, tc := range g.Tests {
					total++
					got := k.do(t, c.cmd, g.PublicKeyAsn, tc.Msg, tc.Sig)
					want := tc.Result == "valid"
					if tc.Result == "acceptable" {
						if len(tc.Flags) != 1 {
							t.Fatalf("tcId %d: acceptable with flags %v: no decision", tc.TcID, tc.Flags)
						}
						accept, ok := rsaAcceptable[tc.Flags[0]]
						if !ok {
							t.Fatalf("tcId %d: acceptable with flag %s: no decision", tc.TcID, tc.Flags[0])
						}
						want = accept
					} else if tc.Result != "invalid" && tc.Result != "valid" {
						t.Fatalf("tcId %d: result %q", tc.TcID, tc.Result)
					}
					if (got == "ok") != want || (!want && !strings.HasPrefix(got, "fail ")) {
						t.Errorf("tcId %d (%s, %s %v): C says %q", tc.TcID, tc.Result, tc.Comment, tc.Flags, got)
						continue
					}
					counts[tc.Result]++
				}
			}
			if total != f.NumberOfTests || counts["valid"]+counts["invalid"]+counts["acceptable"] != total {
				t.Fatalf("%v of %d cases passed (file says %d)", counts, total, f.NumberOfTests)
			}
			if counts["valid"] == 0 || counts["invalid"] == 0 {
				t.Fatalf("%s: %v: the file should have valid and invalid cases", c.file, counts)
			}
			t.Logf("C %s: %d/%d Wycheproof cases passed (%d valid accepted, %d invalid refused, %d acceptable decided)",
				c.alg, total, f.NumberOfTests, counts["valid"], counts["invalid"], counts["acceptable"])
		})
	}
}

// checkRSAKey parses der with the C parser and compares its modulus and exponent with the
// group's (hex, the modulus possibly with a sign octet).
func checkRSAKey(t *testing.T, k *katcli, der, modulus, exponent string) {
	t.Helper()
	f := strings.Fields(k.do(t, "pubkey", der))
	if len(f) != 2 || f[0] == "refused" {
		t.Fatalf("C parser refuses %s: %v", der, f)
	}
	n, _ := new(big.Int).SetString(modulus, 16)
	e, _ := new(big.Int).SetString(exponent, 16)
	if n == nil || e == nil {
		t.Fatalf("group key %s %s is not hex", modulus, exponent)
	}
	if got, _ := new(big.Int).SetString(f[0], 16); got == nil || got.Cmp(n) != 0 || f[1] != e.String() {
		t.Fatalf("C parser gives n=%s e=%s, the group says n=%s e=%s", f[0], f[1], modulus, e)
	}
}

// rsaPublicKeyDER is the strict DER of RSAPublicKey { n, e }.
func rsaPublicKeyDER(n *big.Int, e int64) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1BigInt(n)
		b.AddASN1Int64(e)
	})
	return b.BytesOrPanic()
}

// randomModulus returns an odd number of exactly bits bits (not an RSA modulus: the arithmetic
// does not care).
func randomModulus(t *testing.T, bits int) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
	if err != nil {
		t.Fatal(err)
	}
	n.SetBit(n, bits-1, 1)
	return n.SetBit(n, 0, 1)
}

func padHex(x *big.Int, size int) string {
	return strings.ToUpper(hex.EncodeToString(x.FillBytes(make([]byte, size))))
}

// TestRSAPublicMatchesBig compares the C s^e mod n with math/big's on odd moduli of the sizes
// the limb code treats differently (a whole number of limbs or bytes, one bit more, the largest)
// and exponents from 3 to 2^32 - 1, for random s and the edges 0, 1 and n - 1; s = n and s one
// byte too long or short are refused.
func TestRSAPublicMatchesBig(t *testing.T) {
	k := startRSACLI(t)
	exps := []int64{3, 5, 17, 65537, 0x80000001, 0xffffffff}
	for _, bits := range []int{2048, 2049, 2055, 2056, 2057, 2080, 3072, 4095, 4096} {
		for _, e := range exps {
			n := randomModulus(t, bits)
			size := (bits + 7) / 8
			nh := padHex(n, size)
			ss := []*big.Int{big.NewInt(0), big.NewInt(1), new(big.Int).Sub(n, big.NewInt(1))}
			for i := 0; i < 3; i++ {
				s, err := rand.Int(rand.Reader, n)
				if err != nil {
					t.Fatal(err)
				}
				ss = append(ss, s)
			}
			es := strconv.FormatInt(e, 10)
			for _, s := range ss {
				want := padHex(new(big.Int).Exp(s, big.NewInt(e), n), size)
				if got := k.do(t, "public", nh, es, padHex(s, size)); got != want {
					t.Fatalf("%d bits, e=%d, s=%x: C gives %s, math/big %s", bits, e, s, got, want)
				}
			}
			for _, c := range []struct{ s, want string }{
				{nh, "fail " + rsaERange},
				{"00" + padHex(ss[3], size), "fail " + rsaELength},
				{padHex(ss[3], size)[2:], "fail " + rsaELength},
			} {
				if got := k.do(t, "public", nh, es, c.s); got != c.want {
					t.Fatalf("%d bits, e=%d, s=%s: C gives %q, want %q", bits, e, c.s, got, c.want)
				}
			}
		}
	}
}

// TestRSAKeyRefused feeds the C parser RSAPublicKeys that break one rule each and checks its
// error code; the reference key around them is accepted.
func TestRSAKeyRefused(t *testing.T) {
	k := startRSACLI(t)
	n := randomModulus(t, 2048)
	good := rsaPublicKeyDER(n, 65537)
	if f := strings.Fields(k.do(t, "pubkey", hex.EncodeToString(good))); len(f) != 2 || f[1] != "65537" {
		t.Fatalf("reference key refused: %v", f)
	}
	nb := n.Bytes()
	// raw builds SEQUENCE { INTEGER nContents, INTEGER eContents } with long-form lengths.
	raw := func(nc, ec []byte) []byte {
		var b cryptobyte.Builder
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddBytes(nc) })
			b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddBytes(ec) })
		})
		return b.BytesOrPanic()
	}
	withSign := append([]byte{0}, nb...)
	negative := append([]byte{0x80}, nb[1:]...) // minimal: 0x80 is not followed by a redundant sign
	if !bytes.Equal(raw(withSign, []byte{1, 0, 1}), good) {
		t.Fatal("raw builder does not reproduce the reference key")
	}
	even := new(big.Int).SetBit(n, 0, 0)
	nonMinimalLen := append([]byte{0x30, 0x83, 0x00}, good[2:]...) // 0x82 LL LL -> 0x83 00 LL LL
	cases := []struct {
		name string
		der  []byte
		want string
	}{
		{"empty", nil, rsaEDER},
		{"trailing byte", append(append([]byte{}, good...), 0), rsaEDER},
		{"truncated", good[:len(good)-1], rsaEDER},
		{"wrong outer tag", append([]byte{0x31}, good[1:]...), rsaEDER},
		{"three-byte length", nonMinimalLen, rsaEDER},
		{"indefinite length", append([]byte{0x30, 0x80}, append(good[4:], 0, 0)...), rsaEDER},
		{"extra element", raw3(withSign, []byte{1, 0, 1}), rsaEDER},
		{"modulus with a redundant zero", raw(append([]byte{0}, withSign...), []byte{1, 0, 1}), rsaEDER},
		{"exponent with a redundant zero", raw(withSign, []byte{0, 1, 0, 1}), rsaEDER},
		{"empty exponent", raw(withSign, nil), rsaEDER},
		{"negative modulus", raw(negative, []byte{1, 0, 1}), rsaEModulus},
		{"even modulus", rsaPublicKeyDER(even, 65537), rsaEModulus},
		{"1024-bit modulus", rsaPublicKeyDER(randomModulus(t, 1024), 65537), rsaESize},
		{"2047-bit modulus", rsaPublicKeyDER(randomModulus(t, 2047), 65537), rsaESize},
		{"4097-bit modulus", rsaPublicKeyDER(randomModulus(t, 4097), 65537), rsaESize},
		{"e = 1", rsaPublicKeyDER(n, 1), rsaEExponent},
		{"e = 2", rsaPublicKeyDER(n, 2), rsaEExponent},
		{"even e", rsaPublicKeyDER(n, 65536), rsaEExponent},
		{"negative e", rsaPublicKeyDER(n, -65537), rsaEExponent},
		{"e = 2^32 + 1", rsaPublicKeyDER(n, 1<<32+1), rsaEExponent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := k.do(t, "pubkey", hex.EncodeToString(c.der)); got != "refused "+c.want {
				t.Fatalf("C parser: %q, want refused %s", got, c.want)
			}
		})
	}
	for _, e := range []int64{3, 0xffffffff} {
		if f := strings.Fields(k.do(t, "pubkey", hex.EncodeToString(rsaPublicKeyDER(n, e)))); len(f) != 2 || f[1] != strconv.FormatInt(e, 10) {
			t.Fatalf("e=%d: %v", e, f)
		}
	}
}

// raw3 is RSAPublicKey with a third INTEGER (0) after the exponent.
func raw3(nc, ec []byte) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddBytes(nc) })
		b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddBytes(ec) })
		b.AddASN1(cbasn1.INTEGER, func(b *cryptobyte.Builder) { b.AddUint8(0) })
	})
	return b.BytesOrPanic()
}

// TestRSAOtherSizesAgainstGo signs with Go's crypto/rsa under keys Wycheproof's 2048-bit files
// do not cover: 2049 bits (PSS's encoded message is then one byte shorter than the modulus),
// 3072 and 4096. The C code must accept Go's PKCS #1 v1.5 and PSS (32-byte salt) signatures,
// refuse each under the other scheme, refuse them with one bit flipped, and refuse a PSS
// signature with a 20-byte salt; for 3072 and 4096 bits also a PSS encoding whose bit above
// emBits is set (checkPSSTopBits).
func TestRSAOtherSizesAgainstGo(t *testing.T) {
	k := startRSACLI(t)
	msg := []byte("pqrepro RSA verification")
	digest := sha256.Sum256(msg)
	for _, bits := range []int{2049, 3072, 4096} {
		t.Run(fmt.Sprint(bits), func(t *testing.T) {
			priv, err := rsa.GenerateKey(rand.Reader, bits)
			if err != nil {
				t.Fatal(err)
			}
			der := hex.EncodeToString(rsaPublicKeyDER(priv.N, int64(priv.E)))
			pk, err := rsa.SignPKCS1v15(rand.Reader, priv, crypto.SHA256, digest[:])
			if err != nil {
				t.Fatal(err)
			}
			ps, err := rsa.SignPSS(rand.Reader, priv, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: 32})
			if err != nil {
				t.Fatal(err)
			}
			ps20, err := rsa.SignPSS(rand.Reader, priv, crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: 20})
			if err != nil {
				t.Fatal(err)
			}
			flip := func(s []byte) string {
				c := append([]byte{}, s...)
				c[len(c)/2] ^= 0x10
				return hex.EncodeToString(c)
			}
			m := hex.EncodeToString(msg)
			for _, c := range []struct{ cmd, sig, want string }{
				{"pkcs1", hex.EncodeToString(pk), "ok"},
				{"pss", hex.EncodeToString(ps), "ok"},
				{"pss", hex.EncodeToString(pk), "fail " + rsaEInvalid},
				{"pkcs1", hex.EncodeToString(ps), "fail " + rsaEInvalid},
				{"pkcs1", flip(pk), "fail " + rsaEInvalid},
				{"pss", flip(ps), "fail " + rsaEInvalid},
				{"pss", hex.EncodeToString(ps20), "fail " + rsaEInvalid},
			} {
				if got := k.do(t, c.cmd, der, m, c.sig); got != c.want {
					t.Errorf("%s: C says %q, want %q", c.cmd, got, c.want)
				}
			}
			if (bits-1)%8 != 0 {
				checkPSSTopBits(t, k, priv, der, msg)
			}
		})
	}
}

// checkPSSTopBits signs, with the raw private key, an EMSA-PSS encoding built here (RFC 8017
// 9.1.1) and the same encoding with its leftmost bit set, which lies above emBits and must be
// zero (9.1.2 step 6): the first verifies, the second is refused. The salt is drawn until the
// altered encoding is below n, so the refusal is the encoding's and not the range check's.
func checkPSSTopBits(t *testing.T, k *katcli, priv *rsa.PrivateKey, der string, msg []byte) {
	t.Helper()
	size := (priv.N.BitLen() + 7) / 8
	emBits := priv.N.BitLen() - 1
	sign := func(em []byte) string {
		s := new(big.Int).Exp(new(big.Int).SetBytes(em), priv.D, priv.N)
		return hex.EncodeToString(s.FillBytes(make([]byte, size)))
	}
	mHash := sha256.Sum256(msg)
	for try := 0; try < 64; try++ {
		salt := make([]byte, 32)
		rand.Read(salt)
		em := pssEncode(mHash[:], salt, emBits)
		bad := append([]byte{}, em...)
		bad[0] |= 0x80
		if new(big.Int).SetBytes(bad).Cmp(priv.N) >= 0 {
			continue
		}
		m := hex.EncodeToString(msg)
		if got := k.do(t, "pss", der, m, sign(em)); got != "ok" {
			t.Fatalf("PSS of this test's own encoding: C says %q", got)
		}
		if got := k.do(t, "pss", der, m, sign(bad)); got != "fail "+rsaEInvalid {
			t.Fatalf("PSS encoding with its leftmost bit set: C says %q", got)
		}
		return
	}
	t.Fatal("no salt gave an altered encoding below n")
}

// pssEncode is EMSA-PSS-ENCODE (RFC 8017 9.1.1) with SHA-256 and MGF1-SHA-256.
func pssEncode(mHash, salt []byte, emBits int) []byte {
	emLen := (emBits + 7) / 8
	h := sha256.New()
	h.Write(make([]byte, 8))
	h.Write(mHash)
	h.Write(salt)
	hh := h.Sum(nil)
	db := make([]byte, emLen-len(hh)-1)
	db[len(db)-len(salt)-1] = 1
	copy(db[len(db)-len(salt):], salt)
	for c, i := uint32(0), 0; i < len(db); c++ {
		blk := sha256.Sum256(append(append([]byte{}, hh...), byte(c>>24), byte(c>>16), byte(c>>8), byte(c)))
		for j := 0; j < len(blk) && i < len(db); j, i = j+1, i+1 {
			db[i] ^= blk[j]
		}
	}
	db[0] &= 0xff >> (8*emLen - emBits)
	return append(append(db, hh...), 0xbc)
}

// FuzzRSAPublicKeyDER drives the C RSAPublicKey parser (rsacli built with AddressSanitizer and
// UBSan, so an out-of-bounds read or an overflow fails the target) with arbitrary bytes. DER is
// one encoding per value, so whatever the parser accepts must be exactly the DER Go builds for
// the modulus and exponent it reports. Seeds: Wycheproof's 2048-bit key, a small-exponent key
// and damaged forms of them.
func FuzzRSAPublicKeyDER(f *testing.F) {
	k := startKatcliBuild(f, "build/host/rsacli-asan")
	wp, _ := hex.DecodeString("3082010a0282010100a2b451a07d0aa5f96e455671513550514a8a5b462ebef717094fa1fee82224e637f9746d3f7cafd31878d80325b6ef5a1700f65903b469429e89d6eac8845097b5ab393189db92512ed8a7711a1253facd20f79c15e8247f3d3e42e46e48c98e254a2fe9765313a03eff8f17e1a029397a1fa26a8dce26f490ed81299615d9814c22da610428e09c7d9658594266f5c021d0fceca08d945a12be82de4d1ece6b4c03145b5d3495d4ed5411eb878daf05fd7afc3e09ada0f1126422f590975a1969816f48698bcbba1b4d9cae79d460d8f9f85e7975005d9bc22c4e5ac0f7c1a45d12569a62807d3b9a02e5a530e773066f453d1f5b4c2e9cf7820283f742b9d50203010001")
	n := new(big.Int).SetBytes(wp[9 : 9+256])
	f.Add(wp)
	f.Add(rsaPublicKeyDER(n, 3))
	f.Add(rsaPublicKeyDER(new(big.Int).Lsh(n, 2048), 65537)) // 4096 bits, even
	f.Add(wp[:len(wp)-1])
	f.Add(append(append([]byte{}, wp...), 0))
	f.Add([]byte{0x30, 0x06, 0x02, 0x01, 0x03, 0x02, 0x01, 0x03})
	f.Add([]byte{0x30, 0x80, 0x02, 0x01, 0x03, 0x02, 0x01, 0x03, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, der []byte) {
		if len(der) > 4096 {
			return
		}
		out := strings.Fields(k.do(t, "pubkey", hex.EncodeToString(der)))
		if len(out) != 2 {
			t.Fatalf("C parser: %v", out)
		}
		if out[0] == "refused" {
			if c, err := strconv.Atoi(out[1]); err != nil || c > -1 || c < -4 {
				t.Fatalf("refusal code %q", out[1])
			}
			return
		}
		n, ok := new(big.Int).SetString(out[0], 16)
		e, err := strconv.ParseInt(out[1], 10, 64)
		if !ok || err != nil {
			t.Fatalf("C parser: %v", out)
		}
		if n.BitLen() < 2048 || n.BitLen() > 4096 || n.Bit(0) != 1 || e < 3 || e&1 != 1 || e >= 1<<32 {
			t.Fatalf("accepted n of %d bits, e=%d", n.BitLen(), e)
		}
		if want := rsaPublicKeyDER(n, e); !bytes.Equal(der, want) {
			t.Fatalf("accepted %x, which is not the DER of the key it reports (%x)", der, want)
		}
	})
}

// TestRSAOnBoards builds the RSA board image (make rsa-bench: test/rsabench.c with crypto/rsa, not
// the firmware) for qemu-mps2-an386, qemu-mps2-an505 and qemu-riscv32-virt, boots each under
// -icount shift=0 and checks that Wycheproof's RSA-2048 key parses and its tcId 1 PKCS #1 v1.5
// and PSS signatures verify on the board, that a flipped bit is refused, that two rounds give
// identical counts and stack marks, and that PSS verification of three signatures of one message
// with different salts (tcIds 4, 73, 74) counts the same: the count does not depend on the
// signature, so a handshake's randomly salted CertificateVerify does not move it. It logs the counts, the stacks and crypto/rsa's code size
// (docs/BENCHMARKS.md). The same image signs (checkRSASignRecords).
func TestRSAOnBoards(t *testing.T) {
	checkRSABoardVectors(t)
	for _, tool := range []string{"make", "arm-none-eabi-gcc", "riscv64-unknown-elf-gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	makeCountImages(t, "rsa-bench")
	for _, b := range countBoards {
		t.Run(b.name, func(t *testing.T) {
			dir := filepath.Join("build", "rsa-bench", b.name)
			lines := bootCountImage(t, b, filepath.Join(dir, "rsabench.elf"))
			runs := countRecords(lines, "rsabench")
			if len(runs) != 2 {
				t.Fatalf("board printed %d rounds", len(runs))
			}
			want := "0,0,0," + rsaEInvalid
			for _, m := range runs {
				if m["rc"] != want || m["unit"] != "instructions" {
					t.Fatalf("board results %s (want %s), unit %s", m["rc"], want, m["unit"])
				}
			}
			same := strings.Split(runs[0]["same"], ",")
			if runs[0]["same_rc"] != "0,0,0" || len(same) != 3 || same[0] != same[1] || same[0] != same[2] {
				t.Fatalf("PSS of one message under three salts: results %s, counts %v", runs[0]["same_rc"], same)
			}
			for _, f := range []string{"parse", "parse_stack", "pkcs1", "pkcs1_stack", "pss", "pss_stack", "same"} {
				if runs[0][f] != runs[1][f] {
					t.Errorf("%s differs between rounds: %s, %s", f, runs[0][f], runs[1][f])
				}
				if v, err := strconv.ParseUint(strings.Split(runs[0][f], ",")[0], 10, 64); err != nil || v == 0 {
					t.Fatalf("%s = %q", f, runs[0][f])
				}
			}
			text := "(size(1) not installed)"
			if sz, err := exec.Command(b.size, filepath.Join(dir, "rsa.o")).Output(); err == nil {
				if l := strings.Split(strings.TrimSpace(string(sz)), "\n"); len(l) == 2 {
					text = strings.Fields(l[1])[0] + " B"
				}
			}
			m := runs[0]
			t.Logf("%s: RSA-2048 (e = 65537) in instructions: key parse and R^2 %s (stack %s B), PKCS #1 v1.5 SHA-256 verify %s (stack %s B), PSS SHA-256 verify %s (stack %s B), PSS of a 6-byte message %s under each of three salts; crypto/rsa text %s",
				b.name, m["parse"], m["parse_stack"], m["pkcs1"], m["pkcs1_stack"], m["pss"], m["pss_stack"], same[0], text)
			checkRSASignRecords(t, b.name, countRecords(lines, "rsasign"))
		})
	}
}

// rsaCase returns the signature of g's valid case id, which must sign msg.
func rsaCase(t *testing.T, g rsaWycheproofGroup, id int, msg string) string {
	t.Helper()
	for _, tc := range g.Tests {
		if tc.TcID == id {
			if tc.Result != "valid" || tc.Msg != msg {
				t.Fatalf("tcId %d: %s over %s, want valid over %s", id, tc.Result, tc.Msg, msg)
			}
			return tc.Sig
		}
	}
	t.Fatalf("no tcId %d", id)
	return ""
}

// checkRSABoardVectors checks that testdata/rsa holds what its README says: Wycheproof's key and
// tcId 1 signatures, byte for byte.
func checkRSABoardVectors(t *testing.T) {
	t.Helper()
	read := func(name string) rsaWycheproofFile {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(wycheproofDir, name))
		if err != nil {
			t.Skipf("Wycheproof vectors not available: %v", err)
		}
		var f rsaWycheproofFile
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return f
	}
	pk := read("rsa_signature_2048_sha256_test.json").TestGroups[0]
	ps := read("rsa_pss_2048_sha256_mgf1_32_test.json").TestGroups[0]
	for _, c := range []struct{ file, hex string }{
		{"key2048.der", pk.PublicKeyAsn},
		{"key2048.der", ps.PublicKeyAsn},
		{"pkcs1-tc1.sig", pk.Tests[0].Sig},
		{"pss-tc1.sig", ps.Tests[0].Sig},
		{"pss-tc4.sig", rsaCase(t, ps, 4, "313233343030")},
		{"pss-tc73.sig", rsaCase(t, ps, 73, "313233343030")},
		{"pss-tc74.sig", rsaCase(t, ps, 74, "313233343030")},
	} {
		got, err := os.ReadFile(filepath.Join("testdata", "rsa", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(got) != c.hex {
			t.Fatalf("testdata/rsa/%s is not the Wycheproof value", c.file)
		}
	}
	if pk.Tests[0].TcID != 1 || pk.Tests[0].Result != "valid" || pk.Tests[0].Msg != "" || ps.Tests[0].TcID != 1 || ps.Tests[0].Result != "valid" || ps.Tests[0].Msg != "" {
		t.Fatal("the board's vectors are not the valid tcId 1 cases over the empty message")
	}
}
