// Package serialport is the board driver for real boards on a serial port (ESP32 family,
// Pico): the port is found by path or by USB VID/PID with go.bug.st/serial's enumerator,
// the image is written by the external flasher the hardware map names, the board is reset
// by DTR/RTS where it supports it, and the benchmark firmware is driven over the framed
// protocol exactly as an emulated board's is. Flash, port and reset failures are
// infrastructure failures (ErrInfrastructure), never results.
package serialport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.bug.st/serial"
	"go.bug.st/serial/enumerator"

	"pqrepro/artifacts"
	"pqrepro/internal/lockedio"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
)

// Reset methods.
const (
	// ResetNone leaves the board alone: the firmware answers HELLO whenever it is asked.
	ResetNone = "none"
	// ResetDTRRTS pulses the auto-reset lines of ESP32 boards (RTS drives EN, DTR drives
	// IO0): DTR released, RTS asserted for 100 ms, then released, so the chip boots its
	// application. A pty has no such lines and fails.
	ResetDTRRTS = "dtr-rts"
)

// USB selects a port by the USB device behind it. VID and PID are 4 hex digits; Serial,
// when set, picks one of several identical boards.
type USB struct {
	VID, PID, Serial string
}

func (u USB) String() string {
	s := strings.ToLower(u.VID + ":" + u.PID)
	if u.Serial != "" {
		s += " serial " + u.Serial
	}
	return s
}

// Ports lists the serial ports the system has, with USB details where known.
func Ports() ([]*enumerator.PortDetails, error) {
	ps, err := enumerator.GetDetailedPortsList()
	if err != nil {
		return nil, fmt.Errorf("enumerate serial ports: %w", err)
	}
	return ps, nil
}

// FindUSB returns the one port in ports that matches u.
func FindUSB(u USB, ports []*enumerator.PortDetails) (string, error) {
	var found []string
	for _, p := range ports {
		if p.IsUSB && strings.EqualFold(p.VID, u.VID) && strings.EqualFold(p.PID, u.PID) &&
			(u.Serial == "" || p.SerialNumber == u.Serial) {
			found = append(found, p.Name)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no USB serial device %s is connected (%d ports seen)", ErrInfrastructure, u, len(ports))
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: %d USB serial devices match %s (%s): give its serial number", ErrInfrastructure, len(found), u, strings.Join(found, ", "))
}

// TLS configures the engine server a board's TLS client connects to (device.RunOptions).
type TLS struct{ Listen, Host, CADir, Name string }

// Serial is a real board on a serial port. Each Identity and Run opens the port and closes
// it before returning; the image is flashed when it is not the one this value last flashed.
// A Serial may be reused for many runs but not concurrently.
type Serial struct {
	// Name is the board's name in the hardware map; Class its board class ("esp32c6").
	Name, Class string
	// Port is the device path; when empty, USB finds it.
	Port string
	USB  *USB
	// Baud is the line speed (default 115200).
	Baud int
	// Firmware is the image to flash and whose build-id the board must report.
	Firmware string
	// Flasher writes Firmware; nil means the board is flashed by hand (its build-id is still
	// checked).
	Flasher *Flasher
	// Reset is ResetNone (default) or ResetDTRRTS.
	Reset string
	// BootTimeout bounds opening the port and the first HELLO (default 20s).
	BootTimeout time.Duration
	// RetryInterval and SilenceTimeout tune the line (see wire.Options).
	RetryInterval, SilenceTimeout time.Duration
	// SkipSelfTest skips the firmware's known-answer vectors before measuring.
	SkipSelfTest bool
	// TLS is where the engine server for the board's TLS client listens (tls-matrix jobs).
	TLS TLS
	// Executors measure each experiment kind (device.RunOptions.Executors; default the BENCH
	// kinds only; runner/exec/kinds.Board is the complete table).
	Executors device.Kinds
	// Meter, when set, meters the run (device.RunOptions.Metered): an idle window, then a
	// load window per ok cell while the board runs LOOP.
	Meter device.Meter

	metered device.Metered
	mu      sync.Mutex
	flashed string // digest this value last flashed successfully
	idLog   []byte // what Identity's session said, replayed at the top of Run's log
}

var _ runner.Board = (*Serial)(nil)
var _ runner.PowerNoter = (*Serial)(nil)

// LastPower is the last run's idle window and meter (runner.PowerNoter); nil, nil when it
// was not metered.
func (s *Serial) LastPower() (*artifacts.PowerWindow, *artifacts.MeterInfo) {
	return s.metered.LastPower()
}

func (s *Serial) baud() int {
	if s.Baud > 0 {
		return s.Baud
	}
	return 115200
}

func (s *Serial) bootTimeout() time.Duration {
	if s.BootTimeout > 0 {
		return s.BootTimeout
	}
	return 20 * time.Second
}

// ResolvePort returns the port's path: Port, or the one USB device that matches.
func (s *Serial) ResolvePort() (string, error) {
	if s.Port != "" {
		if _, err := os.Stat(s.Port); err != nil {
			return "", fmt.Errorf("%w: serial port %s: %w", ErrInfrastructure, s.Port, err)
		}
		return s.Port, nil
	}
	if s.USB == nil {
		return "", fmt.Errorf("serial board %s: neither a port nor a USB device is given", s.Name)
	}
	ports, err := Ports()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInfrastructure, err)
	}
	return FindUSB(*s.USB, ports)
}

// Identity flashes the image if needed, resets the board, asks HELLO and checks that the
// board runs the image's build.
func (s *Serial) Identity(ctx context.Context) (artifacts.BoardIdentity, error) {
	var h wire.Hello
	var img *device.Image
	var buf bytes.Buffer
	defer func() {
		s.mu.Lock()
		s.idLog = buf.Bytes()
		s.mu.Unlock()
	}()
	err := s.session(ctx, &lockedio.Writer{W: &buf}, func(_ context.Context, _ *wire.Conn, hello wire.Hello, i *device.Image, _ reboot) error {
		h, img = hello, i
		return nil
	})
	if err != nil {
		return artifacts.BoardIdentity{}, err
	}
	id := device.Identity(h, img)
	id.Name, id.Class, id.Driver, id.Assurance = s.Name, s.Class, "serial", artifacts.AssuranceHardware
	id.ClassStatus = artifacts.ClassVerified // the firmware built for the class answers for it
	if h.Unit == "instructions" {
		// Only an emulator counts instructions (firmware/PROTOCOL.md): label it so, and
		// record no clock for an instruction count.
		id.Assurance, id.ClockHz = artifacts.AssuranceEmulated, 0
	}
	return id, nil
}

// Run flashes the image if needed, resets the board, checks its build and measures every
// cell of m. Flash, port and reset failures wrap ErrInfrastructure.
func (s *Serial) Run(ctx context.Context, m *artifacts.Manifest, obs runner.Observer, log io.Writer) ([]runner.CellResult, error) {
	s.mu.Lock()
	device.ReplayIdentityLog(log, s.idLog)
	s.idLog = nil
	s.mu.Unlock()
	var cells []runner.CellResult
	err := s.session(ctx, log, func(ctx context.Context, c *wire.Conn, h wire.Hello, img *device.Image, rb reboot) error {
		if err := device.CheckPin(m, img); err != nil {
			return err
		}
		var err error
		absent := "no energy meter is attached to this board"
		if s.Meter != nil {
			absent = ""
		}
		s.metered.Meter = s.Meter
		cells, err = device.Run(ctx, c, h, m, obs, log, device.RunOptions{
			SelfTest: !s.SkipSelfTest, EnergyAbsent: absent, Metered: &s.metered,
			Class: s.Class, Reboot: rb,
			TLSListen: s.TLS.Listen, TLSHost: s.TLS.Host, TLSCADir: s.TLS.CADir, TLSName: s.TLS.Name,
			Executors: s.Executors,
		})
		return err
	})
	return cells, err
}

// reboot resets a board and says HELLO again (device.RunOptions.Reboot); nil when the board
// has no reset the runner can drive.
type reboot = func(ctx context.Context) (*wire.Conn, wire.Hello, error)

func (s *Serial) session(ctx context.Context, log io.Writer, fn func(context.Context, *wire.Conn, wire.Hello, *device.Image, reboot) error) error {
	if s.Firmware == "" {
		return fmt.Errorf("serial board %s: no firmware image to flash and check", s.Name)
	}
	img, err := device.LoadImage(s.Firmware)
	if err != nil {
		return err
	}
	path, err := s.ResolvePort()
	if err != nil {
		return err
	}
	if err := s.flash(ctx, path, img, log); err != nil {
		return err
	}
	port, path, err := s.open(ctx, path, log)
	if err != nil {
		return err
	}
	conn := wire.NewConn(port, wire.Options{Log: log, RetryInterval: s.RetryInterval, SilenceTimeout: s.SilenceTimeout})
	defer func() {
		conn.Close()
		fmt.Fprintf(log, "serial: closed %s\n", path)
	}()
	hello := func(ctx context.Context) (wire.Hello, error) {
		if s.Reset == ResetDTRRTS {
			if err := resetDTRRTS(port); err != nil {
				return wire.Hello{}, fmt.Errorf("%w: reset %s by DTR/RTS: %w (a port without modem-control lines, such as a pty, needs reset: none)", ErrInfrastructure, path, err)
			}
			fmt.Fprintf(log, "serial: reset by DTR/RTS\n")
		}
		hctx, cancel := context.WithTimeout(ctx, s.bootTimeout())
		h, err := conn.Hello(hctx)
		cancel()
		if err != nil {
			return h, fmt.Errorf("HELLO on %s: %w", path, err)
		}
		fmt.Fprintln(log, device.DescribeHello(h))
		if err := device.CheckHello(h, img); err != nil {
			s.mu.Lock()
			s.flashed = "" // whatever is on the board, flash again next time
			s.mu.Unlock()
			return h, err
		}
		return h, nil
	}
	h, err := hello(ctx)
	if err != nil {
		return err
	}
	var rb reboot
	if s.Reset == ResetDTRRTS {
		rb = func(ctx context.Context) (*wire.Conn, wire.Hello, error) {
			h, err := hello(ctx)
			return conn, h, err
		}
	}
	return fn(ctx, conn, h, img, rb)
}

// flash writes img unless this value already flashed it.
func (s *Serial) flash(ctx context.Context, path string, img *device.Image, log io.Writer) error {
	if s.Flasher == nil {
		fmt.Fprintf(log, "flash: no flasher configured; expecting the board to run %s (build-id %s)\n", img.Digest, img.BuildID)
		return nil
	}
	s.mu.Lock()
	done := s.flashed == img.Digest
	s.mu.Unlock()
	if done {
		fmt.Fprintf(log, "flash: %s already written by this runner\n", img.Digest)
		return nil
	}
	fmt.Fprintf(log, "flash: writing %s (%s) to %s\n", img.Path, img.Digest, path)
	if err := s.Flasher.Flash(ctx, path, img.Path, s.baud(), log); err != nil {
		return err
	}
	s.mu.Lock()
	s.flashed = img.Digest
	s.mu.Unlock()
	return nil
}

// open opens the port, retrying while it is absent or busy until the boot timeout: a USB
// board re-enumerates after flashing, possibly under another name, so a port found by USB
// id is looked up again. No modem-control call is made here: a pty has none.
func (s *Serial) open(ctx context.Context, path string, log io.Writer) (serial.Port, string, error) {
	deadline := time.Now().Add(s.bootTimeout())
	for {
		var err error
		if s.Port == "" {
			var p string
			if p, err = s.ResolvePort(); err == nil {
				path = p
			}
		}
		if err == nil {
			var p serial.Port
			if p, err = serial.Open(path, &serial.Mode{BaudRate: s.baud()}); err == nil {
				fmt.Fprintf(log, "serial: opened %s at %d baud\n", path, s.baud())
				return p, path, nil
			}
			var pe *serial.PortError
			if !errors.Is(err, os.ErrNotExist) && !(errors.As(err, &pe) && (pe.Code() == serial.PortNotFound || pe.Code() == serial.PortBusy)) {
				return nil, path, fmt.Errorf("%w: open serial port %s: %w", ErrInfrastructure, path, err)
			}
		}
		if time.Now().After(deadline) {
			if errors.Is(err, ErrInfrastructure) {
				return nil, path, err
			}
			return nil, path, fmt.Errorf("%w: open serial port %s: %w", ErrInfrastructure, path, err)
		}
		select {
		case <-ctx.Done():
			return nil, path, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func resetDTRRTS(p serial.Port) error {
	if err := p.SetDTR(false); err != nil {
		return err
	}
	if err := p.SetRTS(true); err != nil {
		return err
	}
	time.Sleep(100 * time.Millisecond)
	return p.SetRTS(false)
}
