package ppk2_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/energy"
	efnb58 "pqrepro/energy/fnb58"
	"pqrepro/internal/shareddata"
	"pqrepro/runner/meter"
	"pqrepro/runner/meter/ppk2"
)

// capture reads one of paper002's recorded FNB58 captures (Pi 4), the traces the simulator
// replays.
func capture(t *testing.T, name string) energy.Trace {
	t.Helper()
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings")
	f, err := os.Open(filepath.Join(dir, "pi4", "csv_files", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := efnb58.ReadCSV(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return c.Trace
}

// source5V is the driver configured as a source meter at 5 V, the PPK2's highest VDD.
var source5V = ppk2.Options{Mode: ppk2.Source, Millivolts: 5000}

// run starts a simulator (unpaced) and returns it with the opened driver; both stop when the
// test ends.
func run(t *testing.T, tr energy.Trace, opt ppk2.SimOptions, dopt ppk2.Options) (*ppk2.Simulator, *ppk2.Device, context.Context) {
	t.Helper()
	sim, dev, err := ppk2.NewSimulator(tr, opt, dopt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		dev.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("simulator: %v", err)
		}
	})
	if err := dev.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return sim, dev, ctx
}

// step is the current resolution of the simulator's calibration in range r.
func step(r int) float64 {
	m := ppk2.SimModifiers()
	return 4 * 1.8 / 163840 / m.R[r] * m.GI[r]
}

// TestReplayOfARecordedCapture: paper002's Pi 4 idle capture through the simulator and the
// driver comes back as the recorded power, sample by sample, within the PPK2's current step
// at 5 V, on a 1,000 samples/s clock; the host's commands are the published sequence.
func TestReplayOfARecordedCapture(t *testing.T) {
	tr := capture(t, "01_pi4_baseline.csv")
	sim, dev, ctx := run(t, tr, ppk2.SimOptions{}, source5V)
	got, err := meter.Record(ctx, dev, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5000 {
		t.Fatalf("%d samples, want 5000 (5 s at 1,000/s)", len(got))
	}
	tol := 5 * step(3) // within range 3 at 5 V (0.29-0.46 A), a step of 48 µA
	for j, s := range got {
		if want := time.Duration(j) * time.Millisecond; s.T != want {
			t.Fatalf("sample %d at %v, want %v", j, s.T, want)
		}
		p := tr.Power[j/20]
		if s.Volts != 5 || math.Abs(s.Watts()-p) > tol || s.Markers != 0 {
			t.Fatalf("sample %d: %+v (%.6f W), recorded %.6f W", j, s, s.Watts(), p)
		}
	}
	info := dev.Info()
	if !info.Simulated || info.Rate != 1000 || info.Markers != 8 || !strings.Contains(info.Note, ppk2.Note) ||
		!strings.Contains(info.Note, "simulated meter") || !strings.Contains(info.Note, "not measured") {
		t.Errorf("info %+v", info)
	}
	if m := dev.Modifiers(); m.HW != "simulated" || m.O[2] != 30 || len(m.Defaulted) != 0 {
		t.Errorf("calibration read %+v", m)
	}
	dev.Close()
	want := []byte{ppk2.CmdAverageStop, ppk2.CmdGetMetadata, ppk2.CmdPowerMode, ppk2.CmdRegulator, ppk2.CmdDeviceRunning, ppk2.CmdAverageStart, ppk2.CmdAverageStop}
	cmds, err := sim.Commands()
	for i := 0; i < 500 && len(cmds) < len(want); i++ { // the simulator reads the last one when it is scheduled
		time.Sleep(10 * time.Millisecond)
		cmds, err = sim.Commands()
	}
	if err != nil || string(cmds) != string(want) {
		t.Errorf("host commands % x (%v), want % x", cmds, err, want)
	}
}

// TestMarkers: the logic port's inputs come through in each sample (high when high in any of
// its 100 words), and meter.Marked finds the marked operations.
func TestMarkers(t *testing.T) {
	tr := capture(t, "03_pi4_keys_ecdsa.csv")
	marks := func(j int) uint8 {
		var m uint8
		if (j >= 10_000 && j < 35_000) || (j >= 50_050 && j < 50_120) {
			m |= 1
		}
		if j >= 70_000 {
			m |= 1 << 5
		}
		return m
	}
	_, dev, ctx := run(t, tr, ppk2.SimOptions{Markers: marks}, ppk2.Options{Mode: ppk2.Ampere, Millivolts: 5000})
	got, err := meter.Record(ctx, dev, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	spans := meter.Marked(got, 0, 1000)
	ms := time.Millisecond
	want := []meter.Span{{From: 100, To: 350, Start: 100 * ms, End: 350 * ms}, {From: 500, To: 502, Start: 500 * ms, End: 502 * ms}}
	if len(spans) != 2 || spans[0] != want[0] || spans[1] != want[1] {
		t.Errorf("input 0: spans %+v, want %+v", spans, want)
	}
	if s := meter.Marked(got, 5, 1000); len(s) != 1 || s[0].From != 700 || !s[0].Cut {
		t.Errorf("input 5: spans %+v, want one from sample 700 cut at the window's end", s)
	}
}

// TestFaults: each fault in the stream fails the window with its reason, keeping nothing.
func TestFaults(t *testing.T) {
	tr := capture(t, "03_pi4_keys_ecdsa.csv")
	cases := []struct {
		name  string
		opt   ppk2.SimOptions
		want  error
		words string
	}{
		{"garbled word", ppk2.SimOptions{Faults: map[int]ppk2.Fault{12_345: ppk2.Garble}}, meter.ErrMalformed, "word 12345"},
		{"lost bytes", ppk2.SimOptions{Faults: map[int]ppk2.Fault{12_345: ppk2.LoseBytes}}, meter.ErrLost, "bytes lost"},
		{"lost words", ppk2.SimOptions{Faults: map[int]ppk2.Fault{12_345: ppk2.DropWord, 12_346: ppk2.DropWord, 12_347: ppk2.DropWord}}, meter.ErrLost, "3 words lost"},
		{"unplugged", ppk2.SimOptions{UnplugAfter: 40_000}, meter.ErrUnplugged, "unplugged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, dev, ctx := run(t, tr, c.opt, source5V)
			got, err := meter.Record(ctx, dev, 2*time.Second)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("error %v: want %v naming %q", err, c.want, c.words)
			}
			if got != nil {
				t.Errorf("%d samples kept from a failed window", len(got))
			}
			if _, again := dev.Read(ctx); again == nil {
				t.Error("a Read after the failure succeeded")
			}
		})
	}
}

// TestOpenErrors: a path that is absent, a file that is not a serial port, a port that never
// answers the metadata request, and options out of range each fail Open naming the problem.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	absent := filepath.Join(t.TempDir(), "ttyACM9")
	if err := ppk2.New(absent, source5V).Open(ctx); err == nil || !strings.Contains(err.Error(), absent) {
		t.Errorf("absent: %v", err)
	}
	plain := filepath.Join(t.TempDir(), "ttyACM0")
	os.WriteFile(plain, nil, 0o644)
	if err := ppk2.New(plain, source5V).Open(ctx); err == nil || !strings.Contains(err.Error(), plain) {
		t.Errorf("a regular file: %v", err)
	}
	// A simulator that is never run is a serial port on which nothing answers.
	sim, dev, err := ppk2.NewSimulator(capture(t, "01_pi4_baseline.csv"), ppk2.SimOptions{},
		ppk2.Options{Mode: ppk2.Source, Millivolts: 3300, MetadataTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	cancel()
	defer sim.Run(sctx) // closes the pty
	if err := dev.Open(ctx); err == nil || !strings.Contains(err.Error(), "no metadata answer") {
		t.Errorf("silent port: %v", err)
	}
	for _, o := range []ppk2.Options{{Millivolts: 3300}, {Mode: ppk2.Source, Millivolts: 5100}, {Mode: ppk2.Ampere, Millivolts: 700}} {
		if err := ppk2.New(plain, o).Open(ctx); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("options %+v: %v", o, err)
		}
	}
}

// TestCancel: a cancelled context ends a Read on a stream that has stopped.
func TestCancel(t *testing.T) {
	tr := capture(t, "01_pi4_baseline.csv")
	_, dev, long := run(t, tr, ppk2.SimOptions{Words: 100}, source5V)
	if s, err := dev.Read(long); err != nil || len(s) != 1 {
		t.Fatalf("first read: %d samples, %v", len(s), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := dev.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v: want the context's", err)
	}
}

// TestEncodeRoundTrip: the simulator's inverse of the calibration gives, for currents across
// every range, a word whose current is within half a step of the one asked for.
func TestEncodeRoundTrip(t *testing.T) {
	m := ppk2.SimModifiers()
	for _, a := range []float64{2e-6, 3e-4, 5e-3, 0.05, 0.3, 0.7, 0.9} {
		w, err := m.Encode(a, 3300)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Amps(w, 3300); math.Abs(got-a) > step(int(w.Range))/2+1e-12 {
			t.Errorf("%g A: word %+v gives %g A", a, w, got)
		}
	}
	if _, err := m.Encode(100, 3300); err == nil {
		t.Error("100 A encoded")
	}
}
