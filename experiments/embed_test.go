package experiments

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/internal/shareddata"
)

func TestCatalogLoads(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Papers) != 4 {
		t.Fatalf("papers = %d, want 4", len(c.Papers))
	}
	for _, ref := range []string{"paper001/mlkem", "paper001/mldsa", "paper001/slhdsa", "paper001/sequence",
		"paper002/keygen", "paper002/signatures", "paper002/keygen-process", "paper002/signatures-process",
		"paper000/matrix", "paper000/matrix-stacks", "paper000/matrix-server"} {
		if _, err := c.Manifest(ref); err != nil {
			t.Errorf("manifest %s: %v", ref, err)
		}
	}
	if _, err := c.Manifest("paper001/nope"); err == nil {
		t.Error("unknown manifest found")
	}
	p, _ := c.Paper("paper002")
	for _, r := range p.Reference {
		if r.Source == "" || r.File == "" {
			t.Fatalf("row without source: %+v", r)
		}
	}
}

// TestReferenceMatchesShared rebuilds the reference datasets from the shared reference data
// and checks the committed copies are what the builder produces.
func TestReferenceMatchesShared(t *testing.T) {
	shared := shareddata.Dir(t, "reference-data")
	out := t.TempDir()
	cmd := exec.Command("go", "run", "./build", "-shared", shared, "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	for _, f := range []string{"boards.csv", "paper000/reference.csv", "paper001/reference.csv", "paper002/reference.csv", "paper003/reference.csv", "paper002/PROVENANCE.md"} {
		want, _ := os.ReadFile(filepath.Join(out, f))
		got, _ := os.ReadFile(f)
		if !bytes.Equal(want, got) {
			t.Errorf("%s differs from the shared data: run go run ./experiments/build", f)
		}
	}
}

func TestClaimValidation(t *testing.T) {
	one := 1.0
	tests := []struct {
		name  string
		claim Claim
		want  string
	}{
		{"method gate", Claim{Checks: []Check{{Kind: "ratio", Num: "A/x", Den: "B/x", Min: &one, Method: "openssl-cli"}}}, ""},
		{"caveat with reason", Claim{Scope: "caveat", Reason: "the paper's command failed"}, ""},
		{"unknown method", Claim{Checks: []Check{{Kind: "ratio", Num: "A/x", Den: "B/x", Min: &one, Method: "openssl"}}}, "unknown method"},
		{"unknown scope", Claim{Scope: "caveats", Reason: "r"}, "unknown scope"},
		{"trace ratio", Claim{Traces: []TraceCheck{{Kind: "ratio", Num: "* A/x", Den: "* B/x", Boards: []string{"b"}, Min: &one, Published: "1.2"}}}, ""},
		{"trace kind", Claim{Traces: []TraceCheck{{Kind: "order", Num: "b A/x", Den: "b B/x", Min: &one}}}, "trace check 1: unknown kind"},
		{"trace metric", Claim{Traces: []TraceCheck{{Kind: "ratio", Metric: "power", Num: "b A/x", Den: "b B/x", Min: &one}}}, "unknown metric \"power\""},
		{"trace cell without a board", Claim{Traces: []TraceCheck{{Kind: "ratio", Num: "A/x", Den: "b B/x", Min: &one}}}, "BOARD ALGORITHM/operation"},
		{"trace star in one", Claim{Traces: []TraceCheck{{Kind: "ratio", Num: "* A/x", Den: "b B/x", Min: &one}}}, "must be in both or neither"},
		{"trace boards without star", Claim{Traces: []TraceCheck{{Kind: "ratio", Num: "b A/x", Den: "b B/x", Boards: []string{"c"}, Min: &one}}}, "boards are given"},
		{"trace without band", Claim{Traces: []TraceCheck{{Kind: "ratio", Num: "b A/x", Den: "b B/x"}}}, "needs min or max"},
		{"trace published", Claim{Traces: []TraceCheck{{Kind: "ratio", Num: "b A/x", Den: "b B/x", Min: &one, Published: "243%"}}}, "published \"243%\""},
		{"scope without reason", Claim{Scope: "caveat"}, "needs a reason"},
		{"unknown metric", Claim{Checks: []Check{{Kind: "order", Cells: []string{"A/x", "B/x"}, Metric: "power"}}}, "unknown metric"},
		{"faster", Claim{Checks: []Check{{Kind: "faster", Num: "A/x", Den: "B/x", Percent: 41}}}, ""},
		{"faster without percent", Claim{Checks: []Check{{Kind: "faster", Num: "A/x", Den: "B/x"}}}, "percent in (0, 100)"},
		{"notslower without than", Claim{Checks: []Check{{Kind: "notslower", Cells: []string{"A/x"}}}}, "needs cells and than"},
		{"additive with one part", Claim{Checks: []Check{{Kind: "additive", Num: "H/x", Cells: []string{"A/x"}, Tolerance: 0.1}}}, "two cells"},
		{"range without threshold", Claim{Checks: []Check{{Kind: "range", Operation: "handshake", Count: 36}}}, "range needs operation, count and max"},
		{"boards without offBoard", Claim{Boards: []string{"pico-w"}, Checks: []Check{{Kind: "order", Cells: []string{"A/x", "B/x"}}}}, "need offBoard"},
		{"unknown role", Claim{Role: "signer", OffRole: "x", Checks: []Check{{Kind: "order", Cells: []string{"A/x", "B/x"}}}}, "unknown role \"signer\" (valid: client, server)"},
		{"role without offRole", Claim{Role: "server", Checks: []Check{{Kind: "order", Cells: []string{"A/x", "B/x"}}}}, "role server needs offRole"},
		{"unknown kind", Claim{Checks: []Check{{Kind: "spreads", Cells: []string{"A/x"}}}}, "unknown check kind"},
		{"ratio without band", Claim{Checks: []Check{{Kind: "ratio", Num: "A/x", Den: "B/x"}}}, "expected"},
		{"order of one", Claim{Checks: []Check{{Kind: "order", Cells: []string{"A/x"}}}}, "two or more"},
		{"by design and scoped", Claim{ByDesign: "the layout is ours", Scope: "caveat", Reason: "r"}, "exclude each other"},
		{"only information", Claim{Checks: []Check{{Kind: "order", Cells: []string{"A/x", "B/x"}, Info: true}}}, "every check is info"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.claim.validate()
			if tt.want == "" && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Paper("paper002")
	for _, id := range []string{"C002-05", "C002-09", "C002-11"} {
		cl, _ := p.Claim(id)
		for _, ch := range cl.Checks {
			if ch.Method != "openssl-cli" {
				t.Errorf("%s: check %+v is not gated on openssl-cli", id, ch)
			}
		}
	}
	if cl, _ := p.Claim("C002-11"); cl.Checks[0].Metric != "energy" {
		t.Errorf("C002-11 is about the energy of whole processes: metric %q", cl.Checks[0].Metric)
	}
	if cl, _ := p.Claim("C002-04"); cl.Scope != "caveat" {
		t.Errorf("C002-04 scope %q, want caveat", cl.Scope)
	}
}

// TestDisagreeingSourcesAreNotMixed checks PROVENANCE caveat 4 in the built data: each of the
// rows whose power readings disagree between the repository's results and its power files keeps
// one source for its power and energy figures, and carries the caveat on its energies only.
func TestDisagreeingSourcesAreNotMixed(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Paper("paper002")
	find := func(board, alg, op, scenario, metric string) Row {
		t.Helper()
		for _, r := range p.Reference {
			if r.Board == board && r.Algorithm == alg && r.Operation == op && r.Scenario == scenario && r.Metric == metric {
				return r
			}
		}
		t.Fatalf("no row %s %s %s %s %s", board, alg, op, scenario, metric)
		return Row{}
	}
	// pi2b SLH-DSA-SHAKE-256s sign: energy 5.617874805 J = (2.281476 - 1.738198) W x 10.34069998 s.
	onLoad := find("rpi2-b-v1.2", "SLH-DSA-SHAKE-256s", "sign", "on_load", "power_w")
	energy := find("rpi2-b-v1.2", "SLH-DSA-SHAKE-256s", "sign", "openssl_cli", "energy_j")
	if onLoad.Text != "2.281476" || !strings.HasSuffix(onLoad.File, "repo_full_results_long.csv") || !strings.Contains(onLoad.Note, "2.2255") {
		t.Errorf("on-load power %s from %s (%s); want the repository's 2.281476 W, naming the appendix's 2.2255 W", onLoad.Text, onLoad.File, onLoad.Note)
	}
	if energy.Text != "5.617874805" {
		t.Errorf("energy %s, want the repository's 5.617874805 J", energy.Text)
	}
	// Pi 1 ML-KEM-768 keygen: the text's 0.212 W delta is not beside energies computed from 0.215509 W.
	if d := find("rpi1-b", "ML-KEM-768", "keygen", "on_load", "power_delta_w"); d.Text != "0.215509" || !strings.Contains(d.Note, "0.212") {
		t.Errorf("Pi 1 delta power %s (%s); want 0.215509 naming the text's 0.212", d.Text, d.Note)
	}
	zeroEnergy := find("rpi-zero-wh", "SLH-DSA-SHA2-128f", "sign", "openssl_cli", "energy_j")
	zeroTime := find("rpi-zero-wh", "SLH-DSA-SHA2-128f", "sign", "openssl_cli", "latency")
	if cv := strings.Join(p.CaveatsFor(zeroEnergy), " "); !strings.Contains(cv, "0.53676 W") {
		t.Errorf("Pi Zero SLH-DSA sign energy has caveats %q; want the baseline caveat", cv)
	}
	if cv := strings.Join(p.CaveatsFor(zeroTime), " "); strings.Contains(cv, "0.53676 W") {
		t.Errorf("Pi Zero SLH-DSA sign time carries the energy baseline caveat: %q", cv)
	}
	if cv := p.CaveatsFor(find("rpi-zero-wh", "ML-DSA-44", "sign", "openssl_cli", "energy_j")); strings.Contains(strings.Join(cv, " "), "0.53676") {
		t.Errorf("Pi Zero ML-DSA-44 sign energy is not one of the 23 rows but carries %q", cv)
	}
}

// TestTracesMatchShared checks that every raw power capture in the shared data is embedded,
// and that each embedded copy decompresses to its CSV byte for byte.
func TestTracesMatchShared(t *testing.T) {
	shared := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings")
	fsys, ok := Traces("paper002")
	if !ok {
		t.Fatal("paper002 has no embedded traces")
	}
	files, _ := filepath.Glob(filepath.Join(shared, "*", "csv_files", "*.csv"))
	if len(files) != 371 {
		t.Fatalf("%d shared CSV captures, want 371", len(files))
	}
	for _, f := range files {
		name := filepath.Base(filepath.Dir(filepath.Dir(f))) + "/" + strings.TrimSuffix(filepath.Base(f), ".csv") + ".csv.gz"
		zf, err := fsys.Open(name)
		if err != nil {
			t.Errorf("%s is not embedded: run go run ./experiments/build", name)
			continue
		}
		zr, err := gzip.NewReader(zf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := io.ReadAll(zr)
		zf.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := os.ReadFile(f)
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s: run go run ./experiments/build", name, f)
		}
	}
	embedded, _ := fs.Glob(fsys, "*/*.csv.gz")
	if len(embedded) != len(files) {
		t.Errorf("%d embedded captures, %d shared", len(embedded), len(files))
	}
	if _, ok := Traces("paper001"); ok {
		t.Error("paper001 has traces")
	}
}
