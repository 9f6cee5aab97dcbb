package portal

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/energy"
	"pqrepro/energy/energytest"
	"pqrepro/templates"
)

// TestRunEnergyView: a metered run's page shows each cell's energy per operation beside its
// time per operation, the meter with its rate, the method, the direct-integration column only
// when a figure has one, a cell without energy with its reason, and the power trace of the
// idle window and the first metered cell's load window. The figures come from energy.FromPower
// on paper002's Pi 4 captures (the view's input; nothing here is published).
func TestRunEnergyView(t *testing.T) {
	idle, rate := energytest.Pi4Window(t, "01_pi4_baseline.csv")
	load, _ := energytest.Pi4Window(t, "03_pi4_keys_ecdsa.csv")
	e, err := energy.FromPower(idle, load, rate, 2e-3, "fnb58 /dev/hidraw3", false)
	if err != nil {
		t.Fatal(err)
	}
	res := &artifacts.Result{Cells: []artifacts.Cell{
		{Algorithm: "ML-KEM-512", Operation: "encaps", Status: artifacts.StatusOK, Energy: e},
		{Algorithm: "ML-KEM-512", Operation: "decaps", Status: artifacts.StatusOK, Energy: &artifacts.Energy{Absent: "the meter's load window failed: unplugged"}},
	}}
	p := &artifacts.Power{Idle: idle}
	p.AddLoad(artifacts.CellKey{Algorithm: "ML-KEM-512", Operation: "encaps"}, load)
	env := &artifacts.Environment{Meter: &artifacts.MeterInfo{Kind: "fnb58", Device: "/dev/hidraw3", Rate: rate}}
	v, err := runEnergyView(res, env, artifacts.FormatPower(p))
	if err != nil {
		t.Fatal(err)
	}
	if v == nil || len(v.Rows) != 2 || v.Plot == nil || len(v.Plot.Panels) != 2 || v.DirectMethod != "" {
		t.Fatalf("view %+v", v)
	}
	r := v.Rows[0]
	if r.TOp != artifacts.FormatNanoseconds(2e6) || r.Energy != joules(e.JoulesPerOp.Median) || !strings.Contains(v.Meter, "fnb58 /dev/hidraw3 at 50 samples/s") || v.Rows[1].Absent == "" {
		t.Errorf("rows %+v, meter %q", v.Rows, v.Meter)
	}
	var page bytes.Buffer
	if err := templates.RunPage(templates.RunView{Energy: v}).Render(context.Background(), &page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Energy per operation", "Energy/op (ΔP × T_op)", "Time/op (T_op)", "at 50 samples/s", r.Energy, "unplugged", "<svg", "idle window (", "load window: ML-KEM-512 encaps"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page.String(), "Energy/op (direct)") {
		t.Error("a direct-integration column without a direct figure")
	}
	// With a meter's markers the direct figure gets its own column, its method named.
	marked := &artifacts.PowerWindow{Volts: load.Volts, Amps: load.Amps, Markers: make([]uint8, len(load.Volts))}
	for i := range marked.Markers {
		if i%50 >= 10 && i%50 < 17 {
			marked.Markers[i] = 1
		}
	}
	idle.Markers = make([]uint8, len(idle.Volts))
	if res.Cells[0].Energy, err = energy.FromPower(idle, marked, rate, 2e-3, "ppk2 /dev/ttyACM0", false); err != nil {
		t.Fatal(err)
	}
	p = &artifacts.Power{Idle: idle}
	p.AddLoad(artifacts.CellKey{Algorithm: "ML-KEM-512", Operation: "encaps"}, marked)
	if v, err = runEnergyView(res, env, artifacts.FormatPower(p)); err != nil {
		t.Fatal(err)
	}
	page.Reset()
	if err := templates.RunPage(templates.RunView{Energy: v}).Render(context.Background(), &page); err != nil {
		t.Fatal(err)
	}
	d := res.Cells[0].Energy.Direct
	if d == nil || d.Absent != "" || !strings.Contains(page.String(), "Energy/op (direct)") || !strings.Contains(page.String(), fmt.Sprintf("over %d operations", d.Ops)) ||
		!strings.Contains(page.String(), "never ranked with the first") {
		t.Errorf("direct figure %+v not shown as its own method", d)
	}
	// A run without a meter has no energy section.
	if v, err := runEnergyView(res, &artifacts.Environment{}, nil); v != nil || err != nil {
		t.Errorf("no meter: %+v, %v", v, err)
	}
}
