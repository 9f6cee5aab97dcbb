package sim_test

import (
	"context"
	"crypto/sha256"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/energy"
	"pqrepro/internal/shareddata"
	"pqrepro/runner/meter"
	"pqrepro/runner/meter/sim"
)

func pi4(t *testing.T, kind, name string) string {
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings")
	return filepath.Join(dir, "pi4", kind, name)
}

func TestParseSpec(t *testing.T) {
	got, err := sim.ParseSpec("sim:fnb58:a/idle.csv,b/load.cfn")
	if err != nil || got != (sim.Spec{Kind: "fnb58", Idle: "a/idle.csv", Load: "b/load.cfn"}) {
		t.Fatalf("%+v %v", got, err)
	}
	for in, want := range map[string]string{
		"fnb58:a,b":               "want sim:KIND",
		"sim:fnb58":               "no capture files",
		"sim:ppk2:a,b":            "not built yet",
		"sim:acme:a,b":            `kind "acme"`,
		"sim:fnb58:a":             "two capture files",
		"sim:fnb58:a,b,c":         "two capture files",
		"sim:fnb58:,b":            "two capture files",
		strings.Repeat("x", 5000): "limit",
	} {
		if _, err := sim.ParseSpec(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: error %v, want it to say %q", in, err, want)
		}
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"sim:fnb58:i.csv,l.csv", "sim:ppk2:a,b", "sim::,", "sim:fnb58:a,b,c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := sim.ParseSpec(s)
		if err == nil && (sp.Kind != "fnb58" || sp.Idle == "" || sp.Load == "" || "sim:fnb58:"+sp.Idle+","+sp.Load != s) {
			t.Fatalf("%q parsed to %+v", s, sp)
		}
	})
}

func TestOpenRefusals(t *testing.T) {
	idle := pi4(t, "csv_files", "01_pi4_baseline.csv")
	for spec, want := range map[sim.Spec]string{
		{Kind: "fnb58", Idle: idle, Load: "missing.csv"}: "load capture: open missing.csv",
		{Kind: "fnb58", Idle: "idle.txt", Load: idle}:    "want an FNB58 capture",
	} {
		if _, err := sim.Open(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", spec, err, want)
		}
	}
}

// TestWindows: paper002's Pi 4 idle (.csv) and ECDSA keygen (.cfn) captures through the real
// FNB58 driver: an idle window within the idle capture, a load window longer than the load
// capture (looped), marked simulated, and the part-1 estimator on them; an idle window longer
// than its capture is refused.
func TestWindows(t *testing.T) {
	b, err := sim.Open(sim.Spec{Kind: "fnb58", Idle: pi4(t, "csv_files", "01_pi4_baseline.csv"), Load: pi4(t, "cfn_files", "03_pi4_keys_ecdsa.cfn")})
	if err != nil {
		t.Fatal(err)
	}
	b.Lockstep = true
	ctx := context.Background()
	if _, _, err := b.Window(ctx, false, b.IdleDuration()+time.Second); err == nil || !strings.Contains(err.Error(), "longer than the idle capture") {
		t.Errorf("idle window past the capture: %v", err)
	}
	is, info, err := b.Window(ctx, false, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ls, _, err := b.Window(ctx, true, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(is) != 1000 || len(ls) != 6000 {
		t.Fatalf("%d idle and %d load samples, want 1000 and 6000", len(is), len(ls))
	}
	if !info.Simulated || !strings.Contains(info.Note, "simulated meter") {
		t.Errorf("info %+v: want simulated and labelled", info)
	}
	idle, err := meter.Trace(is, info, "idle")
	if err != nil {
		t.Fatal(err)
	}
	load, err := meter.Trace(ls, info, "load")
	if err != nil {
		t.Fatal(err)
	}
	e, err := energy.PerOperation(idle, load, 0.01, energy.Options{Replicates: 200, Seed: sha256.Sum256([]byte("sim"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("E_op %.6g J %+v (T_op 10 ms, a replay)", e.Energy.Point, e.Energy)
	if !(e.Energy.Point > 0) || math.IsInf(e.Energy.Point, 0) || !e.Energy.Contains(e.Energy.Point) {
		t.Errorf("E_op %+v", e.Energy)
	}
}
