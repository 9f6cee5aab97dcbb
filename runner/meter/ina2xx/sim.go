package ina2xx

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"pqrepro/energy"
	"pqrepro/runner/meter"
)

// SimOptions configures a simulated hwmon directory.
type SimOptions struct {
	// Volts is the bus voltage the directory states (in1_input); the current written
	// (curr1_input) is the recorded power over it, in whole mA as the kernel driver reports.
	Volts float64
	// Chip is the name file's chip (default ina226).
	Chip string
	// Loop replays the trace again from its first row when it ends.
	Loop bool
	// Lockstep answers each poll at once (tests); otherwise polls are paced at the rate.
	Lockstep bool
	// UnplugAfter removes curr1_input before this poll (0: never), as an unbound device's
	// attributes go away.
	UnplugAfter int
}

// Simulator is a hwmon directory in a temporary folder that the real ina2xx driver polls,
// replaying a recorded power capture at the capture's own rate: before each poll it writes
// the sample of the poll's time. Everything it yields is a replay: the Meter it returns is
// marked simulated.
type Simulator struct {
	tr    energy.Trace
	opt   SimOptions
	dir   string
	start time.Time
	polls int
}

// NewSimulator writes the directory under dir and returns the simulator and the driver on it.
func NewSimulator(tr energy.Trace, dir string, opt SimOptions) (*Simulator, *Meter, error) {
	if err := tr.Validate(); err != nil {
		return nil, nil, err
	}
	if !(opt.Volts >= 1 && opt.Volts <= 40) {
		return nil, nil, fmt.Errorf("simulated ina2xx: bus voltage %g V: want 1-40 V", opt.Volts)
	}
	if opt.Chip == "" {
		opt.Chip = "ina226"
	}
	if tr.Rate > MaxRate {
		return nil, nil, fmt.Errorf("simulated ina2xx: capture %s at %g samples/s: more than the driver's %d", tr.Source, tr.Rate, MaxRate)
	}
	s := &Simulator{tr: tr, opt: opt, dir: dir}
	if err := s.put("name", opt.Chip); err != nil {
		return nil, nil, err
	}
	if err := s.writeRow(0); err != nil {
		return nil, nil, err
	}
	m := New(dir, Options{Rate: tr.Rate, Tick: s.tick, Simulated: true, Name: "sim:ina2xx:" + tr.Source,
		SimNote: fmt.Sprintf("replays the recorded capture %s (%g samples/s, power only) through a hwmon directory written by the simulator, as the current at a stated %g V bus in whole mA; not a measurement of this run",
			tr.Source, tr.Rate, opt.Volts)})
	return s, m, nil
}

// tick is the driver's wait for the poll at time at: paced (or not, in lockstep), then the
// row of that time written, or the unplug.
func (s *Simulator) tick(ctx context.Context, at time.Duration) error {
	if s.polls == 0 {
		s.start = time.Now()
	}
	s.polls++
	if !s.opt.Lockstep {
		if err := meter.SleepUntil(ctx, s.start.Add(at)); err != nil {
			return err
		}
	}
	if s.opt.UnplugAfter > 0 && s.polls > s.opt.UnplugAfter {
		os.Remove(filepath.Join(s.dir, "curr1_input"))
		return ctx.Err()
	}
	row := int(math.Round(at.Seconds() * s.tr.Rate))
	if s.opt.Loop {
		row %= len(s.tr.Power)
	} else if row >= len(s.tr.Power) {
		os.Remove(filepath.Join(s.dir, "curr1_input")) // the capture is over
		return ctx.Err()
	}
	if err := s.writeRow(row); err != nil {
		return err
	}
	return ctx.Err()
}

// writeRow writes the attributes for one row of the capture.
func (s *Simulator) writeRow(row int) error {
	ma := math.Round(max(s.tr.Power[row], 0) / s.opt.Volts * 1e3)
	mv := math.Round(s.opt.Volts * 1e3)
	for attr, v := range map[string]float64{"in1_input": mv, "curr1_input": ma, "power1_input": math.Round(mv * ma)} {
		if err := s.put(attr, strconv.FormatInt(int64(v), 10)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Simulator) put(attr, v string) error {
	if err := os.WriteFile(filepath.Join(s.dir, attr), []byte(v+"\n"), 0o644); err != nil {
		return fmt.Errorf("simulated ina2xx: %w", err)
	}
	return nil
}
