package artifacts

import (
	"errors"
	"fmt"
)

// MeterInfo describes the power meter a run's energy came from (environment.json).
type MeterInfo struct {
	// Kind is the meter's kind (fnb58, ppk2, ina2xx).
	Kind string `json:"kind"`
	// Device is what the runner read (a hidraw file, a hwmon directory, "sim:fnb58:…").
	Device string `json:"device"`
	// Rate is the nominal sample rate (samples/s).
	Rate float64 `json:"rate"`
	// Simulated is true when the meter's samples replay a recorded capture through the real
	// driver: the run's energy is then not a measurement of this run.
	Simulated bool `json:"simulated,omitempty"`
	// Note qualifies the driver and, when simulated, names the replayed captures.
	Note string `json:"note,omitempty"`
}

// SimulatedMeterLabel is the label a simulated meter's figures carry wherever they are shown.
const SimulatedMeterLabel = "simulated meter"

// ErrSimulatedMeter is wrapped by the refusal of a bundle whose energy comes from a simulated
// meter where a measurement is required (pqrepro submit, the portal's ingest).
var ErrSimulatedMeter = errors.New(SimulatedMeterLabel + ": its energy replays a recorded capture and is not a measurement of this run")

// CheckMeasuredEnergy refuses a run whose energy comes from a simulated meter (the
// environment's meter or any cell's energy marked simulated), and a run whose cells and
// environment disagree about it.
func CheckMeasuredEnergy(res *Result, env *Environment) error {
	envSim := env.Meter != nil && env.Meter.Simulated
	for i, c := range res.Cells {
		if c.Energy == nil || !c.Energy.Simulated {
			continue
		}
		if !envSim {
			return fmt.Errorf("result.json: cells[%d] (%s %s): energy marked simulated, environment.json names no simulated meter", i, c.Algorithm, c.Operation)
		}
		return fmt.Errorf("result.json: cells[%d] (%s %s): %w", i, c.Algorithm, c.Operation, ErrSimulatedMeter)
	}
	if envSim {
		return fmt.Errorf("environment.json: meter %s: %w", env.Meter.Device, ErrSimulatedMeter)
	}
	return nil
}
