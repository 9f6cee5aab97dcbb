package portal

import (
	"context"
	"encoding/json"
	"fmt"

	"pqrepro/artifacts"
	"pqrepro/compare/rederive"
	"pqrepro/energy"
	"pqrepro/portal/plot"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// runEnergy is a metered run's energy section, read from its stored bundle (power.csv is not
// in the database); nil with an error when the bundle cannot be read.
func (s *Server) runEnergy(ctx context.Context, r store.Run) (*templates.RunEnergy, error) {
	rc, err := s.blobs.Open(ctx, r.Bundle)
	if err != nil {
		return nil, fmt.Errorf("open bundle of run %d: %w", r.ID, err)
	}
	defer rc.Close()
	b, err := artifacts.ReadTarGz(rc, s.cfg.MaxBundleBytes)
	if err != nil {
		return nil, fmt.Errorf("read bundle of run %d: %w", r.ID, err)
	}
	var res artifacts.Result
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileResult], &res); err != nil {
		return nil, fmt.Errorf("run %d result: %w", r.ID, err)
	}
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		return nil, fmt.Errorf("run %d environment: %w", r.ID, err)
	}
	return runEnergyView(&res, &env, b.Files[artifacts.FilePower])
}

// runEnergyView is a metered run's energy per operation beside its time: the meter, its rate
// and each method named, a row per metered cell (or why it has none), and the idle window
// with the first metered cell's load window drawn; nil when the run had no meter.
func runEnergyView(res *artifacts.Result, env *artifacts.Environment, power []byte) (*templates.RunEnergy, error) {
	m := env.Meter
	if m == nil {
		return nil, nil
	}
	v := &templates.RunEnergy{
		Meter: fmt.Sprintf("%s %s at %g samples/s", m.Kind, m.Device, m.Rate),
		Method: "E_op = (P_load − P_idle) × T_op: the run's idle window and each cell's load window (the operation back to back), " +
			"T_op the cell's median time; " + energy.Method + " (" + fmt.Sprint(energy.PowerReplicates) + " replicates, fixed seed), re-derived from power.csv.",
	}
	if m.Simulated {
		v.Meter += " (" + artifacts.SimulatedMeterLabel + ": a replayed capture, not a measurement of this run)"
	}
	var first *artifacts.Cell
	for i, c := range res.Cells {
		e := c.Energy
		if c.Status != artifacts.StatusOK || e == nil {
			continue
		}
		row := templates.RunEnergyRow{Algorithm: c.Algorithm, Operation: c.Operation, Absent: e.Absent, Direct: "–"}
		if w := e.Windows; w != nil && e.JoulesPerOp != nil {
			row.TOp = artifacts.FormatNanoseconds(w.TOp * 1e9)
			row.Energy = joules(e.JoulesPerOp.Median)
			row.Interval = "[" + joules(w.Lo) + ", " + joules(w.Hi) + "]"
			if first == nil {
				first = &res.Cells[i]
			}
		}
		if d := e.Direct; d != nil {
			v.DirectMethod = energy.DirectMethod + "; marker input D" + fmt.Sprint(d.Input) + "."
			row.Direct = "none: " + d.Absent
			if d.Absent == "" {
				row.Direct = fmt.Sprintf("%s [%s, %s] over %d operations", joules(d.JoulesPerOp), joules(d.Lo), joules(d.Hi), d.Ops)
			}
		}
		v.Rows = append(v.Rows, row)
	}
	if first == nil || power == nil {
		return v, nil
	}
	p, err := artifacts.ParsePower(power)
	if err != nil {
		return v, err
	}
	load := p.Load[artifacts.CellKey{Algorithm: first.Algorithm, Operation: first.Operation}]
	if p.Idle == nil || load == nil {
		return v, nil
	}
	w := first.Energy.Windows
	v.Plot = plot.Traces([]plot.Capture{
		{Label: fmt.Sprintf("idle window (%.0f s)", w.IdleSeconds), Rate: m.Rate, Power: p.Idle.Watts(), Mean: w.IdleWatts, Lo: w.IdleWatts, Hi: w.IdleWatts},
		{Label: fmt.Sprintf("load window: %s %s (%.0f s)", first.Algorithm, first.Operation, w.LoadSeconds), Rate: m.Rate, Power: load.Watts(), Mean: w.LoadWatts, Lo: w.LoadWatts, Hi: w.LoadWatts},
	}, func(x float64) string { return rederive.Sig(x, 3) })
	v.PlotCaption = fmt.Sprintf("The run's idle window and %s %s's load window as the meter recorded them (each column spans its smallest to its largest sample) "+
		"with their mean power: P_load − P_idle = %s W, × T_op %s s = %s per operation.",
		first.Algorithm, first.Operation, rederive.Sig(w.LoadWatts-w.IdleWatts, 4), rederive.Sig(w.TOp, 4), joules(first.Energy.JoulesPerOp.Median))
	return v, nil
}
