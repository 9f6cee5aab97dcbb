package energy_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/energy"
	"pqrepro/energy/energytest"
)

// TestRederivePower: a figure computed by FromPower re-derives; an edited figure, a missing
// power.csv, a window without a figure, a figure without a window and a simulated flag that
// disagrees with the meter are each refused with ErrPowerMismatch.
func TestRederivePower(t *testing.T) {
	idle, rate := energytest.Pi4Window(t, "01_pi4_baseline.csv")
	load, _ := energytest.Pi4Window(t, "03_pi4_keys_ecdsa.csv")
	cell := artifacts.Cell{Algorithm: "ECDSA-P256", Operation: "keygen", Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds,
		Stats: &artifacts.Stats{N: 1, Median: 1e7}}
	e, err := energy.FromPower(idle, load, rate, 0.01, "fnb58 /dev/hidraw0", false)
	if err != nil {
		t.Fatal(err)
	}
	cell.Energy = e
	p := &artifacts.Power{Idle: idle}
	p.AddLoad(artifacts.CellKey{Algorithm: cell.Algorithm, Operation: cell.Operation}, load)
	csv := artifacts.FormatPower(p)
	env := &artifacts.Environment{Meter: &artifacts.MeterInfo{Kind: "fnb58", Device: "/dev/hidraw0", Rate: rate}}
	res := func(c artifacts.Cell) *artifacts.Result { return &artifacts.Result{Cells: []artifacts.Cell{c}} }
	if err := energy.RederivePower(res(cell), env, csv); err != nil {
		t.Fatal(err)
	}
	t.Logf("E_op %.6g J [%.6g, %.6g] (T_op 10 ms, paper002's Pi 4 ECDSA keygen capture)", e.JoulesPerOp.Median, e.Windows.Lo, e.Windows.Hi)
	edited := cell
	ee := *e
	js := *e.JoulesPerOp
	js.Median *= 1.01
	ee.JoulesPerOp = &js
	edited.Energy = &ee
	sim := cell
	se := *e
	se.Simulated = true
	sim.Energy = &se
	other := p.Load[artifacts.CellKey{Algorithm: cell.Algorithm, Operation: cell.Operation}]
	p2 := &artifacts.Power{Idle: idle}
	p2.AddLoad(artifacts.CellKey{Algorithm: "x", Operation: "y"}, other)
	plain := cell
	plain.Energy = nil
	for name, c := range map[string]struct {
		res *artifacts.Result
		csv []byte
		msg string
	}{
		"edited figure":      {res(edited), csv, "energy.joulesPerOp"},
		"no power.csv":       {res(cell), nil, "no power.csv"},
		"window, no figure":  {res(plain), csv, "1 load windows, result.json 0"},
		"figure, no window":  {res(cell), artifacts.FormatPower(p2), "no load window"},
		"simulated mismatch": {res(sim), csv, "energy.simulated true"},
	} {
		err := energy.RederivePower(c.res, env, c.csv)
		if !errors.Is(err, energy.ErrPowerMismatch) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want a mismatch naming %q", name, err, c.msg)
		}
	}
}

// TestCellTOp: a cell's time per operation from its median in ns, µs, or cycles over the
// board's clock; an instruction count, or cycles without a clock, is no time.
func TestCellTOp(t *testing.T) {
	cell := func(u artifacts.Unit, median float64) artifacts.Cell {
		return artifacts.Cell{Algorithm: "ML-KEM-512", Operation: "encaps", Unit: u, Stats: &artifacts.Stats{Median: median}}
	}
	for _, tc := range []struct {
		c     artifacts.Cell
		clock int64
		want  float64
	}{
		{cell(artifacts.UnitNanoseconds, 2500), 0, 2.5e-6},
		{cell(artifacts.UnitMicroseconds, 2500), 0, 2.5e-3},
		{cell(artifacts.UnitCycles, 1.25e6), 125_000_000, 0.01},
	} {
		if got, err := energy.CellTOp(tc.c, tc.clock); err != nil || math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s %g at %d Hz: %g, %v; want %g", tc.c.Unit, tc.c.Stats.Median, tc.clock, got, err, tc.want)
		}
	}
	for _, c := range []artifacts.Cell{cell(artifacts.UnitInstructions, 1000), cell(artifacts.UnitCycles, 1000), {Unit: artifacts.UnitNanoseconds}} {
		if got, err := energy.CellTOp(c, 0); err == nil {
			t.Errorf("%s with no clock: %g s per operation", c.Unit, got)
		}
	}
}
