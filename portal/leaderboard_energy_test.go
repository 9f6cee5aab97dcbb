package portal

import (
	"strings"
	"testing"

	"pqrepro/portal/store"
)

// TestEnergyRankedWithinMethod: a RAPL standing and a metered one of the same board, level and
// method are two rankings, each first in its own and titled with its method, never one ranking
// in which the smaller figure wins.
func TestEnergyRankedWithinMethod(t *testing.T) {
	base := store.Standing{Unit: "J", Level: "host", Method: "in-process", ClassStatus: "verified", BoardClass: "host", Origin: "community", Runs: 1}
	rapl, meter := base, base
	rapl.EnergyMethod, rapl.Median = store.EnergyRAPL, 3e-4
	meter.EnergyMethod, meter.Median = store.EnergyMeter, 1e-4
	out := rankStandings([]store.Standing{rapl, meter}, store.MetricEnergy, "keygen")
	if len(out) != 2 || out[0].Rank != 1 || out[1].Rank != 1 || out[0].group == out[1].group {
		t.Fatalf("standings %+v: want two rankings, each with a first", out)
	}
	titles := out[0].groupTitle + " | " + out[1].groupTitle
	if !strings.Contains(titles, "RAPL") || !strings.Contains(titles, "power meter") {
		t.Errorf("ranking titles %q do not name their methods", titles)
	}
}
