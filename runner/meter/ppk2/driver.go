package ppk2

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"go.bug.st/serial"

	"pqrepro/runner/meter"
)

// DefaultDecimate is how many of the PPK2's 10 µs samples one Sample averages when none is
// given: 100, so Samples come at 1,000 per second (power.csv's bound is an hour at that rate).
const DefaultDecimate = 100

// pollInterval bounds one blocking read of the port, so a cancelled context ends a Read.
const pollInterval = 50 * time.Millisecond

// metadataTimeout bounds the wait for the answer to 0x19.
const metadataTimeout = 3 * time.Second

// Options configures a Device.
type Options struct {
	// Mode is Source (the PPK2 supplies the board) or Ampere (it measures a board on its own
	// supply); it must be given.
	Mode Mode
	// Millivolts is VDD: supplied in source mode; in ampere mode the board's supply voltage as
	// the lab states it (the PPK2 measures no voltage). It must be given, 800..5000.
	Millivolts int
	// Decimate is how many 10 µs samples one Sample averages (DefaultDecimate when 0). A
	// Sample's markers are the logic inputs that were high in any of them.
	Decimate int
	// MetadataTimeout bounds the wait for the answer to 0x19 (metadataTimeout when 0).
	MetadataTimeout time.Duration
	// Name replaces the device path in Info (the simulator's label).
	Name string
	// Simulated marks the samples as a replay (set by the simulator).
	Simulated bool
	// SimNote describes the replay, for Info.
	SimNote string
}

// Validate checks the mode, the voltage and the decimation.
func (o *Options) Validate() error {
	if o.Mode != Source && o.Mode != Ampere {
		return fmt.Errorf("ppk2: mode %v: want source or ampere", o.Mode)
	}
	if o.Millivolts < MinMillivolts || o.Millivolts > MaxMillivolts {
		return fmt.Errorf("ppk2: VDD %d mV: want %d..%d mV", o.Millivolts, MinMillivolts, MaxMillivolts)
	}
	if o.Decimate < 1 || o.Decimate > RawRate {
		return fmt.Errorf("ppk2: decimation %d: want 1..%d", o.Decimate, RawRate)
	}
	return nil
}

// Device is a PPK2 read through its serial port. It implements meter.Meter.
type Device struct {
	path string
	opt  Options
	port serial.Port
	mods Modifiers

	stream *Stream
	words  []Word
	buf    []byte
	sum    float64 // current of the Sample being averaged
	logic  uint8
	k      int   // words in it
	n      int64 // Samples delivered
	err    error // sticky

	mu     sync.Mutex
	closed bool
}

// New returns the PPK2 at path (/dev/ttyACMn); Open claims it.
func New(path string, opt Options) *Device {
	if opt.Decimate == 0 {
		opt.Decimate = DefaultDecimate
	}
	if opt.MetadataTimeout == 0 {
		opt.MetadataTimeout = metadataTimeout
	}
	return &Device{path: path, opt: opt, buf: make([]byte, 64<<10)}
}

// Info describes the meter: its rate after decimation, its eight marker inputs, and how its
// voltage was obtained.
func (d *Device) Info() meter.Info {
	name := d.path
	if d.opt.Name != "" {
		name = d.opt.Name
	}
	note := fmt.Sprintf("%s; %s mode at VDD %d mV (volts are the set VDD, not measured); each sample the mean of %d of the PPK2's 10 µs samples",
		Note, d.opt.Mode, d.opt.Millivolts, d.opt.Decimate)
	if d.opt.Simulated {
		note = "simulated meter: " + d.opt.SimNote + "; driver " + note
	}
	return meter.Info{Kind: "ppk2", Device: name, Rate: float64(RawRate) / float64(d.opt.Decimate),
		Markers: MarkerInputs, Simulated: d.opt.Simulated, Note: note}
}

// Modifiers is the calibration read at Open.
func (d *Device) Modifiers() Modifiers { return d.mods }

// Open opens the port, stops a stream a previous user may have left running, reads the
// calibration metadata, sets the mode and VDD (and powers the board in source mode), and
// starts the sample stream.
func (d *Device) Open(ctx context.Context) error {
	if err := d.opt.Validate(); err != nil {
		return fmt.Errorf("ppk2 %s: %w", d.path, err)
	}
	if d.port != nil {
		return fmt.Errorf("ppk2 %s: already open", d.path)
	}
	p, err := serial.Open(d.path, &serial.Mode{BaudRate: 115200})
	if err != nil {
		return fmt.Errorf("ppk2 %s: open: %w", d.path, err)
	}
	d.port = p
	if err := d.start(ctx); err != nil {
		d.Close()
		return err
	}
	return nil
}

func (d *Device) start(ctx context.Context) error {
	if err := d.port.SetReadTimeout(pollInterval); err != nil {
		return fmt.Errorf("ppk2 %s: %w", d.path, err)
	}
	if err := d.send([]byte{CmdAverageStop}); err != nil {
		return err
	}
	if err := d.drain(ctx); err != nil {
		return err
	}
	mods, err := d.metadata(ctx)
	if err != nil {
		return err
	}
	d.mods = mods
	cmds := [][]byte{{CmdPowerMode, byte(d.opt.Mode)}, Regulator(d.opt.Millivolts)}
	if d.opt.Mode == Source {
		cmds = append(cmds, []byte{CmdDeviceRunning, 1})
	}
	for _, c := range cmds {
		if err := d.send(c); err != nil {
			return err
		}
	}
	d.port.ResetInputBuffer()
	d.stream = NewStream()
	return d.send([]byte{CmdAverageStart})
}

// maxDrain bounds the wait for a stream left running to go quiet after average stop.
const maxDrain = time.Second

// drain discards what a stream left running still sends after average stop, until a read
// times out empty, so the metadata answer is not read behind sample words.
func (d *Device) drain(ctx context.Context) error {
	d.port.ResetInputBuffer()
	for end := time.Now().Add(maxDrain); time.Now().Before(end); {
		n, err := d.port.Read(d.buf)
		if err != nil {
			return d.readError(ctx, err)
		}
		if n == 0 {
			return ctx.Err()
		}
	}
	return fmt.Errorf("ppk2 %s: still streaming %v after average stop", d.path, maxDrain)
}

// send writes one command; a failed write means the device is gone.
func (d *Device) send(cmd []byte) error {
	if _, err := d.port.Write(cmd); err != nil {
		return fmt.Errorf("ppk2 %s: command %#02x: %w: %v", d.path, cmd[0], meter.ErrUnplugged, err)
	}
	return nil
}

// metadata asks for the calibration and reads the text up to its END line.
func (d *Device) metadata(ctx context.Context) (Modifiers, error) {
	if err := d.send([]byte{CmdGetMetadata}); err != nil {
		return Modifiers{}, err
	}
	var text bytes.Buffer
	deadline := time.Now().Add(d.opt.MetadataTimeout)
	for time.Now().Before(deadline) {
		n, err := d.port.Read(d.buf[:1024])
		if err != nil {
			return Modifiers{}, d.readError(ctx, err)
		}
		if err := ctx.Err(); err != nil {
			return Modifiers{}, err
		}
		text.Write(d.buf[:n])
		m, err := ParseMetadata(text.Bytes())
		if !errors.Is(err, ErrIncomplete) {
			if err != nil {
				return m, fmt.Errorf("ppk2 %s: %w", d.path, err)
			}
			return m, nil
		}
		if text.Len() > MaxMetadata {
			return m, fmt.Errorf("ppk2 %s: %w: %d bytes of metadata and no END line", d.path, meter.ErrMalformed, text.Len())
		}
	}
	return Modifiers{}, fmt.Errorf("ppk2 %s: no metadata answer within %v (%d bytes read): is it a PPK2?", d.path, d.opt.MetadataTimeout, text.Len())
}

// Read returns the Samples completed by the next bytes of the stream, at least one.
func (d *Device) Read(ctx context.Context) ([]meter.Sample, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.stream == nil {
		return nil, fmt.Errorf("ppk2 %s: not open", d.path)
	}
	s, err := d.read(ctx)
	if err != nil && ctx.Err() == nil {
		d.err = err
	}
	return s, err
}

func (d *Device) read(ctx context.Context) ([]meter.Sample, error) {
	var out []meter.Sample
	for len(out) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := d.port.Read(d.buf)
		if err != nil {
			return nil, d.readError(ctx, err)
		}
		d.words, err = d.stream.Feed(d.buf[:n], d.words[:0])
		out = d.average(d.words, out)
		if err != nil {
			return nil, fmt.Errorf("ppk2 %s: after sample %d: %w", d.path, d.n, err)
		}
	}
	return out, nil
}

// average folds words into Samples of opt.Decimate words each.
func (d *Device) average(words []Word, out []meter.Sample) []meter.Sample {
	period := time.Duration(d.opt.Decimate) * time.Second / RawRate
	for _, w := range words {
		d.sum += d.mods.Amps(w, d.opt.Millivolts)
		d.logic |= w.Logic
		d.k++
		if d.k < d.opt.Decimate {
			continue
		}
		out = append(out, meter.Sample{T: time.Duration(d.n) * period, Volts: float64(d.opt.Millivolts) / 1000,
			Amps: d.sum / float64(d.k), Markers: d.logic})
		d.n++
		d.sum, d.logic, d.k = 0, 0, 0
	}
	return out
}

// readError names why a read ended: ctx, Close, or the device gone (the port closed under
// the reader, EIO, ENODEV).
func (d *Device) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return fmt.Errorf("ppk2 %s: closed", d.path)
	}
	var pe *serial.PortError
	if errors.As(err, &pe) && pe.Code() == serial.PortClosed || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENODEV) {
		return fmt.Errorf("ppk2 %s: %w after %d samples: %v", d.path, meter.ErrUnplugged, d.n, err)
	}
	return fmt.Errorf("ppk2 %s: read after sample %d: %w", d.path, d.n, err)
}

// Close stops the stream (best effort) and releases the port; it may be called more than once.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed || d.port == nil {
		d.closed = true
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.port.Write([]byte{CmdAverageStop})
	if d.err == nil {
		d.err = fmt.Errorf("ppk2 %s: closed", d.path)
	}
	return d.port.Close()
}
