package firmware

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/tls13/interop"
)

// rsa.h's private-key and signing codes.
const (
	rsaEPrime = "-8"
	rsaECRT   = "-9"
	rsaEKey   = "-10"
	rsaEFault = "-11"
)

// rsaPrivBlob is the rsa_privkey_set blob of k: n (k bytes) || e (4 bytes) || p || q || dp ||
// dq || qinv (k/2 bytes each), all big-endian.
func rsaPrivBlob(k *rsa.PrivateKey) []byte {
	size := k.Size()
	half := size / 2
	out := k.N.FillBytes(make([]byte, size))
	out = binary.BigEndian.AppendUint32(out, uint32(k.E))
	for _, x := range []*big.Int{k.Primes[0], k.Primes[1], k.Precomputed.Dp, k.Precomputed.Dq, k.Precomputed.Qinv} {
		out = append(out, x.FillBytes(make([]byte, half))...)
	}
	return out
}

// rsaSignC loads blob into rsacli and signs digest with salt; it returns the signature or the
// driver's failure line.
func rsaSignC(t *testing.T, k *katcli, digest, salt []byte) string {
	t.Helper()
	return k.do(t, "sign", hex.EncodeToString(digest), hex.EncodeToString(salt))
}

// goSignPSS is Go's RSASSA-PSS (SHA-256, 32-byte salt) with the salt taken from a reader that
// holds exactly it: crypto/rsa reads the salt, and nothing else, from the reader
// (tls13's TestDeterministicPSS holds it to that).
func goSignPSS(t *testing.T, k *rsa.PrivateKey, digest, salt []byte) []byte {
	t.Helper()
	sig, err := rsa.SignPSS(bytes.NewReader(salt), k, crypto.SHA256, digest, &rsa.PSSOptions{SaltLength: 32})
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// wycheproofPSSMessages returns the distinct messages of Wycheproof's RSA-PSS 2048 SHA-256
// file, in file order.
func wycheproofPSSMessages(t *testing.T) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(wycheproofDir, "rsa_pss_2048_sha256_mgf1_32_test.json"))
	if err != nil {
		t.Skipf("Wycheproof vectors not available: %v", err)
	}
	var f rsaWycheproofFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var msgs [][]byte
	for _, g := range f.TestGroups {
		for _, tc := range g.Tests {
			if seen[tc.Msg] {
				continue
			}
			seen[tc.Msg] = true
			m, err := hex.DecodeString(tc.Msg)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m)
		}
	}
	if len(msgs) < 10 {
		t.Fatalf("only %d messages in the file", len(msgs))
	}
	return msgs
}

// TestRSASignAgainstGo signs with the C RSASSA-PSS signer (rsa_privkey_set, then
// rsa_pss_sha256_sign_digest) under keys from Go's rsa.GenerateKey and checks each signature
// byte for byte against Go's rsa.SignPSS given the same salt (PSS is deterministic once the salt
// is fixed, so equality is the whole check), and with rsa.VerifyPSS. 2048 bits over every
// distinct message of Wycheproof's RSA-PSS 2048 SHA-256 file, with salts of zeros, ones and
// pseudorandom bytes; 2057 bits (the encoded message one byte shorter than the modulus), 3072
// and 4096 over a few messages.
func TestRSASignAgainstGo(t *testing.T) {
	k := startRSACLI(t)
	msgs := wycheproofPSSMessages(t)
	for _, bits := range []int{2048, 2057, 3072, 4096} {
		t.Run(fmt.Sprint(bits), func(t *testing.T) {
			priv, err := rsa.GenerateKey(rand.Reader, bits)
			if err != nil {
				t.Fatal(err)
			}
			if got := k.do(t, "privkey", hex.EncodeToString(rsaPrivBlob(priv))); got != "ok" {
				t.Fatalf("rsa_privkey_set of Go's key: %s", got)
			}
			use := msgs
			if bits != 2048 {
				use = msgs[:4]
			}
			for i, m := range use {
				digest := sha256.Sum256(m)
				salt := sha256.Sum256(fmt.Appendf(nil, "salt %d", i))
				switch i {
				case 0:
					salt = [32]byte{}
				case 1:
					salt = [32]byte(bytes.Repeat([]byte{0xff}, 32))
				}
				want := goSignPSS(t, priv, digest[:], salt[:])
				got := rsaSignC(t, k, digest[:], salt[:])
				if got != strings.ToUpper(hex.EncodeToString(want)) {
					t.Fatalf("message %d (%x): C signs %s, Go %x", i, m, got, want)
				}
				sig, _ := hex.DecodeString(got)
				if err := rsa.VerifyPSS(&priv.PublicKey, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: 32}); err != nil {
					t.Fatalf("message %d: Go's VerifyPSS: %v", i, err)
				}
			}
			t.Logf("%d bits: %d C signatures equal Go's and verify", bits, len(use))
		})
	}
}

// TestRSASignOpenSSL verifies one C signature with OpenSSL 3.5's pkeyutl (PSS, SHA-256,
// MGF1-SHA-256, salt length 32), and refuses it with one bit flipped.
func TestRSASignOpenSSL(t *testing.T) {
	ossl, err := interop.FindOpenSSL(t.Context())
	if err != nil {
		t.Skipf("no OpenSSL 3.5: %v", err)
	}
	k := startRSACLI(t)
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.do(t, "privkey", hex.EncodeToString(rsaPrivBlob(priv))); got != "ok" {
		t.Fatalf("rsa_privkey_set: %s", got)
	}
	digest := sha256.Sum256([]byte("pqrepro RSA-PSS signing"))
	salt := make([]byte, 32)
	rand.Read(salt)
	sig, err := hex.DecodeString(rsaSignC(t, k, digest[:], salt))
	if err != nil || len(sig) != 256 {
		t.Fatalf("C signature: %x %v", sig, err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pub := write("pub.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}))
	in := write("digest.bin", digest[:])
	bad := bytes.Clone(sig)
	bad[100] ^= 0x04
	for _, c := range []struct {
		sig []byte
		ok  bool
	}{{sig, true}, {bad, false}} {
		out, stderr, err := ossl.Output(t.Context(), "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-in", in,
			"-sigfile", write("sig.bin", c.sig), "-pkeyopt", "digest:sha256", "-pkeyopt", "rsa_padding_mode:pss",
			"-pkeyopt", "rsa_pss_saltlen:32", "-pkeyopt", "rsa_mgf1_md:sha256")
		verified := err == nil && strings.Contains(out, "Signature Verified Successfully")
		if verified != c.ok {
			t.Fatalf("%s pkeyutl -verify (want ok=%v): %v\n%s%s", ossl.Version, c.ok, err, out, stderr)
		}
	}
	t.Logf("%s verifies the C signature and refuses it with a bit flipped", ossl.Version)
}

// TestRSAPrivkeyRefused feeds rsa_privkey_set blobs that break one rule each (built from a Go
// key) and checks its code, and that the refused key then cannot sign (RSA_EKEY); the intact blob
// is accepted and signs what Go signs. It drives the
// AddressSanitizer + UBSan build of the driver, so a read past a short blob fails it too.
func TestRSAPrivkeyRefused(t *testing.T) {
	k := startKatcliBuild(t, "build/host/rsacli-asan")
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	good := rsaPrivBlob(priv)
	const size, half = 256, 128
	field := map[string]int{"n": 0, "e": size, "p": size + 4, "q": size + 4 + half, "dp": size + 4 + 2*half,
		"dq": size + 4 + 3*half, "qinv": size + 4 + 4*half}
	// with returns good with name's field replaced by x (of the field's width).
	with := func(name string, x *big.Int) []byte {
		b := bytes.Clone(good)
		w := half
		switch name {
		case "n":
			w = size
		case "e":
			w = 4
		}
		x.FillBytes(b[field[name] : field[name]+w])
		return b
	}
	p, q := priv.Primes[0], priv.Primes[1]
	one := big.NewInt(1)
	add := func(a *big.Int, d int64) *big.Int { return new(big.Int).Add(a, big.NewInt(d)) }
	xor := func(a *big.Int, d int64) *big.Int { return new(big.Int).Xor(a, big.NewInt(d)) }
	swapped := with("q", p)
	copy(swapped[field["p"]:], q.FillBytes(make([]byte, half)))
	cases := []struct {
		name string
		blob []byte
		want string
	}{
		{"empty", nil, rsaESize},
		{"one byte short", good[:len(good)-1], rsaESize},
		{"one byte long", append(bytes.Clone(good), 0), rsaESize},
		{"a 1024-bit key's length", good[:128*7/2+4], rsaESize},
		{"n with a leading zero byte", with("n", new(big.Int).Rsh(priv.N, 8)), rsaESize},
		{"n even", with("n", xor(priv.N, 1)), rsaEModulus},
		{"e even", with("e", big.NewInt(65536)), rsaEExponent},
		{"e = 1", with("e", one), rsaEExponent},
		{"n != p*q", with("n", xor(priv.N, 2)), rsaEPrime},
		{"p even", with("p", xor(p, 1)), rsaEPrime},
		{"q with a zero first byte", with("q", new(big.Int).Rsh(q, 8)), rsaEPrime},
		{"p off by 2", with("p", add(p, 2)), rsaEPrime},
		{"dp = p", with("dp", p), rsaECRT},
		{"dq = q", with("dq", q), rsaECRT},
		{"qinv = p", with("qinv", p), rsaECRT},
		{"qinv + 1", with("qinv", add(priv.Precomputed.Qinv, 1)), rsaECRT},
		{"p and q swapped", swapped, rsaECRT},
		{"dp wrong", with("dp", xor(priv.Precomputed.Dp, 2)), rsaEKey},
		{"dq wrong", with("dq", xor(priv.Precomputed.Dq, 4)), rsaEKey},
		{"e not dp's inverse", with("e", big.NewInt(65539)), rsaEKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := k.do(t, "privkey", hex.EncodeToString(c.blob)); got != "refused "+c.want {
				t.Fatalf("rsa_privkey_set: %q, want refused %s", got, c.want)
			}
			if got := rsaSignC(t, k, make([]byte, 32), make([]byte, 32)); got != "fail "+rsaEKey+" -" {
				t.Fatalf("signing with the refused key: %q", got)
			}
		})
	}
	if got := k.do(t, "privkey", hex.EncodeToString(good)); got != "ok" {
		t.Fatalf("the intact blob: %s", got)
	}
	digest, salt := sha256.Sum256(nil), make([]byte, 32)
	if got, want := rsaSignC(t, k, digest[:], salt), goSignPSS(t, priv, digest[:], salt); got != strings.ToUpper(hex.EncodeToString(want)) {
		t.Fatalf("the intact blob signs %s, Go %x", got, want)
	}
}

// TestRSASignFault corrupts a loaded key in memory (one bit of dp, dq or qinv, as a fault would)
// and signs: the check with the public exponent must catch it, return RSA_EFAULT and leave the
// signature buffer (filled with 0xAA by the driver) all zero, so no faulty half is released.
func TestRSASignFault(t *testing.T) {
	k := startRSACLI(t)
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	blob := hex.EncodeToString(rsaPrivBlob(priv))
	digest := sha256.Sum256([]byte("fault"))
	salt := make([]byte, 32)
	zero := strings.Repeat("00", 256)
	for _, f := range []string{"dp", "dq", "qinv"} {
		t.Run(f, func(t *testing.T) {
			if got := k.do(t, "privkey", blob); got != "ok" {
				t.Fatalf("privkey: %s", got)
			}
			if got := rsaSignC(t, k, digest[:], salt); strings.HasPrefix(got, "fail") {
				t.Fatalf("the intact key: %s", got)
			}
			if got := k.do(t, "fault", f); got != "ok" {
				t.Fatalf("fault %s: %s", f, got)
			}
			if got := rsaSignC(t, k, digest[:], salt); got != "fail "+rsaEFault+" "+zero {
				t.Fatalf("with %s corrupted: %.40s…, want fail %s and a zeroed signature", f, got, rsaEFault)
			}
		})
	}
}

// TestRSASignConstantTimeValgrind is the constant-time check of RSA-PSS signing: it builds
// test/rsact.c with crypto/rsa (-O2, -DRSA_CT_CHECK) and runs it under valgrind memcheck with a
// Go key's secret parts (p, q, dp, dq, qinv and the Montgomery constants derived from p and q)
// and each digest and salt (so the message representative) marked undefined through signing;
// memcheck must report no branch and no memory index that depends on them. Only the released
// signature and the fault check's verdict are declassified. The four signatures must be Go's
// for the same digest and salt. The same harness with "control" branches on dp once and must be
// reported, so the check is live. Memcheck sees neither instruction timings nor the boards'
// compilers (docs/DECISIONS.md).
func TestRSASignConstantTimeValgrind(t *testing.T) {
	run := valgrindConstantTime(t, []string{"-DRSA_CT_CHECK"}, "test/rsact.c", "crypto/rsa/rsa.c", "crypto/sha2/sha2.c")
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	blob := hex.EncodeToString(rsaPrivBlob(priv))
	out, code := run(blob)
	if code != 0 || !strings.Contains(out, "rsact 4/4") {
		t.Fatalf("memcheck with the key and the representative undefined: exit %d\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("harness printed %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines[:4] {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("harness line %q", l)
		}
		digest, _ := hex.DecodeString(f[0])
		salt, _ := hex.DecodeString(f[1])
		if want := hex.EncodeToString(goSignPSS(t, priv, digest, salt)); f[2] != want {
			t.Fatalf("signature under memcheck %s, Go %s", f[2], want)
		}
	}
	out, code = run(blob, "control")
	if code != valgrindErrExit || !strings.Contains(out, "uninitialised value") {
		t.Fatalf("the control's branch on dp was not reported: exit %d\n%s", code, out)
	}
}

// rsaBlobKey reads an rsa_privkey_set blob of a 2048-bit key back into Go's form (D = e^-1 mod
// lcm(p - 1, q - 1)) and checks it: Go's Validate, and the blob's dp, dq and qinv equal to what
// Go precomputes.
func rsaBlobKey(t *testing.T, blob []byte) *rsa.PrivateKey {
	t.Helper()
	const size, half = 256, 128
	if len(blob) != size+4+5*half {
		t.Fatalf("blob of %d bytes", len(blob))
	}
	num := func(off, n int) *big.Int { return new(big.Int).SetBytes(blob[off : off+n]) }
	p, q := num(size+4, half), num(size+4+half, half)
	one := big.NewInt(1)
	pm, qm := new(big.Int).Sub(p, one), new(big.Int).Sub(q, one)
	lcm := new(big.Int).Div(new(big.Int).Mul(pm, qm), new(big.Int).GCD(nil, nil, pm, qm))
	e := int(binary.BigEndian.Uint32(blob[size:]))
	d := new(big.Int).ModInverse(big.NewInt(int64(e)), lcm)
	if d == nil {
		t.Fatal("e has no inverse")
	}
	k := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: num(0, size), E: e}, D: d, Primes: []*big.Int{p, q}}
	if err := k.Validate(); err != nil {
		t.Fatal(err)
	}
	k.Precompute()
	if !bytes.Equal(rsaPrivBlob(k), blob) {
		t.Fatal("the blob's dp, dq or qinv are not Go's")
	}
	return k
}

// checkRSASignRecords checks a board's two "rsasign" rounds (test/rsabench.c): both keys
// accepted, the four signatures made, verified on the board and equal (by the first 16 bytes of
// their SHA-256) to Go's rsa.SignPSS with the same key, digest and salt; the four signing counts
// equal across two keys, four digests and four salts, and both rounds identical. It logs the
// counts and stacks (docs/BOARDS.md).
func checkRSASignRecords(t *testing.T, board string, runs []map[string]string) {
	t.Helper()
	if len(runs) != 2 {
		t.Fatalf("board printed %d rsasign rounds", len(runs))
	}
	var want []string
	for j := range 4 {
		name := "testdata/rsa/signkey-a.blob"
		if j == 3 {
			name = "testdata/rsa/signkey-b.blob"
		}
		blob, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		digest := sha256.Sum256([]byte{byte(j)})
		sig := goSignPSS(t, rsaBlobKey(t, blob), digest[:], bytes.Repeat([]byte{byte(j * 0x55)}, 32))
		h := sha256.Sum256(sig)
		want = append(want, hex.EncodeToString(h[:16]))
	}
	m := runs[0]
	if m["rc"] != "0,0,0,0,0,0" || m["verify"] != "0,0,0,0" || m["sig"] != strings.Join(want, ",") {
		t.Fatalf("%s: signing rc=%s verify=%s sig=%s, want Go's %s", board, m["rc"], m["verify"], m["sig"], strings.Join(want, ","))
	}
	counts := strings.Split(m["sign"], ",")
	if len(counts) != 4 || counts[0] != counts[1] || counts[0] != counts[2] || counts[0] != counts[3] {
		t.Fatalf("%s: signing counts %v differ between keys, digests or salts", board, counts)
	}
	for _, f := range []string{"set", "set_stack", "sign", "sign_stack", "rc", "sig"} {
		if runs[0][f] != runs[1][f] {
			t.Errorf("%s: rsasign %s differs between rounds: %s, %s", board, f, runs[0][f], runs[1][f])
		}
	}
	t.Logf("%s: RSA-2048 PSS signing (CRT) in %s: %s (stack %s B) for every key, digest and salt; rsa_privkey_set with its test signature %s (stack %s B)",
		board, m["unit"], counts[0], m["sign_stack"], m["set"], m["set_stack"])
}
