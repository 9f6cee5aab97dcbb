package sim_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"slices"
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
	for _, kind := range sim.Kinds {
		got, err := sim.ParseSpec("sim:" + kind + ":a/idle.csv,b/load.cfn")
		if err != nil || got != (sim.Spec{Kind: kind, Idle: "a/idle.csv", Load: "b/load.cfn"}) {
			t.Fatalf("%+v %v", got, err)
		}
	}
	for in, want := range map[string]string{
		"fnb58:a,b":               "want sim:KIND",
		"sim:fnb58":               "no capture files",
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
		if err == nil && (!slices.Contains(sim.Kinds, sp.Kind) || sp.Idle == "" || sp.Load == "" || "sim:"+sp.Kind+":"+sp.Idle+","+sp.Load != s) {
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

// TestWindows: paper002's Pi 4 idle (.csv) and ECDSA keygen (.cfn) captures through each real
// driver against its simulator: an idle window within the idle capture, a load window longer
// than the load capture (looped), marked simulated, and the part-1 estimator on them; an idle
// window longer than its capture is refused; an unplug in the load window fails it.
func TestWindows(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		// Every window stops its simulator and closes its driver before it returns.
		for range 100 {
			if runtime.NumGoroutine() <= before {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Errorf("%d goroutines left running after the windows (%d before)", runtime.NumGoroutine(), before)
	})
	for _, kind := range sim.Kinds {
		t.Run(kind, func(t *testing.T) {
			b, err := sim.Open(sim.Spec{Kind: kind, Idle: pi4(t, "csv_files", "01_pi4_baseline.csv"), Load: pi4(t, "cfn_files", "03_pi4_keys_ecdsa.cfn")})
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
			if n := int(info.Rate * 10); len(is) != n || len(ls) != 6*n {
				t.Fatalf("%d idle and %d load samples, want %d and %d", len(is), len(ls), n, 6*n)
			}
			if !info.Simulated || !strings.Contains(info.Note, "simulated meter") || info.Kind != kind {
				t.Errorf("info %+v: want a simulated %s, labelled", info, kind)
			}
			estimate(t, is, ls, info)
			b.UnplugLoadAfter = 50
			if _, _, err := b.Window(ctx, true, 10*time.Second); !errors.Is(err, meter.ErrUnplugged) {
				t.Errorf("unplugged load window: %v", err)
			}
		})
	}
}

func estimate(t *testing.T, is, ls []meter.Sample, info meter.Info) {
	t.Helper()
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
	t.Logf("%s: idle %.4f W, load %.4f W, E_op %.6g J %+v (T_op 10 ms, a replay)", info.Kind, idle.Mean(), load.Mean(), e.Energy.Point, e.Energy)
	if !(e.Energy.Point > 0) || math.IsInf(e.Energy.Point, 0) || !e.Energy.Contains(e.Energy.Point) {
		t.Errorf("E_op %+v", e.Energy)
	}
}
