package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/store"
)

// listStore is a real SQLite store with n runs published at a few distinct milliseconds
// (ties), alternating boards and algorithms.
func listStore(t *testing.T, n int, at func(i int) time.Time) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "portal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		board, alg, level := "host", "ML-KEM-768", artifacts.AssuranceHost
		if i%3 == 1 {
			board, level = "qemu-mps2-an386", "emulated"
		}
		if i%4 == 0 {
			alg = "ML-DSA-65"
		}
		ts := at(i)
		st.Now = func() time.Time { return ts }
		c := artifacts.Cell{Algorithm: alg, Operation: "keygen", Status: artifacts.StatusOK, Unit: "ns",
			Stats: &artifacts.Stats{N: 5, Min: 1, P25: 2, Median: float64(10 + i), P75: 4, Max: 5, Mean: 3}}
		_, err := st.Publish(ctx, store.Publication{Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:x",
			Kind: "kem-bench", Method: "in-process", BoardClass: board, BoardName: board, Level: level, Origin: "community",
			Signer: "s", PublicKeys: id.Public(), Bundle: fakeDigest(fmt.Sprint(i)), StartedAt: ts, FinishedAt: ts, Environment: "{}", Report: "{}", Checks: "[]",
			CellsTotal: 1, CellsOK: 1}, Cells: []artifacts.Cell{c}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// walk pages through a list with page size limit and returns the ids in order.
func walk(t *testing.T, st *sqlite.Store, f store.ListFilter) (ids []int64, pages int) {
	t.Helper()
	for {
		p, err := st.ListRuns(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Items {
			ids = append(ids, r.ID)
		}
		pages++
		if p.Next == nil {
			return ids, pages
		}
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
		f.After = p.Next
	}
}

// TestListRunsKeysetWithTies pages through runs that share publication times: every run once,
// in (published_at desc, id desc) order, whatever the page size and filter.
func TestListRunsKeysetWithTies(t *testing.T) {
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// 23 runs at 5 distinct times: i/5 groups of five share a millisecond.
	st := listStore(t, 23, func(i int) time.Time { return base.Add(time.Duration(i/5) * time.Hour) })
	all, err := st.ListRuns(context.Background(), store.ListFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 23 || all.Next != nil {
		t.Fatalf("one page of everything: %d runs, next %v", len(all.Items), all.Next)
	}
	for i := 1; i < len(all.Items); i++ {
		a, b := all.Items[i-1], all.Items[i]
		if a.PublishedAt.Before(b.PublishedAt) || (a.PublishedAt.Equal(b.PublishedAt) && a.ID < b.ID) {
			t.Fatalf("order broken at %d: %d@%v before %d@%v", i, a.ID, a.PublishedAt, b.ID, b.PublishedAt)
		}
	}
	var want []int64
	for _, r := range all.Items {
		want = append(want, r.ID)
	}
	for _, limit := range []int{1, 2, 3, 5, 7, 22, 23} {
		got, pages := walk(t, st, store.ListFilter{Limit: limit})
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
		if wantPages := (23 + limit - 1) / limit; pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
	}
	// Filters: by board (an indexed lead), by board and algorithm (a tested residual), by
	// level and a date range.
	cases := []struct {
		f    store.ListFilter
		keep func(i int) bool
	}{
		{store.ListFilter{BoardClass: "qemu-mps2-an386"}, func(i int) bool { return i%3 == 1 }},
		{store.ListFilter{BoardClass: "host", Algorithm: "ML-DSA-65"}, func(i int) bool { return i%3 != 1 && i%4 == 0 }},
		{store.ListFilter{Algorithm: "ML-KEM-768"}, func(i int) bool { return i%4 != 0 }},
		{store.ListFilter{Level: "host", From: base.Add(time.Hour), To: base.Add(3 * time.Hour)}, func(i int) bool { return i%3 != 1 && i/5 >= 1 && i/5 < 3 }},
		{store.ListFilter{Paper: "paper002"}, func(int) bool { return false }},
	}
	for _, tc := range cases {
		var exp []int64
		for _, id := range want {
			if tc.keep(int(id - 1)) {
				exp = append(exp, id)
			}
		}
		tc.f.Limit = 2
		got, _ := walk(t, st, tc.f)
		if !slices.Equal(got, exp) {
			t.Errorf("filter %+v: %v, want %v", tc.f, got, exp)
		}
	}
}

// TestListRunsCapsResidualScans shows the cap: a filter no index serves stops after ScanCap
// examined rows, says so, and its cursor continues where it stopped.
func TestListRunsCapsResidualScans(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes ScanCap+ runs")
	}
	n := store.ScanCap + 40
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	st := listStore(t, n, func(i int) time.Time { return base.Add(time.Duration(i) * time.Millisecond) })
	// An algorithm no run has: the search examines ScanCap runs, stops, and continues.
	ctx := context.Background()
	p, err := st.ListRuns(ctx, store.ListFilter{Algorithm: "none-such", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 0 || !p.Capped || p.Examined != store.ScanCap || p.Next == nil {
		t.Fatalf("capped search: %d items, capped %v, examined %d, next %v", len(p.Items), p.Capped, p.Examined, p.Next)
	}
	p2, err := st.ListRuns(ctx, store.ListFilter{Algorithm: "none-such", Limit: 10, After: p.Next})
	if err != nil {
		t.Fatal(err)
	}
	if p2.Capped || p2.Examined != n-store.ScanCap || p2.Next != nil {
		t.Fatalf("continued search: capped %v, examined %d (want %d), next %v", p2.Capped, p2.Examined, n-store.ScanCap, p2.Next)
	}
	// One indexed filter never caps: every examined row matches.
	p3, err := st.ListRuns(ctx, store.ListFilter{BoardClass: "host", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if p3.Capped || len(p3.Items) != 10 || p3.Examined != 10 || p3.Lead != "board" {
		t.Fatalf("indexed filter: %d items, examined %d, capped %v, lead %q", len(p3.Items), p3.Examined, p3.Capped, p3.Lead)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := store.Cursor{At: 1764590400123, ID: 42}
	got, err := store.ParseCursor(c.String())
	if err != nil || got != c {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "1", "a.b", "1.0", "-1.2", "1.2.3"} {
		if _, err := store.ParseCursor(bad); err == nil {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}

// TestListPlansUseTheirIndex checks the README's list of index-backed filters: each lead
// filter (with a date range and a cursor) walks its own index in order, with no sort.
func TestListPlansUseTheirIndex(t *testing.T) {
	st := listStore(t, 3, func(int) time.Time { return time.Now() })
	from, to := time.Now().Add(-time.Hour), time.Now()
	cur := &store.Cursor{At: to.UnixMilli(), ID: 9}
	for index, f := range map[string]store.ListFilter{
		"runs_list":            {From: from, To: to, After: cur},
		"runs_list_paper":      {Paper: "p", From: from, After: cur},
		"runs_list_experiment": {Experiment: "p/e", Paper: "p", BoardClass: "b", Algorithm: "a"},
		"runs_list_board":      {BoardClass: "b", To: to, After: cur},
		"runs_list_level":      {Level: "host", Method: "", After: cur},
		"runs_list_kind":       {Kind: "kem-bench"},
		"runs_list_method":     {Method: "in-process", Level: "host"},
	} {
		plan, err := st.ListPlan(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, "INDEX "+index+" ") || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%+v: plan %q, want a walk of %s without a sort", f, plan, index)
		}
	}
}

// TestSchemesMedianOfMedians aggregates a board's cells per scheme and operation: the median
// of the runs' medians (odd and even counts), the lowest p25, the highest p75, the runs.
func TestSchemesMedianOfMedians(t *testing.T) {
	st := listStore(t, 13, func(i int) time.Time { return time.Now() })
	rows, err := st.Schemes(context.Background(), "host", "host")
	if err != nil {
		t.Fatal(err)
	}
	// Host runs are i%3 != 1: ML-DSA-65 at i = 0, 8, 12 (medians 10, 18, 22); ML-KEM-768 at
	// i = 2, 3, 5, 6, 9, 11 (medians 12, 13, 15, 16, 19, 21).
	want := []store.SchemeRow{
		{Algorithm: "ML-DSA-65", Operation: "keygen", Unit: "ns", Method: "in-process", ClassStatus: "declared", Median: 18, P25: 2, P75: 4, N: 15, Runs: 3, LatestRun: 13},
		{Algorithm: "ML-KEM-768", Operation: "keygen", Unit: "ns", Method: "in-process", ClassStatus: "declared", Median: 15.5, P25: 2, P75: 4, N: 30, Runs: 6, LatestRun: 12},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("schemes\n%+v\nwant\n%+v", rows, want)
	}
	if rows, _ := st.Schemes(context.Background(), "hardware", "host"); len(rows) != 0 {
		t.Errorf("another level's rows: %+v", rows)
	}
}

// FuzzParseCursor: a cursor from a query string either is refused or survives a round trip,
// with a positive id and a non-negative time.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"1764590400123.42", "0.1", "", ".", "1.", ".1", "9223372036854775807.9223372036854775807", "-0.1", "1e3.2", "01.02"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := store.ParseCursor(s)
		if err != nil {
			return
		}
		if c.ID <= 0 || c.At < 0 {
			t.Fatalf("%q parsed to %+v", s, c)
		}
		again, err := store.ParseCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("%q: %+v does not round-trip (%v, %v)", s, c, again, err)
		}
	})
}
