package trial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"pqrepro/artifacts"
)

// RAPL reads a Linux powercap RAPL package domain (energy_uj). It measures the whole
// package: everything else the machine does in the window is included, and no idle baseline
// is subtracted (paper002 subtracted one; see the comparison notes).
type RAPL struct {
	dir      string // e.g. /sys/class/powercap/intel-rapl:0
	name     string
	maxRange uint64
}

// OpenRAPL finds the first readable package domain under root (normally /sys/class/powercap).
// When there is none it returns nil and the reason, which goes into the result as is.
func OpenRAPL(root string) (*RAPL, string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "intel-rapl:[0-9]*"))
	if len(dirs) == 0 {
		return nil, fmt.Sprintf("no RAPL powercap domain under %s (kernel or machine does not expose one; virtual machines usually do not)", root)
	}
	var reasons []string
	for _, d := range dirs {
		if strings.Count(filepath.Base(d), ":") != 1 {
			continue // a sub-domain (core, uncore, dram)
		}
		m := &RAPL{dir: d}
		if b, err := os.ReadFile(filepath.Join(d, "name")); err == nil {
			m.name = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(filepath.Join(d, "max_energy_range_uj")); err == nil {
			m.maxRange, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
		if _, err := m.read(); err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		return m, ""
	}
	return nil, "RAPL present but unreadable: " + strings.Join(reasons, "; ")
}

func (m *RAPL) Source() string {
	return fmt.Sprintf("rapl:%s (%s, package energy, idle not subtracted)", filepath.Base(m.dir), m.name)
}

func (m *RAPL) read() (uint64, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, "energy_uj"))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", filepath.Join(m.dir, "energy_uj"), err)
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// Delta returns microjoules between two readings, allowing one counter wrap.
func (m *RAPL) Delta(a, b uint64) uint64 {
	if b >= a {
		return b - a
	}
	return m.maxRange - a + b
}

// energyPass measures joules per operation over a few windows of back-to-back operations.
// Inputs are prepared before a window and outputs checked after it, so only the operations
// themselves run between the two energy readings; a failed check discards the figure.
func energyPass[I, O any](ctx context.Context, t Trial[I, O], medianNs float64, m *RAPL) *artifacts.Energy {
	if m == nil {
		return nil // the caller records the reason once for the run
	}
	const windowNs = 2e8
	k := 1
	if medianNs > 0 {
		k = max(1, min(10000, int(windowNs/medianNs)))
	}
	windows := 3
	if medianNs > 1e9 {
		windows = 1
	}
	var perOp []float64
	for w := 0; w < windows && ctx.Err() == nil; w++ {
		ins := make([]I, k)
		outs := make([]O, k)
		for i := range ins {
			var err error
			if ins[i], err = t.Prep(2_000_000 + w*k + i); err != nil {
				return &artifacts.Energy{Source: m.Source(), Absent: "input preparation failed: " + err.Error()}
			}
		}
		e0, err0 := m.read()
		for i := range ins {
			outs[i], _ = t.Op(ins[i])
		}
		e1, err1 := m.read()
		if err0 != nil || err1 != nil {
			return &artifacts.Energy{Source: m.Source(), Absent: "RAPL read failed during the pass"}
		}
		for i := range ins {
			if err := t.Check(ins[i], outs[i]); err != nil {
				return &artifacts.Energy{Source: m.Source(), Absent: "an output check failed in the energy pass: " + err.Error()}
			}
		}
		perOp = append(perOp, float64(m.Delta(e0, e1))/1e6/float64(k))
	}
	if len(perOp) == 0 {
		return nil
	}
	return &artifacts.Energy{Source: m.Source(), JoulesPerOp: artifacts.Summarize(perOp)}
}

// LoadWindow records one load window of length d on a power meter and returns it as
// power.csv holds it; the trial runs operations back to back until it returns.
type LoadWindow func(ctx context.Context, d time.Duration) (*artifacts.PowerWindow, error)

// MeterChecks is how many of the load window's outputs are checked (after the window).
const MeterChecks = 16

// MeterIndex is Prep's index of the load window's first operation (timed iterations are below
// it).
const MeterIndex = 3_000_000

// MeterPass records a load window while operations run back to back, each on a fresh input
// (an input's random stream is spent by its operation, so inputs are prepared inside the
// window, and the window's log line says what share of it preparation took). The first
// MeterChecks outputs are checked after the window. A meter failure, a failed operation or a
// failed check leaves no window, with the reason.
//
// Run calls it after a cell's timed iterations when the plan has a Meter; a trial whose plan
// has NoPasses (its operations run in child processes, which the meter sees as it sees the
// whole machine) calls it itself. Prep receives MeterIndex + n for the window's n-th
// operation; a trial whose output the next operation overwrites checks its outputs in Op. It
// returns the window (nil on failure), the operations started in it, and why it failed.
func MeterPass[I, O any](ctx context.Context, t Trial[I, O], record LoadWindow, d time.Duration) (*artifacts.PowerWindow, int, string) {
	stop := make(chan struct{})
	type loop struct {
		ops int
		why string
	}
	done := make(chan loop, 1)
	go func() { n, why := loadLoop(t, stop); done <- loop{n, why} }()
	w, err := record(ctx, d)
	close(stop)
	l := <-done
	if l.why != "" {
		return nil, l.ops, l.why
	}
	if err != nil {
		return nil, l.ops, "meter: " + err.Error()
	}
	return w, l.ops, ""
}

// loadLoop runs the operation back to back until stop is closed, then checks the first
// outputs; it returns how many operations it started (the last may end after the window)
// and why it failed, "" when it did not.
func loadLoop[I, O any](t Trial[I, O], stop <-chan struct{}) (int, string) {
	var ins []I
	var outs []O
	for n := 0; ; n++ {
		select {
		case <-stop:
			for i := range outs {
				if err := t.Check(ins[i], outs[i]); err != nil {
					return n, "an output check failed in the load window: " + err.Error()
				}
			}
			return n, ""
		default:
		}
		in, err := t.Prep(MeterIndex + n)
		if err != nil {
			<-stop
			return n, "input preparation failed in the load window: " + err.Error()
		}
		out, err := t.Op(in)
		if err != nil {
			<-stop
			return n, "an operation failed in the load window: " + err.Error()
		}
		if len(outs) < MeterChecks {
			ins, outs = append(ins, in), append(outs, out)
		}
		// The meter's reader must keep up with the meter (a late read looks like a loss).
		runtime.Gosched()
	}
}
