// Package ina2xx reads an INA219 or INA226 power monitor through Linux hwmon sysfs: the
// kernel's ina2xx driver exposes the bus voltage as in1_input (mV), the current as
// curr1_input (mA) and the power as power1_input (µW) in /sys/class/hwmon/hwmonN, named
// "ina219" or "ina226" in its name file. Reading the files is the standard library's; no I²C
// is driven from here.
//
// The driver polls the files at a stated rate (10 samples/s by default; the chips average
// over their own conversion time, set by the kernel driver, so polling faster repeats
// readings). A sample is in1_input and curr1_input read back to back, its power their
// product; Open requires power1_input as well, so a directory of another hwmon driver is
// refused. A missing or unreadable file mid-run (the device unbound, the board unplugged) ends
// the window with meter.ErrUnplugged; a file that does not hold one integer is
// meter.ErrMalformed, naming the file. It has no marker inputs.
package ina2xx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"pqrepro/runner/meter"
)

// DefaultRate is the polling rate when none is given (samples per second).
const DefaultRate = 10

// MaxRate bounds the polling rate: sysfs reads through the kernel driver's I²C transfers.
const MaxRate = 1000

// maxFile bounds a sysfs attribute read (they hold one integer).
const maxFile = 64

// Chips the kernel's ina2xx driver names and this driver reads.
var Chips = []string{"ina219", "ina220", "ina226", "ina230", "ina231"}

// Options configures a Meter.
type Options struct {
	// Rate is the polling rate (DefaultRate when 0).
	Rate float64
	// Tick waits for the next sample time; nil uses a timer. Tests pass one that returns at
	// once, so a sample's time is its index over Rate whatever the host's speed.
	Tick func(ctx context.Context, at time.Duration) error
	// Simulated marks the samples as a replay (set by the simulator); SimNote describes it
	// and Name replaces the directory in Info.
	Simulated     bool
	SimNote, Name string
}

// Meter polls one hwmon directory. It implements meter.Meter.
type Meter struct {
	dir   string
	opt   Options
	chip  string
	start time.Time
	n     int64
	err   error
}

// New returns the meter in dir (/sys/class/hwmon/hwmonN); Open checks it.
func New(dir string, opt Options) *Meter {
	if opt.Rate == 0 {
		opt.Rate = DefaultRate
	}
	return &Meter{dir: dir, opt: opt}
}

// Info describes the meter.
func (m *Meter) Info() meter.Info {
	note := "Linux hwmon ina2xx driver"
	if m.chip != "" {
		note += ", chip " + m.chip
	}
	name := m.dir
	if m.opt.Name != "" {
		name = m.opt.Name
	}
	if m.opt.Simulated {
		note = "simulated meter: " + m.opt.SimNote + "; driver " + note
	}
	return meter.Info{Kind: "ina2xx", Device: name, Rate: m.opt.Rate, Simulated: m.opt.Simulated, Note: note}
}

// Open checks the directory: its name file names a chip the kernel's ina2xx driver handles,
// and the voltage and current files read.
func (m *Meter) Open(ctx context.Context) error {
	if !(m.opt.Rate > 0 && m.opt.Rate <= MaxRate) {
		return fmt.Errorf("ina2xx %s: rate %g samples/s: want (0, %d]", m.dir, m.opt.Rate, MaxRate)
	}
	name, err := readFile(filepath.Join(m.dir, "name"))
	if err != nil {
		return fmt.Errorf("ina2xx %s: %w", m.dir, err)
	}
	m.chip = strings.TrimSpace(string(name))
	if !contains(Chips, m.chip) {
		return fmt.Errorf("ina2xx %s: name file says %q, want one of %s", m.dir, m.chip, strings.Join(Chips, ", "))
	}
	if _, err := m.value("power1_input"); err != nil {
		return err
	}
	if _, err := m.sample(); err != nil {
		return err
	}
	m.start = time.Now()
	return ctx.Err()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Read waits for the next sample time and returns one sample.
func (m *Meter) Read(ctx context.Context) ([]meter.Sample, error) {
	if m.err != nil {
		return nil, m.err
	}
	if m.chip == "" {
		return nil, fmt.Errorf("ina2xx %s: not open", m.dir)
	}
	at := time.Duration(float64(m.n) / m.opt.Rate * float64(time.Second))
	if err := m.tick(ctx, at); err != nil {
		return nil, err
	}
	s, err := m.sample()
	if err != nil {
		m.err = err
		return nil, err
	}
	s.T = at
	m.n++
	return []meter.Sample{s}, nil
}

func (m *Meter) tick(ctx context.Context, at time.Duration) error {
	if m.opt.Tick != nil {
		return m.opt.Tick(ctx, at)
	}
	return meter.SleepUntil(ctx, m.start.Add(at))
}

// sample reads the bus voltage (mV) and current (mA).
func (m *Meter) sample() (meter.Sample, error) {
	mv, err := m.value("in1_input")
	if err != nil {
		return meter.Sample{}, err
	}
	ma, err := m.value("curr1_input")
	if err != nil {
		return meter.Sample{}, err
	}
	return meter.Sample{Volts: float64(mv) / 1e3, Amps: float64(ma) / 1e3}, nil
}

// value reads one attribute holding one integer.
func (m *Meter) value(attr string) (int64, error) {
	path := filepath.Join(m.dir, attr)
	b, err := readFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNoDevice) {
			return 0, fmt.Errorf("ina2xx %s after %d samples: %w: %v", m.dir, m.n, meter.ErrUnplugged, err)
		}
		return 0, fmt.Errorf("ina2xx %s: %w", m.dir, err)
	}
	v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ina2xx %s: %w: %s holds %q, not an integer", m.dir, meter.ErrMalformed, attr, bytes.TrimSpace(b))
	}
	return v, nil
}

var errNoDevice = errors.New("no such device")

// readFile reads a small attribute; ENODEV and EIO (a device gone under sysfs) read as gone.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxFile+1)
	n, err := f.Read(b)
	if errors.Is(err, io.EOF) {
		return nil, nil // an empty attribute: not an integer, malformed
	}
	if err != nil && n == 0 {
		if errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EIO) {
			return nil, fmt.Errorf("%s: %w: %v", path, errNoDevice, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if n > maxFile {
		return nil, fmt.Errorf("%s: longer than %d bytes", path, maxFile)
	}
	return b[:n], nil
}

// Close ends the meter; there is nothing to release.
func (m *Meter) Close() error {
	if m.err == nil {
		m.err = fmt.Errorf("ina2xx %s: closed", m.dir)
	}
	return nil
}
