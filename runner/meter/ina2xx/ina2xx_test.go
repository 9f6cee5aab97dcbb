package ina2xx_test

import (
	"context"
	"errors"
	"fmt"
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
	"pqrepro/runner/meter/ina2xx"
)

// volts is the bus voltage the fake tree states: paper002's captures hold power only, so the
// current written is the recorded power over it.
const volts = 5.1

// recorded reads paper002's Pi 4 idle capture, the trace the fake tree replays.
func recorded(t *testing.T) energy.Trace {
	t.Helper()
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings")
	f, err := os.Open(filepath.Join(dir, "pi4", "csv_files", "01_pi4_baseline.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := efnb58.ReadCSV(f, "01_pi4_baseline.csv")
	if err != nil {
		t.Fatal(err)
	}
	return c.Trace
}

// tree is a fake hwmon directory; write sets sample i of the trace into its files.
type tree struct {
	t   *testing.T
	dir string
	tr  energy.Trace
}

func newTree(t *testing.T, chip string) *tree {
	tr := &tree{t: t, dir: t.TempDir(), tr: recorded(t)}
	tr.put("name", chip+"\n")
	tr.write(0)
	return tr
}

func (tr *tree) put(attr, v string) {
	if err := os.WriteFile(filepath.Join(tr.dir, attr), []byte(v), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) write(i int) {
	p := tr.tr.Power[i]
	ma := math.Round(p / volts * 1e3)
	tr.put("in1_input", fmt.Sprintf("%d\n", int(volts*1e3)))
	tr.put("curr1_input", fmt.Sprintf("%d\n", int(ma)))
	tr.put("power1_input", fmt.Sprintf("%d\n", int(math.Round(ma*volts*1e3))))
}

// replay ticks at once and writes the trace's sample for the time asked (at the trace's
// own rate); at fault it calls f instead.
func (tr *tree) replay(fault int, f func()) ina2xx.Options {
	n := 0
	return ina2xx.Options{Rate: tr.tr.Rate, Tick: func(ctx context.Context, at time.Duration) error {
		if n == fault {
			f()
		} else {
			tr.write(int(at.Seconds()*tr.tr.Rate + 0.5))
		}
		n++
		return ctx.Err()
	}}
}

func TestReplayThroughSysfs(t *testing.T) {
	tr := newTree(t, "ina226")
	m := ina2xx.New(tr.dir, tr.replay(-1, nil))
	ctx := context.Background()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := meter.Record(ctx, m, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 200 {
		t.Fatalf("%d samples, want 200 (4 s at 50/s)", len(got))
	}
	for i, s := range got {
		if d := math.Abs(s.Watts() - tr.tr.Power[i]); d > volts*0.5e-3+1e-9 {
			t.Fatalf("sample %d: %.6f W read, %.6f W recorded", i, s.Watts(), tr.tr.Power[i])
		}
		if want := time.Duration(i) * 20 * time.Millisecond; s.T != want {
			t.Fatalf("sample %d at %v, want %v", i, s.T, want)
		}
	}
}

func TestSysfsFaults(t *testing.T) {
	cases := []struct {
		name  string
		fault func(tr *tree)
		want  error
		words string
	}{
		{"unbound", func(tr *tree) { os.Remove(filepath.Join(tr.dir, "curr1_input")) }, meter.ErrUnplugged, "after 20 samples"},
		{"not a number", func(tr *tree) { tr.put("in1_input", "5100x\n") }, meter.ErrMalformed, "in1_input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t, "ina219")
			m := ina2xx.New(tr.dir, tr.replay(20, func() { c.fault(tr) }))
			ctx := context.Background()
			if err := m.Open(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := meter.Record(ctx, m, 4*time.Second)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.words) || got != nil {
				t.Fatalf("%d samples, error %v: want none and %v naming %q", len(got), err, c.want, c.words)
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	tr := newTree(t, "lm75")
	if err := ina2xx.New(tr.dir, ina2xx.Options{}).Open(context.Background()); err == nil || !strings.Contains(err.Error(), `"lm75"`) {
		t.Errorf("another chip: %v", err)
	}
	tr = newTree(t, "ina226")
	os.Remove(filepath.Join(tr.dir, "power1_input"))
	if err := ina2xx.New(tr.dir, ina2xx.Options{}).Open(context.Background()); err == nil || !strings.Contains(err.Error(), "power1_input") {
		t.Errorf("no power1_input: %v", err)
	}
	if err := ina2xx.New(tr.dir, ina2xx.Options{Rate: 1e6}).Open(context.Background()); err == nil {
		t.Error("a rate over the limit opened")
	}
}

// FuzzAttribute: whatever an attribute holds, a sample reads or fails as malformed, never
// panics.
func FuzzAttribute(f *testing.F) {
	for _, s := range []string{"5100\n", "-12\n", "", "1e3", "99999999999999999999\n", " 42 \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		dir := t.TempDir()
		for attr, s := range map[string]string{"name": "ina226\n", "in1_input": v, "curr1_input": "100\n", "power1_input": "1\n"} {
			os.WriteFile(filepath.Join(dir, attr), []byte(s), 0o644)
		}
		err := ina2xx.New(dir, ina2xx.Options{}).Open(context.Background())
		if err != nil && !errors.Is(err, meter.ErrMalformed) && !strings.Contains(err.Error(), "longer than") {
			t.Fatalf("in1_input %q: %v", v, err)
		}
	})
}

// TestSimulator: the simulator's hwmon directory, polled by the driver, gives back paper002's
// recorded power within its 1 mA step, marked simulated; its unplug fails the window.
func TestSimulator(t *testing.T) {
	tr := recorded(t)
	sim, m, err := ina2xx.NewSimulator(tr, t.TempDir(), ina2xx.SimOptions{Volts: volts, Lockstep: true})
	if err != nil || sim == nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Open(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := meter.Record(ctx, m, 6*time.Second)
	if err != nil || len(got) != 300 {
		t.Fatalf("%d samples, %v: want 300 (6 s at 50/s)", len(got), err)
	}
	for i, s := range got {
		if d := math.Abs(s.Watts() - tr.Power[i]); d > volts*0.5e-3+1e-9 {
			t.Fatalf("sample %d: %.6f W read, %.6f W recorded", i, s.Watts(), tr.Power[i])
		}
	}
	if info := m.Info(); !info.Simulated || !strings.Contains(info.Note, "simulated meter") || !strings.Contains(info.Device, "sim:ina2xx:") {
		t.Errorf("info %+v", info)
	}
	_, m, err = ina2xx.NewSimulator(tr, t.TempDir(), ina2xx.SimOptions{Volts: volts, Lockstep: true, UnplugAfter: 40})
	if err != nil {
		t.Fatal(err)
	}
	m.Open(ctx)
	if got, err := meter.Record(ctx, m, 6*time.Second); !errors.Is(err, meter.ErrUnplugged) || got != nil {
		t.Errorf("unplugged: %d samples, %v", len(got), err)
	}
}
