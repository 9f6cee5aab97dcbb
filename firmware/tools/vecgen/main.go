// Command vecgen turns NIST's ACVP ML-KEM and ML-DSA JSON files into the C known-answer
// tables the firmware's SELFTEST runs, and adds hash vectors computed with
// Go's standard library. Nothing in the output is computed by the firmware's
// own code.
//
//	go run ./firmware/tools/vecgen -acvp ../shared/test-vectors/acvp -max 3 -o build/x/vectors.c
//
// ML-DSA: every keyGen test, and the sigGen (deterministic) and sigVer tests of pure ML-DSA
// with a context (signatureInterface external, preHash pure): what BENCH runs.
//
// SLH-DSA: per set 1 keyGen and 2 sigVer tests (one refused, one accepted), and 1
// deterministic sigGen test of SHAKE-128f and SHA2-256f, on every build (see slhdsaTables).
//
// Ascon: the Ascon designers' KAT files named by asconpick (SP 800-232 AEAD128, Hash256,
// XOF128, CXOF128; v1.2 Ascon-128 and Ascon-128a): every record with -max 0, else the boards'
// four per file (the records firmware/vectors/ascon holds).
//
// -max limits the vectors per ACVP test group (0 keeps all); when a group
// mixes outcomes (valid and modified ciphertexts, passing and failing key
// checks) the kept vectors alternate between them.
package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"pqrepro/ascon/kat"
	"pqrepro/firmware/tools/acvppick"
	"pqrepro/firmware/tools/asconpick"
)

type acvpFile struct {
	VsID       int `json:"vsId"`
	TestGroups []struct {
		TgID         int    `json:"tgId"`
		ParameterSet string `json:"parameterSet"`
		Function     string `json:"function"`
		Tests        []acvpTest
	} `json:"testGroups"`
}

type acvpTest struct {
	TcID       int    `json:"tcId"`
	D          string `json:"d"`
	Z          string `json:"z"`
	EK         string `json:"ek"`
	DK         string `json:"dk"`
	C          string `json:"c"`
	K          string `json:"k"`
	M          string `json:"m"`
	Reason     string `json:"reason"`
	TestPassed *bool  `json:"testPassed"`
}

func main() {
	dir := flag.String("acvp", "../shared/test-vectors/acvp", "ACVP vector directory")
	max := flag.Int("max", 0, "vectors kept per ACVP test group (0 = all)")
	out := flag.String("o", "vectors.c", "output C file")
	asconDir := flag.String("ascon", "../shared/test-vectors/ascon", "Ascon KAT directory (NIST LWC KAT files)")
	wpDir := flag.String("wycheproof", "", "Wycheproof vector directory (ML-KEM and ML-DSA files); empty: no Wycheproof groups")
	wpMax := flag.Int("wymax", 0, "Wycheproof vectors kept per file (0 = all)")
	algs := flag.String("algs", "", "comma-separated algorithms whose ACVP vectors are kept (default all): a board with a declared subset")
	flag.Parse()
	keepAlg = func(string) bool { return true }
	if *algs != "" {
		want := map[string]bool{}
		for _, a := range strings.Split(*algs, ",") {
			want[strings.TrimSpace(a)] = true
		}
		keepAlg = func(a string) bool { return want[a] }
	}
	if err := run(*dir, *asconDir, *wpDir, *max, *wpMax, *out); err != nil {
		log.Fatalf("vecgen: %v", err)
	}
}

func load(path string) (*acvpFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f acvpFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &f, nil
}

// pick keeps at most max tests of a group, alternating between outcomes (acvppick).
func pick(tests []acvpTest, max int) []acvpTest {
	kept, _ := acvppick.Pick(tests, max, func(t acvpTest) (string, error) {
		if t.TestPassed != nil {
			return fmt.Sprint(*t.TestPassed), nil
		}
		return t.Reason, nil
	})
	return kept
}

// keepAlg selects the algorithms whose vectors go into the table (-algs).
var keepAlg func(string) bool

type gen struct {
	buf    bytes.Buffer
	n      int
	err    error
	shared map[string]string
}

// bytesVar emits a byte array from hex and returns its name.
func (g *gen) bytesVar(hexs string, want int) string {
	b, err := hex.DecodeString(hexs)
	if err != nil && g.err == nil {
		g.err = err
	}
	if want > 0 && len(b) != want && g.err == nil {
		g.err = fmt.Errorf("vector field has %d bytes, want %d", len(b), want)
	}
	return g.raw(b)
}

// rawShared is raw for inputs that repeat across records (the KAT files' keys, nonces and
// messages are prefixes of one counting sequence): one array per distinct value.
func (g *gen) rawShared(b []byte) string {
	if g.shared == nil {
		g.shared = map[string]string{}
	}
	if name, ok := g.shared[string(b)]; ok {
		return name
	}
	name := g.raw(b)
	g.shared[string(b)] = name
	return name
}

func (g *gen) raw(b []byte) string {
	g.n++
	name := fmt.Sprintf("v%d", g.n)
	fmt.Fprintf(&g.buf, "__attribute__((unused)) static const uint8_t %s[%d] = {", name, max(len(b), 1))
	for i, c := range b {
		if i%24 == 0 {
			g.buf.WriteString("\n\t")
		}
		fmt.Fprintf(&g.buf, "%d,", c)
	}
	if len(b) == 0 {
		g.buf.WriteString("0")
	}
	g.buf.WriteString("\n};\n")
	return name
}

var sizes = map[string]struct{ ek, dk, ct int }{
	"ML-KEM-512":  {800, 1632, 768},
	"ML-KEM-768":  {1184, 2400, 1088},
	"ML-KEM-1024": {1568, 3168, 1568},
}

func run(dir, asconDir, wpDir string, max, wpMax int, out string) error {
	kg, err := load(filepath.Join(dir, "ML-KEM-keyGen-FIPS203", "internalProjection.json"))
	if err != nil {
		return err
	}
	ed, err := load(filepath.Join(dir, "ML-KEM-encapDecap-FIPS203", "internalProjection.json"))
	if err != nil {
		return err
	}
	g := &gen{}
	type table struct{ keygen, encap, decap, ekc, dkc []string }
	tables := map[string]*table{}
	sets := []string{"ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"}
	for _, s := range sets {
		tables[s] = &table{}
	}
	for _, grp := range kg.TestGroups {
		t, sz := tables[grp.ParameterSet], sizes[grp.ParameterSet]
		if t == nil {
			return fmt.Errorf("keyGen group %d: unknown parameter set %q", grp.TgID, grp.ParameterSet)
		}
		for _, v := range pick(grp.Tests, max) {
			t.keygen = append(t.keygen, fmt.Sprintf("{%d, %s, %s, %s, %s}", v.TcID,
				g.bytesVar(v.D, 32), g.bytesVar(v.Z, 32), g.bytesVar(v.EK, sz.ek), g.bytesVar(v.DK, sz.dk)))
		}
	}
	for _, grp := range ed.TestGroups {
		t, sz := tables[grp.ParameterSet], sizes[grp.ParameterSet]
		if t == nil {
			return fmt.Errorf("encapDecap group %d: unknown parameter set %q", grp.TgID, grp.ParameterSet)
		}
		for _, v := range pick(grp.Tests, max) {
			switch grp.Function {
			case "encapsulation":
				t.encap = append(t.encap, fmt.Sprintf("{%d, %s, %s, %s, %s}", v.TcID,
					g.bytesVar(v.EK, sz.ek), g.bytesVar(v.M, 32), g.bytesVar(v.C, sz.ct), g.bytesVar(v.K, 32)))
			case "decapsulation":
				t.decap = append(t.decap, fmt.Sprintf("{%d, %s, %s, %s}", v.TcID,
					g.bytesVar(v.DK, sz.dk), g.bytesVar(v.C, sz.ct), g.bytesVar(v.K, 32)))
			case "encapsulationKeyCheck", "decapsulationKeyCheck":
				if v.TestPassed == nil {
					return fmt.Errorf("tcId %d: no testPassed", v.TcID)
				}
				pass := 0
				if *v.TestPassed {
					pass = 1
				}
				if grp.Function == "encapsulationKeyCheck" {
					t.ekc = append(t.ekc, fmt.Sprintf("{%d, %d, %s}", v.TcID, pass, g.bytesVar(v.EK, sz.ek)))
				} else {
					t.dkc = append(t.dkc, fmt.Sprintf("{%d, %d, %s}", v.TcID, pass, g.bytesVar(v.DK, sz.dk)))
				}
			default:
				return fmt.Errorf("group %d: unknown function %q", grp.TgID, grp.Function)
			}
		}
	}
	sigs, dsaVS, err := mldsaTables(g, dir, max)
	if err != nil {
		return err
	}
	nDSA := len(sigs)
	slh, err := slhdsaTables(g, dir)
	if err != nil {
		return err
	}
	sigs = append(sigs, slh...)
	asconRows, err := asconTable(g, asconDir, max)
	if err != nil {
		return err
	}
	var wp *wpTables
	source := fmt.Sprintf("acvp-vs%d-vs%d", kg.VsID, ed.VsID)
	if wpDir != "" {
		if wp, err = wycheproofTables(g, wpDir, wpMax); err != nil {
			return fmt.Errorf("wycheproof: %w", err)
		}
		source += "+wycheproof"
	}
	if g.err != nil {
		return g.err
	}

	// Hash vectors: prefixes of one message, lengths around every block and
	// rate boundary, digests from Go's standard library.
	msg := make([]byte, 300)
	for i := range msg {
		msg[i] = byte(i*131 + 7)
	}
	msgVar := g.raw(msg)
	lens := []int{0, 1, 3, 55, 56, 63, 64, 71, 72, 111, 112, 127, 128, 135, 136, 137, 167, 168, 169, 200, 300}
	var hashes []string
	add := func(alg string, md []byte, l int) {
		hashes = append(hashes, fmt.Sprintf("{%q, %s, %d, %s, %d}", alg, msgVar, l, g.raw(md), len(md)))
	}
	for _, l := range lens {
		d := sha256.Sum256(msg[:l])
		add("SHA-256", d[:], l)
	}
	for _, l := range lens {
		d := sha512.Sum512(msg[:l])
		add("SHA-512", d[:], l)
	}
	for _, l := range lens {
		d := sha3.Sum256(msg[:l])
		add("SHA3-256", d[:], l)
	}
	for _, l := range lens {
		d := sha3.Sum512(msg[:l])
		add("SHA3-512", d[:], l)
	}
	for _, l := range lens {
		add("SHAKE128", sha3.SumSHAKE128(msg[:l], 200), l)
	}
	for _, l := range lens {
		add("SHAKE256", sha3.SumSHAKE256(msg[:l], 200), l)
	}

	var w bytes.Buffer
	fmt.Fprintf(&w, "/* Generated by firmware/tools/vecgen; do not edit.\n"+
		" * ML-KEM: NIST ACVP ML-KEM-keyGen-FIPS203 (vsId %d) and\n"+
		" * ML-KEM-encapDecap-FIPS203 (vsId %d), internalProjection.json, max %d per group.\n"+
		" * ML-DSA: NIST ACVP ML-DSA-keyGen/sigGen/sigVer-FIPS204 (vsId %d).\n"+
		" * SLH-DSA: NIST ACVP SLH-DSA-keyGen/sigGen/sigVer-FIPS205, a few per set on every build.\n"+
		" * Ascon: the Ascon designers' NIST LWC KAT files (SP 800-232 and v1.2), %s.\n"+
		" * Hashes: Go standard library digests of prefixes of one message. */\n"+
		"#include <stdint.h>\n#include \"vectors.h\"\n\n", kg.VsID, ed.VsID, max, dsaVS, asconNote(max))
	// core/selftest.c compiles the Wycheproof groups only with FW_WYCHEPROOF: a build whose flag
	// disagrees with these tables fails here rather than leave them unrun.
	if wp != nil {
		w.WriteString("#if !defined(FW_WYCHEPROOF) || !FW_WYCHEPROOF\n#error \"vectors.c has Wycheproof tables: compile with -DFW_WYCHEPROOF=1\"\n#endif\n")
	} else {
		w.WriteString("#if defined(FW_WYCHEPROOF) && FW_WYCHEPROOF\n#error \"FW_WYCHEPROOF is set but vectors.c has no Wycheproof tables (vecgen -wycheproof)\"\n#endif\n")
	}
	fmt.Fprintf(&w, "const char fw_kat_source[] = %q;\n\n", source)
	w.Write(g.buf.Bytes())
	list := func(typ, name string, items []string) string {
		if len(items) == 0 {
			return "0"
		}
		fmt.Fprintf(&w, "static const struct %s %s[] = {\n\t%s,\n};\n", typ, name, strings.Join(items, ",\n\t"))
		return name
	}
	var kems []string
	for i, s := range sets {
		if !keepAlg(s) {
			continue
		}
		t := tables[s]
		p := fmt.Sprintf("k%d_", i)
		kems = append(kems, fmt.Sprintf("{%q, %s, %s, %s, %s, %s, %d, %d, %d, %d, %d}", s,
			list("fw_kat_keygen", p+"keygen", t.keygen), list("fw_kat_encap", p+"encap", t.encap),
			list("fw_kat_decap", p+"decap", t.decap), list("fw_kat_keycheck", p+"ekc", t.ekc),
			list("fw_kat_keycheck", p+"dkc", t.dkc),
			len(t.keygen), len(t.encap), len(t.decap), len(t.ekc), len(t.dkc)))
	}
	fmt.Fprintf(&w, "const struct fw_kat_kem fw_kat_kems[] = {\n\t%s,\n};\n", strings.Join(orEmpty(kems), ",\n\t"))
	fmt.Fprintf(&w, "const unsigned int fw_n_kat_kems = %d;\n", len(kems))
	var sigRows []string
	for i, t := range sigs {
		if !keepAlg(t.alg) {
			continue
		}
		p := fmt.Sprintf("s%d_", i)
		internal := 0 // SLH-DSA's sigGen and sigVer vectors test the internal interface
		if i >= nDSA {
			internal = 1
		}
		sigRows = append(sigRows, fmt.Sprintf("{%q, %s, %s, %s, %d, %d, %d, %d}", t.alg,
			list("fw_kat_sig_keygen", p+"keygen", t.keygen), list("fw_kat_siggen", p+"siggen", t.siggen),
			list("fw_kat_sigver", p+"sigver", t.sigver), len(t.keygen), len(t.siggen), len(t.sigver), internal))
	}
	fmt.Fprintf(&w, "const struct fw_kat_sig fw_kat_sigs[] = {\n\t%s,\n};\n", strings.Join(orEmpty(sigRows), ",\n\t"))
	fmt.Fprintf(&w, "const unsigned int fw_n_kat_sigs = %d;\n", len(sigRows))
	wp.write(&w, list)
	fmt.Fprintf(&w, "const struct fw_kat_hash fw_kat_hashes[] = {\n\t%s,\n};\n", strings.Join(hashes, ",\n\t"))
	fmt.Fprintf(&w, "const unsigned int fw_n_kat_hashes = %d;\n", len(hashes))
	fmt.Fprintf(&w, "const struct fw_kat_ascon fw_kat_ascons[] = {\n\t%s,\n};\n", strings.Join(orEmpty(asconRows), ",\n\t"))
	fmt.Fprintf(&w, "const unsigned int fw_n_kat_ascons = %d;\n", len(asconRows))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, w.Bytes(), 0o644)
}

// Ascon -----------------------------------------------------------------------------------

func asconNote(max int) string {
	if max == 0 {
		return "every record"
	}
	return "the boards' records (asconpick)"
}

// asconTable reads the six Ascon KAT files (asconpick.Files) and emits one fw_kat_ascon row
// per record kept: all of them when max is 0, else the boards' few. A record whose lengths do
// not fit the mode's (CT = PT + 16 bytes, a 32-byte Hash256 digest) is an error.
func asconTable(g *gen, dir string, max int) ([]string, error) {
	var rows []string
	for _, f := range asconpick.Files {
		if !keepAlg(f.Alg) {
			continue
		}
		recs, err := kat.ReadFile(filepath.Join(dir, f.Rel))
		if err != nil {
			return nil, err
		}
		n := 0
		for _, r := range recs {
			if max > 0 && !f.Keep(r.Count) {
				continue
			}
			get := func(name string) []byte {
				b, err := r.Get(name)
				if err != nil && g.err == nil {
					g.err = fmt.Errorf("%s: %w", f.Rel, err)
				}
				return b
			}
			var key, nonce, in, ad, want []byte
			switch f.Kind {
			case asconpick.AEAD:
				key, nonce, in, ad, want = get("Key"), get("Nonce"), get("PT"), get("AD"), get("CT")
				if len(key) != 16 || len(nonce) != 16 || len(want) != len(in)+16 {
					return nil, fmt.Errorf("%s Count %d: key %d, nonce %d, PT %d, CT %d bytes", f.Rel, r.Count, len(key), len(nonce), len(in), len(want))
				}
			case asconpick.Hash:
				in, want = get("Msg"), get("MD")
			case asconpick.CXOF:
				in, ad, want = get("Msg"), get("Z"), get("MD")
			}
			if f.Alg == "Ascon-Hash256" && len(want) != 32 || len(want) > 256 || len(in) > 65535 || len(ad) > 255 {
				return nil, fmt.Errorf("%s Count %d: lengths Msg/PT %d, AD/Z %d, out %d", f.Rel, r.Count, len(in), len(ad), len(want))
			}
			k, nv := "0", "0"
			if f.Kind == asconpick.AEAD {
				k, nv = g.rawShared(key), g.rawShared(nonce)
			}
			rows = append(rows, fmt.Sprintf("{%q, %d, %d, %s, %s, %s, %s, %s, %d, %d, %d}", f.Alg, f.Mode, r.Count,
				k, nv, g.rawShared(in), g.rawShared(ad), g.raw(want), len(in), len(ad), len(want)))
			n++
		}
		if n == 0 || max > 0 && n != len(f.Board) {
			return nil, fmt.Errorf("%s: %d records kept, want %d", f.Rel, n, len(f.Board))
		}
	}
	return rows, nil
}

// orEmpty gives an empty table one zero row (C has no empty arrays); its count stays 0.
func orEmpty(rows []string) []string {
	if len(rows) == 0 {
		return []string{"{0}"}
	}
	return rows
}

// ML-DSA ---------------------------------------------------------------------------------

type dsaFile struct {
	VsID       int `json:"vsId"`
	TestGroups []struct {
		TgID               int    `json:"tgId"`
		ParameterSet       string `json:"parameterSet"`
		SignatureInterface string `json:"signatureInterface"`
		PreHash            string `json:"preHash"`
		Deterministic      *bool  `json:"deterministic"`
		Tests              []dsaTest
	} `json:"testGroups"`
}

type dsaTest struct {
	TcID       int    `json:"tcId"`
	Seed       string `json:"seed"`
	PK         string `json:"pk"`
	SK         string `json:"sk"`
	Message    string `json:"message"`
	Context    string `json:"context"`
	Signature  string `json:"signature"`
	TestPassed *bool  `json:"testPassed"`
}

var dsaSizes = map[string]struct{ pk, sk, sig int }{
	"ML-DSA-44": {1312, 2560, 2420},
	"ML-DSA-65": {1952, 4032, 3309},
	"ML-DSA-87": {2592, 4896, 4627},
}

type dsaTable struct {
	alg                    string
	keygen, siggen, sigver []string
}

func loadDSA(path string) (*dsaFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f dsaFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &f, nil
}

func pickDSA(tests []dsaTest, max int) []dsaTest {
	kept, _ := acvppick.Pick(tests, max, func(t dsaTest) (string, error) {
		if t.TestPassed != nil {
			return fmt.Sprint(*t.TestPassed), nil
		}
		return "", nil
	})
	return kept
}

// mldsaTables reads the ML-DSA keyGen, sigGen (prompt and expected results) and sigVer files
// and emits their tables, in the order ML-DSA-44, 65, 87.
func mldsaTables(g *gen, dir string, max int) ([]*dsaTable, int, error) {
	kg, err := loadDSA(filepath.Join(dir, "ML-DSA-keyGen-FIPS204", "internalProjection.json"))
	if err != nil {
		return nil, 0, err
	}
	sgp, err := loadDSA(filepath.Join(dir, "ML-DSA-sigGen-FIPS204", "prompt.json"))
	if err != nil {
		return nil, 0, err
	}
	sge, err := loadDSA(filepath.Join(dir, "ML-DSA-sigGen-FIPS204", "expectedResults.json"))
	if err != nil {
		return nil, 0, err
	}
	sv, err := loadDSA(filepath.Join(dir, "ML-DSA-sigVer-FIPS204", "internalProjection.json"))
	if err != nil {
		return nil, 0, err
	}
	sets := []string{"ML-DSA-44", "ML-DSA-65", "ML-DSA-87"}
	tables := map[string]*dsaTable{}
	var out []*dsaTable
	for _, s := range sets {
		tables[s] = &dsaTable{alg: s}
		out = append(out, tables[s])
	}
	for _, grp := range kg.TestGroups {
		t, sz := tables[grp.ParameterSet], dsaSizes[grp.ParameterSet]
		if t == nil {
			return nil, 0, fmt.Errorf("ML-DSA keyGen group %d: unknown parameter set %q", grp.TgID, grp.ParameterSet)
		}
		for _, v := range pickDSA(grp.Tests, max) {
			t.keygen = append(t.keygen, fmt.Sprintf("{%d, %s, %s, %s}", v.TcID,
				g.bytesVar(v.Seed, 32), g.bytesVar(v.PK, sz.pk), g.bytesVar(v.SK, sz.sk)))
		}
	}
	sigOf := map[int]string{}
	for _, grp := range sge.TestGroups {
		for _, v := range grp.Tests {
			sigOf[v.TcID] = v.Signature
		}
	}
	for _, grp := range sgp.TestGroups {
		if grp.SignatureInterface != "external" || grp.PreHash != "pure" || grp.Deterministic == nil || !*grp.Deterministic {
			continue
		}
		t, sz := tables[grp.ParameterSet], dsaSizes[grp.ParameterSet]
		if t == nil {
			return nil, 0, fmt.Errorf("ML-DSA sigGen group %d: unknown parameter set %q", grp.TgID, grp.ParameterSet)
		}
		for _, v := range pickDSA(grp.Tests, max) {
			sig, ok := sigOf[v.TcID]
			if !ok {
				return nil, 0, fmt.Errorf("ML-DSA sigGen tcId %d: no expected signature", v.TcID)
			}
			t.siggen = append(t.siggen, fmt.Sprintf("{%d, %s, %s, %s, %s, %d, %d}", v.TcID,
				g.bytesVar(v.SK, sz.sk), g.bytesVar(v.Message, 0), g.bytesVar(v.Context, 0), g.bytesVar(sig, sz.sig),
				len(v.Message)/2, len(v.Context)/2))
		}
	}
	for _, grp := range sv.TestGroups {
		if grp.SignatureInterface != "external" || grp.PreHash != "pure" {
			continue
		}
		t, sz := tables[grp.ParameterSet], dsaSizes[grp.ParameterSet]
		if t == nil {
			return nil, 0, fmt.Errorf("ML-DSA sigVer group %d: unknown parameter set %q", grp.TgID, grp.ParameterSet)
		}
		for _, v := range pickDSA(grp.Tests, max) {
			if v.TestPassed == nil {
				return nil, 0, fmt.Errorf("ML-DSA sigVer tcId %d: no testPassed", v.TcID)
			}
			pass := 0
			if *v.TestPassed {
				pass = 1
			}
			t.sigver = append(t.sigver, fmt.Sprintf("{%d, %d, %s, %s, %s, %s, %d, %d, %d}", v.TcID, pass,
				g.bytesVar(v.PK, sz.pk), g.bytesVar(v.Message, 0), g.bytesVar(v.Context, 0), g.bytesVar(v.Signature, sz.sig),
				len(v.Message)/2, len(v.Context)/2, sz.sig))
		}
	}
	return out, kg.VsID, nil
}

// SLH-DSA --------------------------------------------------------------------------------

// SLH-DSA's vectors are kept few on every build, the host's included (its full ACVP files are
// checked by firmware's Go tests through katcli): slhKeyGenMax keyGen tests per set, slhSigVerMax
// sigVer tests per set (alternating between refused and accepted) and slhSigGenMax
// deterministic sigGen tests per set of SLHSigGenSets ("s" sets sign for billions of
// instructions in an emulator). sigGen and sigVer test the internal interface (these files'
// groups carry no signatureInterface: the message is M').
const (
	slhKeyGenMax = 1
	slhSigVerMax = 2
	slhSigGenMax = 1
)

// SLHDSASets are the twelve sets in the order the self-test runs them, with n and the
// signature size (FIPS 205 Table 2).
var slhdsaSets = []struct {
	name   string
	n, sig int
}{
	{"SLH-DSA-SHA2-128s", 16, 7856}, {"SLH-DSA-SHA2-128f", 16, 17088},
	{"SLH-DSA-SHA2-192s", 24, 16224}, {"SLH-DSA-SHA2-192f", 24, 35664},
	{"SLH-DSA-SHA2-256s", 32, 29792}, {"SLH-DSA-SHA2-256f", 32, 49856},
	{"SLH-DSA-SHAKE-128s", 16, 7856}, {"SLH-DSA-SHAKE-128f", 16, 17088},
	{"SLH-DSA-SHAKE-192s", 24, 16224}, {"SLH-DSA-SHAKE-192f", 24, 35664},
	{"SLH-DSA-SHAKE-256s", 32, 29792}, {"SLH-DSA-SHAKE-256f", 32, 49856},
}

type slhFile struct {
	VsID       int `json:"vsId"`
	TestGroups []struct {
		TgID          int       `json:"tgId"`
		ParameterSet  string    `json:"parameterSet"`
		Interface     string    `json:"signatureInterface"`
		Deterministic *bool     `json:"deterministic"`
		Tests         []slhTest `json:"tests"`
	} `json:"testGroups"`
}

type slhTest struct {
	TcID       int    `json:"tcId"`
	SKSeed     string `json:"skSeed"`
	SKPrf      string `json:"skPrf"`
	PKSeed     string `json:"pkSeed"`
	PK         string `json:"pk"`
	SK         string `json:"sk"`
	Message    string `json:"message"`
	Signature  string `json:"signature"`
	TestPassed *bool  `json:"testPassed"`
}

func loadSLH(path string) (*slhFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f slhFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &f, nil
}

// SLHSigGenSets are the sets whose sigGen test the boards embed: the cheapest "f" set of each
// hash family that NIST's sigGen file has deterministic tests for (SHAKE-256f, the third, signs
// for 5.7 and 9.4 billion instructions on the two boards).
var SLHSigGenSets = []string{"SLH-DSA-SHAKE-128f", "SLH-DSA-SHA2-256f"}

// SLHDSAFiles are the directories of the SLH-DSA files vecgen and vecsubset read.
const (
	SLHKeyGenDir = "SLH-DSA-keyGen-FIPS205"
	SLHSigGenDir = "SLH-DSA-sigGen-FIPS205__v1.1.0.35"
	SLHSigVerDir = "SLH-DSA-sigVer-FIPS205__v1.1.0.37"
)

// slhdsaTables reads the SLH-DSA keyGen, sigGen and sigVer files and emits their tables in
// slhdsaSets order. A set without its keyGen or sigVer group is an error.
func slhdsaTables(g *gen, dir string) ([]*dsaTable, error) {
	kg, err := loadSLH(filepath.Join(dir, SLHKeyGenDir, "internalProjection.json"))
	if err != nil {
		return nil, err
	}
	sgp, err := loadSLH(filepath.Join(dir, SLHSigGenDir, "prompt.json"))
	if err != nil {
		return nil, err
	}
	sge, err := loadSLH(filepath.Join(dir, SLHSigGenDir, "expectedResults.json"))
	if err != nil {
		return nil, err
	}
	svp, err := loadSLH(filepath.Join(dir, SLHSigVerDir, "prompt.json"))
	if err != nil {
		return nil, err
	}
	sve, err := loadSLH(filepath.Join(dir, SLHSigVerDir, "expectedResults.json"))
	if err != nil {
		return nil, err
	}
	type key struct{ tg, tc int }
	sigOf, passOf := map[key]string{}, map[key]*bool{}
	for _, grp := range sge.TestGroups {
		for _, v := range grp.Tests {
			sigOf[key{grp.TgID, v.TcID}] = v.Signature
		}
	}
	for _, grp := range sve.TestGroups {
		for _, v := range grp.Tests {
			passOf[key{grp.TgID, v.TcID}] = v.TestPassed
		}
	}
	var out []*dsaTable
	for _, s := range slhdsaSets {
		t := &dsaTable{alg: s.name}
		for _, grp := range kg.TestGroups {
			if grp.ParameterSet != s.name {
				continue
			}
			for i, v := range grp.Tests {
				if i == slhKeyGenMax {
					break
				}
				seed := v.SKSeed + v.SKPrf + v.PKSeed
				t.keygen = append(t.keygen, fmt.Sprintf("{%d, %s, %s, %s}", v.TcID,
					g.bytesVar(seed, 3*s.n), g.bytesVar(v.PK, 2*s.n), g.bytesVar(v.SK, 4*s.n)))
			}
		}
		for _, grp := range sgp.TestGroups {
			if grp.ParameterSet != s.name || !slices.Contains(SLHSigGenSets, s.name) || grp.Deterministic == nil ||
				!*grp.Deterministic || (grp.Interface != "" && grp.Interface != "internal") {
				continue
			}
			for i, v := range grp.Tests {
				if i == slhSigGenMax {
					break
				}
				sig, ok := sigOf[key{grp.TgID, v.TcID}]
				if !ok {
					return nil, fmt.Errorf("SLH-DSA sigGen tgId %d tcId %d: no expected signature", grp.TgID, v.TcID)
				}
				t.siggen = append(t.siggen, fmt.Sprintf("{%d, %s, %s, %s, %s, %d, %d}", v.TcID,
					g.bytesVar(v.SK, 4*s.n), g.bytesVar(v.Message, 0), g.raw(nil), g.bytesVar(sig, s.sig),
					len(v.Message)/2, 0))
			}
		}
		for _, grp := range svp.TestGroups {
			if grp.ParameterSet != s.name || (grp.Interface != "" && grp.Interface != "internal") {
				continue
			}
			tests := grp.Tests
			for i := range tests {
				tests[i].TestPassed = passOf[key{grp.TgID, tests[i].TcID}]
				if tests[i].TestPassed == nil {
					return nil, fmt.Errorf("SLH-DSA sigVer tgId %d tcId %d: no expected result", grp.TgID, tests[i].TcID)
				}
			}
			kept, err := acvppick.Pick(tests, slhSigVerMax, func(v slhTest) (string, error) {
				return fmt.Sprint(*v.TestPassed), nil
			})
			if err != nil {
				return nil, err
			}
			for _, v := range kept {
				pass := 0
				if *v.TestPassed {
					pass = 1
				}
				t.sigver = append(t.sigver, fmt.Sprintf("{%d, %d, %s, %s, %s, %s, %d, %d, %d}", v.TcID, pass,
					g.bytesVar(v.PK, 2*s.n), g.bytesVar(v.Message, 0), g.raw(nil), g.bytesVar(v.Signature, 0),
					len(v.Message)/2, 0, len(v.Signature)/2))
			}
		}
		if len(t.keygen) == 0 || len(t.sigver) == 0 {
			return nil, fmt.Errorf("SLH-DSA: %s has no keyGen or sigVer vectors in %s", s.name, dir)
		}
		out = append(out, t)
	}
	return out, nil
}
