// Package attach is a lab's own power meter for a run, named by `pqrepro run --meter
// KIND:DEVICE` or by a board's meter entry in the hardware map: checked when it is attached,
// then recorded one window at a time, each window on a freshly opened driver (the meter
// streams only while a window is recorded, and a window that fails leaves nothing behind for
// the next one).
//
// The forms, and what each checks before anything runs:
//
//	fnb58:/dev/hidrawN                 a character device; where sysfs tells, a USB 2E3C:5558
//	ppk2:/dev/ttyACMn:MODE:MILLIVOLTS  a serial port answering the PPK2's metadata request;
//	                                   MODE source (the PPK2 powers the board at MILLIVOLTS)
//	                                   or ampere (the board's own supply, stated in mV)
//	ina2xx:/sys/class/hwmon/hwmonN     a hwmon directory of the kernel's ina2xx driver
//
// The PPK2's mode and voltage have no default: in source mode the PPK2 powers the board, and a
// wrong voltage is a wrong supply.
package attach

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"pqrepro/runner/meter"
	"pqrepro/runner/meter/fnb58"
	"pqrepro/runner/meter/ina2xx"
	"pqrepro/runner/meter/ppk2"
)

// MaxSpec bounds a --meter value.
const MaxSpec = 1024

// Spec is a lab's meter: its kind and device, and for a PPK2 its mode and VDD.
type Spec struct {
	// Kind is fnb58, ppk2 or ina2xx.
	Kind string
	// Device is the file the driver reads.
	Device string
	// Mode and Millivolts configure a PPK2 (required for it, absent for the others).
	Mode       string
	Millivolts int
}

func (s Spec) String() string {
	if s.Kind == "ppk2" {
		return fmt.Sprintf("ppk2:%s:%s:%d", s.Device, s.Mode, s.Millivolts)
	}
	return s.Kind + ":" + s.Device
}

// Parse reads KIND:DEVICE (and :MODE:MILLIVOLTS for a PPK2), naming what is wrong.
func Parse(v string) (Spec, error) {
	if len(v) > MaxSpec {
		return Spec{}, fmt.Errorf("--meter: %d bytes, more than the limit of %d", len(v), MaxSpec)
	}
	kind, rest, ok := strings.Cut(v, ":")
	if !ok {
		return Spec{}, fmt.Errorf("--meter %q: want KIND:DEVICE (fnb58:/dev/hidrawN, ppk2:/dev/ttyACMn:MODE:MILLIVOLTS, ina2xx:/sys/class/hwmon/hwmonN) or sim:KIND:IDLE,LOAD", v)
	}
	s := Spec{Kind: kind, Device: rest}
	if kind == "ppk2" {
		parts := strings.Split(rest, ":")
		if len(parts) != 3 {
			return Spec{}, fmt.Errorf("--meter %q: a PPK2 is ppk2:DEVICE:MODE:MILLIVOLTS (e.g. ppk2:/dev/ttyACM0:source:3300): its mode and voltage have no default", v)
		}
		mv, err := strconv.Atoi(parts[2])
		if err != nil {
			return Spec{}, fmt.Errorf("--meter %q: millivolts %q is not a whole number", v, parts[2])
		}
		s.Device, s.Mode, s.Millivolts = parts[0], parts[1], mv
	}
	if err := s.Validate(); err != nil {
		return Spec{}, fmt.Errorf("--meter %q: %w", v, err)
	}
	return s, nil
}

// Validate checks the kind, that the device is an absolute path, and a PPK2's mode and VDD.
func (s Spec) Validate() error {
	switch s.Kind {
	case "fnb58", "ina2xx":
		if s.Mode != "" || s.Millivolts != 0 {
			return fmt.Errorf("a %s meter takes no mode or voltage", s.Kind)
		}
	case "ppk2":
		o := ppk2.Options{Millivolts: s.Millivolts, Decimate: ppk2.DefaultDecimate}
		var err error
		if o.Mode, err = ppk2.ParseMode(s.Mode); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("kind %q: want fnb58, ppk2 or ina2xx", s.Kind)
	}
	if !filepath.IsAbs(s.Device) || filepath.Clean(s.Device) != s.Device {
		return fmt.Errorf("device %q: want an absolute, clean path", s.Device)
	}
	return nil
}

// New returns a fresh driver for the meter (unopened).
func (s Spec) New() meter.Meter {
	switch s.Kind {
	case "ppk2":
		mode, _ := ppk2.ParseMode(s.Mode)
		return ppk2.New(s.Device, ppk2.Options{Mode: mode, Millivolts: s.Millivolts})
	case "ina2xx":
		return ina2xx.New(s.Device, ina2xx.Options{})
	}
	return fnb58.New(s.Device, fnb58.Options{})
}

// Meter is an attached meter; it records windows for the host board's metered pass.
type Meter struct {
	Spec Spec
}

// New attaches the meter of a validated spec without checking its device (the hardware map's
// entry: a meter absent at run time fails its windows, and the run says why).
func New(s Spec) *Meter { return &Meter{Spec: s} }

// Open checks the spec and that its device is there and answers as its kind does: the driver
// is opened, one read of samples waited for, and closed. The error names the device and why.
func Open(ctx context.Context, s Spec) (*Meter, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("meter %s: %w", s, err)
	}
	if s.Kind == "fnb58" {
		if err := checkHidraw(s.Device); err != nil {
			return nil, fmt.Errorf("meter %s: %w", s, err)
		}
	}
	d := s.New()
	defer d.Close()
	if err := d.Open(ctx); err != nil {
		return nil, fmt.Errorf("meter %s: %w", s, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if _, err := d.Read(ctx); err != nil {
		return nil, fmt.Errorf("meter %s: opened, but no sample within %v: %w", s, ProbeTimeout, err)
	}
	return New(s), nil
}

// ProbeTimeout bounds Open's wait for the meter's first samples.
const ProbeTimeout = 3 * time.Second

// Window records one window of length d on a freshly opened driver.
func (m *Meter) Window(ctx context.Context, load bool, d time.Duration) ([]meter.Sample, meter.Info, error) {
	dev := m.Spec.New()
	defer dev.Close()
	if err := dev.Open(ctx); err != nil {
		return nil, meter.Info{}, err
	}
	s, err := meter.Record(ctx, dev, d)
	if err != nil {
		return nil, meter.Info{}, err
	}
	return s, dev.Info(), nil
}

// checkHidraw refuses a path that is not a character device, and, where sysfs says which USB
// device a hidraw node is, one that is not a FNB58: the driver writes its start commands to
// whatever it opens.
func checkHidraw(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeCharDevice == 0 {
		return fmt.Errorf("%s is not a character device (a FNB58 is read through /dev/hidrawN)", path)
	}
	b, err := os.ReadFile(filepath.Join("/sys/class/hidraw", filepath.Base(path), "device", "uevent"))
	if err != nil {
		return nil // sysfs does not say: the driver's own checks stand
	}
	want := fmt.Sprintf("%08X:%08X", fnb58.VendorID, fnb58.ProductID)
	for _, line := range strings.Split(string(b), "\n") {
		if id, ok := strings.CutPrefix(line, "HID_ID="); ok && !strings.HasSuffix(strings.ToUpper(id), want) {
			return fmt.Errorf("%s is HID device %s, not a FNB58 (USB %04X:%04X)", path, id, fnb58.VendorID, fnb58.ProductID)
		}
	}
	return nil
}
