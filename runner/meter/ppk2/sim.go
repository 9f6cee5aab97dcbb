package ppk2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	"pqrepro/energy"
	"pqrepro/runner/meter"
)

// Fault is what the simulator does to one word instead of sending it intact.
type Fault int

// The faults a test can inject, each at a word index.
const (
	// Garble: the word's counter bits are flipped (a corrupted word on the line).
	Garble Fault = iota + 1
	// LoseBytes: only the word's first two bytes are sent (bytes lost on USB).
	LoseBytes
	// DropWord: the word is never sent.
	DropWord
)

// SimModifiers is the calibration the simulator states in its metadata: the published shunt
// resistances with small gains, offsets and supply terms of its own choosing (not a PPK2's
// calibration), so that the driver's use of every term is exercised.
func SimModifiers() Modifiers {
	m := DefaultModifiers()
	m.GS = [Ranges]float64{}
	m.GI = [Ranges]float64{0.99, 1.01, 0.98, 1.02, 1.0}
	m.O = [Ranges]float64{12, -8, 30, 4, 0}
	m.S = [Ranges]float64{1e-7, 1e-6, 2e-6, -1e-5, 0}
	m.I = [Ranges]float64{-2e-7, 5e-7, 1e-6, -3e-5, 2e-4}
	m.Calibrated, m.HW = "1", "simulated"
	return m
}

// SimOptions configures a Simulator.
type SimOptions struct {
	// Loop replays the trace again from its first row when it ends; word j replays row
	// j/100,000 s × the trace's rate (mod its rows when looping).
	Loop bool
	// Words is how many words to send (0: the trace once, or without end when Loop is set).
	// After Words the line stays open and silent; after the whole trace (without Loop) the
	// pty is closed, as an unplugged PPK2's port goes away.
	Words int
	// Faults by word index.
	Faults map[int]Fault
	// UnplugAfter closes the pty's master after this many words (0: never): the port goes
	// away under the driver as an unplugged PPK2's does.
	UnplugAfter int
	// Paced sends 100,000 words per second of real time; otherwise words go as fast as the
	// driver reads them (the pty's flow control holds the simulator back).
	Paced bool
	// Markers gives the logic port's inputs for word j (nil: all low). A replayed power
	// capture holds no markers; tests set them to check that the driver carries them.
	Markers func(j int) uint8
	// Modifiers is the calibration the metadata states (nil: SimModifiers).
	Modifiers *Modifiers
}

// Simulator plays a PPK2 on the master of a pty, whose slave the driver opens as it would
// /dev/ttyACMn, replaying a recorded power capture: each word's current is the recorded power
// over the VDD the driver set (the capture holds power only). Everything it produces is a
// replay: the Device it returns is marked simulated.
type Simulator struct {
	tr     energy.Trace
	opt    SimOptions
	mods   Modifiers
	master *os.File
	hold   *os.File // a slave descriptor kept open so the line never hangs up between opens
	path   string

	mu       sync.Mutex
	commands []byte
	cmdErr   error
	mv       int
	mode     Mode
	started  chan struct{}
	stopped  chan struct{}
	start1   sync.Once
	stop1    sync.Once
}

// NewSimulator checks the trace, allocates the pty, and returns the simulator and the driver
// on the slave (dopt's mode and VDD as the driver will set them).
func NewSimulator(tr energy.Trace, opt SimOptions, dopt Options) (*Simulator, *Device, error) {
	if err := tr.Validate(); err != nil {
		return nil, nil, err
	}
	master, path, hold, err := openPty()
	if err != nil {
		return nil, nil, fmt.Errorf("simulated PPK2: %w", err)
	}
	s := &Simulator{tr: tr, opt: opt, mods: SimModifiers(), master: master, hold: hold, path: path,
		started: make(chan struct{}), stopped: make(chan struct{})}
	if opt.Modifiers != nil {
		s.mods = *opt.Modifiers
	}
	dopt.Name = "sim:ppk2:" + tr.Source
	dopt.Simulated = true
	dopt.SimNote = fmt.Sprintf("replays the recorded capture %s (%g samples/s, power only) as the current at the set VDD of %d mV on a pty (%s); not a measurement of this run",
		tr.Source, tr.Rate, dopt.Millivolts, path)
	return s, New(path, dopt), nil
}

// Path is the pty slave the driver opens.
func (s *Simulator) Path() string { return s.path }

// Commands returns the host's commands received, and the first malformed one's error.
func (s *Simulator) Commands() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.commands...), s.cmdErr
}

// Run answers the host's commands and, from average start, sends the words until the trace,
// Words or UnplugAfter ends them, average stop or ctx; it closes the pty when it returns.
func (s *Simulator) Run(ctx context.Context) error {
	defer s.hold.Close()
	defer s.master.Close()
	// A write blocked on a pty nobody reads ends when ctx does (Close does not end it).
	defer context.AfterFunc(ctx, func() { s.master.SetWriteDeadline(time.Unix(1, 0)) })()
	go s.readCommands()
	select {
	case <-s.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	mv := s.mv
	s.mu.Unlock()
	if mv < MinMillivolts || mv > MaxMillivolts {
		return fmt.Errorf("simulated PPK2: average start without a VDD in %d..%d mV (got %d)", MinMillivolts, MaxMillivolts, mv)
	}
	n := s.opt.Words
	whole := int(float64(len(s.tr.Power)) * RawRate / s.tr.Rate)
	ended := !s.opt.Loop && (n == 0 || n >= whole)
	if ended {
		n = whole
	}
	if err := s.stream(ctx, n, mv); err != nil {
		if errors.Is(err, errUnplug) {
			return nil
		}
		return err
	}
	if ended {
		return nil // the capture is over: the line goes away, as an unplugged meter's
	}
	// Words were sent: the line stays, silent, until the host stops the stream or ctx ends.
	select {
	case <-s.stopped:
	case <-ctx.Done():
	}
	return nil
}

// errUnplug ends the stream at UnplugAfter; Run then closes the pty.
var errUnplug = errors.New("unplugged")

// chunk is the words written at once: 10 ms of the stream.
const chunk = RawRate / 100

// stream sends words 0..n-1 (n 0: without end) in chunks.
func (s *Simulator) stream(ctx context.Context, n, mv int) error {
	enc := encoder{mods: &s.mods, mv: mv, p: math.NaN()}
	begin := time.Now()
	buf := make([]byte, 0, chunk*WordSize)
	for j := 0; n == 0 || j < n; {
		if s.opt.Paced {
			if err := meter.SleepUntil(ctx, begin.Add(time.Duration(j)*time.Second/RawRate)); err != nil {
				return err
			}
		}
		buf = buf[:0]
		for end := j + chunk; j < end && (n == 0 || j < n); j++ {
			if s.opt.UnplugAfter > 0 && j == s.opt.UnplugAfter {
				s.write(buf)
				return errUnplug
			}
			w, err := enc.word(s.power(j))
			if err != nil {
				return fmt.Errorf("simulated PPK2: word %d: %w", j, err)
			}
			w.Counter = uint8(j) & counterMask
			if s.opt.Markers != nil {
				w.Logic = s.opt.Markers(j)
			}
			buf = s.appendWord(buf, j, w)
		}
		if err := s.write(buf); err != nil || s.done(ctx) {
			return err
		}
	}
	return nil
}

// done reports whether the host stopped the stream or ctx ended.
func (s *Simulator) done(ctx context.Context) bool {
	select {
	case <-s.stopped:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// appendWord appends word j as sent, or its fault.
func (s *Simulator) appendWord(buf []byte, j int, w Word) []byte {
	b := w.Encode()
	switch s.opt.Faults[j] {
	case Garble:
		b[2] ^= 0x5c // counter bits 18..23 live in bits 2..7 of byte 2
		return append(buf, b[:]...)
	case LoseBytes:
		return append(buf, b[:2]...)
	case DropWord:
		return buf
	}
	return append(buf, b[:]...)
}

// power is the recorded power word j replays.
func (s *Simulator) power(j int) float64 {
	row := int(float64(j) * s.tr.Rate / RawRate)
	if s.opt.Loop {
		row %= len(s.tr.Power)
	}
	return s.tr.Power[min(row, len(s.tr.Power)-1)]
}

func (s *Simulator) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := s.master.Write(b); err != nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("simulated PPK2: %w", err)
	}
	return nil
}

// readCommands records the host's commands and acts on them.
func (s *Simulator) readCommands() {
	buf := make([]byte, 256)
	var pending []byte
	for {
		n, err := s.master.Read(buf)
		if err != nil {
			return
		}
		pending = append(pending, buf[:n]...)
		for {
			cmd, rest, ok, err := SplitCommand(pending)
			if err != nil {
				s.mu.Lock()
				if s.cmdErr == nil {
					s.cmdErr = err
				}
				s.mu.Unlock()
				pending = pending[:0]
				break
			}
			if !ok {
				break
			}
			pending = rest
			s.command(cmd)
		}
	}
}

// command acts on one command.
func (s *Simulator) command(cmd []byte) {
	s.mu.Lock()
	s.commands = append(s.commands, cmd[0])
	switch cmd[0] {
	case CmdRegulator:
		s.mv = int(cmd[1])<<8 | int(cmd[2])
	case CmdPowerMode:
		s.mode = Mode(cmd[1])
	}
	s.mu.Unlock()
	switch cmd[0] {
	case CmdGetMetadata:
		s.write(s.mods.Text())
	case CmdAverageStart:
		s.start1.Do(func() { close(s.started) })
	case CmdAverageStop:
		select {
		case <-s.started:
			// The stream stops, as the PPK2's does, even when its last words wait unread.
			s.stop1.Do(func() { close(s.stopped); s.master.SetWriteDeadline(time.Unix(1, 0)) })
		default:
		}
	}
}

// encoder turns a power into the word whose current, by the modifiers, is closest to the
// power over VDD; it keeps the last row's word, as the capture holds each row for 2,000 words.
type encoder struct {
	mods *Modifiers
	mv   int
	p    float64 // the power of last
	last Word
}

func (e *encoder) word(p float64) (Word, error) {
	if p == e.p {
		return e.last, nil
	}
	w, err := e.mods.Encode(max(p, 0)/(float64(e.mv)/1000), e.mv)
	if err != nil {
		return Word{}, err
	}
	e.p, e.last = p, w
	return w, nil
}

// Encode is the word (ADC value and range) whose current by Amps is closest to amps: the
// lowest range that reaches it, as the PPK2 switches to the most sensitive range that fits.
// It assumes each range's current rises with the ADC value (GS ≥ 0, GI and UG > 0).
func (m *Modifiers) Encode(amps float64, mv int) (Word, error) {
	if math.IsNaN(amps) || math.IsInf(amps, 0) {
		return Word{}, fmt.Errorf("current %g A is not a number", amps)
	}
	for r := range uint8(Ranges) {
		if m.Amps(Word{ADC: 0x3fff, Range: r}, mv) < amps {
			continue
		}
		lo, hi := uint16(0), uint16(0x3fff)
		for lo < hi {
			mid := (lo + hi) / 2
			if m.Amps(Word{ADC: mid, Range: r}, mv) < amps {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		w := Word{ADC: lo, Range: r}
		if lo > 0 && amps-m.Amps(Word{ADC: lo - 1, Range: r}, mv) < m.Amps(w, mv)-amps {
			w.ADC = lo - 1
		}
		return w, nil
	}
	return Word{}, fmt.Errorf("current %g A is above the top range's %g A", amps, m.Amps(Word{ADC: 0x3fff, Range: Ranges - 1}, mv))
}
