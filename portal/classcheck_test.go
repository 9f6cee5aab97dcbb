package portal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/host"
)

// claimingBoard is the host board under another name: its identity claims a class and a
// class status that nothing checked, as a community runner could.
type claimingBoard struct {
	host.Host
	class, status string
}

func (b *claimingBoard) Identity(ctx context.Context) (artifacts.BoardIdentity, error) {
	id, err := (&host.Host{}).Identity(ctx)
	id.Class, id.ClassStatus = b.class, b.status
	return id, err
}

// submitter is a community account with registered keys.
type submitter struct {
	token string
	id    *identity.Identity
}

func newSubmitter(t *testing.T, p *portaltest.Portal) submitter {
	t.Helper()
	id, _ := identity.GenerateIdentity()
	return submitter{submitterToken(t, p, "lab", id), id}
}

func (s submitter) bundle(t *testing.T, board runner.Board, m *artifacts.Manifest) []byte {
	t.Helper()
	// Roots without /proc/stat: the runner records no external load, so whether this
	// machine is busy with other work does not decide where the run is ranked.
	quiet := t.TempDir()
	b, _, err := runner.Execute(context.Background(), board, m, runner.Options{Identity: s.id, Version: "test", Origin: attest.OriginLocal,
		Roots: runner.Roots{Proc: quiet, Sys: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (s submitter) submit(t *testing.T, p *portaltest.Portal, bundle []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/submissions", bytes.NewReader(bundle))
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestCommunityBundleWithAMismatchingClassIsRefused: a bundle from this machine filed under
// rpi4-b, claiming the class verified, is refused with the reason and nothing is stored.
func TestCommunityBundleWithAMismatchingClassIsRefused(t *testing.T) {
	if _, err := (&host.Host{Class: "rpi4-b"}).CheckClass(); err == nil {
		t.Skip("this machine is a Raspberry Pi 4")
	}
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	forged := s.bundle(t, &claimingBoard{class: "rpi4-b", status: artifacts.ClassVerified}, smallManifest(t, 3))
	code, body := s.submit(t, p, forged)
	if code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d: %s", code, body)
	}
	for _, want := range []string{"board class rpi4-b is a Raspberry Pi 4", "refusing to file its results under rpi4-b"} {
		if !strings.Contains(body, want) {
			t.Errorf("refusal %q does not say %q", body, want)
		}
	}
	// A microcontroller class from the host driver is refused too, though the catalogue gives
	// the Pico W no CPU to compare.
	code, body = s.submit(t, p, s.bundle(t, &claimingBoard{class: "pico-w", status: artifacts.ClassDeclared}, smallManifest(t, 3)))
	if (code != http.StatusBadRequest && code != http.StatusUnprocessableEntity) || !strings.Contains(body, "microcontroller") {
		t.Errorf("a host bundle filed under pico-w: status %d: %s", code, body)
	}
	runs, _ := p.Server.Store().Runs(context.Background(), store.RunFilter{})
	if len(runs) != 0 || countBlobs(t, p.Config.DataDir) != 0 {
		t.Fatalf("after the refusal: %d runs, %d blobs", len(runs), countBlobs(t, p.Config.DataDir))
	}
}

// TestDeclaredClassIsNeverRankedWithVerified: a verified host run and a run filed under
// my-lab-box (which the catalogue does not list, though the bundle claims it verified) publish;
// the my-lab-box run is stored as declared and ranked in its own group.
func TestDeclaredClassIsNeverRankedWithVerified(t *testing.T) {
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	m := smallManifest(t, 3)
	for _, b := range []runner.Board{&host.Host{}, &claimingBoard{class: "my-lab-box", status: artifacts.ClassVerified}} {
		if code, body := s.submit(t, p, s.bundle(t, b, m)); code != http.StatusOK {
			t.Fatalf("status %d: %s", code, body)
		}
	}
	ctx := context.Background()
	runs, err := p.Server.Store().Runs(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, r := range runs {
		status[r.BoardClass] = r.ClassStatus
	}
	if status["host"] != artifacts.ClassVerified || status["my-lab-box"] != artifacts.ClassDeclared {
		t.Fatalf("class statuses %v", status)
	}
	var lb portal.Leaderboard
	getJSON(t, p.URL+"/api/v1/leaderboards?algorithm=ML-KEM-768&operation=encaps", &lb)
	if len(lb.Measured) != 2 {
		t.Fatalf("standings %+v", lb.Measured)
	}
	for _, st := range lb.Measured {
		if st.Rank != 1 {
			t.Errorf("%s ranked %d: the declared and the verified class share a ranking", st.Board, st.Rank)
		}
		if want := status[st.Board]; st.ClassStatus != want {
			t.Errorf("%s standing says %q, want %q", st.Board, st.ClassStatus, want)
		}
	}
	code, page := get(t, p.URL+"/leaderboards?algorithm=ML-KEM-768&operation=encaps")
	if code != http.StatusOK || strings.Count(page, `class="leaderboard`) != 2 || !strings.Contains(page, "declared board class, not verified") {
		t.Errorf("leaderboard page: %d, %d rankings, declared title %v", code, strings.Count(page, `class="leaderboard`), strings.Contains(page, "declared board class, not verified"))
	}
	if err := p.Server.RefreshHighlights(ctx); err != nil { // the highlight job's work, done now
		t.Fatal(err)
	}
	code, home := get(t, p.URL+"/")
	if code != http.StatusOK || !strings.Contains(home, "declared board class, not verified") {
		t.Errorf("home highlights do not separate the declared class")
	}
	var pico int64
	for _, r := range runs {
		if r.BoardClass == "my-lab-box" {
			pico = r.ID
		}
	}
	// The comparison and its claim verdicts carry the portal's own finding, not the bundle's.
	if r, err := p.Server.Store().Run(ctx, pico); err != nil || !strings.Contains(r.Report, `"classStatus":"declared"`) || strings.Contains(r.Report, `"classStatus":"verified"`) {
		t.Errorf("the my-lab-box comparison does not carry the declared status (%v): %.300s", err, r.Report)
	}
	code, run := get(t, p.URL+"/runs/"+itoa(pico))
	for _, want := range []string{"Timing context", "Clock resolution", "GOMAXPROCS", "declared board class, not verified", "not in the board catalogue"} {
		if code != http.StatusOK || !strings.Contains(run, want) {
			t.Errorf("run page (%d) lacks %q", code, want)
		}
	}
}

// TestLeaderboardsNeverMixMethods: in-process and process-per-operation cells of one
// operation are two rankings, each of one unit, and the exports say which is which.
func TestLeaderboardsNeverMixMethods(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	id, _ := identity.GenerateIdentity()
	for i, c := range []struct {
		board  string
		method artifacts.Method
		median float64
	}{
		{"host", artifacts.MethodInProcess, 21670}, {"lab-a", artifacts.MethodInProcess, 25000},
		{"host", artifacts.MethodProcessPerOperation, 3.681e6}, {"lab-a", artifacts.MethodProcessPerOperation, 4e6},
	} {
		now := time.Now()
		cell := artifacts.Cell{Algorithm: "ML-KEM-768", Operation: "encaps", Status: artifacts.StatusOK, Unit: "ns",
			Stats: &artifacts.Stats{N: 5, Min: c.median, P25: c.median, Median: c.median, P75: c.median, Max: c.median, Mean: c.median}}
		_, err := p.Server.Store().Publish(ctx, store.Publication{Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:x",
			Kind: "kem-bench", Method: c.method, BoardClass: c.board, BoardName: c.board, Level: "host", ClassStatus: artifacts.ClassVerified, Origin: "community",
			Signer: "s", PublicKeys: id.Public(), Bundle: fakeDigest(itoa(int64(i))), StartedAt: now, FinishedAt: now, Environment: "{}", Report: "{}", Checks: "[]",
			CellsTotal: 1, CellsOK: 1}, Cells: []artifacts.Cell{cell}})
		if err != nil {
			t.Fatal(err)
		}
	}
	var lb portal.Leaderboard
	getJSON(t, p.URL+"/api/v1/leaderboards?algorithm=ML-KEM-768&operation=encaps", &lb)
	ranks := map[string][]int{}
	for _, st := range lb.Measured {
		ranks[st.Method] = append(ranks[st.Method], st.Rank)
		if st.Unit != "ns" {
			t.Errorf("unit %s", st.Unit)
		}
	}
	if len(ranks) != 2 || len(ranks[string(artifacts.MethodInProcess)]) != 2 || ranks[string(artifacts.MethodProcessPerOperation)][0] != 1 {
		t.Fatalf("rankings by method %v", ranks)
	}
	code, page := get(t, p.URL+"/leaderboards?algorithm=ML-KEM-768&operation=encaps")
	if code != http.StatusOK || strings.Count(page, `class="leaderboard`) != 2 || !strings.Contains(page, "process-per-operation") {
		t.Errorf("leaderboard page: %d with %d rankings", code, strings.Count(page, `class="leaderboard`))
	}
	code, csv := get(t, p.URL+"/api/v1/leaderboards?algorithm=ML-KEM-768&operation=encaps&format=csv")
	if code != http.StatusOK || !strings.Contains(csv, "method,class_status") || !strings.Contains(csv, "process-per-operation,verified") {
		t.Errorf("CSV lacks method and class status:\n%s", csv)
	}
	if err := p.Server.RefreshHighlights(ctx); err != nil { // the highlight job's work, done now
		t.Fatal(err)
	}
	code, home := get(t, p.URL+"/")
	if code != http.StatusOK || strings.Count(home, "time per operation · host · ") < 2 {
		t.Errorf("home highlights do not list the methods apart")
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
