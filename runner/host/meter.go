package host

import (
	"context"
	"fmt"
	"io"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner/meter"
	"pqrepro/runner/trial"
)

// Meter records the windows of the metered energy pass: the run's idle window (load false)
// and each cell's load window. runner/meter/sim's Bench is one (a real driver against its
// simulator); its samples are complete windows or an error.
type Meter = meter.Windower

// meterRun is one run's metered pass: the idle window, recorded first, and the meter.
type meterRun struct {
	idle   *artifacts.PowerWindow
	info   *artifacts.MeterInfo
	absent string // why the run has no metered energy
}

// startMeter records the run's idle window (spec.energy.idle, nothing else running) and
// returns the cells' load-window recorder, or nil with the reason logged.
func (h *Host) startMeter(ctx context.Context, m *artifacts.Manifest, log io.Writer) trial.LoadWindow {
	h.tlsMu.Lock()
	h.power = meterRun{}
	h.tlsMu.Unlock()
	if h.Meter == nil || m.Spec.Method == artifacts.MethodProcessPerOperation {
		return nil
	}
	idleD, loadD := m.Spec.EnergyWindows()
	fmt.Fprintf(log, "energy: metered pass: an idle window of %v, then a load window of %v per cell\n", idleD, loadD)
	w, info, err := meter.RecordWindow(ctx, h.Meter, false, idleD)
	if err != nil {
		fmt.Fprintf(log, "energy: idle window failed: %v\n", err)
		h.setPower(meterRun{absent: "the meter's idle window failed: " + err.Error()})
		return nil
	}
	h.setPower(meterRun{idle: w, info: info.Artifact()})
	if info.Simulated {
		fmt.Fprintf(log, "energy: %s\n", info.Note)
	}
	return func(ctx context.Context, d time.Duration) (*artifacts.PowerWindow, error) {
		w, _, err := meter.RecordWindow(ctx, h.Meter, true, d)
		return w, err
	}
}

func (h *Host) setPower(p meterRun) {
	h.tlsMu.Lock()
	h.power = p
	h.tlsMu.Unlock()
}

// LastPower is the last run's idle window and meter (runner.PowerNoter).
func (h *Host) LastPower() (*artifacts.PowerWindow, *artifacts.MeterInfo) {
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	return h.power.idle, h.power.info
}

// meterAbsent is why a cell of this run has no metered energy, "" when it may have one.
func (h *Host) meterAbsent() string {
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	return h.power.absent
}

// absentReason is why a cell has no energy: the metered pass's failure when a meter was
// attached, else RAPL's reason.
func (h *Host) absentReason(rapl, cellPower string) string {
	if h.Meter == nil {
		return rapl
	}
	if a := h.meterAbsent(); a != "" {
		return a
	}
	if cellPower != "" {
		return "the meter's load window failed: " + cellPower
	}
	return rapl
}
