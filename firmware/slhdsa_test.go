package firmware

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudflare/circl/sign/slhdsa"
	"github.com/cloudflare/circl/xof"
)

// slhdsaSets are the twelve parameter sets as katcli names them (FIPS 205's
// names without "SLH-DSA-").
var slhdsaSets = []string{
	"SHA2-128s", "SHA2-128f", "SHA2-192s", "SHA2-192f", "SHA2-256s", "SHA2-256f",
	"SHAKE-128s", "SHAKE-128f", "SHAKE-192s", "SHAKE-192f", "SHAKE-256s", "SHAKE-256f",
}

// slhdsaAllEnv makes TestSLHDSASigGenACVP sign every ACVP case of the slow
// "s" sets instead of the default subset.
const slhdsaAllEnv = "PQREPRO_SLHDSA_ALL"

type slhdsaCase struct {
	TcID          int    `json:"tcId"`
	SKSeed        string `json:"skSeed"`
	SKPrf         string `json:"skPrf"`
	PKSeed        string `json:"pkSeed"`
	PK            string `json:"pk"`
	SK            string `json:"sk"`
	Message       string `json:"message"`
	MessageLength int    `json:"messageLength"`
	Context       string `json:"context"`
	AddRand       string `json:"additionalRandomness"`
	HashAlg       string `json:"hashAlg"`
	Signature     string `json:"signature"`
	TestPassed    *bool  `json:"testPassed"`
	Reason        string `json:"reason"`
}

type slhdsaGroup struct {
	TgID          int          `json:"tgId"`
	ParameterSet  string       `json:"parameterSet"`
	Deterministic bool         `json:"deterministic"`
	Interface     string       `json:"signatureInterface"`
	PreHash       string       `json:"preHash"`
	Tests         []slhdsaCase `json:"tests"`
}

type slhdsaFile struct {
	TestGroups []slhdsaGroup `json:"testGroups"`
}

// slhSet maps "SLH-DSA-SHA2-128s" to katcli's "SHA2-128s", failing on
// anything else.
func slhSet(t *testing.T, ps string) string {
	t.Helper()
	s, ok := strings.CutPrefix(ps, "SLH-DSA-")
	if !ok || !strings.Contains(strings.Join(slhdsaSets, " ")+" ", s+" ") {
		t.Fatalf("unknown SLH-DSA parameter set %q", ps)
	}
	return s
}

// slhArgs returns katcli's IFACE, MSG, CTX and trailing OID arguments for a
// case of group g. Groups without a signatureInterface (the revisions of the
// files here) test the internal functions: the message is M' itself.
func slhArgs(t *testing.T, g slhdsaGroup, tc slhdsaCase) (iface, msg, ctx string, oid []string) {
	t.Helper()
	switch {
	case g.Interface == "" || g.Interface == "internal":
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
	t.Fatalf("tgId %d: unknown interface %q / preHash %q", g.TgID, g.Interface, g.PreHash)
	return
}

func slhGroupName(g slhdsaGroup, set string) string {
	iface := "internal"
	if g.Interface == "external" {
		iface = g.PreHash
	}
	return "SLH-DSA-" + set + " " + iface
}

// TestSLHDSASizes checks each set's n and key and signature sizes against
// circl's parameter set of the same name.
func TestSLHDSASizes(t *testing.T) {
	k := startKatcli(t)
	for _, set := range slhdsaSets {
		id, err := slhdsa.IDByName("SLH-DSA-" + set)
		if err != nil {
			t.Fatalf("circl has no %s: %v", set, err)
		}
		s := id.Scheme()
		want := strconv.Itoa(s.PublicKeySize()/2) + " " + strconv.Itoa(s.PublicKeySize()) + " " +
			strconv.Itoa(s.PrivateKeySize()) + " " + strconv.Itoa(s.SignatureSize())
		if got := k.do(t, "slhdsa-sizes", set); got != want {
			t.Errorf("SLH-DSA-%s: n pk sk sig = %s, circl %s", set, got, want)
		}
	}
}

// TestSLHDSAKeyGenACVP checks slh_keygen_internal against every ACVP keyGen
// case (all twelve sets).
func TestSLHDSAKeyGenACVP(t *testing.T) {
	k := startKatcli(t)
	var f slhdsaFile
	acvpFile(t, "SLH-DSA-keyGen-FIPS205", "internalProjection.json", &f)
	counts, total := map[string]int{}, 0
	for _, g := range f.TestGroups {
		set := slhSet(t, g.ParameterSet)
		for _, tc := range g.Tests {
			if got := k.do(t, "slhdsa-keygen", set, tc.SKSeed, tc.SKPrf, tc.PKSeed); got != tc.PK+" "+tc.SK {
				t.Errorf("SLH-DSA-%s keyGen tcId %d: wrong pk/sk", set, tc.TcID)
				continue
			}
			counts["SLH-DSA-"+set]++
			total++
		}
	}
	logCounts(t, "keyGen", counts)
	if total != 120 || len(counts) != 12 {
		t.Fatalf("%d of 120 keyGen cases passed in %d of 12 sets", total, len(counts))
	}
}

// TestSLHDSASigVerACVP checks verification against every ACVP sigVer case
// (all twelve sets), the expected failures included.
func TestSLHDSASigVerACVP(t *testing.T) {
	k := startKatcli(t)
	var prompt, expected slhdsaFile
	acvpFile(t, "SLH-DSA-sigVer-FIPS205__v1.1.0.37", "prompt.json", &prompt)
	acvpFile(t, "SLH-DSA-sigVer-FIPS205__v1.1.0.37", "expectedResults.json", &expected)
	want := map[[2]int]bool{}
	for _, g := range expected.TestGroups {
		for _, tc := range g.Tests {
			if tc.TestPassed == nil {
				t.Fatalf("tgId %d tcId %d: no testPassed", g.TgID, tc.TcID)
			}
			want[[2]int{g.TgID, tc.TcID}] = *tc.TestPassed
		}
	}
	counts, total, rejected := map[string]int{}, 0, 0
	for _, g := range prompt.TestGroups {
		set := slhSet(t, g.ParameterSet)
		name := slhGroupName(g, set)
		for _, tc := range g.Tests {
			pass, ok := want[[2]int{g.TgID, tc.TcID}]
			if !ok {
				t.Fatalf("%s tcId %d: no expected result", name, tc.TcID)
			}
			iface, msg, ctx, oid := slhArgs(t, g, tc)
			got := k.do(t, append([]string{"slhdsa-verify", set, iface, tc.PK, msg, ctx, tc.Signature}, oid...)...)
			if (got == "ok") != pass {
				t.Errorf("%s tcId %d: verify = %s, want passed=%v", name, tc.TcID, got, pass)
				continue
			}
			if !pass {
				rejected++
			}
			counts[name]++
			total++
		}
	}
	logCounts(t, "sigVer", counts)
	if total != 108 || len(counts) != 12 || rejected != 72 {
		t.Fatalf("%d of 108 sigVer cases passed in %d of 12 groups (%d of 72 expected failures refused)", total, len(counts), rejected)
	}
}

// TestSLHDSASigGenACVP checks signing against the ACVP sigGen cases, which
// cover five sets (SHA2-192s, SHA2-256f, SHAKE-128f, SHAKE-192s,
// SHAKE-256f), deterministic and hedged. Every "f" case is signed; of the
// slow "s" sets only the shortest and the longest message of each group,
// unless PQREPRO_SLHDSA_ALL=1 asks for all of them.
func TestSLHDSASigGenACVP(t *testing.T) {
	k := startKatcli(t)
	var prompt, expected slhdsaFile
	acvpFile(t, "SLH-DSA-sigGen-FIPS205__v1.1.0.35", "prompt.json", &prompt)
	acvpFile(t, "SLH-DSA-sigGen-FIPS205__v1.1.0.35", "expectedResults.json", &expected)
	want := map[[2]int]string{}
	for _, g := range expected.TestGroups {
		for _, tc := range g.Tests {
			want[[2]int{g.TgID, tc.TcID}] = tc.Signature
		}
	}
	all := os.Getenv(slhdsaAllEnv) == "1"
	counts, skipped, total, cases := map[string]int{}, map[string]int{}, 0, 0
	sets := map[string]bool{}
	for _, g := range prompt.TestGroups {
		set := slhSet(t, g.ParameterSet)
		sets[set] = true
		mode := "hedged"
		if g.Deterministic {
			mode = "deterministic"
		}
		name := slhGroupName(g, set) + " " + mode
		tests := g.Tests
		if strings.HasSuffix(set, "s") && !all && len(tests) > 2 {
			byLen := append([]slhdsaCase(nil), tests...)
			sort.SliceStable(byLen, func(i, j int) bool { return byLen[i].MessageLength < byLen[j].MessageLength })
			tests = []slhdsaCase{byLen[0], byLen[len(byLen)-1]}
			skipped[name] = len(g.Tests) - 2
		}
		cases += len(g.Tests)
		for _, tc := range tests {
			if g.Deterministic != (tc.AddRand == "") {
				t.Fatalf("tgId %d tcId %d: deterministic=%v but additionalRandomness %q", g.TgID, tc.TcID, g.Deterministic, tc.AddRand)
			}
			sig, ok := want[[2]int{g.TgID, tc.TcID}]
			if !ok {
				t.Fatalf("tgId %d tcId %d: no expected signature", g.TgID, tc.TcID)
			}
			iface, msg, ctx, oid := slhArgs(t, g, tc)
			if got := k.do(t, append([]string{"slhdsa-sign", set, iface, tc.SK, msg, ctx, tc.AddRand}, oid...)...); got != sig {
				t.Errorf("%s tcId %d: wrong signature", name, tc.TcID)
				continue
			}
			counts[name]++
			total++
		}
	}
	logCounts(t, "sigGen", counts)
	for name, n := range skipped {
		t.Logf("sigGen %s: %d cases not signed (set %s=1 to sign all)", name, n, slhdsaAllEnv)
	}
	nskip := 0
	for _, n := range skipped {
		nskip += n
	}
	if cases != 88 || len(sets) != 5 || len(counts) != 10 || total+nskip != cases {
		t.Fatalf("%d sigGen cases signed, %d left out, of %d (want 88) in %d of 10 groups over %d of 5 sets", total, nskip, cases, len(counts), len(sets))
	}
}

// TestSLHDSACirclCrossCheck compares the C SLH-DSA with circl on random
// seeds, messages and contexts, for every set: the same keys, byte-identical
// deterministic signatures (pure, and pre-hash for the "f" sets), each side
// verifying the other's signatures, hedged ones included, and tampering
// refused. Each set is looked up in circl by its FIPS 205 name, so a set
// wired to the wrong parameters or hash family fails here. The "s" sets,
// slow to sign, run one iteration; the "f" sets three.
func TestSLHDSACirclCrossCheck(t *testing.T) {
	startKatcli(t) // builds katcli once before the parallel subtests
	up := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	for _, set := range slhdsaSets {
		t.Run(set, func(t *testing.T) {
			t.Parallel()
			k := startKatcli(t)
			id, err := slhdsa.IDByName("SLH-DSA-" + set)
			if err != nil || id.String() != "SLH-DSA-"+set {
				t.Fatalf("circl ID for %s: %v %v", set, id, err)
			}
			n := id.Scheme().PublicKeySize() / 2
			iters, fast := 1, strings.HasSuffix(set, "f")
			if fast {
				iters = 3
			}
			for i := 0; i < iters; i++ {
				seeds, msg, ctx, addrnd := make([]byte, 3*n), make([]byte, 1+(i*397)%2000), make([]byte, (i*101)%256), make([]byte, n)
				for _, b := range [][]byte{seeds, msg, ctx, addrnd} {
					rand.Read(b)
				}
				pub, priv, err := slhdsa.GenerateKey(bytes.NewReader(seeds), id)
				if err != nil {
					t.Fatal(err)
				}
				pkb, _ := pub.MarshalBinary()
				skb, _ := priv.MarshalBinary()
				got := strings.Fields(k.do(t, "slhdsa-keygen", set, up(seeds[:n]), up(seeds[n:2*n]), up(seeds[2*n:])))
				if len(got) != 2 || got[0] != up(pkb) || got[1] != up(skb) {
					t.Fatalf("keygen differs from circl for seeds %x", seeds)
				}
				pk, sk := got[0], got[1]
				m := slhdsa.NewMessage(msg)
				want, err := slhdsa.SignDeterministic(&priv, m, ctx)
				if err != nil {
					t.Fatal(err)
				}
				det := k.do(t, "slhdsa-sign", set, "pure", sk, up(msg), up(ctx), "")
				if det != up(want) {
					t.Fatalf("deterministic signature differs from circl (%d-byte message, %d-byte context)", len(msg), len(ctx))
				}
				hedged := k.do(t, "slhdsa-sign", set, "pure", sk, up(msg), up(ctx), up(addrnd))
				if hedged == det || len(hedged) != len(det) {
					t.Fatalf("hedged signature equals the deterministic one or differs in length")
				}
				raw, _ := hex.DecodeString(hedged)
				if !slhdsa.Verify(&pub, m, raw, ctx) {
					t.Fatalf("circl rejects the C hedged signature")
				}
				if !slhdsa.Verify(&pub, m, want, ctx) {
					t.Fatalf("circl rejects its own signature")
				}
				theirs := want
				if fast {
					// A circl signature the C code has not made itself.
					theirs, err = slhdsa.SignRandomized(&priv, rand.Reader, m, ctx)
					if err != nil {
						t.Fatal(err)
					}
				}
				if r := k.do(t, "slhdsa-verify", set, "pure", pk, up(msg), up(ctx), up(theirs)); r != "ok" {
					t.Fatalf("C rejects circl's signature: %s", r)
				}
				bad := append([]byte(nil), theirs...)
				bad[(i*7919)%len(bad)] ^= 0x10
				if r := k.do(t, "slhdsa-verify", set, "pure", pk, up(msg), up(ctx), up(bad)); r != "fail" {
					t.Fatalf("C accepts a tampered signature: %s", r)
				}
				if slhdsa.Verify(&pub, m, bad, ctx) {
					t.Fatalf("circl accepts the tampered signature")
				}
				if r := k.do(t, "slhdsa-verify", set, "pure", pk, up(append([]byte{1}, msg...)), up(ctx), up(theirs)); r != "fail" {
					t.Fatalf("C accepts a signature for another message: %s", r)
				}
				if r := k.do(t, "slhdsa-verify", set, "pure", pk, up(msg), up(append(ctx, 1)), up(theirs)); r != "fail" {
					t.Fatalf("C accepts a signature under another context: %s", r)
				}
				if r := k.do(t, "slhdsa-verify", set, "internal", pk, up(msg), "", up(theirs)); r != "fail" {
					t.Fatalf("C accepts a pure signature as an internal one: %s", r)
				}
				if r := k.do(t, "slhdsa-verify", set, "pure", pk, up(msg), up(ctx), up(theirs[:len(theirs)-1])); r != "fail" {
					t.Fatalf("C accepts a short signature: %s", r)
				}
				if !fast {
					continue
				}
				// HashSLH-DSA: PH(M) from Go, the rest in C, against circl.
				var ph *slhdsa.PreHash
				alg := []string{"SHA2-256", "SHA2-512", "SHAKE-128"}[i%3]
				switch alg {
				case "SHA2-256":
					ph, err = slhdsa.NewPreHashWithHash(crypto.SHA256)
				case "SHA2-512":
					ph, err = slhdsa.NewPreHashWithHash(crypto.SHA512)
				default:
					ph, err = slhdsa.NewPreHashWithXof(xof.SHAKE128)
				}
				if err != nil {
					t.Fatal(err)
				}
				ph.Write(msg)
				pm, err := ph.BuildMessage()
				if err != nil {
					t.Fatal(err)
				}
				wantPH, err := slhdsa.SignDeterministic(&priv, pm, ctx)
				if err != nil {
					t.Fatal(err)
				}
				d, oid := prehash(t, alg, msg)
				gotPH := k.do(t, "slhdsa-sign", set, "prehash", sk, up(d), up(ctx), "", up(oid))
				if gotPH != up(wantPH) {
					t.Fatalf("HashSLH-DSA (%s) signature differs from circl", alg)
				}
				if r := k.do(t, "slhdsa-verify", set, "prehash", pk, up(d), up(ctx), gotPH, up(oid)); r != "ok" {
					t.Fatalf("C rejects its HashSLH-DSA signature: %s", r)
				}
				if r := k.do(t, "slhdsa-verify", set, "pure", pk, up(d), up(ctx), gotPH); r != "fail" {
					t.Fatalf("C accepts a HashSLH-DSA signature as a pure one: %s", r)
				}
			}
			t.Logf("SLH-DSA-%s: %d random key pairs agree with circl", set, iters)
		})
	}
}

// TestSLHDSAContextLimit checks that a context string over 255 bytes is
// refused by signing and verification (FIPS 205 Algorithms 22 and 24).
func TestSLHDSAContextLimit(t *testing.T) {
	k := startKatcli(t)
	for _, set := range []string{"SHA2-128f", "SHAKE-128f"} {
		seed := strings.Repeat("5A", 16)
		keys := strings.Fields(k.do(t, "slhdsa-keygen", set, seed, seed, seed))
		long := strings.Repeat("AB", 256)
		if got := k.do(t, "slhdsa-sign", set, "pure", keys[1], "00", long, ""); got != "fail" {
			t.Fatalf("SLH-DSA-%s signed with a 256-byte context", set)
		}
		sig := k.do(t, "slhdsa-sign", set, "pure", keys[1], "00", long[:510], "")
		if got := k.do(t, "slhdsa-verify", set, "pure", keys[0], "00", long[:510], sig); got != "ok" {
			t.Fatalf("SLH-DSA-%s: a 255-byte context does not verify: %s", set, got)
		}
		if got := k.do(t, "slhdsa-verify", set, "pure", keys[0], "00", long, sig); got != "fail" {
			t.Fatalf("SLH-DSA-%s verified with a 256-byte context", set)
		}
	}
}
