package portal_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"pqrepro/experiments"
	"pqrepro/portal/portaltest"
)

// pqm4FigRE is one rendered pqm4 figure: its section, published value and line.
var pqm4FigRE = regexp.MustCompile(`<data class="pqm4-fig" data-section="([a-z]+)" value="([^"]+)" title="pqm4 benchmarks.csv line (\d+)">`)

// TestPQM4PageShowsEveryRow: /datasets/pqm4 renders every figure of the dataset, each once,
// with its published value and line, counted by section against LoadPQM4.
func TestPQM4PageShowsEveryRow(t *testing.T) {
	rows, err := experiments.LoadPQM4()
	if err != nil {
		t.Fatal(err)
	}
	p := portaltest.Start(t, nil)
	code, body := get(t, p.URL+"/datasets/pqm4")
	if code != http.StatusOK {
		t.Fatalf("GET /datasets/pqm4: %d", code)
	}
	want := map[string]int{}
	for _, r := range rows {
		want[fmt.Sprintf("%s|%s|%d", r.Section, strconv.FormatFloat(r.Value, 'f', -1, 64), r.Line)]++
	}
	got := map[string]int{}
	bySection, wantSection := map[string]int{}, map[string]int{}
	for _, r := range rows {
		wantSection[r.Section]++
	}
	for _, m := range pqm4FigRE.FindAllStringSubmatch(body, -1) {
		got[m[1]+"|"+m[2]+"|"+m[3]]++
		bySection[m[1]]++
	}
	for _, s := range []string{"speed", "memory", "hashing", "size"} {
		if bySection[s] != wantSection[s] || wantSection[s] == 0 {
			t.Errorf("section %s: %d figures rendered, the dataset has %d", s, bySection[s], wantSection[s])
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("figure %s rendered %d times, the dataset has it %d times", k, got[k], n)
		}
	}
	if total := fmt.Sprintf("%d of the dataset's %d figures shown", len(rows), len(rows)); !strings.Contains(body, total) {
		t.Errorf("page does not say %q", total)
	}
	for _, s := range []string{"silicon cycles on a Cortex-M4", "NUCLEO-L4R5ZI", experiments.PQM4Commit, "PROVENANCE.md", "mupq/pqm4 issue 359", "Share of cycles hashing"} {
		if !strings.Contains(body, s) {
			t.Errorf("page does not say %q", s)
		}
	}
	i512, i768, i1024 := strings.Index(body, ">ml-kem-512<"), strings.Index(body, ">ml-kem-768<"), strings.Index(body, ">ml-kem-1024<")
	if i512 < 0 || i512 > i768 || i768 > i1024 {
		t.Errorf("ML-KEM not in natural order: 512 at %d, 768 at %d, 1024 at %d", i512, i768, i1024)
	}
}

// TestPQM4PageFilters: the family and scheme filters show only their rows; a family pqm4
// does not have is refused.
func TestPQM4PageFilters(t *testing.T) {
	rows, err := experiments.LoadPQM4()
	if err != nil {
		t.Fatal(err)
	}
	p := portaltest.Start(t, nil)
	for _, c := range []struct{ family, scheme string }{{"sig", ""}, {"kem", ""}, {"", "ml-kem-768"}, {"kem", "ml-dsa-44"}} {
		want := 0
		for _, r := range rows {
			if (c.family == "" || r.Family == c.family) && (c.scheme == "" || r.Scheme == c.scheme) {
				want++
			}
		}
		code, body := get(t, p.URL+"/datasets/pqm4?family="+c.family+"&scheme="+c.scheme)
		if code != http.StatusOK {
			t.Fatalf("%+v: %d", c, code)
		}
		if n := len(pqm4FigRE.FindAllString(body, -1)); n != want {
			t.Errorf("%+v: %d figures rendered, want %d", c, n, want)
		}
		if c.family == "sig" && strings.Contains(body, ">ml-kem-768<") {
			t.Errorf("the signature filter shows a KEM")
		}
	}
	if code, _ := get(t, p.URL+"/datasets/pqm4?family=hash"); code != http.StatusBadRequest {
		t.Errorf("family=hash: %d, want 400", code)
	}
}
