package rederive

import (
	"io/fs"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"pqrepro/compare"
	"pqrepro/experiments"
)

func paper(t testing.TB) (*experiments.Paper, fs.FS) {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Paper("paper002")
	if !ok {
		t.Fatal("no paper002")
	}
	fsys, ok := experiments.Traces("paper002")
	if !ok {
		t.Fatal("paper002 has no traces")
	}
	return p, fsys
}

// TestPaper002 re-derives every published energy of paper002 from the authors' traces and
// checks what is known about them: every cell re-derived, the hand check of the Pi 1
// ML-KEM-768 keygen, and the cells outside their interval exactly the ones whose published
// energy used a power the captures do not give (PROVENANCE caveat 4).
func TestPaper002(t *testing.T) {
	p, fsys := paper(t)
	tab, err := Rederive(p, fsys, Paper002, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := tab.Summarize()
	if s.All.Cells != 329 || s.All.Rederived != 329 || s.BySource[SourceTable4].Rederived != 77 ||
		s.BySource[SourceAppendix].Rederived != 147 || s.BySource[SourceRepoOnly].Rederived != 182 {
		t.Fatalf("re-derived %+v, Table 4 %+v, appendix %+v, repository only %+v; want 329, 77, 147, 182",
			s.All, *s.BySource[SourceTable4], *s.BySource[SourceAppendix], *s.BySource[SourceRepoOnly])
	}
	if tab.Captures != 371 || len(tab.Unused) != 36 { // 35 TLS captures and the line saying why
		t.Errorf("%d captures, %d unused lines; want 371 and 36", tab.Captures, len(tab.Unused))
	}
	var outside []string
	for _, c := range tab.Cells {
		e := c.Estimate
		if !(e.Energy.Lo <= e.Energy.Point && e.Energy.Point <= e.Energy.Hi) || e.Energy.Lo <= 0 {
			t.Errorf("%s: interval %+v", c.Ref(), e.Energy)
		}
		if c.Verdict == Outside {
			outside = append(outside, c.Ref())
			if c.Reason != ReasonSource {
				t.Errorf("%s outside for %s: %s", c.Ref(), c.Reason, c.Detail)
			}
		}
		if c.Ref() == "rpi1-b ML-KEM-768/keygen" {
			// 0.215509 W x 0.233043704 s = 0.050223 J (the check by hand).
			if math.Abs(e.Delta.Point-0.215509) > 5e-7 || math.Abs(e.Energy.Point-0.050223) > 5e-7 || c.Verdict != Inside {
				t.Errorf("%s: ΔP %.7f W, E %.7f J, %s; want 0.215509 W, 0.050223 J, inside", c.Ref(), e.Delta.Point, e.Energy.Point, c.Verdict)
			}
		}
	}
	// PROVENANCE caveat 4: the Pi Zero's 23 SLH-DSA signing and verification energies used an
	// idle baseline of 0.53676 W (its capture's mean is 0.56376 W), and the Pi 2 v1.2's
	// SLH-DSA-SHAKE-256s signing an on-load power of another capture.
	for _, ref := range outside {
		board, cell, _ := strings.Cut(ref, " ")
		pizero := board == "rpi-zero-wh" && (strings.HasSuffix(cell, "/verify") || strings.HasPrefix(cell, "SLH-DSA-") && strings.HasSuffix(cell, "/sign"))
		if !pizero && ref != "rpi2-b-v1.2 SLH-DSA-SHAKE-256s/sign" {
			t.Errorf("%s is outside its interval, but is not a cell of PROVENANCE caveat 4", ref)
		}
	}
	if len(outside) < 20 || !slices.Contains(outside, "rpi2-b-v1.2 SLH-DSA-SHAKE-256s/sign") || !slices.Contains(outside, "rpi-zero-wh SLH-DSA-SHAKE-192s/sign") {
		t.Errorf("outside: %v; want the Pi Zero's baseline cells and the Pi 2 v1.2's SHAKE-256s signing", outside)
	}
	if s.OutsideByReason[ReasonSource] != len(outside) || s.WidthMin <= 0 || s.WidthMedian < s.WidthMin || s.WidthMax < s.WidthMedian {
		t.Errorf("summary %+v", s)
	}

	verdicts := map[string]string{}
	for _, cl := range tab.Claims {
		verdicts[cl.ID] = cl.Verdict
		for _, ch := range cl.Checks {
			if ch.Verdict == compare.Untestable {
				t.Errorf("%s: %s / %s untestable: %s", cl.ID, ch.Num, ch.Den, ch.Detail)
			}
			if ch.Published != "" && ch.PublishedVerdict != Inside {
				t.Errorf("%s: the paper's %s is outside the re-derived %s / %s = %+v", cl.ID, ch.Published, ch.Num, ch.Den, ch.Ratio)
			}
		}
	}
	for id, want := range map[string]string{"C002-01": compare.Holds, "C002-02": compare.Holds, "C002-03": compare.Holds,
		"C002-04": compare.NotVerdicted, "C002-06": compare.Holds, "C002-11": compare.Holds} {
		if verdicts[id] != want {
			t.Errorf("%s: %s on the paper's traces, want %s", id, verdicts[id], want)
		}
	}
	if _, ok := verdicts["C002-05"]; !ok {
		t.Error("C002-05 not checked on the traces")
	}
}

// subset is the embedded traces restricted to the named files.
func subset(t *testing.T, fsys fs.FS, names ...string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			t.Fatal(err)
		}
		m[n] = &fstest.MapFile{Data: b}
	}
	return m
}

// TestNoCapture: a published energy without its captures or its timing gets no number at all.
func TestNoCapture(t *testing.T) {
	p, fsys := paper(t)
	// Pi 1's idle capture and two of its operations; the Pi 4's ML-KEM-768 capture without
	// the Pi 4's idle capture.
	traces := subset(t, fsys, "pi1/01_pi1_baseline.csv.gz", "pi1/07_pi1_keys_ml-kem-768.csv.gz",
		"pi1/05_pi1_keys_ecdh.csv.gz", "pi4/07_pi4_keys_ml-kem-768.csv.gz")
	q := *p
	q.Reference = slices.DeleteFunc(slices.Clone(p.Reference), func(r experiments.Row) bool {
		return r.Board == "rpi1-b" && r.Algorithm == "ECDH-P256" && r.Operation == "keygen" && r.Metric == "wall_time_total"
	})
	tab, err := Rederive(&q, traces, Paper002, Options{Replicates: 200})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Cell{}
	for _, c := range tab.Cells {
		got[c.Ref()] = c
		if (c.Estimate != nil) != (c.Verdict == Inside || c.Verdict == Outside) {
			t.Errorf("%s: %s with estimate %v", c.Ref(), c.Verdict, c.Estimate)
		}
	}
	if c := got["rpi1-b ML-KEM-768/keygen"]; c.Verdict != Inside {
		t.Errorf("Pi 1 ML-KEM-768 keygen: %s %s", c.Verdict, c.Detail)
	}
	if c := got["rpi1-b ECDH-P256/keygen"]; c.Verdict != NoTiming || c.Estimate != nil {
		t.Errorf("Pi 1 ECDH keygen without its timing: %s", c.Verdict)
	}
	if c := got["rpi4-b ML-KEM-768/keygen"]; c.Verdict != NoCapture || !strings.Contains(c.Detail, "no idle capture of rpi4-b") {
		t.Errorf("Pi 4 ML-KEM-768 keygen without the Pi 4's idle capture: %s %s", c.Verdict, c.Detail)
	}
	if c := got["rpi1-b ML-KEM-512/keygen"]; c.Verdict != NoCapture || !strings.Contains(c.Detail, "no on-load capture of ML-KEM-512 keygen") {
		t.Errorf("Pi 1 ML-KEM-512 keygen without its capture: %s %s", c.Verdict, c.Detail)
	}
	s := tab.Summarize()
	if s.All.Rederived != 1 || s.All.NoTiming != 1 || s.All.NoCapture != 327 {
		t.Errorf("tally %+v: want 1 re-derived, 1 without timing, 327 without captures", s.All)
	}
	for _, cl := range tab.Claims {
		if cl.ID == "C002-06" && cl.Verdict != compare.Untestable {
			t.Errorf("C002-06 without the Pi 4's idle capture: %s", cl.Verdict)
		}
	}
}

// TestDeterministic: the same traces give the same intervals, bit for bit.
func TestDeterministic(t *testing.T) {
	p, fsys := paper(t)
	traces := subset(t, fsys, "pi2b/01_pi2b_baseline.csv.gz", "pi2b/07_pi2b_keys_ml-kem-768.csv.gz", "pi2b/05_pi2b_keys_ecdh.csv.gz")
	a, err := Rederive(p, traces, Paper002, Options{Replicates: 300})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Rederive(p, traces, Paper002, Options{Replicates: 300})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range a.Cells {
		if a.Cells[i].Estimate == nil {
			continue
		}
		n++
		if a.Cells[i].Estimate.Energy != b.Cells[i].Estimate.Energy {
			t.Errorf("%s: %+v then %+v", a.Cells[i].Ref(), a.Cells[i].Estimate.Energy, b.Cells[i].Estimate.Energy)
		}
	}
	if n != 2 || a.Seed != b.Seed || a.Replicates != 300 {
		t.Errorf("%d cells re-derived, seeds %s %s", n, a.Seed, b.Seed)
	}
}

func TestLayout(t *testing.T) {
	_, fsys := paper(t)
	files, _ := fs.Glob(fsys, "*/*.csv.gz")
	idle, used := 0, 0
	for _, f := range files {
		c, err := Paper002.Parse(f)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.Idle:
			idle++
		case c.Operation != "":
			used++
		}
	}
	if len(files) != 371 || idle != 7 || used != 329 {
		t.Errorf("%d captures: %d idle, %d of operations; want 371, 7, 329", len(files), idle, used)
	}
	for _, tt := range []struct{ path, want string }{
		{"pi9/01_pi9_baseline.csv.gz", "unknown board folder \"pi9\""},
		{"pi1/01_pi1_baseline.csv", "not a .csv.gz capture"},
		{"pi1/01_pi2_baseline.csv.gz", "does not start with its board id \"pi1\""},
		{"pi1/02_pi1_hashing_rsa.csv.gz", "unknown operation \"hashing\""},
		{"pi1/02_pi1_keys_dsa.csv.gz", "unknown algorithm \"dsa\""},
	} {
		if _, err := Paper002.Parse(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.path, err, tt.want)
		}
	}
	// A capture the layout does not name is an error, not skipped.
	bad := fstest.MapFS{"pi1/02_pi1_keys_dsa.csv.gz": &fstest.MapFile{Data: []byte{}}}
	p, _ := paper(t)
	if _, err := Rederive(p, bad, Paper002, Options{}); err == nil || !strings.Contains(err.Error(), "unknown algorithm") {
		t.Errorf("an unknown capture: %v", err)
	}
}

func BenchmarkPaper002(b *testing.B) {
	p, fsys := paper(b)
	for b.Loop() {
		if _, err := Rederive(p, fsys, Paper002, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
