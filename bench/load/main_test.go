package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/experiments"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/portalclient"
)

// TestMain stops the PostgreSQL portaltest starts with PQREPRO_TEST_DATABASE=postgres.
func TestMain(m *testing.M) { pgtest.Main(m) }

// publishRun measures paper001/mlkem on the host (5 samples a cell) and submits it to p as
// a community result, returning the run's id.
func publishRun(t *testing.T, p *portaltest.Portal) int64 {
	t.Helper()
	ctx := context.Background()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	token := "load-test-submitter-token-0123456789"
	u, err := p.Server.Store().CreateUser(ctx, "load test", "submitter", portal.HashToken(token))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Server.Store().AddSubmitterKey(ctx, u.ID, "load", id.Public()); err != nil {
		t.Fatal(err)
	}
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Manifest("paper001/mlkem")
	if err != nil {
		t.Fatal(err)
	}
	c, err := artifacts.ParseManifest(m.YAML(), "paper001/mlkem")
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Iterations, c.Spec.Warmup = 5, 1
	b, _, err := runner.Execute(ctx, &host.Host{}, c, runner.Options{Identity: id, Version: "test", Origin: attest.OriginLocal})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	resp, err := portalclient.NewSubmitter(p.URL, token).Submit(ctx, buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return resp.RunID
}

// TestMeasureRealPortal loads a real portal (its own process, so its memory is readable)
// with one published run: every path answers 200 the number of times asked, a missing page
// is reported failed with its 404s counted, and discovery finds paths that all answer 200.
func TestMeasureRealPortal(t *testing.T) {
	p := portaltest.Start(t, nil)
	runID := publishRun(t, p)
	ctx := context.Background()
	cfg := config{URL: p.URL, Concurrency: 4, Requests: 10, Warmup: 1, PID: os.Getpid(), Timeout: time.Minute}
	client := newClient(cfg)
	run := fmt.Sprintf("/runs/%d", runID)
	paths := []string{"/", "/papers/paper001", run, "/api/v1/runs?limit=5", "/no-such-page"}
	var log bytes.Buffer
	rep, err := measure(ctx, client, cfg, paths, &log)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Paths) != len(paths) {
		t.Fatalf("%d results for %d paths", len(rep.Paths), len(paths))
	}
	for _, r := range rep.Paths {
		if r.Path == "/no-such-page" {
			if !r.Failed || r.OK != 0 || r.Non200 != cfg.Requests+cfg.Warmup || r.Statuses[404] != cfg.Requests+cfg.Warmup || r.Requests != cfg.Requests {
				t.Errorf("missing page: %+v, want failed with %d 404s", r, cfg.Requests+cfg.Warmup)
			}
			continue
		}
		if r.Failed || r.Requests != cfg.Requests || r.OK != cfg.Requests || r.Non200 != 0 || r.Errors != 0 {
			t.Errorf("%s: %+v, want %d answers of 200", r.Path, r, cfg.Requests)
		}
		if !(r.P50MS > 0 && r.P50MS <= r.P99MS && r.P99MS <= r.MaxMS) || r.ReqPerS <= 0 || r.Bytes <= 0 {
			t.Errorf("%s: figures out of order or missing: %+v", r.Path, r)
		}
		if r.RSSAfterKB <= 0 || r.CPUMSPerReq < 0 || r.OthersCPU < 0 || r.OthersCPU > 1 {
			t.Errorf("%s: no resident memory after, or CPU figures out of range: %+v", r.Path, r)
		}
	}
	if rep.Before == nil || rep.After == nil || rep.Before.RSSKB <= 0 || rep.After.HWMKB < rep.After.RSSKB {
		t.Errorf("memory: before %+v, after %+v", rep.Before, rep.After)
	}
	if home := rep.Paths[0]; !home.Gzip {
		t.Errorf("/ was not answered gzip-encoded although gzip was accepted: %+v", home)
	}
	var table bytes.Buffer
	rep.table(&table)
	for _, want := range []string{"/no-such-page", "FAILED: 11×404", "portal memory: VmRSS", run} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	found, err := discoverPaths(ctx, client, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/", "/papers/paper001", "/boards", "/boards/host", "/leaderboards", "/runs", run,
		fmt.Sprintf("/api/v1/runs/%d", runID), "/runs?paper=paper001", "/runs?board=host", "/api/v1/runs?limit=50"} {
		if !slices.Contains(found, want) {
			t.Errorf("discovery did not find %s in %v", want, found)
		}
	}
	if !slices.ContainsFunc(found, func(s string) bool { return strings.HasPrefix(s, "/experiments/paper001/") }) ||
		!slices.ContainsFunc(found, func(s string) bool { return strings.HasPrefix(s, "/api/v1/leaderboards?") }) {
		t.Errorf("discovery found no experiment of paper001 or no leaderboard: %v", found)
	}
	cfg.Requests, cfg.Concurrency, cfg.Warmup, cfg.PID = 1, 1, 0, 0
	rep, err = measure(ctx, client, cfg, found, &log)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Paths {
		if r.Failed {
			t.Errorf("discovered %s does not answer 200: %+v", r.Path, r)
		}
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       memory
		err        bool
	}{
		{"both", "Name:\tpqrepro\nVmHWM:\t  52344 kB\nVmRSS:\t   48100 kB\nThreads:\t9\n", memory{RSSKB: 48100, HWMKB: 52344}, false},
		{"kernel thread", "Name:\tkthreadd\nThreads:\t1\n", memory{}, true},
		{"twice one", "VmRSS:\t1 kB\nVmRSS:\t2 kB\n", memory{}, true},
		{"bad unit", "VmHWM:\t1 MB\nVmRSS:\t1 kB\n", memory{}, true},
		{"bad number", "VmHWM:\tx kB\nVmRSS:\t1 kB\n", memory{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseStatus(tc.text)
			if (err != nil) != tc.err || (!tc.err && m != tc.want) {
				t.Errorf("parseStatus = %+v, %v; want %+v, error %v", m, err, tc.want, tc.err)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(d, 50); p != 100*time.Millisecond {
		t.Errorf("p50 of 1..200 ms = %s", p)
	}
	if p := percentile(d, 99); p != 198*time.Millisecond {
		t.Errorf("p99 of 1..200 ms = %s", p)
	}
	if p := percentile(d[:1], 99); p != time.Millisecond {
		t.Errorf("p99 of one = %s", p)
	}
}

func TestReadPaths(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("# pages\n/\n\n  /runs?board=host  \n"), 0o644)
	p, err := readPaths(good)
	if err != nil || !slices.Equal(p, []string{"/", "/runs?board=host"}) {
		t.Errorf("readPaths = %v, %v", p, err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("/\nruns\n"), 0o644)
	if _, err := readPaths(bad); err == nil || !strings.Contains(err.Error(), "bad:2") {
		t.Errorf("readPaths of a path without / = %v, want an error naming line 2", err)
	}
}

// FuzzParseStatus: any text of /proc/PID/status either parses to both figures or is an
// error; it never panics.
func FuzzParseStatus(f *testing.F) {
	f.Add("Name:\tpqrepro\nVmHWM:\t  52344 kB\nVmRSS:\t   48100 kB\n")
	f.Add("VmRSS: 1 kB\nVmRSS: 2 kB\n")
	f.Add("VmHWM:\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := parseStatus(text)
		if err == nil && (!strings.Contains(text, "VmRSS") || !strings.Contains(text, "VmHWM")) {
			t.Errorf("parsed %+v from a text without VmRSS and VmHWM", m)
		}
	})
}

func TestParseCPU(t *testing.T) {
	pid := "4242 (pq repro) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 2000000 3000 18446744073709551615\n"
	stat := "cpu  1000 10 290 8000 700 0 0 0 0 0\ncpu0 500 5 145 4000 350 0 0 0 0 0\n"
	c := parseCPU(pid, stat)
	if !c.ok || c.proc != 3 || c.busy != 13 || c.total != 100 {
		t.Errorf("parseCPU = %+v, want 3 s of the process, 13 s busy of 100 s", c)
	}
	for _, bad := range [][2]string{{"4242 pqrepro S 1", stat}, {pid, "intr 1 2 3\n"}, {pid, "cpu 1 2 x 4 5 6\n"}} {
		if c := parseCPU(bad[0], bad[1]); c.ok {
			t.Errorf("parseCPU(%q, %q) = %+v, want not ok", bad[0], bad[1], c)
		}
	}
}
