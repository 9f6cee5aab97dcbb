package firmware

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"pqrepro/firmware/tools/asconpick"
)

// TestBoardVectorsAreNISTs checks the project's shortened copy of the ACVP ML-KEM, ML-DSA and
// SLH-DSA vectors against NIST's full files: every kept test must be one of NIST's, unchanged.
func TestBoardVectorsAreNISTs(t *testing.T) {
	full := filepath.Join("..", "..", "shared", "test-vectors", "acvp")
	if _, err := os.Stat(full); err != nil {
		t.Skip("the full vector set is not next to the repository")
	}
	type file struct {
		TestGroups []struct {
			TgID  int              `json:"tgId"`
			Tests []map[string]any `json:"tests"`
		} `json:"testGroups"`
	}
	read := func(p string) file {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f file
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, name := range []string{"ML-KEM-keyGen-FIPS203/internalProjection.json", "ML-KEM-encapDecap-FIPS203/internalProjection.json",
		"ML-DSA-keyGen-FIPS204/internalProjection.json", "ML-DSA-sigVer-FIPS204/internalProjection.json",
		"ML-DSA-sigGen-FIPS204/prompt.json", "ML-DSA-sigGen-FIPS204/expectedResults.json",
		"SLH-DSA-keyGen-FIPS205/internalProjection.json",
		"SLH-DSA-sigVer-FIPS205__v1.1.0.37/prompt.json", "SLH-DSA-sigVer-FIPS205__v1.1.0.37/expectedResults.json",
		"SLH-DSA-sigGen-FIPS205__v1.1.0.35/prompt.json", "SLH-DSA-sigGen-FIPS205__v1.1.0.35/expectedResults.json"} {
		sub := read(filepath.Join("vectors", "acvp", name))
		all := read(filepath.Join(full, name))
		byID := map[float64]map[string]any{}
		for _, g := range all.TestGroups {
			for _, tc := range g.Tests {
				byID[tc["tcId"].(float64)] = tc
			}
		}
		n := 0
		for _, g := range sub.TestGroups {
			if len(g.Tests) == 0 || len(g.Tests) > 4 {
				t.Errorf("%s group %d keeps %d tests, want 1 to 4", name, g.TgID, len(g.Tests))
			}
			for _, tc := range g.Tests {
				n++
				if want, ok := byID[tc["tcId"].(float64)]; !ok || !reflect.DeepEqual(tc, want) {
					t.Errorf("%s tcId %v is not NIST's test", name, tc["tcId"])
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no tests kept", name)
		}
	}
}

// TestBoardAsconVectorsAreTheDesigners checks the project's copy of the Ascon KAT records
// (vectors/ascon) against the full files: exactly the records asconpick names, each one's
// text unchanged.
func TestBoardAsconVectorsAreTheDesigners(t *testing.T) {
	for _, f := range asconpick.Files {
		full, err := os.ReadFile(filepath.Join(asconKATDir, f.Rel))
		if err != nil {
			t.Skipf("the full Ascon KAT files are not next to the repository: %v", err)
		}
		want, err := f.Subset(full)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("vectors", "ascon", f.Rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("vectors/ascon/%s is not the designers' records %v", f.Rel, f.Board)
		}
		for _, c := range f.Board {
			rec := fmt.Sprintf("Count = %d\n", c)
			if !bytes.Contains(full, []byte(rec)) || !bytes.Contains(got, []byte(rec)) {
				t.Errorf("%s: record %d missing", f.Rel, c)
			}
		}
	}
}
