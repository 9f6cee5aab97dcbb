// Package sim is `pqrepro run --meter sim:KIND:IDLE,LOAD`: a meter driver (fnb58, ppk2 or
// ina2xx) run against its protocol simulator, which replays recorded captures (the idle
// capture for an idle window, the load capture looped for each load window). Everything it
// yields is a replay, marked simulated: never a measurement of the run that records it.
package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"pqrepro/energy"
	efnb58 "pqrepro/energy/fnb58"
	"pqrepro/runner/meter"
	"pqrepro/runner/meter/fnb58"
	"pqrepro/runner/meter/ina2xx"
	"pqrepro/runner/meter/ppk2"
)

// The stated voltages each simulator replays paper002's power-only captures at: the current
// it sends is the recorded power over it, so volts × amps replays the recorded power.
const (
	// Volts is the FNB58's and the INA2xx's bus voltage: 5.1 V, a Raspberry Pi supply's
	// nominal output (the captures did not record the voltage).
	Volts = 5.1
	// PPK2Millivolts is the simulated PPK2's VDD, in source mode: 5,000 mV, the highest the
	// PPK2 supplies (a Pi's 5.1 V is above its range).
	PPK2Millivolts = 5000
)

// MaxSpec bounds the --meter value.
const MaxSpec = 4096

// Kinds are the simulated meters, each the real driver against its simulator.
var Kinds = []string{"fnb58", "ppk2", "ina2xx"}

// Spec is a parsed --meter sim:KIND:IDLE,LOAD.
type Spec struct {
	// Kind is the simulated meter (one of Kinds).
	Kind string
	// Idle and Load are the capture files (FNB58 .csv or .cfn, as energy/fnb58 reads them):
	// every kind replays the same recorded captures.
	Idle, Load string
}

// IsSim reports whether a --meter value asks for a simulated meter.
func IsSim(s string) bool { return strings.HasPrefix(s, "sim:") }

// ParseSpec parses sim:KIND:IDLE,LOAD, naming the part that is wrong.
func ParseSpec(s string) (Spec, error) {
	if len(s) > MaxSpec {
		return Spec{}, fmt.Errorf("--meter: %d bytes, more than the limit of %d", len(s), MaxSpec)
	}
	rest, ok := strings.CutPrefix(s, "sim:")
	if !ok {
		return Spec{}, fmt.Errorf("--meter %q: want sim:KIND:IDLE,LOAD", s)
	}
	kind, files, ok := strings.Cut(rest, ":")
	if !ok {
		return Spec{}, fmt.Errorf("--meter %q: want sim:KIND:IDLE,LOAD: no capture files", s)
	}
	if !slices.Contains(Kinds, kind) {
		return Spec{}, fmt.Errorf("--meter %q: kind %q: want %s", s, kind, strings.Join(Kinds, ", "))
	}
	idle, load, ok := strings.Cut(files, ",")
	if !ok || idle == "" || load == "" || strings.Contains(load, ",") {
		return Spec{}, fmt.Errorf("--meter %q: want two capture files IDLE,LOAD separated by one comma", s)
	}
	return Spec{Kind: kind, Idle: idle, Load: load}, nil
}

// Bench is a simulated meter ready to record windows: both captures read and checked.
type Bench struct {
	Spec       Spec
	idle, load energy.Trace
	// Lockstep paces the simulator by the driver's reads instead of real time (tests only:
	// a run's windows take their real length, as a meter's would).
	Lockstep bool
	// UnplugLoadAfter, when positive, unplugs the simulated meter after this many reports of
	// every load window (a fault for tests: the window fails with meter.ErrUnplugged).
	UnplugLoadAfter int
}

// Open reads both captures of spec.
func Open(spec Spec) (*Bench, error) {
	b := &Bench{Spec: spec}
	var err error
	if b.idle, err = readCapture(spec.Idle); err != nil {
		return nil, fmt.Errorf("--meter idle capture: %w", err)
	}
	if b.load, err = readCapture(spec.Load); err != nil {
		return nil, fmt.Errorf("--meter load capture: %w", err)
	}
	return b, nil
}

// readCapture reads an FNB58 capture by its extension (.csv or .cfn).
func readCapture(path string) (energy.Trace, error) {
	read := efnb58.ReadCSV
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
	case ".cfn":
		read = efnb58.ReadCFN
	default:
		return energy.Trace{}, fmt.Errorf("%s: want an FNB58 capture (.csv or .cfn)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return energy.Trace{}, err
	}
	defer f.Close()
	c, err := read(f, filepath.Base(path))
	if err != nil {
		return energy.Trace{}, err
	}
	return c.Trace, nil
}

// IdleDuration is how long the idle capture replays: an idle window may not be longer.
func (b *Bench) IdleDuration() time.Duration {
	return time.Duration(b.idle.Duration() * float64(time.Second))
}

// Window records one window of length d through the kind's driver against a fresh
// simulator: the idle capture once (a window longer than it is refused), or the load capture
// looped.
func (b *Bench) Window(ctx context.Context, load bool, d time.Duration) ([]meter.Sample, meter.Info, error) {
	tr := b.idle
	if load {
		tr = b.load
	} else if d > b.IdleDuration() {
		return nil, meter.Info{}, fmt.Errorf("idle window %v is longer than the idle capture %s (%v): choose a shorter spec.energy.idle or a longer capture",
			d, tr.Source, b.IdleDuration())
	}
	unplug := 0
	if load {
		unplug = b.UnplugLoadAfter
	}
	switch b.Spec.Kind {
	case "ppk2":
		return b.ppk2Window(ctx, tr, load, unplug, d)
	case "ina2xx":
		return b.ina2xxWindow(ctx, tr, load, unplug, d)
	}
	return b.fnb58Window(ctx, tr, load, unplug, d)
}

// fnb58Window: the FNB58 driver on a socketpair; unplug counts reports.
func (b *Bench) fnb58Window(ctx context.Context, tr energy.Trace, load bool, unplug int, d time.Duration) ([]meter.Sample, meter.Info, error) {
	perReport := fnb58.SamplesPerReport * time.Second / fnb58.Rate
	opt := fnb58.SimOptions{Volts: Volts, Reports: int(d/perReport) + 2, Loop: load, Lockstep: b.Lockstep, UnplugAfter: unplug}
	sim, dev, err := fnb58.NewSimulator(tr, opt, fnb58.Options{})
	if err != nil {
		return nil, meter.Info{}, err
	}
	return record(ctx, dev, sim.Run, d)
}

// ppk2Window: the PPK2 driver on a pty, in source mode at PPK2Millivolts; unplug counts the
// FNB58's 40 ms reports, so a fault lands at the same time for every kind.
func (b *Bench) ppk2Window(ctx context.Context, tr energy.Trace, load bool, unplug int, d time.Duration) ([]meter.Sample, meter.Info, error) {
	words := int(d.Seconds()*ppk2.RawRate) + 2*ppk2.DefaultDecimate
	opt := ppk2.SimOptions{Loop: load, Words: words, Paced: !b.Lockstep, UnplugAfter: unplug * ppk2.RawRate / 25}
	sim, dev, err := ppk2.NewSimulator(tr, opt, ppk2.Options{Mode: ppk2.Source, Millivolts: PPK2Millivolts})
	if err != nil {
		return nil, meter.Info{}, err
	}
	return record(ctx, dev, sim.Run, d)
}

// ina2xxWindow: the hwmon driver polling a directory the simulator writes, at the capture's
// rate; unplug counts 40 ms as the FNB58's reports.
func (b *Bench) ina2xxWindow(ctx context.Context, tr energy.Trace, load bool, unplug int, d time.Duration) ([]meter.Sample, meter.Info, error) {
	dir, err := os.MkdirTemp("", "pqrepro-sim-hwmon-")
	if err != nil {
		return nil, meter.Info{}, fmt.Errorf("simulated ina2xx: %w", err)
	}
	defer os.RemoveAll(dir)
	opt := ina2xx.SimOptions{Volts: Volts, Loop: load, Lockstep: b.Lockstep, UnplugAfter: int(float64(unplug) * tr.Rate / 25)}
	_, m, err := ina2xx.NewSimulator(tr, dir, opt)
	if err != nil {
		return nil, meter.Info{}, err
	}
	return record(ctx, m, nil, d)
}

// record runs the simulator (when it has a loop of its own), opens the driver, and records
// one window; the simulator and the driver are stopped before it returns.
func record(ctx context.Context, dev meter.Meter, run func(context.Context) error, d time.Duration) ([]meter.Sample, meter.Info, error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	if run != nil {
		go func() { done <- run(ctx) }()
	} else {
		done <- nil
	}
	defer func() {
		dev.Close()
		cancel()
		<-done
	}()
	if err := dev.Open(ctx); err != nil {
		return nil, meter.Info{}, err
	}
	s, err := meter.Record(ctx, dev, d)
	if err != nil {
		return nil, meter.Info{}, err
	}
	return s, dev.Info(), nil
}
