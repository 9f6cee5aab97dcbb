package energy

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"pqrepro/artifacts"
)

// PowerReplicates is the bootstrap replicates of a metered run's figures; PowerSeed their
// seed. Both are fixed, so a figure re-derives from power.csv bit for bit.
const PowerReplicates = 1000

// PowerSeed seeds the bootstrap of every metered figure.
var PowerSeed = sha256.Sum256([]byte("pqrepro power.csv"))

// WindowTrace is a power.csv window as a trace: sample i at i/rate, power volts × amps.
func WindowTrace(w *artifacts.PowerWindow, rate float64, source string) (Trace, error) {
	tr := Trace{Source: source, Rate: rate, Power: w.Watts(), Time: make([]float64, len(w.Volts))}
	for i := range tr.Time {
		tr.Time[i] = float64(i) / rate
	}
	return tr, tr.Validate()
}

// FromPower computes a cell's metered energy from the run's idle window and the cell's load
// window (rate: the meter's samples/s; tOp: the cell's median time in s), as the runner
// records it and as verify and the portal re-derive it; when the load window has markers, the
// direct integration over its marked operations too (Direct).
func FromPower(idle, load *artifacts.PowerWindow, rate, tOp float64, source string, simulated bool) (*artifacts.Energy, error) {
	it, err := WindowTrace(idle, rate, "idle window")
	if err != nil {
		return nil, err
	}
	lt, err := WindowTrace(load, rate, "load window")
	if err != nil {
		return nil, err
	}
	e, err := PerOperation(it, lt, tOp, Options{Seed: PowerSeed, Replicates: PowerReplicates})
	if err != nil {
		return nil, err
	}
	direct, err := Direct(idle, load, rate)
	if err != nil {
		return nil, err
	}
	p := e.Energy.Point
	return &artifacts.Energy{
		Direct:      direct,
		Source:      source,
		JoulesPerOp: &artifacts.Stats{N: 1, Min: p, P25: p, Median: p, P75: p, Max: p, Mean: p},
		Simulated:   simulated,
		Windows: &artifacts.EnergyWindows{Method: "E_op = (P_load - P_idle) x T_op; " + e.Method,
			Lo: e.Energy.Lo, Hi: e.Energy.Hi, Confidence: e.Confidence, Replicates: e.Replicates, TOp: tOp,
			IdleWatts: e.Idle.Mean.Point, LoadWatts: e.Load.Mean.Point, IdleSeconds: it.Duration(), LoadSeconds: lt.Duration(), LoadOps: e.LoadOps},
	}, nil
}

// CellTOp is a cell's time per operation in seconds: its median time (host cells and the host
// firmware, in ns; a board's in µs), or its median cycle count over the board's clock (clockHz,
// environment.json's board.clockHz; 0 when the board reported none). An instruction count has
// no time: such a cell has no metered energy.
func CellTOp(c artifacts.Cell, clockHz int64) (float64, error) {
	if c.Stats == nil || !(c.Stats.Median > 0) {
		return 0, fmt.Errorf("%s %s: no median to take as the time per operation", c.Algorithm, c.Operation)
	}
	switch {
	case c.Unit == artifacts.UnitNanoseconds:
		return c.Stats.Median * 1e-9, nil
	case c.Unit == artifacts.UnitMicroseconds:
		return c.Stats.Median * 1e-6, nil
	case c.Unit == artifacts.UnitCycles && clockHz > 0:
		return c.Stats.Median / float64(clockHz), nil
	}
	return 0, fmt.Errorf("%s %s: a median in %s (board clock %d Hz) is no time per operation", c.Algorithm, c.Operation, c.Unit, clockHz)
}

// ErrPowerMismatch is wrapped when a bundle's energy does not follow from its power.csv.
var ErrPowerMismatch = errors.New("energy does not follow from power.csv")

// RederivePower re-derives every metered energy figure of res from power (power.csv's bytes,
// nil when the bundle has none) and env's meter, and refuses a figure that differs in any
// field, a metered figure without a window, and a window without a figure.
func RederivePower(res *artifacts.Result, env *artifacts.Environment, power []byte) error {
	if power == nil {
		for i, c := range res.Cells {
			if c.Energy != nil && c.Energy.Windows != nil {
				return fmt.Errorf("cells[%d] (%s %s): a metered energy, but the bundle has no %s: %w", i, c.Algorithm, c.Operation, artifacts.FilePower, ErrPowerMismatch)
			}
		}
		return nil
	}
	p, err := artifacts.ParsePower(power)
	if err != nil {
		return err
	}
	if env.Meter == nil || p.Idle == nil {
		return fmt.Errorf("%s without a meter in environment.json or without an idle window: %w", artifacts.FilePower, ErrPowerMismatch)
	}
	seen := 0
	for i, c := range res.Cells {
		if c.Energy == nil || c.Energy.Windows == nil {
			continue
		}
		k := artifacts.KeyOf(c)
		w := p.Load[artifacts.CellKey{Algorithm: k.Algorithm, Operation: k.Operation}]
		if w == nil || k.Variant != "" {
			return fmt.Errorf("cells[%d] (%s %s): a metered energy, no load window in %s: %w", i, c.Algorithm, c.Operation, artifacts.FilePower, ErrPowerMismatch)
		}
		seen++
		if err := rederiveCell(c, p.Idle, w, env.Meter, env.Board.ClockHz); err != nil {
			return fmt.Errorf("cells[%d] (%s %s): %w", i, c.Algorithm, c.Operation, err)
		}
	}
	if seen != len(p.Load) {
		return fmt.Errorf("%s holds %d load windows, result.json %d metered energies: %w", artifacts.FilePower, len(p.Load), seen, ErrPowerMismatch)
	}
	return nil
}

func rederiveCell(c artifacts.Cell, idle, load *artifacts.PowerWindow, m *artifacts.MeterInfo, clockHz int64) error {
	tOp, err := CellTOp(c, clockHz)
	if err != nil {
		return err
	}
	want, err := FromPower(idle, load, m.Rate, tOp, c.Energy.Source, c.Energy.Simulated)
	if err != nil {
		return fmt.Errorf("%s: %w", artifacts.FilePower, err)
	}
	got := c.Energy
	if got.JoulesPerOp == nil {
		return fmt.Errorf("a metered energy without energy.joulesPerOp: %w", ErrPowerMismatch)
	}
	if got.Simulated != m.Simulated {
		return fmt.Errorf("energy.simulated %v, environment.json's meter %v: %w", got.Simulated, m.Simulated, ErrPowerMismatch)
	}
	if (got.Direct == nil) != (want.Direct == nil) || got.Direct != nil && *got.Direct != *want.Direct {
		return fmt.Errorf("energy.direct %+v, %s gives %+v: %w", got.Direct, artifacts.FilePower, want.Direct, ErrPowerMismatch)
	}
	if *got.JoulesPerOp != *want.JoulesPerOp || *got.Windows != *want.Windows {
		return fmt.Errorf("energy.joulesPerOp %g J [%g, %g], %s gives %g J [%g, %g]: %w",
			got.JoulesPerOp.Median, got.Windows.Lo, got.Windows.Hi, artifacts.FilePower, want.JoulesPerOp.Median, want.Windows.Lo, want.Windows.Hi, ErrPowerMismatch)
	}
	return nil
}
