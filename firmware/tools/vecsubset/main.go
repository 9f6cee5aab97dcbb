// Command vecsubset copies the NIST ACVP ML-KEM test groups with at most -max tests per group
// (chosen as vecgen chooses them: alternating between outcomes) into a smaller copy that the
// project owns, so the emulated boards' self-test can be built without the full vector set:
//
//	go run ./firmware/tools/vecsubset -acvp ../shared/test-vectors/acvp -max 4 -o firmware/vectors/acvp
//
// ML-DSA is kept smaller (signatures are large and slow to check in an emulator): 2 keyGen
// tests per set, 2 sigVer tests per external/pure group (one failing, one passing) and 1
// deterministic external/pure sigGen test per set (prompt.json and its expectedResults.json).
//
// Ascon: the few records per KAT file that asconpick names, each record's text unchanged, into
// -ascon-o (firmware/vectors/ascon).
//
// Each kept test is NIST's JSON object, unchanged; only the lists of groups and tests are
// shortened.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"pqrepro/firmware/tools/acvppick"
	"pqrepro/firmware/tools/asconpick"
)

// asconSubset copies the records of each Ascon KAT file the boards keep (asconpick), each
// record's text unchanged, to the same relative path under out.
func asconSubset(dir, out string) error {
	for _, f := range asconpick.Files {
		text, err := os.ReadFile(filepath.Join(dir, f.Rel))
		if err != nil {
			return fmt.Errorf("ascon KAT subset: %w", err)
		}
		sub, err := f.Subset(text)
		if err != nil {
			return fmt.Errorf("ascon KAT subset: %w", err)
		}
		dst := filepath.Join(out, f.Rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, sub, 0o644); err != nil {
			return fmt.Errorf("ascon KAT subset: %w", err)
		}
	}
	return nil
}

var files = []string{"ML-KEM-keyGen-FIPS203", "ML-KEM-encapDecap-FIPS203"}

// MLDSAFiles are the ML-DSA files the boards embed, with the tests kept per group and the
// groups kept (the interfaces the firmware's BENCH uses: pure ML-DSA with a context).
var mldsaFiles = []struct {
	dir, file string
	max       int
	group     func(g map[string]json.RawMessage) bool
}{
	{"ML-DSA-keyGen-FIPS204", "internalProjection.json", 2, nil},
	{"ML-DSA-sigVer-FIPS204", "internalProjection.json", 2, externalPure},
	{"ML-DSA-sigGen-FIPS204", "prompt.json", 1, func(g map[string]json.RawMessage) bool {
		return externalPure(g) && string(g["deterministic"]) == "true"
	}},
}

func externalPure(g map[string]json.RawMessage) bool {
	return string(g["signatureInterface"]) == `"external"` && string(g["preHash"]) == `"pure"`
}

// SLH-DSA is kept smaller still, as vecgen embeds it on every build: the first keyGen test
// per set, 2 sigVer tests per set (one refused, one accepted; chosen from expectedResults.json,
// then the same prompts) and the first deterministic sigGen test of SHAKE-128f and SHA2-256f
// (its prompt and expected result; vecgen's SLHSigGenSets). The sigGen and sigVer files keep their revision suffix.
var slhFiles = []struct {
	dir string
	max int
	// prompt selects the prompt groups kept; results: the tests are chosen from
	// expectedResults.json (by testPassed) rather than from prompt.json.
	prompt  func(g map[string]json.RawMessage) bool
	results bool
}{
	{"SLH-DSA-sigVer-FIPS205__v1.1.0.37", 2, nil, true},
	{"SLH-DSA-sigGen-FIPS205__v1.1.0.35", 1, func(g map[string]json.RawMessage) bool {
		var ps string
		_ = json.Unmarshal(g["parameterSet"], &ps)
		return string(g["deterministic"]) == "true" && (ps == "SLH-DSA-SHAKE-128f" || ps == "SLH-DSA-SHA2-256f")
	}, false},
}

func main() {
	dir := flag.String("acvp", "../shared/test-vectors/acvp", "ACVP vector directory")
	max := flag.Int("max", 4, "tests kept per group")
	out := flag.String("o", "firmware/vectors/acvp", "output directory")
	asconDir := flag.String("ascon", "../shared/test-vectors/ascon", "Ascon KAT directory")
	asconOut := flag.String("ascon-o", "firmware/vectors/ascon", "output directory of the Ascon records")
	flag.Parse()
	if err := asconSubset(*asconDir, *asconOut); err != nil {
		log.Fatalf("vecsubset: %v", err)
	}
	for _, f := range files {
		if _, err := subset(filepath.Join(*dir, f, "internalProjection.json"), filepath.Join(*out, f, "internalProjection.json"), *max, nil, nil); err != nil {
			log.Fatalf("vecsubset: %v", err)
		}
	}
	for _, f := range mldsaFiles {
		kept, err := subset(filepath.Join(*dir, f.dir, f.file), filepath.Join(*out, f.dir, f.file), f.max, f.group, nil)
		if err != nil {
			log.Fatalf("vecsubset: %v", err)
		}
		if f.file == "prompt.json" {
			// The expected results of exactly the kept prompts.
			if _, err := subset(filepath.Join(*dir, f.dir, "expectedResults.json"), filepath.Join(*out, f.dir, "expectedResults.json"), 0, nil, kept); err != nil {
				log.Fatalf("vecsubset: %v", err)
			}
		}
	}
	const slhKeyGen = "SLH-DSA-keyGen-FIPS205"
	if _, err := subset(filepath.Join(*dir, slhKeyGen, "internalProjection.json"), filepath.Join(*out, slhKeyGen, "internalProjection.json"), 1, nil, nil); err != nil {
		log.Fatalf("vecsubset: %v", err)
	}
	for _, f := range slhFiles {
		first, second := "prompt.json", "expectedResults.json"
		if f.results {
			first, second = second, first
		}
		kept, err := subset(filepath.Join(*dir, f.dir, first), filepath.Join(*out, f.dir, first), f.max, f.prompt, nil)
		if err != nil {
			log.Fatalf("vecsubset: %v", err)
		}
		if _, err := subset(filepath.Join(*dir, f.dir, second), filepath.Join(*out, f.dir, second), 0, nil, kept); err != nil {
			log.Fatalf("vecsubset: %v", err)
		}
	}
}

// subset writes in's groups that group accepts (all when nil) with at most max tests each
// (max 0: all), or, when only is not nil, exactly the tests whose tcId it holds (groups left
// empty are dropped). It returns the tcIds it kept.
func subset(in, out string, max int, group func(map[string]json.RawMessage) bool, only map[int]bool) (map[int]bool, error) {
	keptIDs := map[int]bool{}
	b, err := os.ReadFile(in)
	if err != nil {
		return nil, err
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("parse %s: %w", in, err)
	}
	var groups, keptGroups []map[string]json.RawMessage
	if err := json.Unmarshal(file["testGroups"], &groups); err != nil {
		return nil, fmt.Errorf("%s: testGroups: %w", in, err)
	}
	for _, g := range groups {
		if group != nil && !group(g) {
			continue
		}
		var tests []json.RawMessage
		if err := json.Unmarshal(g["tests"], &tests); err != nil {
			return nil, fmt.Errorf("%s: tests: %w", in, err)
		}
		kept, err := pick(tests, max)
		if err != nil {
			return nil, err
		}
		var final []json.RawMessage
		for _, t := range kept {
			var id struct {
				TcID int `json:"tcId"`
			}
			if err := json.Unmarshal(t, &id); err != nil {
				return nil, fmt.Errorf("%s: tcId: %w", in, err)
			}
			if only == nil || only[id.TcID] {
				final = append(final, t)
				keptIDs[id.TcID] = true
			}
		}
		if len(final) == 0 {
			continue
		}
		if g["tests"], err = json.Marshal(final); err != nil {
			return nil, err
		}
		keptGroups = append(keptGroups, g)
	}
	var err2 error
	if file["testGroups"], err2 = json.Marshal(keptGroups); err2 != nil {
		return nil, err2
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(file); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	return keptIDs, os.WriteFile(out, buf.Bytes(), 0o644)
}

// pick keeps at most max tests, alternating between outcomes (the "reason" or "testPassed"
// of each test) exactly as vecgen chooses them.
func pick(tests []json.RawMessage, max int) ([]json.RawMessage, error) {
	return acvppick.Pick(tests, max, func(raw json.RawMessage) (string, error) {
		var t struct {
			Reason     string `json:"reason"`
			TestPassed *bool  `json:"testPassed"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", err
		}
		if t.TestPassed != nil {
			return fmt.Sprint(*t.TestPassed), nil
		}
		return t.Reason, nil
	})
}
