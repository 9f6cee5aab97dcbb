package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/energy"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/meter"
	"pqrepro/runner/meter/attach"
	"pqrepro/runner/meter/sim"
	"pqrepro/runner/serialport"
)

// simLockstep paces the simulated meter by the driver's reads instead of real time (tests
// only, so a loaded test machine cannot starve the meter's reader).
var simLockstep bool

// meterSetter is a board's meter, as useMeter reads and sets it: the host's, or a serial
// board's (which runs LOOP in each load window).
type meterSetter struct {
	get func() any
	set func(meterWindows)
}

// meterWindows is what the host and a serial board take as their meter.
type meterWindows interface {
	Window(ctx context.Context, load bool, d time.Duration) ([]meter.Sample, meter.Info, error)
}

func boardMeter(b runner.Board) (meterSetter, bool) {
	switch x := b.(type) {
	case *host.Host:
		return meterSetter{func() any { return x.Meter }, func(w meterWindows) { x.Meter = w }}, true
	case *serialport.Serial:
		return meterSetter{func() any { return x.Meter }, func(w meterWindows) { x.Meter = w }}, true
	}
	return meterSetter{}, false
}

// useMeter attaches --meter's meter to the host board or a serial board (a lab's meter,
// checked now, or a driver against its simulator) and says how long the metered pass adds to
// the run; without --meter it says which meter the hardware map attached, if any.
func useMeter(ctx context.Context, b runner.Board, m *artifacts.Manifest, spec string, stdout io.Writer) error {
	bm, ok := boardMeter(b)
	if spec == "" {
		if ok {
			if lm, isLab := bm.get().(*attach.Meter); isLab {
				printMeterPlan(stdout, m, lm.Spec.String()+" (the hardware map's; checked when each window opens)")
			}
		}
		return nil
	}
	if !ok {
		return fmt.Errorf("--meter: the metered energy pass runs on the host and on serial boards (whose firmware runs LOOP), not on %T", b)
	}
	if m.Spec.Method == artifacts.MethodProcessPerOperation {
		return fmt.Errorf("--meter: the metered energy pass runs in-process and openssl-cli cells, not method %s", m.Spec.Method)
	}
	if _, serial := b.(*serialport.Serial); serial && m.Spec.Method == artifacts.MethodOpenSSLCLI {
		return fmt.Errorf("--meter: an openssl-cli run is metered on the host, not on a serial board")
	}
	if !sim.IsSim(spec) {
		sp, err := attach.Parse(spec)
		if err != nil {
			return err
		}
		lm, err := attach.Open(ctx, sp)
		if err != nil {
			return fmt.Errorf("--meter: %w", err)
		}
		bm.set(lm)
		printMeterPlan(stdout, m, sp.String()+" (opened and answered)")
		return nil
	}
	sp, err := sim.ParseSpec(spec)
	if err != nil {
		return err
	}
	bench, err := sim.Open(sp)
	if err != nil {
		return err
	}
	bench.Lockstep = simLockstep
	bm.set(bench)
	printMeterPlan(stdout, m, fmt.Sprintf("%s (%s: a replay of %s and %s through the %s driver, not a measurement of this run)",
		spec, artifacts.SimulatedMeterLabel, sp.Idle, sp.Load, sp.Kind))
	return nil
}

// printMeterPlan names the meter and how long the metered pass adds to the run.
func printMeterPlan(stdout io.Writer, m *artifacts.Manifest, what string) {
	idle, load := m.Spec.EnergyWindows()
	fmt.Fprintf(stdout, "meter: %s; the metered pass adds %v idle + %d cells × %v load = %v\n",
		what, idle, len(m.Cells()), load, idle+load*time.Duration(len(m.Cells())))
}

// rederiveEnergy re-derives every metered energy figure from power.csv (energy.RederivePower).
func rederiveEnergy(b *artifacts.Bundle, res *artifacts.Result, v *attest.Verification) error {
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		return fmt.Errorf("parse %s: %w", artifacts.FileEnvironment, err)
	}
	power, ok := b.Files[artifacts.FilePower]
	if !ok {
		power = nil
	}
	if err := energy.RederivePower(res, &env, power); err != nil {
		return err
	}
	if ok {
		what := "energy re-derives from power.csv (E_op = ΔP × T_op, block-bootstrap interval; direct integration over marked operations where the meter has markers)"
		if env.Meter != nil && env.Meter.Simulated {
			what += "; " + artifacts.SimulatedMeterLabel + ": a replayed capture, not a measurement"
		}
		v.Checked = append(v.Checked, what)
	}
	return nil
}

// printDirect prints a cell's direct-integration figure beside its ΔP × T_op one (another
// method: the two are never ranked together), or why it has none.
func printDirect(w io.Writer, c artifacts.Cell, label string) {
	d := c.Energy.Direct
	switch {
	case d == nil:
	case d.Absent != "":
		fmt.Fprintf(w, "energy: %s %s: direct integration: none (%s)\n", c.Algorithm, c.Operation, d.Absent)
	default:
		fmt.Fprintf(w, "energy: %s %s: direct integration: %.4g J/op [%.4g, %.4g] over %d marked operations of %.4g s (marker input D%d)%s\n",
			c.Algorithm, c.Operation, d.JoulesPerOp, d.Lo, d.Hi, d.Ops, d.SecondsPerOp, d.Input, label)
	}
}

// printEnergy prints each metered cell's energy with its interval and method, labelled when
// the meter was simulated, or the first reason energy is absent.
func printEnergy(w io.Writer, res *artifacts.Result) {
	for _, c := range res.Cells {
		e := c.Energy
		if e == nil || e.Windows == nil || e.JoulesPerOp == nil {
			continue
		}
		label := ""
		if e.Simulated {
			label = " [" + artifacts.SimulatedMeterLabel + ": a replayed capture, not a measurement of this run]"
		}
		fmt.Fprintf(w, "energy: %s %s: %.4g J/op [%.4g, %.4g] (ΔP × T_op: %.4g W − %.4g W over T_op %.4g s; %s)%s\n",
			c.Algorithm, c.Operation, e.JoulesPerOp.Median, e.Windows.Lo, e.Windows.Hi, e.Windows.LoadWatts, e.Windows.IdleWatts, e.Windows.TOp, e.Source, label)
		printDirect(w, c, label)
	}
	for _, c := range res.Cells {
		if c.Energy != nil && c.Energy.Absent != "" {
			fmt.Fprintf(w, "energy: absent (%s)\n", c.Energy.Absent)
			break
		}
	}
}
