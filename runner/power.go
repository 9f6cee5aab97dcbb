package runner

import (
	"fmt"
	"io"

	"pqrepro/artifacts"
	"pqrepro/energy"
)

// meteredEnergy computes each ok cell's energy from the board's idle window and the cell's
// load window (energy.FromPower, the computation verify and the portal repeat), and returns
// power.csv and the meter for environment.json; nil, nil when the board ran no metered pass.
// clockHz is the board's clock (a cycle count's time per operation).
// A cell whose figure cannot be computed gets none, with the reason, and its window is left
// out of power.csv.
func meteredEnergy(board Board, res *artifacts.Result, cells []CellResult, clockHz int64, log io.Writer) ([]byte, *artifacts.MeterInfo) {
	pn, ok := board.(PowerNoter)
	if !ok {
		return nil, nil
	}
	idle, info := pn.LastPower()
	if idle == nil || info == nil {
		return nil, nil
	}
	source := info.Kind + " " + info.Device
	if info.Simulated {
		source += " (" + artifacts.SimulatedMeterLabel + ")"
	}
	p := &artifacts.Power{Idle: idle}
	for i, c := range cells {
		cell := &res.Cells[i]
		if c.Power == nil || cell.Status != artifacts.StatusOK {
			continue
		}
		e, err := figure(idle, c.Power, *info, *cell, clockHz, source)
		if err != nil {
			cell.Energy = &artifacts.Energy{Source: source, Absent: err.Error(), Simulated: info.Simulated}
			fmt.Fprintf(log, "energy: %s %s: absent: %v\n", cell.Algorithm, cell.Operation, err)
			continue
		}
		cell.Energy = e
		p.AddLoad(artifacts.CellKey{Algorithm: cell.Algorithm, Operation: cell.Operation}, c.Power)
		w := e.Windows
		fmt.Fprintf(log, "energy: %s %s: %.6g J/op [%.6g, %.6g] (idle %.4g W over %.4g s, load %.4g W over %.4g s, T_op %.4g s)%s\n",
			cell.Algorithm, cell.Operation, e.JoulesPerOp.Median, w.Lo, w.Hi, w.IdleWatts, w.IdleSeconds, w.LoadWatts, w.LoadSeconds, w.TOp, simulatedNote(info))
	}
	return artifacts.FormatPower(p), info
}

func figure(idle, load *artifacts.PowerWindow, info artifacts.MeterInfo, cell artifacts.Cell, clockHz int64, source string) (*artifacts.Energy, error) {
	if cell.Variant != "" {
		return nil, fmt.Errorf("a variant cell has no load window of its own")
	}
	tOp, err := energy.CellTOp(cell, clockHz)
	if err != nil {
		return nil, err
	}
	return energy.FromPower(idle, load, info.Rate, tOp, source, info.Simulated)
}

func simulatedNote(info *artifacts.MeterInfo) string {
	if info.Simulated {
		return " [" + artifacts.SimulatedMeterLabel + ": not a measurement of this run]"
	}
	return ""
}
