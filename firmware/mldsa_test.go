package firmware

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudflare/circl/sign"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	"github.com/cloudflare/circl/sign/mldsa/mldsa87"
)

// mldsaSets are the parameter sets as katcli names them, with circl's
// scheme of the same name.
var mldsaSets = []struct {
	set    string
	scheme sign.Scheme
}{{"44", mldsa44.Scheme()}, {"65", mldsa65.Scheme()}, {"87", mldsa87.Scheme()}}

// acvpFile reads one ACVP JSON file; it skips the test when the shared
// vectors are not next to the repository.
func acvpFile(t *testing.T, dir, file string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(acvpDir, dir, file))
	if err != nil {
		t.Skipf("ACVP vectors not available: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s/%s: %v", dir, file, err)
	}
}

type mldsaCase struct {
	TcID       int    `json:"tcId"`
	Seed       string `json:"seed"`
	PK         string `json:"pk"`
	SK         string `json:"sk"`
	Message    string `json:"message"`
	Mu         string `json:"mu"`
	Context    string `json:"context"`
	Rnd        string `json:"rnd"`
	HashAlg    string `json:"hashAlg"`
	Signature  string `json:"signature"`
	TestPassed *bool  `json:"testPassed"`
	Reason     string `json:"reason"`
}

type mldsaGroup struct {
	TgID          int         `json:"tgId"`
	ParameterSet  string      `json:"parameterSet"`
	Deterministic bool        `json:"deterministic"`
	Interface     string      `json:"signatureInterface"`
	PreHash       string      `json:"preHash"`
	ExternalMu    bool        `json:"externalMu"`
	Tests         []mldsaCase `json:"tests"`
}

type mldsaFile struct {
	TestGroups []mldsaGroup `json:"testGroups"`
}

// dsaSet maps "ML-DSA-44" to katcli's "44", failing on anything else.
func dsaSet(t *testing.T, ps string) string {
	t.Helper()
	s, ok := strings.CutPrefix(ps, "ML-DSA-")
	if !ok || (s != "44" && s != "65" && s != "87") {
		t.Fatalf("unknown ML-DSA parameter set %q", ps)
	}
	return s
}

// prehash returns PH(M) and the DER encoding of PH's OID (FIPS 204 5.4),
// computed with Go's standard library.
func prehash(t *testing.T, alg string, msg []byte) (digest, oid []byte) {
	t.Helper()
	arcs := map[string]byte{"SHA2-256": 1, "SHA2-384": 2, "SHA2-512": 3, "SHA2-224": 4, "SHA2-512/224": 5,
		"SHA2-512/256": 6, "SHA3-224": 7, "SHA3-256": 8, "SHA3-384": 9, "SHA3-512": 10, "SHAKE-128": 11, "SHAKE-256": 12}
	arc, ok := arcs[alg]
	if !ok {
		t.Fatalf("unknown pre-hash %q", alg)
	}
	oid = []byte{0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, arc}
	switch alg {
	case "SHA2-224":
		h := sha256.Sum224(msg)
		return h[:], oid
	case "SHA2-256":
		h := sha256.Sum256(msg)
		return h[:], oid
	case "SHA2-384":
		h := sha512.Sum384(msg)
		return h[:], oid
	case "SHA2-512":
		h := sha512.Sum512(msg)
		return h[:], oid
	case "SHA2-512/224":
		h := sha512.Sum512_224(msg)
		return h[:], oid
	case "SHA2-512/256":
		h := sha512.Sum512_256(msg)
		return h[:], oid
	case "SHA3-224":
		h := sha3.Sum224(msg)
		return h[:], oid
	case "SHA3-256":
		h := sha3.Sum256(msg)
		return h[:], oid
	case "SHA3-384":
		h := sha3.Sum384(msg)
		return h[:], oid
	case "SHA3-512":
		h := sha3.Sum512(msg)
		return h[:], oid
	case "SHAKE-128":
		return sha3.SumSHAKE128(msg, 32), oid
	default: // SHAKE-256
		return sha3.SumSHAKE256(msg, 64), oid
	}
}

// dsaArgs returns katcli's IFACE, MSG, CTX and trailing OID arguments for a
// case of group g.
func dsaArgs(t *testing.T, g mldsaGroup, tc mldsaCase) (iface, msg, ctx string, oid []string) {
	t.Helper()
	switch {
	case g.Interface == "internal" && g.ExternalMu:
		return "mu", tc.Mu, "", nil
	case g.Interface == "internal":
		return "internal", tc.Message, "", nil
	case g.Interface == "external" && g.PreHash == "pure":
		return "pure", tc.Message, tc.Context, nil
	case g.Interface == "external" && g.PreHash == "preHash":
		m, err := hex.DecodeString(tc.Message)
		if err != nil {
			t.Fatalf("tcId %d: message: %v", tc.TcID, err)
		}
		d, o := prehash(t, tc.HashAlg, m)
		return "prehash", hex.EncodeToString(d), tc.Context, []string{hex.EncodeToString(o)}
	}
	t.Fatalf("tgId %d: unknown interface %q / preHash %q / externalMu %v", g.TgID, g.Interface, g.PreHash, g.ExternalMu)
	return
}

// groupName labels a group in counts and messages.
func groupName(g mldsaGroup, set string) string {
	iface := g.Interface
	switch {
	case g.Interface == "internal" && g.ExternalMu:
		iface = "internal-mu"
	case g.Interface == "external":
		iface = g.PreHash
	}
	return "ML-DSA-" + set + " " + iface
}

func logCounts(t *testing.T, what string, counts map[string]int) {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s %s: %d passed", what, k, counts[k])
	}
}

// TestMLDSAKeyGenACVP checks ML-DSA.KeyGen_internal against every ACVP
// keyGen case.
func TestMLDSAKeyGenACVP(t *testing.T) {
	k := startKatcli(t)
	var f mldsaFile
	acvpFile(t, "ML-DSA-keyGen-FIPS204", "internalProjection.json", &f)
	counts, total := map[string]int{}, 0
	for _, g := range f.TestGroups {
		set := dsaSet(t, g.ParameterSet)
		for _, tc := range g.Tests {
			if got := k.do(t, "mldsa-keygen", set, tc.Seed); got != tc.PK+" "+tc.SK {
				t.Errorf("ML-DSA-%s keyGen tcId %d: wrong pk/sk", set, tc.TcID)
				continue
			}
			counts["ML-DSA-"+set]++
			total++
		}
	}
	logCounts(t, "keyGen", counts)
	if total != 75 {
		t.Fatalf("%d of 75 keyGen cases passed", total)
	}
}

// TestMLDSASigGenACVP checks signing against every ACVP sigGen case: pure,
// pre-hash (PH computed in Go, the rest in C), internal and external mu,
// deterministic and hedged.
func TestMLDSASigGenACVP(t *testing.T) {
	k := startKatcli(t)
	var prompt, expected mldsaFile
	acvpFile(t, "ML-DSA-sigGen-FIPS204", "prompt.json", &prompt)
	acvpFile(t, "ML-DSA-sigGen-FIPS204", "expectedResults.json", &expected)
	want := map[[2]int]string{}
	for _, g := range expected.TestGroups {
		for _, tc := range g.Tests {
			want[[2]int{g.TgID, tc.TcID}] = tc.Signature
		}
	}
	counts, total := map[string]int{}, 0
	rounds := map[string][]int{}
	for _, g := range prompt.TestGroups {
		set := dsaSet(t, g.ParameterSet)
		mode := "hedged"
		if g.Deterministic {
			mode = "deterministic"
		}
		name := groupName(g, set) + " " + mode
		for _, tc := range g.Tests {
			if g.Deterministic != (tc.Rnd == "") {
				t.Fatalf("tgId %d tcId %d: deterministic=%v but rnd %q", g.TgID, tc.TcID, g.Deterministic, tc.Rnd)
			}
			sig, ok := want[[2]int{g.TgID, tc.TcID}]
			if !ok {
				t.Fatalf("tgId %d tcId %d: no expected signature", g.TgID, tc.TcID)
			}
			iface, msg, ctx, oid := dsaArgs(t, g, tc)
			got := strings.Fields(k.do(t, append([]string{"mldsa-sign", set, iface, tc.SK, msg, ctx, tc.Rnd}, oid...)...))
			if len(got) != 2 || got[0] != sig {
				t.Errorf("%s tcId %d: wrong signature", name, tc.TcID)
				continue
			}
			r, err := strconv.Atoi(got[1])
			if err != nil || r < 1 {
				t.Errorf("%s tcId %d: round count %q", name, tc.TcID, got[1])
				continue
			}
			rounds["ML-DSA-"+set] = append(rounds["ML-DSA-"+set], r)
			counts[name]++
			total++
		}
	}
	logCounts(t, "sigGen", counts)
	for set, rs := range rounds {
		sort.Ints(rs)
		t.Logf("sigGen %s: rejection rounds min %d median %d max %d over %d signatures", set, rs[0], rs[len(rs)/2], rs[len(rs)-1], len(rs))
	}
	if total != 360 || len(counts) != 24 {
		t.Fatalf("%d of 360 sigGen cases passed in %d of 24 groups", total, len(counts))
	}
}

// TestMLDSASigVerACVP checks verification against every ACVP sigVer case,
// the expected failures included.
func TestMLDSASigVerACVP(t *testing.T) {
	k := startKatcli(t)
	var f mldsaFile
	acvpFile(t, "ML-DSA-sigVer-FIPS204", "internalProjection.json", &f)
	counts, total, rejected := map[string]int{}, 0, 0
	for _, g := range f.TestGroups {
		set := dsaSet(t, g.ParameterSet)
		name := groupName(g, set)
		for _, tc := range g.Tests {
			if tc.TestPassed == nil {
				t.Fatalf("%s tcId %d: no testPassed", name, tc.TcID)
			}
			iface, msg, ctx, oid := dsaArgs(t, g, tc)
			got := k.do(t, append([]string{"mldsa-verify", set, iface, tc.PK, msg, ctx, tc.Signature}, oid...)...)
			if (got == "ok") != *tc.TestPassed {
				t.Errorf("%s tcId %d (%s): verify = %s, want passed=%v", name, tc.TcID, tc.Reason, got, *tc.TestPassed)
				continue
			}
			if !*tc.TestPassed {
				rejected++
			}
			counts[name]++
			total++
		}
	}
	logCounts(t, "sigVer", counts)
	if total != 180 || len(counts) != 12 || rejected != 144 {
		t.Fatalf("%d of 180 sigVer cases passed in %d of 12 groups (%d expected failures refused)", total, len(counts), rejected)
	}
}

// TestMLDSACirclCrossCheck compares the C ML-DSA with circl on random seeds,
// messages and contexts: the same keys, the same deterministic signatures,
// each side verifying the other's signatures, hedged ones included. Each set
// is looked up by circl's scheme name, so a set wired to the wrong
// parameters (sizes or values) fails here.
func TestMLDSACirclCrossCheck(t *testing.T) {
	k := startKatcli(t)
	up := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	for _, p := range mldsaSets {
		t.Run("ML-DSA-"+p.set, func(t *testing.T) {
			if p.scheme.Name() != "ML-DSA-"+p.set {
				t.Fatalf("circl scheme %s for set %s", p.scheme.Name(), p.set)
			}
			maxRounds := 0
			for i := 0; i < 25; i++ {
				seed, msg, ctx, rnd := make([]byte, 32), make([]byte, (i*37)%700), make([]byte, (i*11)%256), make([]byte, 32)
				for _, b := range [][]byte{seed, msg, ctx, rnd} {
					rand.Read(b)
				}
				pk, sk := p.scheme.DeriveKey(seed)
				pkb, _ := pk.MarshalBinary()
				skb, _ := sk.MarshalBinary()
				got := strings.Fields(k.do(t, "mldsa-keygen", p.set, up(seed)))
				if len(got) != 2 || got[0] != up(pkb) || got[1] != up(skb) {
					t.Fatalf("keygen differs from circl for seed %x", seed)
				}
				if len(got[0]) != 2*p.scheme.PublicKeySize() || len(got[1]) != 2*p.scheme.PrivateKeySize() {
					t.Fatalf("key sizes %d/%d, circl %d/%d", len(got[0])/2, len(got[1])/2, p.scheme.PublicKeySize(), p.scheme.PrivateKeySize())
				}
				opts := &sign.SignatureOpts{Context: string(ctx)}
				want := p.scheme.Sign(sk, msg, opts)
				det := strings.Fields(k.do(t, "mldsa-sign", p.set, "pure", got[1], up(msg), up(ctx), ""))
				if len(det) != 2 || det[0] != up(want) {
					t.Fatalf("deterministic signature differs from circl (seed %x, %d-byte message)", seed, len(msg))
				}
				// rnd = 32 zero bytes is the deterministic variant too.
				zero := strings.Fields(k.do(t, "mldsa-sign", p.set, "pure", got[1], up(msg), up(ctx), strings.Repeat("00", 32)))
				if len(zero) != 2 || zero[0] != det[0] || zero[1] != det[1] {
					t.Fatalf("rnd = 0 and rnd omitted sign differently")
				}
				hedged := strings.Fields(k.do(t, "mldsa-sign", p.set, "pure", got[1], up(msg), up(ctx), up(rnd)))
				if len(hedged) != 2 || hedged[0] == det[0] {
					t.Fatalf("hedged signature equals the deterministic one")
				}
				for _, s := range []string{det[0], hedged[0]} {
					raw, _ := hex.DecodeString(s)
					if len(raw) != p.scheme.SignatureSize() {
						t.Fatalf("signature of %d bytes, circl %d", len(raw), p.scheme.SignatureSize())
					}
					if !p.scheme.Verify(pk, msg, raw, opts) {
						t.Fatalf("circl rejects the C signature (seed %x)", seed)
					}
				}
				// circl's hedged signature verifies in C; tampering does not.
				var cs []byte
				switch p.set {
				case "44":
					cs = make([]byte, mldsa44.SignatureSize)
					if err := mldsa44.SignTo(sk.(*mldsa44.PrivateKey), msg, ctx, true, cs); err != nil {
						t.Fatal(err)
					}
				case "65":
					cs = make([]byte, mldsa65.SignatureSize)
					if err := mldsa65.SignTo(sk.(*mldsa65.PrivateKey), msg, ctx, true, cs); err != nil {
						t.Fatal(err)
					}
				case "87":
					cs = make([]byte, mldsa87.SignatureSize)
					if err := mldsa87.SignTo(sk.(*mldsa87.PrivateKey), msg, ctx, true, cs); err != nil {
						t.Fatal(err)
					}
				}
				if r := k.do(t, "mldsa-verify", p.set, "pure", got[0], up(msg), up(ctx), up(cs)); r != "ok" {
					t.Fatalf("C rejects circl's signature: %s", r)
				}
				bad := append([]byte(nil), cs...)
				bad[len(bad)/2] ^= 1
				if r := k.do(t, "mldsa-verify", p.set, "pure", got[0], up(msg), up(ctx), up(bad)); r != "fail" {
					t.Fatalf("C accepts a tampered signature: %s", r)
				}
				if r := k.do(t, "mldsa-verify", p.set, "pure", got[0], up(msg), up(append(ctx, 1)), up(cs)); r != "fail" {
					t.Fatalf("C accepts a signature under another context: %s", r)
				}
				if r := k.do(t, "mldsa-verify", p.set, "pure", got[0], up(msg), up(ctx), up(cs[:len(cs)-1])); r != "fail" {
					t.Fatalf("C accepts a short signature: %s", r)
				}
				for _, s := range [][]string{det, hedged} {
					n, err := strconv.Atoi(s[1])
					if err != nil || n < 1 {
						t.Fatalf("round count %q", s[1])
					}
					maxRounds = max(maxRounds, n)
				}
			}
			t.Logf("ML-DSA-%s: 25 seeds agree with circl; at most %d rejection rounds", p.set, maxRounds)
		})
	}
}

// TestMLDSAContextLimit checks that a context string over 255 bytes is
// refused by signing and verification (FIPS 204 Algorithms 2 and 3).
func TestMLDSAContextLimit(t *testing.T) {
	k := startKatcli(t)
	for _, p := range mldsaSets {
		seed := make([]byte, 32)
		rand.Read(seed)
		keys := strings.Fields(k.do(t, "mldsa-keygen", p.set, hex.EncodeToString(seed)))
		long := strings.Repeat("AB", 256)
		if got := k.do(t, "mldsa-sign", p.set, "pure", keys[1], "00", long, ""); got != "fail" {
			t.Fatalf("ML-DSA-%s signed with a 256-byte context", p.set)
		}
		sig := strings.Fields(k.do(t, "mldsa-sign", p.set, "pure", keys[1], "00", long[:510], ""))
		if got := k.do(t, "mldsa-verify", p.set, "pure", keys[0], "00", long[:510], sig[0]); got != "ok" {
			t.Fatalf("ML-DSA-%s: a 255-byte context does not verify: %s", p.set, got)
		}
		if got := k.do(t, "mldsa-verify", p.set, "pure", keys[0], "00", long, sig[0]); got != "fail" {
			t.Fatalf("ML-DSA-%s verified with a 256-byte context", p.set)
		}
	}
}
