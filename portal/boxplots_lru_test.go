package portal

import (
	"strconv"
	"testing"

	"pqrepro/portal/plot"
)

// TestBoxPlotsKeepTheRecentlyViewed: past boxPlotRuns bundles the least recently viewed is
// dropped, and viewing one keeps it.
func TestBoxPlotsKeepTheRecentlyViewed(t *testing.T) {
	var b boxPlots
	figs := func(i int) []*plot.Figure { return []*plot.Figure{{Width: i}} }
	for i := range boxPlotRuns {
		b.put("sha256:"+strconv.Itoa(i), figs(i))
	}
	if _, ok := b.get("sha256:0"); !ok { // viewed: now the most recent
		t.Fatal("bundle 0 not kept")
	}
	b.put("sha256:new", figs(-1))
	if _, ok := b.get("sha256:1"); ok {
		t.Fatal("bundle 1, the least recently viewed, still kept past the limit")
	}
	for _, k := range []string{"sha256:0", "sha256:2", "sha256:new"} {
		if _, ok := b.get(k); !ok {
			t.Fatalf("%s dropped", k)
		}
	}
	if got, _ := b.get("sha256:7"); len(got) != 1 || got[0].Width != 7 {
		t.Fatalf("bundle 7's figures: %+v", got)
	}
	if b.recent.Len() != boxPlotRuns || len(b.entries) != boxPlotRuns {
		t.Fatalf("%d in the list, %d in the map, want %d", b.recent.Len(), len(b.entries), boxPlotRuns)
	}
}
