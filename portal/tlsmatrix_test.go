package portal_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/runner/exec/tlsmatrix"
)

// TestMain lets the test binary act as the TLS server child of a tls-matrix cell, exactly as
// the pqrepro binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == tlsmatrix.TLSServerArg {
		os.Exit(tlsmatrix.TLSServer(os.Stdin, os.Stdout))
	}
	pgtest.Main(m) // portaltest may have started PostgreSQL (PQREPRO_TEST_DATABASE=postgres)
}

const tlsMatrixSrc = `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: small-matrix}
spec:
  tls:
    groups: [ML-KEM-512, X25519]
    signatures: [ML-DSA-44, Ed25519]
    stacks: [pqrepro, crypto/tls]
    batch: 3
  warmup: 1
  iterations: 6
  seed: "test/matrix"
  boards: [host]
`

// TestTLSMatrixRunPage measures a 2 × 2 matrix with the real executor (engine and crypto/tls,
// loopback TCP, a server child process), publishes it through the real ingest path as a
// community submission, and reads the heat map, its tooltips and units, and the leaderboard.
func TestTLSMatrixRunPage(t *testing.T) {
	p := portaltest.Start(t, nil)
	m, err := artifacts.ParseManifest([]byte(tlsMatrixSrc), "test")
	if err != nil {
		t.Fatal(err)
	}
	id := mustIdentity(t)
	sub := registeredSubmitter(t, p, "tls-lab", id)
	got, err := sub.Submit(context.Background(), signedBundle(t, m, id, attest.OriginLocal))
	if err != nil {
		t.Fatal(err)
	}
	code, page := get(t, p.URL+"/runs/"+itoa(got.RunID))
	if code != http.StatusOK {
		t.Fatalf("run page: %d", code)
	}
	// Rows in the manifest's group order, columns in its signature order.
	if i, j := strings.Index(page, `<th scope="row">ML-KEM-512</th>`), strings.Index(page, `<th scope="row">X25519</th>`); i < 0 || j < i {
		t.Errorf("heat map rows missing or out of the manifest's order (%d, %d)", i, j)
	}
	if i, j := strings.Index(page, `<th scope="col">ML-DSA-44</th>`), strings.Index(page, `<th scope="col">Ed25519</th>`); i < 0 || j < i {
		t.Errorf("heat map columns missing or out of order (%d, %d)", i, j)
	}
	cellRE := regexp.MustCompile(`<td class="heat heat-([0-6])" title="([^"]+)"><span class="heat-value">([^<]+)</span>`)
	cells := cellRE.FindAllStringSubmatch(page, -1)
	if len(cells) != 4 {
		t.Fatalf("%d measured heat cells, want 4 (ok cells of the engine only)", len(cells))
	}
	tipRE := regexp.MustCompile(`^(ML-KEM-512|X25519)\+(ML-DSA-44|Ed25519): median [0-9.]+ (µs|ms), p25 [0-9.]+ (µs|ms) – p75 [0-9.]+ (µs|ms), n = 6$`)
	valRE := regexp.MustCompile(`^[0-9.]+ (µs|ms)$`)
	steps := map[string]bool{}
	for _, c := range cells {
		if !tipRE.MatchString(c[2]) || !valRE.MatchString(c[3]) {
			t.Errorf("cell tooltip %q value %q: want µs or ms with the unit and n = 6", c[2], c[3])
		}
		steps[c[1]] = true
	}
	if !steps["0"] || !steps["6"] {
		t.Errorf("colour steps %v: the fastest cell must be step 0 and the slowest step 6", steps)
	}
	for _, want := range []string{`class="heat-legend"`, `class="heat-table"`, "crypto/tls", "Client CPU", "Chain"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	// The table carries each side's CPU and the bytes with units; crypto/tls's cells are rows of
	// their own, beside the engine's.
	rowRE := regexp.MustCompile(`<td>X25519\+Ed25519</td><td>pqrepro</td>.*?</tr>`)
	row := rowRE.FindString(strings.ReplaceAll(page, "\n", ""))
	if row == "" || !regexp.MustCompile(`[0-9.]+ (µs|ms)</td><td class="num">[0-9.]+ (µs|ms)</td><td class="num">[0-9]+ B</td>`).MatchString(row) {
		t.Errorf("table row of X25519+Ed25519 lacks CPU and bytes with units: %q", row)
	}
	if !strings.Contains(page, "<td>X25519+Ed25519</td><td>crypto/tls</td>") || !strings.Contains(page, "<td>ML-KEM-512+Ed25519</td><td>crypto/tls</td>") {
		t.Errorf("crypto/tls rows missing from the table: %s", page[strings.Index(page, `class="heat-table"`):])
	}

	// Handshakes are ranked per cell, and "handshake" is offered for matrix cells.
	code, lb := get(t, p.URL+"/leaderboards?algorithm=X25519%2BEd25519&operation=handshake")
	if code != http.StatusOK || !strings.Contains(lb, `table class="leaders"`) || !strings.Contains(lb, "/runs/"+itoa(got.RunID)) {
		t.Errorf("leaderboard of X25519+Ed25519 handshake (%d) does not rank the run", code)
	}
	if !strings.Contains(lb, `<option value="X25519+Ed25519/handshake" selected`) {
		t.Error("the picker does not offer the matrix cell and its handshake")
	}
	// The engine and crypto/tls are ranked apart: each stack's cell is first of its own ranking.
	code, csv := get(t, p.URL+"/api/v1/leaderboards?algorithm=X25519%2BEd25519&operation=handshake&format=csv")
	for _, want := range []string{"X25519+Ed25519,handshake,latency,measured,1,host,host,community,loopback-tcp,",
		"X25519+Ed25519,handshake,latency,measured,1,host,host,community,loopback-tcp · stack: crypto/tls,"} {
		if code != http.StatusOK || !strings.Contains(csv, want) {
			t.Errorf("leaderboard CSV (%d) lacks %q: %s", code, want, csv)
		}
	}
}

// TestLeaderboardPickerPairsOperations offers only (algorithm, operation) pairs that exist, in
// one picker grouped by algorithm: a KEM's group lists its own operations, a matrix cell's
// handshake, and an operation left over from another algorithm is replaced by one the chosen
// algorithm has.
func TestLeaderboardPickerPairsOperations(t *testing.T) {
	p := portaltest.Start(t, nil)
	for _, tt := range []struct {
		query, group, want string
		lacks              []string
	}{
		{"algorithm=ML-KEM-768&operation=encaps", "ML-KEM-768", `<option value="ML-KEM-768/encaps" selected`, []string{`/handshake"`, `/sign"`}},
		{"algorithm=P-256%2BRSA-PSS&operation=handshake", "P-256+RSA-PSS", `<option value="P-256+RSA-PSS/handshake" selected`, []string{`/encaps"`, `/sign"`}},
		{"algorithm=X25519MLKEM768%2BML-DSA-87&operation=encaps", "X25519MLKEM768+ML-DSA-87", `<option value="X25519MLKEM768+ML-DSA-87/handshake" selected`, []string{`/encaps"`}},
		{"pair=ML-DSA-65/sign", "ML-DSA-65", `<option value="ML-DSA-65/sign" selected`, []string{`/encaps"`, `/handshake"`}},
	} {
		code, page := get(t, p.URL+"/leaderboards?"+tt.query)
		// The one picker lists each algorithm's existing pairs under its own heading.
		opts := regexp.MustCompile(`<optgroup label="` + regexp.QuoteMeta(tt.group) + `">(.*?)</optgroup>`)
		m := opts.FindStringSubmatch(strings.ReplaceAll(page, "\n", ""))
		if code != http.StatusOK || m == nil {
			t.Fatalf("%s: %d, no pairs of %s in the picker", tt.query, code, tt.group)
		}
		if !strings.Contains(m[1], tt.want) {
			t.Errorf("%s: picker %q lacks %q", tt.query, m[1], tt.want)
		}
		for _, l := range tt.lacks {
			if strings.Contains(m[1], l) {
				t.Errorf("%s: picker offers %s", tt.query, l)
			}
		}
	}
}

// TestPaper000MatrixPages runs paper000's own 36-cell manifest (fewer iterations), publishes
// it, and reads the experiment page's heat map of its latest run and the run's claim verdicts.
func TestPaper000MatrixPages(t *testing.T) {
	p := portaltest.Start(t, nil)
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	base, err := cat.Manifest("paper000/matrix")
	if err != nil {
		t.Fatal(err)
	}
	m, err := artifacts.ParseManifest(base.YAML(), "test")
	if err != nil {
		t.Fatal(err)
	}
	m.Spec.Iterations, m.Spec.Warmup, m.Spec.TLS.Batch = 10, 1, 2 // five rounds, the fewest an interval over rounds needs
	id := mustIdentity(t)
	got, err := registeredSubmitter(t, p, "matrix-lab", id).Submit(context.Background(), signedBundle(t, m, id, attest.OriginLocal))
	if err != nil {
		t.Fatal(err)
	}
	code, page := get(t, p.URL+"/experiments/paper000/matrix")
	if code != http.StatusOK {
		t.Fatalf("experiment page: %d", code)
	}
	if !strings.Contains(page, "The matrix below is the latest run, <a href=\"/runs/"+itoa(got.RunID)+"\">") {
		t.Error("the experiment page does not name its latest run's matrix")
	}
	if n := len(regexp.MustCompile(`<td class="heat heat-[0-6none]+" title="`).FindAllString(page, -1)); n != 36 {
		t.Errorf("%d heat cells on the experiment page, want 36", n)
	}
	code, page = get(t, p.URL+"/runs/"+itoa(got.RunID))
	if code != http.StatusOK {
		t.Fatalf("run page: %d", code)
	}
	for _, want := range []string{"C000-01", "ordering on host, not a verdict on 41% / 8.9x", "ordering on host: ", "the published figure is of pico-w; this run is on host",
		"C000-05", "base = handshake without key exchange", "C000-06", "(p75 - p25) / median", "C000-07", "36 cells: max/min of medians", "power meter"} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if testing.Verbose() {
		_, js := get(t, p.URL+"/api/v1/runs/"+itoa(got.RunID))
		t.Log(js)
	}
	// Fewer iterations than the catalogue's manifest: the run ran its own manifest, so its
	// claim checks are on its page and in its report, and none counts toward paper000's claims.
	if stored, err := p.Server.Store().ClaimVerdicts(context.Background(), "paper000", got.RunID); err != nil || len(stored) != 0 {
		t.Fatalf("%d verdicts of a run of its own manifest stored (%v), want none", len(stored), err)
	}
	if !strings.Contains(page, "own manifest") || !strings.Contains(page, "/runs/"+itoa(got.RunID)+"/manifest.yaml") {
		t.Error("the run page does not say the run ran its own manifest, with a link to it")
	}
	run, err := p.Server.Store().Run(context.Background(), got.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var report compare.Report
	if err := json.Unmarshal([]byte(run.Report), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Claims) != 8 {
		t.Fatalf("%d claims checked in the report, want 8", len(report.Claims))
	}
	for _, v := range report.Claims {
		t.Logf("%s: %s: %s", v.Claim.ID, v.Verdict, v.Reason)
		want := map[string]string{"C000-01": "not verdicted", "C000-02": "not verdicted", "C000-03": "not verdicted", "C000-08": "untestable"}[v.Claim.ID]
		if want != "" && v.Verdict != want {
			t.Errorf("%s: %s, want %s", v.Claim.ID, v.Verdict, want)
		}
	}
}

// TestTLSMatrixServerRolePages measures a small matrix in the server role with the real
// executor, publishes it, and reads the role on the run page (heading and every cell's row),
// why the rounds are absent, and the server-role experiment listed with its role on the
// paper's page.
func TestTLSMatrixServerRolePages(t *testing.T) {
	p := portaltest.Start(t, nil)
	src := strings.NewReplacer("[pqrepro, crypto/tls]", "[pqrepro]", "    batch: 3", "    batch: 3\n    role: server").Replace(tlsMatrixSrc)
	m, err := artifacts.ParseManifest([]byte(src), "test")
	if err != nil {
		t.Fatal(err)
	}
	id := mustIdentity(t)
	got, err := registeredSubmitter(t, p, "server-lab", id).Submit(context.Background(), signedBundle(t, m, id, attest.OriginLocal))
	if err != nil {
		t.Fatal(err)
	}
	code, page := get(t, p.URL+"/runs/"+itoa(got.RunID))
	if code != http.StatusOK {
		t.Fatalf("run page: %d", code)
	}
	for _, want := range []string{"Handshake matrix, server role", "Median server time per handshake",
		"ML-DSA rejection rounds per signature: not measured (the engine server&#39;s signer, Go&#39;s crypto/mldsa, does not report its rejection rounds)."} {
		if !strings.Contains(page, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<td>server</td>"); n != 4 {
		t.Errorf("%d table rows with the server role, want 4", n)
	}
	code, page = get(t, p.URL+"/papers/paper000")
	if code != http.StatusOK || !strings.Contains(page, `href="/experiments/paper000/matrix-server"`) || !strings.Contains(page, "(server role)") {
		t.Errorf("paper page %d: the server-role matrix is not listed with its role", code)
	}
}
