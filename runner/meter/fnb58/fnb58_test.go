package fnb58_test

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
	"pqrepro/runner/meter/fnb58"
)

// capture reads one of paper002's recorded FNB58 captures (Pi 4) from the shared data.
func capture(t *testing.T, name string) energy.Trace {
	t.Helper()
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings")
	path := filepath.Join(dir, "pi4", "csv_files", name)
	f, err := os.Open(path)
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

// run starts a simulator on the trace and returns the opened driver; the simulator stops
// when the test ends.
func run(t *testing.T, tr energy.Trace, opt fnb58.SimOptions, dopt fnb58.Options) (*fnb58.Simulator, *fnb58.Device, context.Context) {
	t.Helper()
	if opt.Volts == 0 {
		opt.Volts = 5.1
	}
	opt.Lockstep = true
	sim, dev, err := fnb58.NewSimulator(tr, opt, dopt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		dev.Close()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("simulator: %v", err)
		}
	})
	if err := dev.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return sim, dev, ctx
}

// TestReplayOfARecordedCapture: the driver decodes the simulator's reports of paper002's Pi 4
// idle capture back to the recorded power, sample by sample, on a 100 samples/s clock.
func TestReplayOfARecordedCapture(t *testing.T) {
	tr := capture(t, "01_pi4_baseline.csv")
	sim, dev, ctx := run(t, tr, fnb58.SimOptions{}, fnb58.Options{})
	want := time.Duration(len(tr.Power)) * time.Second / time.Duration(tr.Rate)
	got, err := meter.Record(ctx, dev, want-10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n := int(tr.Duration()*fnb58.Rate) - 1; len(got) != n {
		t.Fatalf("%d samples, want %d", len(got), n)
	}
	var sum float64
	for j, s := range got {
		if wantT := time.Duration(j) * 10 * time.Millisecond; s.T != wantT {
			t.Fatalf("sample %d at %v, want %v", j, s.T, wantT)
		}
		p := tr.Power[j/2]
		if d := math.Abs(s.Watts() - p); d > 5.1*0.5e-5+1e-9 {
			t.Fatalf("sample %d: %.8f W decoded, %.8f W recorded", j, s.Watts(), p)
		}
		sum += s.Watts()
	}
	if mean, rec := sum/float64(len(got)), tr.Mean(); math.Abs(mean-rec) > 3e-5 {
		t.Errorf("mean %.6f W decoded, recorded capture's mean %.6f W", mean, rec)
	}
	info := dev.Info()
	if !info.Simulated || !strings.Contains(info.Note, "simulated meter") || !strings.Contains(info.Note, fnb58.Note) {
		t.Errorf("info %+v: want simulated, labelled, with the community-documentation note", info)
	}
	cmds, err := sim.Commands()
	if err != nil || len(cmds) < 4 || string(cmds[:3]) != "\x81\x82\x82" || cmds[3] != 0x83 {
		t.Errorf("host commands % x (%v): want 81 82 82 then 83 keep-alives", cmds, err)
	}
}

// TestFaults: each fault in the middle of a recorded load capture fails the window with its
// reason, and Record keeps none of the samples read before it.
func TestFaults(t *testing.T) {
	tr := capture(t, "03_pi4_keys_ecdsa.csv")
	cases := []struct {
		name  string
		opt   fnb58.SimOptions
		dopt  fnb58.Options
		want  error
		words string
	}{
		{"bad CRC", fnb58.SimOptions{Faults: map[int]fnb58.Fault{30: fnb58.BadCRC}}, fnb58.Options{}, meter.ErrMalformed, "CRC-8"},
		{"short report", fnb58.SimOptions{Faults: map[int]fnb58.Fault{30: fnb58.Short}}, fnb58.Options{}, meter.ErrMalformed, "40 bytes"},
		{"bad first byte", fnb58.SimOptions{Faults: map[int]fnb58.Fault{30: fnb58.BadMagic}}, fnb58.Options{}, meter.ErrMalformed, "byte 0"},
		{"one lost report, no slack", fnb58.SimOptions{Faults: map[int]fnb58.Fault{30: fnb58.Drop}}, fnb58.Options{LossSlack: -1}, meter.ErrLost, "4 missing"},
		{"a second lost, default slack", fnb58.SimOptions{Faults: drops(30, 25)}, fnb58.Options{}, meter.ErrLost, "missing"},
		{"unplugged", fnb58.SimOptions{UnplugAfter: 30}, fnb58.Options{}, meter.ErrUnplugged, "after 120 samples"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, dev, ctx := run(t, tr, c.opt, c.dopt)
			got, err := meter.Record(ctx, dev, 10*time.Second)
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

func drops(from, n int) map[int]fnb58.Fault {
	m := map[int]fnb58.Fault{}
	for k := from; k < from+n; k++ {
		m[k] = fnb58.Drop
	}
	return m
}

// TestSmallLossUnseen records the driver's limit: without a counter in the reports, one lost
// report inside the default slack is not seen.
func TestSmallLossUnseen(t *testing.T) {
	tr := capture(t, "03_pi4_keys_ecdsa.csv")
	_, dev, ctx := run(t, tr, fnb58.SimOptions{Faults: map[int]fnb58.Fault{30: fnb58.Drop, 31: fnb58.OtherType}}, fnb58.Options{})
	got, err := meter.Record(ctx, dev, 2*time.Second)
	if err != nil || len(got) != 200 {
		t.Fatalf("%d samples, %v: want 200 and no error (the documented limit)", len(got), err)
	}
}

// TestCRCAgainstCommunityCommands: the CRC-8 parameters reproduce the checksums of the three
// host commands as the community's logger writes them (0x8e, 0x96, 0x9e).
func TestCRCAgainstCommunityCommands(t *testing.T) {
	for code, want := range map[byte]byte{0x81: 0x8e, 0x82: 0x96, 0x83: 0x9e} {
		b := make([]byte, 62)
		b[0] = code
		if got := fnb58.CRC8(b); got != want {
			t.Errorf("command %#02x: CRC-8 %#02x, want %#02x", code, got, want)
		}
	}
}

// TestAbsentDevice: a device path that does not exist fails Open naming it.
func TestAbsentDevice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hidraw9")
	err := fnb58.New(path, fnb58.Options{}).Open(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v: want one naming %s", err, path)
	}
}

// TestCancel: a cancelled context ends a Read blocked on a meter that sends nothing (a
// simulator that is never started).
func TestCancel(t *testing.T) {
	tr := capture(t, "01_pi4_baseline.csv")
	_, dev, err := fnb58.NewSimulator(tr, fnb58.SimOptions{Volts: 5}, fnb58.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := dev.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v: want the context's", err)
	}
}

// FuzzParseReport: any bytes decode or fail with ErrMalformed, never panic; a decoded
// report re-encodes to itself in the fields the encoder writes.
func FuzzParseReport(f *testing.F) {
	f.Add(fnb58.EncodeReport([4]fnb58.Raw{{510000, 41234}, {510000, 0}, {0, 0}, {1 << 31, 1 << 31}}))
	f.Add(make([]byte, 64))
	f.Add([]byte{0xaa, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, ok, err := fnb58.ParseReport(b)
		if err != nil && !errors.Is(err, meter.ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
		if !ok {
			return
		}
		for _, r := range rs {
			if r.Volts < 0 || r.Amps < 0 || math.IsNaN(r.Volts*r.Amps) {
				t.Fatalf("reading %+v", r)
			}
		}
	})
}

// TestLoop: with Loop set, a window longer than the capture replays it again from its first
// row, sample for sample, with no gap in the meter's clock at the seam.
func TestLoop(t *testing.T) {
	tr := capture(t, "03_pi4_keys_ecdsa.csv")
	_, dev, ctx := run(t, tr, fnb58.SimOptions{Loop: true}, fnb58.Options{})
	rows := len(tr.Power)
	perRow := int(fnb58.Rate / tr.Rate)
	n := rows*perRow + 3*perRow // past the seam
	got, err := meter.Record(ctx, dev, time.Duration(n)*10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d samples, want %d", len(got), n)
	}
	for j, s := range got {
		if wantT := time.Duration(j) * 10 * time.Millisecond; s.T != wantT {
			t.Fatalf("sample %d at %v, want %v", j, s.T, wantT)
		}
		p := tr.Power[(j/perRow)%rows]
		if d := math.Abs(s.Watts() - p); d > 5.1*0.5e-5+1e-9 {
			t.Fatalf("sample %d: %.8f W decoded, %.8f W recorded (row %d)", j, s.Watts(), p, (j/perRow)%rows)
		}
	}
}
