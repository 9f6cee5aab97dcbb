package portal_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// TestRunPageBoxPlotsDrawnOnce: a run page's box plots are drawn from its bundle once and
// kept by the bundle's digest, so the page, rendered anew (no response cache), still shows
// them after the bundle file is gone; without the kept figures it would fall back to the
// stored statistics' plots, without the box plot's note.
func TestRunPageBoxPlotsDrawnOnce(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) { c.PageCacheBytes = 0 })
	id := publishAs(t, p, enrol(t, p, "box plot runner"))
	const note = "whiskers: the furthest samples within 1.5 × IQR of the box"
	code, first := get(t, p.URL+"/runs/"+itoa(id))
	if code != 200 || !strings.Contains(first, note) {
		t.Fatalf("run page: %d, box plot note present: %v", code, strings.Contains(first, note))
	}
	run, err := p.Server.Store().Run(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	hex := strings.TrimPrefix(run.Bundle, "sha256:")
	removed := 0
	filepath.WalkDir(p.Config.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), hex) {
			if os.Remove(path) == nil {
				removed++
			}
		}
		return nil
	})
	if removed == 0 {
		t.Fatalf("no blob file named by %s under %s", hex, p.Config.DataDir)
	}
	code, again := get(t, p.URL+"/runs/"+itoa(id))
	if code != 200 || !strings.Contains(again, note) {
		t.Fatalf("run page after its bundle file went: %d, box plot note present: %v", code, strings.Contains(again, note))
	}
}

// TestRunPageReportKeptUntilRebuilt: a run page's decoded comparison is kept by run, with the
// stored text it came from, so a rebuild that rewrites the report shows on the next rendering
// (no response cache) rather than the kept one.
func TestRunPageReportKeptUntilRebuilt(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) { c.PageCacheBytes = 0 })
	id := publishAs(t, p, enrol(t, p, "report runner"))
	ctx := t.Context()
	code, first := get(t, p.URL+"/runs/"+itoa(id))
	if code != 200 || !strings.Contains(first, "Comparison with paper001") {
		t.Fatalf("run page: %d, comparison shown: %v", code, strings.Contains(first, "Comparison with paper001"))
	}
	st := p.Server.Store()
	run, err := st.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(run.Report), &rep); err != nil {
		t.Fatal(err)
	}
	rep["dataset"] = "paper001-rebuilt"
	text, _ := json.Marshal(rep)
	cells, err := st.Cells(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	verdicts, err := st.ClaimVerdicts(ctx, run.Paper, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SaveRebuilt(ctx, store.Rebuilt{RunID: id, Report: string(text), ReportVersion: run.ReportVersion, Claims: verdicts,
		Cells: cells, Catalogue: run.Catalogue}); err != nil {
		t.Fatal(err)
	}
	if _, again := get(t, p.URL+"/runs/"+itoa(id)); !strings.Contains(again, "Comparison with paper001-rebuilt") {
		t.Fatalf("the run page still shows the comparison kept from before the rebuild")
	}
}
