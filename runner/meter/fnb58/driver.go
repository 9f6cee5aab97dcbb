package fnb58

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"pqrepro/runner/meter"
)

// DefaultLossSlack is how far the meter's sample count may fall behind the host's clock
// before the driver calls samples lost: half a second (50 samples). A reader lagging further
// than this (on a badly loaded host) is reported as a loss too; a loss smaller than it is not
// seen, since the reports carry no counter.
const DefaultLossSlack = 500 * time.Millisecond

// keepAlive is how often the host repeats command 0x83, per community documentation.
const keepAlive = time.Second

// Options configures a Device.
type Options struct {
	// Clock is the host's time since Open; nil uses the monotonic clock. The driver reads it
	// once per sample report.
	Clock func() time.Duration
	// LossSlack is how far the sample count may trail the clock (DefaultLossSlack when 0; a
	// negative value means none at all).
	LossSlack time.Duration
	// File, when set, is used instead of opening the device path (the simulator's end).
	File *os.File
	// Simulated marks the samples as a replay (set by the simulator).
	Simulated bool
	// SimNote describes the replay, for Info.
	SimNote string
}

// Device is a FNB58 read through a hidraw file. It implements meter.Meter.
type Device struct {
	path string
	opt  Options
	f    *os.File
	buf  []byte

	clock     func() time.Duration
	origin    time.Duration // host time of the first sample report, less its samples
	n         int64         // samples delivered
	nextAlive time.Duration
	err       error // sticky: a Read after an error fails again

	closeOnce sync.Once
}

// New returns the meter at path (/dev/hidrawN); Open claims it.
func New(path string, opt Options) *Device {
	if opt.LossSlack == 0 {
		opt.LossSlack = DefaultLossSlack
	}
	return &Device{path: path, opt: opt, buf: make([]byte, 2*ReportSize)}
}

// Info describes the meter; its note always says the protocol is not verified on a meter.
func (d *Device) Info() meter.Info {
	note := Note
	if d.opt.Simulated {
		note = "simulated meter: " + d.opt.SimNote + "; driver " + Note
	}
	return meter.Info{Kind: "fnb58", Device: d.path, Rate: Rate, Simulated: d.opt.Simulated, Note: note}
}

// Open opens the hidraw file and sends the start commands (0x81, 0x82, 0x82).
func (d *Device) Open(ctx context.Context) error {
	if d.f != nil {
		return fmt.Errorf("fnb58 %s: already open", d.path)
	}
	f := d.opt.File
	if f == nil {
		var err error
		if f, err = os.OpenFile(d.path, os.O_RDWR|syscall.O_NONBLOCK, 0); err != nil {
			return fmt.Errorf("fnb58 %s: %w", d.path, err)
		}
	}
	d.f = f
	if d.clock = d.opt.Clock; d.clock == nil {
		start := time.Now()
		d.clock = func() time.Duration { return time.Since(start) }
	}
	for _, c := range []byte{cmdStart1, cmdStart2, cmdStart2} {
		if err := d.send(c); err != nil {
			d.Close()
			return err
		}
	}
	return ctx.Err()
}

// send writes one command; a failed write means the device is gone.
func (d *Device) send(code byte) error {
	if _, err := d.f.Write(command(code)); err != nil {
		return fmt.Errorf("fnb58 %s: command %#02x: %w: %v", d.path, code, meter.ErrUnplugged, err)
	}
	return nil
}

// Read returns the next report's four samples. Reports of other types are skipped.
func (d *Device) Read(ctx context.Context) ([]meter.Sample, error) {
	if d.err != nil {
		return nil, d.err
	}
	if d.f == nil {
		return nil, fmt.Errorf("fnb58 %s: not open", d.path)
	}
	s, err := d.read(ctx)
	if err != nil && ctx.Err() == nil {
		d.err = err
	}
	return s, err
}

func (d *Device) read(ctx context.Context) ([]meter.Sample, error) {
	d.f.SetReadDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { d.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		n, err := d.f.Read(d.buf)
		if err != nil || n == 0 {
			return nil, d.readError(ctx, err)
		}
		rs, ok, err := ParseReport(d.buf[:n])
		if err != nil {
			return nil, fmt.Errorf("fnb58 %s: report after sample %d: %w", d.path, d.n, err)
		}
		if ok {
			return d.samples(rs)
		}
	}
}

// readError names why a read ended: ctx, or the device gone (end of file, EIO, ENODEV).
func (d *Device) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENODEV) {
		if err == nil {
			err = io.EOF
		}
		return fmt.Errorf("fnb58 %s: %w after %d samples (%v): %v", d.path, meter.ErrUnplugged, d.n, d.sampleTime(d.n), err)
	}
	return fmt.Errorf("fnb58 %s: read after sample %d: %w", d.path, d.n, err)
}

// samples timestamps a report's readings on the sample clock, checks the count against the
// host clock, and keeps the stream alive.
func (d *Device) samples(rs [SamplesPerReport]Reading) ([]meter.Sample, error) {
	now := d.clock()
	if d.n == 0 {
		d.origin = now - d.sampleTime(SamplesPerReport)
		d.nextAlive = now + keepAlive
	}
	out := make([]meter.Sample, SamplesPerReport)
	for i, r := range rs {
		out[i] = meter.Sample{T: d.sampleTime(d.n + int64(i)), Volts: r.Volts, Amps: r.Amps}
	}
	d.n += SamplesPerReport
	if err := d.checkLoss(now); err != nil {
		return nil, err
	}
	if now >= d.nextAlive {
		d.nextAlive = now + keepAlive
		if err := d.send(cmdContinue); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkLoss fails when the samples received trail the host clock by more than the slack.
func (d *Device) checkLoss(now time.Duration) error {
	slack := max(d.opt.LossSlack, 0)
	elapsed := now - d.origin
	if behind := elapsed - d.sampleTime(d.n); behind > slack {
		missing := int64(behind * Rate / time.Second)
		return fmt.Errorf("fnb58 %s: %w: %d samples in %v of host time, about %d missing (more than the %v slack)",
			d.path, meter.ErrLost, d.n, elapsed, missing, slack)
	}
	return nil
}

func (d *Device) sampleTime(n int64) time.Duration { return time.Duration(n) * time.Second / Rate }

// Close releases the device.
func (d *Device) Close() error {
	var err error
	d.closeOnce.Do(func() {
		if d.f != nil {
			err = d.f.Close()
		}
		if d.err == nil {
			d.err = fmt.Errorf("fnb58 %s: closed", d.path)
		}
	})
	return err
}
