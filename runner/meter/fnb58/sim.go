package fnb58

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"
	"time"

	"pqrepro/energy"
	"pqrepro/runner/meter"
)

// Fault is what the simulator does to one report instead of sending it intact.
type Fault int

// The faults a test can inject, each at a report index.
const (
	// Drop: the report is never sent (a lost report).
	Drop Fault = iota + 1
	// BadCRC: the checksum byte is off by one.
	BadCRC
	// Short: only the first 40 bytes are sent.
	Short
	// BadMagic: byte 0 is not 0xaa.
	BadMagic
	// OtherType: a report of an undocumented type (0x03) is sent before the report.
	OtherType
)

// SimOptions configures a Simulator.
type SimOptions struct {
	// Volts is the bus voltage the simulator states for every sample. paper002's captures hold
	// power only; the current sent is power / Volts, so voltage × current replays the recorded
	// power (within the meter's 10 µA step), and the voltage itself was not recorded.
	Volts float64
	// Reports is how many sample reports to send (0: the whole trace once, or without end
	// when Loop is set).
	Reports int
	// Loop replays the trace again from its first row when it ends (a load capture looped for
	// a load window longer than the capture); sample j replays row (j/100 s × rate) mod rows.
	Loop bool
	// Faults by report index.
	Faults map[int]Fault
	// UnplugAfter closes the device end after this many reports (0: never), as an unplugged
	// meter's hidraw file ends.
	UnplugAfter int
	// Lockstep sends a report only after Clock was read for the one before, so a test's
	// clock and the reports advance together; otherwise reports are paced at 100 samples/s of
	// real time.
	Lockstep bool
}

// Simulator plays a FNB58 on one end of a SOCK_SEQPACKET socketpair (which, like hidraw,
// delivers one report per read), replaying a recorded power capture. Everything it produces
// is a replay: the Device it returns is marked simulated.
type Simulator struct {
	tr   energy.Trace
	opt  SimOptions
	dev  *os.File
	step chan struct{}

	mu        sync.Mutex
	emitted   int // reports emitted or dropped
	commands  []byte
	cmdErr    error
	started   chan struct{}
	startOnce sync.Once
}

// NewSimulator checks the trace and returns the simulator and the driver on its host end.
func NewSimulator(tr energy.Trace, opt SimOptions, dopt Options) (*Simulator, *Device, error) {
	if err := tr.Validate(); err != nil {
		return nil, nil, err
	}
	if !(opt.Volts >= 1 && opt.Volts <= 40) {
		return nil, nil, fmt.Errorf("simulated FNB58: bus voltage %g V: want 1-40 V", opt.Volts)
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("simulated FNB58: socketpair: %w", err)
	}
	for _, fd := range fds {
		syscall.SetNonblock(fd, true)
	}
	name := "sim:fnb58:" + tr.Source
	s := &Simulator{tr: tr, opt: opt, dev: os.NewFile(uintptr(fds[1]), name+" (meter end)"),
		step: make(chan struct{}, 1), started: make(chan struct{})}
	dopt.File = os.NewFile(uintptr(fds[0]), name)
	dopt.Simulated = true
	dopt.SimNote = fmt.Sprintf("replays the recorded capture %s (%g samples/s, power only) at a stated %g V bus; not a measurement of this run",
		tr.Source, tr.Rate, opt.Volts)
	if opt.Lockstep {
		dopt.Clock = s.Clock
	}
	return s, New(name, dopt), nil
}

// Clock is the meter's time: the reports emitted (or dropped) times 40 ms. In lockstep it
// also lets the next report go.
func (s *Simulator) Clock() time.Duration {
	s.mu.Lock()
	d := time.Duration(s.emitted) * SamplesPerReport * time.Second / Rate
	s.mu.Unlock()
	select {
	case s.step <- struct{}{}:
	default:
	}
	return d
}

// Commands returns the host commands received, and the first malformed one's error.
func (s *Simulator) Commands() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.commands...), s.cmdErr
}

// Run reads the host's commands, waits for the start sequence, then sends the reports until
// the trace, Reports or UnplugAfter ends them, or ctx is done; it closes the meter end when
// it returns.
func (s *Simulator) Run(ctx context.Context) error {
	defer s.dev.Close()
	go s.readCommands()
	select {
	case <-s.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	n := s.opt.Reports
	if whole := int(float64(len(s.tr.Power)) * Rate / s.tr.Rate / SamplesPerReport); !s.opt.Loop && (n == 0 || n > whole) {
		n = whole
	}
	start := time.Now()
	for k := 0; n == 0 || k < n; k++ {
		if s.opt.UnplugAfter > 0 && k == s.opt.UnplugAfter {
			return nil
		}
		if err := s.wait(ctx, k, start); err != nil {
			return err
		}
		if err := s.emit(k); err != nil {
			return err
		}
	}
	return nil
}

func (s *Simulator) wait(ctx context.Context, k int, start time.Time) error {
	if s.opt.Lockstep {
		if k == 0 || s.opt.Faults[k-1] == Drop {
			return nil
		}
		select {
		case <-s.step:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return meter.SleepUntil(ctx, start.Add(time.Duration(k)*SamplesPerReport*time.Second/Rate))
}

// emit sends report k (or its fault).
func (s *Simulator) emit(k int) error {
	s.mu.Lock()
	s.emitted++
	s.mu.Unlock()
	b := EncodeReport(s.raw(k))
	switch s.opt.Faults[k] {
	case Drop:
		return nil
	case BadCRC:
		b[ReportSize-1]++
	case Short:
		b = b[:40]
	case BadMagic:
		b[0] = 0x55
	case OtherType:
		o := make([]byte, ReportSize)
		o[0], o[1] = reportMagic, 0x03
		if err := s.write(o); err != nil {
			return err
		}
	}
	return s.write(b)
}

func (s *Simulator) write(b []byte) error {
	if _, err := s.dev.Write(b); err != nil && !errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("simulated FNB58: %w", err)
	}
	return nil
}

// raw is report k's four samples: meter sample j replays the capture's sample at j/100 s.
func (s *Simulator) raw(k int) [SamplesPerReport]Raw {
	var r [SamplesPerReport]Raw
	for i := range r {
		j := k*SamplesPerReport + i
		row := int(float64(j) * s.tr.Rate / Rate)
		if s.opt.Loop {
			row %= len(s.tr.Power)
		}
		p := s.tr.Power[min(row, len(s.tr.Power)-1)]
		r[i] = Raw{
			MicroVolts10: uint32(math.Round(s.opt.Volts * 1e5)),
			MicroAmps10:  uint32(math.Round(max(p, 0) / s.opt.Volts * 1e5)),
		}
	}
	return r
}

// readCommands records the host's commands; the start sequence 0x81, 0x82 starts the stream.
func (s *Simulator) readCommands() {
	buf := make([]byte, 2*ReportSize)
	var prev byte
	for {
		n, err := s.dev.Read(buf)
		if err != nil || n == 0 {
			return
		}
		c, err := ParseCommand(buf[:n])
		s.mu.Lock()
		if err != nil && s.cmdErr == nil {
			s.cmdErr = err
		}
		s.commands = append(s.commands, c)
		s.mu.Unlock()
		if prev == cmdStart1 && c == cmdStart2 {
			s.startOnce.Do(func() { close(s.started) })
		}
		prev = c
	}
}
