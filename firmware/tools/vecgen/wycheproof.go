package main

// Wycheproof ------------------------------------------------------------------------------
//
// With -wycheproof DIR, vecgen adds the Wycheproof ML-KEM and ML-DSA vectors of DIR (the
// files mlkem_<n>_test.json, mlkem_<n>_encaps_test.json, mlkem_<n>_semi_expanded_decaps_test.json
// and mldsa_<n>_verify_test.json) as the tables fw_wp_kems and fw_wp_sigs (core/vectors.h):
//
//   - keyGenDecaps (mlkem_<n>_test): keygen from the 64-byte seed d || z gives ek, and
//     decapsulating c with the key gives K. The file's invalid tests are seeds or ciphertexts
//     of another length than the set's, which the firmware's fixed-size API cannot express:
//     left out.
//   - encaps (mlkem_<n>_encaps_test): Encaps with the checks of FIPS 203 7.2 from ek and m
//     gives c and K, or, for an invalid key (a coefficient at or above q), refuses it. Keys of
//     another length are left out.
//   - decaps (mlkem_<n>_semi_expanded_decaps_test): Decaps with the checks of FIPS 203 7.3
//     gives K, or refuses a key whose hash H(ek) does not match. Other lengths left out.
//   - sigVer (mldsa_<n>_verify_test): pure ML-DSA Verify with the test's context gives the
//     expected result; a public key or signature of another length than the set's must be
//     refused unread (the firmware does not call verify then), as must a context over 255 bytes.
//
// -wymax limits the vectors per file, alternating between outcomes and flags (0 keeps all).

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"pqrepro/firmware/tools/acvppick"
)

type wpFile struct {
	TestGroups []struct {
		PublicKey string   `json:"publicKey"`
		Tests     []wpTest `json:"tests"`
	} `json:"testGroups"`
}

type wpTest struct {
	TcID   int      `json:"tcId"`
	Seed   string   `json:"seed"`
	EK     string   `json:"ek"`
	DK     string   `json:"dk"`
	M      string   `json:"m"`
	C      string   `json:"c"`
	K      string   `json:"K"`
	Msg    string   `json:"msg"`
	Ctx    *string  `json:"ctx"`
	Sig    string   `json:"sig"`
	Result string   `json:"result"`
	Flags  []string `json:"flags"`

	pk string // the group's public key (ML-DSA)
}

// wpTables holds the generated rows per parameter set, in the order of sets/dsaSets.
type wpTables struct {
	kems []wpKEM
	sigs []wpSig
}

type wpKEM struct {
	alg                    string
	keydecap, encap, decap []string
}

type wpSig struct {
	alg    string
	sigver []string
}

func loadWP(path string) ([]wpTest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f wpFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var all []wpTest
	for _, grp := range f.TestGroups {
		for _, t := range grp.Tests {
			t.pk = grp.PublicKey
			all = append(all, t)
		}
	}
	return all, nil
}

// pickWP keeps at most max tests, alternating between result and first flag.
func pickWP(tests []wpTest, max int) []wpTest {
	kept, _ := acvppick.Pick(tests, max, func(t wpTest) (string, error) {
		return t.Result + "/" + strings.Join(t.Flags, ","), nil
	})
	return kept
}

func hexLen(s string) int { return len(s) / 2 }

func wpValid(t wpTest) (int, error) {
	switch t.Result {
	case "valid":
		return 1, nil
	case "invalid":
		return 0, nil
	}
	return 0, fmt.Errorf("tcId %d: result %q (want valid or invalid)", t.TcID, t.Result)
}

// wycheproofTables reads dir's ML-KEM and ML-DSA files and emits their byte arrays into g.
func wycheproofTables(g *gen, dir string, max int) (*wpTables, error) {
	out := &wpTables{}
	for _, s := range []string{"ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"} {
		if !keepAlg(s) {
			continue
		}
		k, err := wpKEMTables(g, dir, s, max)
		if err != nil {
			return nil, err
		}
		out.kems = append(out.kems, k)
	}
	for _, s := range []string{"ML-DSA-44", "ML-DSA-65", "ML-DSA-87"} {
		if !keepAlg(s) {
			continue
		}
		tests, err := loadWP(filepath.Join(dir, "mldsa_"+strings.TrimPrefix(s, "ML-DSA-")+"_verify_test.json"))
		if err != nil {
			return nil, err
		}
		sig := wpSig{alg: s}
		for _, t := range pickWP(tests, max) {
			v, err := wpValid(t)
			if err != nil {
				return nil, err
			}
			ctx := ""
			if t.Ctx != nil {
				ctx = *t.Ctx
			}
			sig.sigver = append(sig.sigver, fmt.Sprintf("{%d, %d, %s, %s, %s, %s, %d, %d, %d, %d}", t.TcID, v,
				g.rawSharedHex(t.pk), g.bytesVar(t.Msg, 0), g.bytesVar(ctx, 0), g.bytesVar(t.Sig, 0),
				hexLen(t.pk), hexLen(t.Msg), hexLen(t.Sig), hexLen(ctx)))
		}
		out.sigs = append(out.sigs, sig)
	}
	return out, nil
}

func wpKEMTables(g *gen, dir, s string, max int) (wpKEM, error) {
	n := strings.TrimPrefix(s, "ML-KEM-")
	sz := sizes[s]
	k := wpKEM{alg: s}
	files := []string{"mlkem_" + n + "_test.json", "mlkem_" + n + "_encaps_test.json", "mlkem_" + n + "_semi_expanded_decaps_test.json"}
	var loaded [3][]wpTest
	for i, f := range files {
		tests, err := loadWP(filepath.Join(dir, f))
		if err != nil {
			return k, err
		}
		loaded[i] = tests
	}
	for _, t := range pickWP(fixedLen(loaded[0], func(t wpTest) bool {
		return hexLen(t.Seed) == 64 && hexLen(t.C) == sz.ct && t.Result == "valid"
	}), max) {
		k.keydecap = append(k.keydecap, fmt.Sprintf("{%d, 1, %s, %s, %s, %s}", t.TcID,
			g.bytesVar(t.Seed, 64), g.bytesVar(t.EK, sz.ek), g.bytesVar(t.C, sz.ct), g.bytesVar(t.K, 32)))
	}
	for _, t := range pickWP(fixedLen(loaded[1], func(t wpTest) bool {
		return hexLen(t.EK) == sz.ek && hexLen(t.M) == 32
	}), max) {
		v, err := wpValid(t)
		if err != nil {
			return k, err
		}
		c, kk := "0", "0"
		if v == 1 {
			c, kk = g.bytesVar(t.C, sz.ct), g.bytesVar(t.K, 32)
		}
		k.encap = append(k.encap, fmt.Sprintf("{%d, %d, %s, %s, %s, %s}", t.TcID, v,
			g.bytesVar(t.EK, sz.ek), g.bytesVar(t.M, 32), c, kk))
	}
	for _, t := range pickWP(fixedLen(loaded[2], func(t wpTest) bool {
		return hexLen(t.DK) == sz.dk && hexLen(t.C) == sz.ct
	}), max) {
		v, err := wpValid(t)
		if err != nil {
			return k, err
		}
		kk := "0"
		if v == 1 {
			kk = g.bytesVar(t.K, 32)
		}
		k.decap = append(k.decap, fmt.Sprintf("{%d, %d, %s, %s, %s}", t.TcID, v,
			g.bytesVar(t.DK, sz.dk), g.bytesVar(t.C, sz.ct), kk))
	}
	return k, nil
}

func fixedLen(tests []wpTest, keep func(wpTest) bool) []wpTest {
	var out []wpTest
	for _, t := range tests {
		if keep(t) {
			out = append(out, t)
		}
	}
	return out
}

// rawSharedHex is rawShared for a hex string (an ML-DSA group's public key, shared by its tests).
func (g *gen) rawSharedHex(hexs string) string {
	b, err := hex.DecodeString(hexs)
	if err != nil && g.err == nil {
		g.err = err
	}
	return g.rawShared(b)
}

// write emits the tables fw_wp_kems and fw_wp_sigs (always defined, possibly empty).
func (t *wpTables) write(w *bytes.Buffer, list func(typ, name string, items []string) string) {
	var kems, sigs []string
	if t != nil {
		for i, k := range t.kems {
			p := fmt.Sprintf("wk%d_", i)
			kems = append(kems, fmt.Sprintf("{%q, %s, %s, %s, %d, %d, %d}", k.alg,
				list("fw_wp_keydecap", p+"kd", k.keydecap), list("fw_wp_encap", p+"enc", k.encap),
				list("fw_wp_decap", p+"dec", k.decap), len(k.keydecap), len(k.encap), len(k.decap)))
		}
		for i, s := range t.sigs {
			sigs = append(sigs, fmt.Sprintf("{%q, %s, %d}", s.alg,
				list("fw_wp_sigver", fmt.Sprintf("ws%d_ver", i), s.sigver), len(s.sigver)))
		}
	}
	fmt.Fprintf(w, "const struct fw_wp_kem fw_wp_kems[] = {\n\t%s,\n};\n", strings.Join(orEmpty(kems), ",\n\t"))
	fmt.Fprintf(w, "const unsigned int fw_n_wp_kems = %d;\n", len(kems))
	fmt.Fprintf(w, "const struct fw_wp_sig fw_wp_sigs[] = {\n\t%s,\n};\n", strings.Join(orEmpty(sigs), ",\n\t"))
	fmt.Fprintf(w, "const unsigned int fw_n_wp_sigs = %d;\n", len(sigs))
}
