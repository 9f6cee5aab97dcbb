package device

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/meter"
	"pqrepro/runner/wire"
)

// Meter records the windows of a board's metered energy pass: the run's idle window (load
// false) and each cell's load window (runner/meter/sim.Bench and runner/meter/attach.Meter
// are ones, as for the host).
type Meter = meter.Windower

// Metered is a firmware board's metered energy pass (RunOptions.Metered): the meter, and what
// the last run recorded with it, which the board hands on as a runner.PowerNoter.
type Metered struct {
	Meter Meter

	mu     sync.Mutex
	idle   *artifacts.PowerWindow
	info   *artifacts.MeterInfo
	absent string // why the last run has no metered energy, "" when it may have some
}

// LastPower is the last run's idle window and meter (runner.PowerNoter); nil, nil when it ran
// no metered pass.
func (p *Metered) LastPower() (*artifacts.PowerWindow, *artifacts.MeterInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle, p.info
}

func (p *Metered) set(idle *artifacts.PowerWindow, info *artifacts.MeterInfo, absent string) {
	p.mu.Lock()
	p.idle, p.info, p.absent = idle, info, absent
	p.mu.Unlock()
}

// loopMargin is added to a load window's length in LOOP's budget: the LOOP frame's way over
// the line before the meter's window opens (about 10 ms for a 100-byte frame at 115200 baud).
const loopMargin = 100 * time.Millisecond

// UnitsPerSecond is how many of the board's counter units pass in a second: a cycle counter's
// clock, or 10^9 and 10^6 for ns and µs. An instruction count (an emulator) has no rate: LOOP's
// budget cannot be made from a window's length.
func UnitsPerSecond(h wire.Hello) (float64, error) {
	switch {
	case h.Unit == "ns":
		return 1e9, nil
	case h.Unit == "us":
		return 1e6, nil
	case h.Unit == "cycles" && h.ClockHz > 0:
		return float64(h.ClockHz), nil
	}
	return 0, fmt.Errorf("the board counts %s (clock %d Hz), not time: a load window's length cannot be turned into LOOP's budget", h.Unit, h.ClockHz)
}

// startMeter records the run's idle window while the board waits for its next request, when
// the run has a metered pass (a meter, a kind whose cells BENCH measures, a board that counts
// time); otherwise it says why not in the log and in every cell's energy.
func (b *boardRun) startMeter(ctx context.Context) {
	p := b.opt.Metered
	if p == nil || p.Meter == nil {
		return
	}
	p.set(nil, nil, "")
	if b.m.Kind != artifacts.KindKEMBench && b.m.Kind != artifacts.KindSigBench {
		p.set(nil, nil, fmt.Sprintf("the metered energy pass measures the operations BENCH times, not %s cells", b.m.Kind))
		fmt.Fprintf(b.log, "energy: no metered pass: %s\n", p.absent)
		return
	}
	if _, err := UnitsPerSecond(b.h); err != nil {
		p.set(nil, nil, err.Error())
		fmt.Fprintf(b.log, "energy: no metered pass: %v\n", err)
		return
	}
	idleD, loadD := b.m.Spec.EnergyWindows()
	fmt.Fprintf(b.log, "energy: metered pass: an idle window of %v while the board waits, then a load window of %v per cell while it runs LOOP\n", idleD, loadD)
	w, info, err := meter.RecordWindow(ctx, p.Meter, false, idleD)
	if err != nil {
		p.set(nil, nil, "the meter's idle window failed: "+err.Error())
		fmt.Fprintf(b.log, "energy: idle window failed: %v\n", err)
		return
	}
	p.set(w, info.Artifact(), "")
	if info.Simulated {
		fmt.Fprintf(b.log, "energy: %s\n", info.Note)
	}
}

// meterCell records an ok cell's load window while the board runs its operation with LOOP
// (r.Power, from which runner.Execute computes the cell's energy), or gives the cell's energy
// the reason it has none. An error breaks the conversation, as a cell's own would.
func (b *boardRun) meterCell(ctx context.Context, r *runner.CellResult, ref artifacts.CellRef) error {
	p := b.opt.Metered
	if p == nil || p.Meter == nil || r.Cell.Status != artifacts.StatusOK {
		return nil
	}
	p.mu.Lock()
	absent, idle := p.absent, p.idle
	p.mu.Unlock()
	if absent != "" || idle == nil {
		r.Cell.Energy = &artifacts.Energy{Absent: absent}
		return nil
	}
	w, why, err := b.loadWindow(ctx, ref)
	if err != nil {
		return err
	}
	if why != "" {
		r.Cell.Energy = &artifacts.Energy{Absent: why}
		fmt.Fprintf(b.log, "energy: %s %s: no load window: %s\n", ref.Algorithm, ref.Operation, why)
		return nil
	}
	r.Power = w
	return nil
}

// loadWindow sends LOOP for the window's length (and loopMargin) in the board's counter units,
// opens the meter's window when the board's LOOP frame arrives and waits for both.
func (b *boardRun) loadWindow(ctx context.Context, ref artifacts.CellRef) (*artifacts.PowerWindow, string, error) {
	_, loadD := b.m.Spec.EnergyWindows()
	rate, _ := UnitsPerSecond(b.h)
	msg, msgLen, _ := benchMessage(b.h, b.m)
	req := wire.LoopRequest{
		Bench:  wire.BenchRequest{Algorithm: ref.Algorithm, Operation: ref.Operation, Message: msg, MessageLen: msgLen},
		Budget: uint64(math.Ceil((loadD + loopMargin).Seconds() * rate)),
	}
	type window struct {
		w   *artifacts.PowerWindow
		err error
	}
	got := make(chan window, 1)
	opened := false
	l, err := b.c.Loop(ctx, req, func() {
		opened = true
		go func() {
			w, _, err := meter.RecordWindow(ctx, b.opt.Metered.Meter, true, loadD)
			got <- window{w, err}
		}()
	})
	var mw window
	if opened {
		mw = <-got
	}
	if err != nil {
		return nil, "", fmt.Errorf("LOOP: %w", err)
	}
	logLoop(b.log, ref, l, req.Budget, b.h.Unit)
	switch {
	case l.Fail > 0:
		return nil, "an operation failed in the load window: " + l.Reason, nil
	case mw.err != nil:
		return nil, "the meter's load window failed: " + mw.err.Error(), nil
	case l.Count < req.Budget:
		return nil, fmt.Sprintf("the board ran %d operations, %d %s, short of the window's %d", l.Ops, l.Count, b.h.Unit, req.Budget), nil
	}
	return mw.w, "", nil
}

func logLoop(log io.Writer, ref artifacts.CellRef, l wire.Loop, budget uint64, unit string) {
	fmt.Fprintf(log, "energy: %s %s: LOOP ran %d operations, %d %s of a budget of %d (each %d..%d), marker %s\n",
		ref.Algorithm, ref.Operation, l.Ops, l.Count, unit, budget, l.Min, l.Max, OrNone(l.Marker))
}
