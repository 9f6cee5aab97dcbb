package energy_test

import (
	"errors"
	"math"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/energy"
	"pqrepro/energy/energytest"
)

// markedLoad is a load window of n samples at 5 V drawing lowAmps, and highAmps during the
// marked spans: every period samples a span of width samples, the first one starting at
// sample 0 (cut: it runs into the window's start) and the last running past the window's end
// when n says so.
func markedLoad(n, period, width int, lowAmps, highAmps float64) *artifacts.PowerWindow {
	w := &artifacts.PowerWindow{}
	for i := range n {
		a, m := lowAmps, uint8(0)
		if i%period < width {
			a, m = highAmps, 1|4 // D0 and another input: only D0 is the marker
		}
		w.Volts, w.Amps, w.Markers = append(w.Volts, 5), append(w.Amps, a), append(w.Markers, m)
	}
	return w
}

// TestDirect: direct integration over the marked operations of a load window against the idle
// window of paper002's Pi 4 baseline capture gives, per complete span, the span's power above
// the idle mean integrated (known here: the load window is built with a stated current), the
// spans cut by the window's ends left out; the interval holds the figure; a window with too
// few marked operations has no figure, with the reason; a window without markers none at all.
func TestDirect(t *testing.T) {
	idle, rate := energytest.Pi4Window(t, "01_pi4_baseline.csv")
	idleMean := energy.Trace{Rate: rate, Power: idle.Watts()}.Mean()
	// 1,000 samples, a span of 7 every 50: spans at 0 (cut), 50, ..., 950 (complete: ends at 957).
	load := markedLoad(1000, 50, 7, 0.5, 0.9)
	d, err := energy.Direct(idle, load, rate)
	if err != nil {
		t.Fatal(err)
	}
	want := 7 * (5*0.9 - idleMean) / rate
	if d.Ops != 19 || math.Abs(d.JoulesPerOp-want) > 1e-12*math.Abs(want) || !(d.Lo <= d.JoulesPerOp && d.JoulesPerOp <= d.Hi) ||
		math.Abs(d.SecondsPerOp-7/rate) > 1e-15 || d.Absent != "" || d.Input != 0 {
		t.Errorf("Direct = %+v; want 19 operations of %.6g J, %.3g s each", d, want, 7/rate)
	}
	t.Logf("direct: %.6g J [%.6g, %.6g] over %d marked operations (idle %.4g W)", d.JoulesPerOp, d.Lo, d.Hi, d.Ops, idleMean)
	// A span still high at the window's end is cut too.
	if d, err := energy.Direct(idle, markedLoad(953, 50, 7, 0.5, 0.9), rate); err != nil || d.Ops != 18 {
		t.Errorf("a window ending inside a span: %+v, %v; want 18 operations", d, err)
	}
	if d, err := energy.Direct(idle, markedLoad(200, 50, 7, 0.5, 0.9), rate); err != nil || d.Ops != 3 || d.Absent == "" || d.JoulesPerOp != 0 {
		t.Errorf("three marked operations: %+v, %v; want no figure, with the reason", d, err)
	}
	plain := &artifacts.PowerWindow{Volts: load.Volts, Amps: load.Amps}
	if d, err := energy.Direct(idle, plain, rate); d != nil || err != nil {
		t.Errorf("a window without markers: %+v, %v", d, err)
	}
}

// TestRederiveDirect: a metered figure with markers carries the direct figure, which
// RederivePower re-derives from power.csv; a marker cleared in power.csv (one operation fewer)
// is refused with ErrPowerMismatch.
func TestRederiveDirect(t *testing.T) {
	idle, rate := energytest.Pi4Window(t, "01_pi4_baseline.csv")
	idle.Markers = make([]uint8, len(idle.Volts))
	load := markedLoad(1000, 50, 7, 0.5, 0.9)
	e, err := energy.FromPower(idle, load, rate, 7/rate, "ppk2 /dev/ttyACM0", false)
	if err != nil {
		t.Fatal(err)
	}
	if e.Direct == nil || e.Direct.Ops != 19 {
		t.Fatalf("FromPower with markers: direct %+v", e.Direct)
	}
	cell := artifacts.Cell{Algorithm: "ML-KEM-512", Operation: "encaps", Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds,
		Stats: &artifacts.Stats{N: 1, Median: 7 / rate * 1e9}, Energy: e}
	env := &artifacts.Environment{Meter: &artifacts.MeterInfo{Kind: "ppk2", Device: "/dev/ttyACM0", Rate: rate}}
	res := &artifacts.Result{Cells: []artifacts.Cell{cell}}
	power := func(load *artifacts.PowerWindow) []byte {
		p := &artifacts.Power{Idle: idle}
		p.AddLoad(artifacts.CellKey{Algorithm: cell.Algorithm, Operation: cell.Operation}, load)
		return artifacts.FormatPower(p)
	}
	if err := energy.RederivePower(res, env, power(load)); err != nil {
		t.Fatal(err)
	}
	edited := markedLoad(1000, 50, 7, 0.5, 0.9)
	for i := 500; i < 507; i++ {
		edited.Markers[i] = 0
	}
	if err := energy.RederivePower(res, env, power(edited)); !errors.Is(err, energy.ErrPowerMismatch) {
		t.Errorf("a cleared marker: %v, want ErrPowerMismatch", err)
	}
}
