package compare

import (
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/energy"
	"pqrepro/energy/energytest"
	"pqrepro/experiments"
)

// TestMeteredEnergyClaims: an energy claim on a metered run is checked on the cells' ΔP × T_op
// from power.csv, its interval pairing the two cells' bootstrap replicates (here paper002's
// Pi 4 idle capture and its ECDSA and RSA keygen captures as the load windows, T_op 1 ms and
// 10 ms: A/B is about a tenth); a simulated meter's energy, and a metered energy against a RAPL
// one, are untestable with the reason.
func TestMeteredEnergyClaims(t *testing.T) {
	idle, rate := energytest.Pi4Window(t, "01_pi4_baseline.csv")
	loadA, _ := energytest.Pi4Window(t, "03_pi4_keys_ecdsa.csv")
	loadB, _ := energytest.Pi4Window(t, "02_pi4_keys_rsa.csv")
	run := Run{Result: &artifacts.Result{ManifestID: "sha256:m", Board: "rpi4-b", Assurance: artifacts.AssuranceHardware},
		Power: &artifacts.Power{Idle: idle}, Meter: &artifacts.MeterInfo{Kind: "fnb58", Device: "/dev/hidraw3", Rate: rate}}
	for _, c := range []struct {
		alg  string
		load *artifacts.PowerWindow
		tOp  float64
	}{{"A", loadA, 1e-3}, {"B", loadB, 1e-2}} {
		e, err := energy.FromPower(idle, c.load, rate, c.tOp, "fnb58 /dev/hidraw3", false)
		if err != nil {
			t.Fatal(err)
		}
		run.Result.Cells = append(run.Result.Cells, artifacts.Cell{Algorithm: c.alg, Operation: "keygen", Status: artifacts.StatusOK, Energy: e})
		run.Power.AddLoad(artifacts.CellKey{Algorithm: c.alg, Operation: "keygen"}, c.load)
	}
	ratio := func(min, max *float64) experiments.Check {
		return experiments.Check{Kind: "ratio", Num: "A/keygen", Den: "B/keygen", Min: min, Max: max, Metric: "energy"}
	}
	holds := runCheck(ratio(nil, f(0.5)), run, artifacts.MethodInProcess)
	if holds.Verdict != Holds || len(holds.Intervals) != 1 || !strings.Contains(holds.Detail, "metered energy") {
		t.Fatalf("A/B ≤ 0.5: %s %s", holds.Verdict, holds.Detail)
	}
	iv := holds.Intervals[0]
	eA, eB := run.Result.Cells[0].Energy.JoulesPerOp.Median, run.Result.Cells[1].Energy.JoulesPerOp.Median
	if !(iv.Lo <= iv.Point && iv.Point <= iv.Hi) || iv.Point != eA/eB || iv.Point > 0.5 {
		t.Errorf("interval %+v, recorded figures give %g", iv, eA/eB)
	}
	if r := runCheck(ratio(f(1), nil), run, artifacts.MethodInProcess); r.Verdict != Fails {
		t.Errorf("A/B ≥ 1: %s %s", r.Verdict, r.Detail)
	}
	t.Logf("A/B = %.4g [%.4g, %.4g]", iv.Point, iv.Lo, iv.Hi)

	sim := run
	sim.Result = &artifacts.Result{ManifestID: "sha256:m", Board: "rpi4-b", Cells: append([]artifacts.Cell(nil), run.Result.Cells...)}
	e := *sim.Result.Cells[0].Energy
	e.Simulated = true
	sim.Result.Cells[0].Energy = &e
	if r := runCheck(ratio(nil, f(0.5)), sim, artifacts.MethodInProcess); r.Verdict != Untestable || !strings.Contains(r.Detail, "simulated meter") {
		t.Errorf("a simulated meter's energy: %s %s", r.Verdict, r.Detail)
	}
	mixed := run
	mixed.Result = &artifacts.Result{ManifestID: "sha256:m", Board: "rpi4-b", Cells: append([]artifacts.Cell(nil), run.Result.Cells...)}
	mixed.Result.Cells[1].Energy = &artifacts.Energy{Source: "rapl", JoulesPerOp: &artifacts.Stats{N: 20, Median: 1e-3}}
	mixed.Samples.Energy = map[artifacts.CellKey][]float64{artifacts.KeyOf(mixed.Result.Cells[1]): noisy(9, 20, 1e-3, 1e-5)}
	if r := runCheck(ratio(nil, f(0.5)), mixed, artifacts.MethodInProcess); r.Verdict != Untestable || !strings.Contains(r.Detail, "never compared") {
		t.Errorf("metered against RAPL: %s %s", r.Verdict, r.Detail)
	}
}
