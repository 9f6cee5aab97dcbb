package experiments

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"pqrepro/internal/shareddata"
)

// pqm4Published reads pqm4's benchmarks.csv as published, from ../shared.
func pqm4Published(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(shareddata.Dir(t, "reference-data", "pqm4-cortex-m4", "benchmarks.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPQM4EveryRowBySection: every figure of the published table is a row, counted per
// section and family from the file's own layout (schemes × implementations rows, times the
// header's figures: 9 in speed, 3 in memory and hashing, 4 in size).
func TestPQM4EveryRowBySection(t *testing.T) {
	rows, err := ParsePQM4(pqm4Published(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range rows {
		got[r.Section+"/"+r.Family]++
	}
	want := map[string]int{
		"speed/kem": 16 * 9, "speed/sig": 122 * 9,
		"memory/kem": 16 * 3, "memory/sig": 123 * 3,
		"hashing/kem": 16 * 3, "hashing/sig": 122 * 3,
		"size/kem": 16 * 4, "size/sig": 122 * 4,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows by section: %v, want %v", got, want)
	}
	// Spot figures, read off the published file by eye (lines 14 and 157).
	find := func(section, scheme, impl, op, stat string) PQM4Row {
		for _, r := range rows {
			if r.Section == section && r.Scheme == scheme && r.Implementation == impl && r.Operation == op && r.Stat == stat {
				return r
			}
		}
		t.Fatalf("no %s %s %s %s %s", section, scheme, impl, op, stat)
		return PQM4Row{}
	}
	if r := find("speed", "ml-kem-512", "clean", "keygen", "mean"); r.Value != 595793 || r.Executions != 10 || r.Unit != "cycles" || r.Line != 14 {
		t.Errorf("ml-kem-512 clean keygen mean: %+v", r)
	}
	if r := find("memory", "ml-kem-512", "m4fspeed", "decaps", "value"); r.Value != 5412 || r.Unit != "bytes" || r.Line != 158 {
		t.Errorf("ml-kem-512 m4fspeed decaps stack: %+v", r)
	}
}

// TestPQM4DatasetIsThePublishedTable: the embedded dataset (pqm4/reference.csv) holds exactly
// the published table's figures, row for row.
func TestPQM4DatasetIsThePublishedTable(t *testing.T) {
	want, err := ParsePQM4(pqm4Published(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadPQM4()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pqm4/reference.csv holds %d rows that differ from the %d published (go run ./experiments/build rewrites it)", len(got), len(want))
	}
}

// TestParsePQM4Refuses: what the format does not have is refused with its line.
func TestParsePQM4Refuses(t *testing.T) {
	head := "Speed Evaluation,,\nKey Encapsulation Schemes,,\nScheme,Implementation,Key Generation [cycles] (mean)\n"
	for _, tc := range []struct{ name, csv, want string }{
		{"row before header", "Speed Evaluation,,\nml-kem-512,clean,5\n", "line 2: a data row before its header"},
		{"family before section", "Key Encapsulation Schemes,,\n", "line 1"},
		{"unknown column", "Speed Evaluation,,\nKey Encapsulation Schemes,,\nScheme,Implementation,Keygen [ms]\n", "line 3: column"},
		{"not a number", head + "ml-kem-512 (10 executions),clean,fast\n", "line 4"},
		{"negative", head + "ml-kem-512 (10 executions),clean,-5\n", "line 4"},
		{"not finite", head + "ml-kem-512 (10 executions),clean,NaN\n", "line 4"},
		{"missing figure", head + "ml-kem-512 (10 executions),clean\n", "line 4"},
		{"figure beyond the header", head + "ml-kem-512 (10 executions),clean,5,6\n", "line 4: a figure"},
		{"no implementation", head + "ml-kem-512 (10 executions),,5\n", "line 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePQM4([]byte(tc.csv))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// FuzzParsePQM4: no input panics, and every accepted row is a known section, family and unit
// with a finite, non-negative figure.
func FuzzParsePQM4(f *testing.F) {
	f.Add([]byte("Speed Evaluation,,\nKey Encapsulation Schemes,,\nScheme,Implementation,Key Generation [cycles] (mean)\nml-kem-512 (10 executions),clean,5\n"))
	f.Add([]byte("Size Evaluation,,,,,\nSignature Schemes,,,,,\nScheme,Implementation,.text [bytes],.data [bytes],.bss [bytes],Total [bytes]\nml-dsa-44,m4f,1,2,3,6\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParsePQM4(data)
		if err != nil {
			return
		}
		for _, r := range rows {
			if pqm4Metrics[r.Section] == "" || (r.Family != "kem" && r.Family != "sig") || r.Value < 0 || r.Value != r.Value || r.Scheme == "" || r.Implementation == "" {
				t.Fatalf("accepted %+v", r)
			}
		}
	})
}
