// Command vecsubset copies the NIST ACVP ML-KEM test groups with at most -max tests per group
// (chosen as vecgen chooses them: alternating between outcomes) into a smaller copy that the
// project owns, so the emulated boards' self-test can be built without the full vector set:
//
//	go run ./firmware/tools/vecsubset -acvp ../shared/test-vectors/acvp -max 4 -o firmware/vectors/acvp
//
// Each kept test is NIST's JSON object, unchanged; only the list of tests is shortened.
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
)

var files = []string{"ML-KEM-keyGen-FIPS203", "ML-KEM-encapDecap-FIPS203"}

func main() {
	dir := flag.String("acvp", "../shared/test-vectors/acvp", "ACVP vector directory")
	max := flag.Int("max", 4, "tests kept per group")
	out := flag.String("o", "firmware/vectors/acvp", "output directory")
	flag.Parse()
	for _, f := range files {
		if err := subset(filepath.Join(*dir, f, "internalProjection.json"), filepath.Join(*out, f, "internalProjection.json"), *max); err != nil {
			log.Fatalf("vecsubset: %v", err)
		}
	}
}

func subset(in, out string, max int) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var file map[string]json.RawMessage
	if err := json.Unmarshal(b, &file); err != nil {
		return fmt.Errorf("parse %s: %w", in, err)
	}
	var groups []map[string]json.RawMessage
	if err := json.Unmarshal(file["testGroups"], &groups); err != nil {
		return fmt.Errorf("%s: testGroups: %w", in, err)
	}
	for _, g := range groups {
		var tests []json.RawMessage
		if err := json.Unmarshal(g["tests"], &tests); err != nil {
			return fmt.Errorf("%s: tests: %w", in, err)
		}
		kept, err := pick(tests, max)
		if err != nil {
			return err
		}
		if g["tests"], err = json.Marshal(kept); err != nil {
			return err
		}
	}
	var err2 error
	if file["testGroups"], err2 = json.Marshal(groups); err2 != nil {
		return err2
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(file); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
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
