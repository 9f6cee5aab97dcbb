// Package meter is the runner's one interface to power meters: a Meter yields timestamped
// voltage, current and marker samples, and Record turns a window of them into an energy.Trace
// or into nothing.
//
// # The contract
//
//   - Open(ctx) claims the device and starts sampling; it fails with the device named (absent,
//     no permission, wrong kind). A Meter is opened once.
//   - Read(ctx) blocks until the meter delivers samples and returns them in order, each with
//     its time since Open on the meter's own sample clock (sample i of a meter sampling at R/s
//     is at i/R), so times are exact multiples of the period and a gap is visible. It returns
//     at least one sample or an error, never both.
//   - A meter unplugged (or its device gone) mid-run makes Read return an error wrapping
//     ErrUnplugged; a report the driver cannot decode wraps ErrMalformed; samples the meter sent
//     that never arrived (a lost report) wrap ErrLost. After any error the window being
//     recorded is invalid: Record returns no trace, so nothing half-recorded is kept as valid.
//     Read after an error keeps returning an error.
//   - ctx cancellation ends a blocked Read with ctx's error; Close releases the device and may
//     be called at any time, more than once.
//   - Info says what the meter is, its nominal rate and marker inputs, and whether its samples
//     are simulated (a recorded trace replayed through the real driver): a simulated meter's
//     samples are never a measurement of the run that recorded them.
//
// No value is ever invented: a sample the meter did not send is absent (and the window fails),
// never interpolated.
package meter

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors wrapped by every driver's Read, so a caller can tell why a window failed.
var (
	// ErrUnplugged: the device went away (unplugged, powered off, its file removed).
	ErrUnplugged = errors.New("meter unplugged")
	// ErrMalformed: a report that does not decode (wrong size, type or checksum).
	ErrMalformed = errors.New("malformed report")
	// ErrLost: samples the meter sent did not arrive.
	ErrLost = errors.New("samples lost")
)

// Sample is one reading.
type Sample struct {
	// T is the time since Open on the meter's sample clock.
	T time.Duration
	// Volts and Amps are the bus voltage and current as the meter reports them.
	Volts, Amps float64
	// Markers holds the meter's logic inputs, bit i for input i; zero on a meter without any
	// (Info.Markers == 0).
	Markers uint8
}

// Watts is the sample's power.
func (s Sample) Watts() float64 { return s.Volts * s.Amps }

// Info describes a meter.
type Info struct {
	// Kind is the hardware map's kind ("fnb58", "ina2xx").
	Kind string
	// Device is the file it reads (/dev/hidraw3, a hwmon directory).
	Device string
	// Rate is the nominal sample rate in samples per second.
	Rate float64
	// Markers is the number of logic inputs (0: none).
	Markers int
	// Simulated is true when the samples replay a recorded trace through the driver.
	Simulated bool
	// Note qualifies the driver, e.g. a protocol known only from community documentation.
	Note string
}

// Meter is a power meter the runner samples during a cell's energy windows.
type Meter interface {
	Info() Info
	Open(ctx context.Context) error
	Read(ctx context.Context) ([]Sample, error)
	Close() error
}

// MaxWindow bounds one recorded window (an hour), so a stuck caller cannot grow memory
// without limit.
const MaxWindow = time.Hour

// Record reads samples from an open meter until it holds d of them (by sample time) and
// returns them. Any error from the meter (unplugged, malformed, lost) or ctx returns no
// samples at all: a window is complete or absent.
func Record(ctx context.Context, m Meter, d time.Duration) ([]Sample, error) {
	if d <= 0 || d > MaxWindow {
		return nil, fmt.Errorf("meter window %v: want (0, %v]", d, MaxWindow)
	}
	info := m.Info()
	var out []Sample
	var start time.Duration
	for {
		batch, err := m.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s meter %s: window of %v failed after %d samples: %w",
				info.Kind, info.Device, d, len(out), err)
		}
		if len(out) == 0 && len(batch) > 0 {
			start = batch[0].T
		}
		for _, s := range batch {
			if s.T-start >= d {
				return out, nil
			}
			out = append(out, s)
		}
	}
}

// SleepUntil waits until t (a sample's time on a replayed or paced clock) or until ctx ends,
// returning ctx's error then.
func SleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
