// Package sim is `pqrepro run --meter sim:KIND:IDLE,LOAD`: a meter driver run against its
// protocol simulator, which replays recorded captures (the idle capture for an idle window,
// the load capture looped for each load window). Everything it yields is a replay, marked
// simulated: never a measurement of the run that records it.
package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pqrepro/energy"
	efnb58 "pqrepro/energy/fnb58"
	"pqrepro/runner/meter"
	"pqrepro/runner/meter/fnb58"
)

// Volts is the bus voltage the simulated FNB58 states for every sample. paper002's captures
// hold power only; the voltage was not recorded, and 5.1 V (a Raspberry Pi supply's nominal
// output) is a stated constant, so volts × amps replays the recorded power.
const Volts = 5.1

// MaxSpec bounds the --meter value.
const MaxSpec = 4096

// Spec is a parsed --meter sim:KIND:IDLE,LOAD.
type Spec struct {
	// Kind is the simulated meter ("fnb58"; the PPK2 and INA2xx simulators are not built yet).
	Kind string
	// Idle and Load are the capture files (FNB58 .csv or .cfn, as energy/fnb58 reads them).
	Idle, Load string
}

// ParseSpec parses sim:KIND:IDLE,LOAD, naming the part that is wrong.
func ParseSpec(s string) (Spec, error) {
	if len(s) > MaxSpec {
		return Spec{}, fmt.Errorf("--meter: %d bytes, more than the limit of %d", len(s), MaxSpec)
	}
	rest, ok := strings.CutPrefix(s, "sim:")
	if !ok {
		return Spec{}, fmt.Errorf("--meter %q: want sim:KIND:IDLE,LOAD (only simulated meters are selected on the command line; a lab's meter is set in the hardware map)", s)
	}
	kind, files, ok := strings.Cut(rest, ":")
	if !ok {
		return Spec{}, fmt.Errorf("--meter %q: want sim:KIND:IDLE,LOAD: no capture files", s)
	}
	switch kind {
	case "fnb58":
	case "ppk2", "ina2xx":
		return Spec{}, fmt.Errorf("--meter %q: the %s simulator is not built yet (only sim:fnb58)", s, kind)
	default:
		return Spec{}, fmt.Errorf("--meter %q: kind %q: want fnb58", s, kind)
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

// Window records one window of length d through the FNB58 driver against a fresh simulator:
// the idle capture once (a window longer than it is refused), or the load capture looped.
func (b *Bench) Window(ctx context.Context, load bool, d time.Duration) ([]meter.Sample, meter.Info, error) {
	tr := b.idle
	if load {
		tr = b.load
	} else if d > b.IdleDuration() {
		return nil, meter.Info{}, fmt.Errorf("idle window %v is longer than the idle capture %s (%v): choose a shorter spec.energy.idle or a longer capture",
			d, tr.Source, b.IdleDuration())
	}
	perReport := fnb58.SamplesPerReport * time.Second / fnb58.Rate
	reports := int(d/perReport) + 2
	opt := fnb58.SimOptions{Volts: Volts, Reports: reports, Loop: load, Lockstep: b.Lockstep}
	if load {
		opt.UnplugAfter = b.UnplugLoadAfter
	}
	sim, dev, err := fnb58.NewSimulator(tr, opt, fnb58.Options{})
	if err != nil {
		return nil, meter.Info{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	defer func() {
		cancel()
		dev.Close()
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
