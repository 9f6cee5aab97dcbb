package meter

import (
	"context"
	"fmt"
	"time"

	"pqrepro/artifacts"
	"pqrepro/energy"
)

// Trace turns a recorded window into the power trace energy.PerOperation estimates from: each
// sample's power (volts × amps) at its time from the window's first sample. It refuses a
// window whose samples are not on the meter's grid (a gap, a repeat), naming the sample, so
// what goes into an energy is exactly what the meter sent.
func Trace(samples []Sample, info Info, source string) (energy.Trace, error) {
	tr := energy.Trace{Source: source, Rate: info.Rate}
	if len(samples) == 0 {
		return tr, fmt.Errorf("%s: an empty window", source)
	}
	t0 := samples[0].T
	tr.Time = make([]float64, len(samples))
	tr.Power = make([]float64, len(samples))
	for i, s := range samples {
		tr.Time[i] = (s.T - t0).Seconds()
		tr.Power[i] = s.Watts()
	}
	if err := tr.Validate(); err != nil {
		return energy.Trace{}, err
	}
	return tr, nil
}

// Window turns a recorded window into power.csv's form (volts and amps as the meter reported
// them), refusing a window that Trace refuses.
func Window(samples []Sample, info Info, source string) (*artifacts.PowerWindow, error) {
	if _, err := Trace(samples, info, source); err != nil {
		return nil, err
	}
	w := &artifacts.PowerWindow{Volts: make([]float64, len(samples)), Amps: make([]float64, len(samples))}
	if info.Markers > 0 {
		w.Markers = make([]uint8, len(samples))
	}
	for i, s := range samples {
		w.Volts[i], w.Amps[i] = s.Volts, s.Amps
		if w.Markers != nil {
			w.Markers[i] = s.Markers
		}
	}
	return w, nil
}

// Artifact is the meter as environment.json describes it.
func (i Info) Artifact() *artifacts.MeterInfo {
	note := i.Note
	if i.Simulated && note == "" {
		note = artifacts.SimulatedMeterLabel
	}
	return &artifacts.MeterInfo{Kind: i.Kind, Device: i.Device, Rate: i.Rate, Simulated: i.Simulated, Note: note}
}

// Windower records one window of a metered pass: the run's idle window (load false) or a
// cell's load window, d long (attach's meters and the simulators).
type Windower interface {
	Window(ctx context.Context, load bool, d time.Duration) ([]Sample, Info, error)
}

// RecordWindow records a window of d on m and returns it in power.csv's form (Window), with the
// meter's info; the window is named "idle window" or "load window" in Window's refusals.
func RecordWindow(ctx context.Context, m Windower, load bool, d time.Duration) (*artifacts.PowerWindow, Info, error) {
	name := "idle window"
	if load {
		name = "load window"
	}
	s, info, err := m.Window(ctx, load, d)
	if err != nil {
		return nil, info, err
	}
	w, err := Window(s, info, name)
	return w, info, err
}
