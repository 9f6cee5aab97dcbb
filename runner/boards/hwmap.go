// Package boards builds a runner's list of boards from its hardware map (YAML, in the manner
// of Zephyr Twister's map.yml) or from the defaults (the host and the emulated boards), finds
// out which of them are usable here (QEMU installed, firmware built, port present, flasher
// installed) and opens them as runner.Boards. Boards that cannot be used are listed with the
// reason, never hidden.
package boards

import (
	"fmt"
	"path/filepath"
	"pqrepro/runner/meter/attach"
	"regexp"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/yamlcheck"
	"pqrepro/runner/qemu"
	"pqrepro/runner/serialport"
)

// Map is a runner's hardware map: every board it may offer.
type Map struct {
	// Boards in the order they are listed and offered.
	Boards []Spec `yaml:"boards"`
}

// Spec is one board of the map.
type Spec struct {
	// Name identifies the board on this runner ("desk-c6-1"); --board takes it.
	Name string `yaml:"name"`
	// Driver is host, qemu or serial.
	Driver artifacts.Driver `yaml:"driver"`
	// Class is the board class results are filed under ("esp32c6", "qemu-mps2-an386").
	// For qemu it must be a machine the driver knows; for host it defaults to "host".
	Class string `yaml:"class"`
	// Firmware is the image to flash or boot (relative paths are relative to the map file).
	// Default for qemu: firmware/build/<class>/pqrepro-fw.elf.
	Firmware string `yaml:"firmware,omitempty"`
	// Emulator overrides the QEMU binary (qemu only).
	Emulator string `yaml:"emulator,omitempty"`
	// Port is the serial device path (serial only; or USB).
	Port string `yaml:"port,omitempty"`
	// USB finds the port by the USB device behind it (serial only; or Port).
	USB *USBSpec `yaml:"usb,omitempty"`
	// Baud is the line speed (serial only; default 115200).
	Baud int `yaml:"baud,omitempty"`
	// Flasher writes the image (serial only; absent: flashed by hand, build-id still checked).
	Flasher *FlasherSpec `yaml:"flasher,omitempty"`
	// Reset says how to restart the board before a run (serial only; default none).
	Reset *ResetSpec `yaml:"reset,omitempty"`
	// TLS configures the engine server a board's TLS client connects to in a tls-matrix job
	// (serial only; firmware/PROTOCOL.md, TLS).
	TLS *TLSSpec `yaml:"tls,omitempty"`
	// Meter is the power meter on the board's supply (absent: the board's runs have no
	// energy, and say so).
	Meter *MeterSpec `yaml:"meter,omitempty"`
}

// MeterSpec is a power meter: its kind and the device it is read through.
type MeterSpec struct {
	// Kind is fnb58 (a FNIRSI FNB58 on USB, read through hidraw), ppk2 (a Nordic PPK2 on its
	// USB serial port) or ina2xx (an INA219/INA226 through Linux hwmon).
	Kind string `yaml:"kind"`
	// Device is /dev/hidrawN for fnb58, /dev/ttyACMn (or /dev/serial/by-id/...) for ppk2,
	// /sys/class/hwmon/hwmonN for ina2xx.
	Device string `yaml:"device"`
	// Mode is a PPK2's power mode: source (it powers the board at Millivolts) or ampere (the
	// board's own supply, whose voltage Millivolts states). Required for ppk2, no default.
	Mode string `yaml:"mode,omitempty"`
	// Millivolts is a PPK2's VDD, 800..5000 (ppk2 only, required).
	Millivolts int `yaml:"millivolts,omitempty"`
}

// Attach is the meter as the runner attaches it.
func (m *MeterSpec) Attach() attach.Spec {
	return attach.Spec{Kind: m.Kind, Device: m.Device, Mode: m.Mode, Millivolts: m.Millivolts}
}

// TLSSpec is where the runner serves TLS to a board on the lab's network.
type TLSSpec struct {
	// Listen is the server's address (host:port, e.g. 0.0.0.0:4433; default 127.0.0.1:0).
	Listen string `yaml:"listen,omitempty"`
	// Host is the address the board is told to connect to (the runner's address on the
	// board's network, e.g. 192.168.4.1; default the listener's).
	Host string `yaml:"host,omitempty"`
	// CADir keeps one CA per signature scheme, the ones built into the board's firmware
	// (relative paths are relative to the map file). Required for tls-matrix cells.
	CADir string `yaml:"caDir,omitempty"`
	// Name is the server name the board checks (default pqrepro.test).
	Name string `yaml:"name,omitempty"`
}

// USBSpec selects a USB serial device.
type USBSpec struct {
	// VID and PID are 4 hex digits, e.g. "303a" and "1001" for an ESP32-C6's USB-Serial-JTAG.
	VID string `yaml:"vid"`
	PID string `yaml:"pid"`
	// Serial is the USB serial number, to tell identical boards apart.
	Serial string `yaml:"serial,omitempty"`
}

// FlasherSpec is the external flashing tool.
type FlasherSpec struct {
	// Command is the argument list; {image}, {port} and {baud} are substituted.
	Command []string `yaml:"command"`
	// Retries after a failed attempt (default 2).
	Retries *int `yaml:"retries,omitempty"`
	// Timeout of one attempt (default 5m).
	Timeout artifacts.Duration `yaml:"timeout,omitempty"`
}

// ResetSpec is the reset method.
type ResetSpec struct {
	// Method is none or dtr-rts.
	Method string `yaml:"method"`
}

// MapError lists every problem of a hardware map, each with its line and field.
type MapError struct {
	Source   string
	Problems []yamlcheck.Problem
}

func (e *MapError) Error() string {
	return yamlcheck.Format("hardware map", e.Source, e.Problems)
}

// DefaultMap is the map of a runner without one: the host and every emulated board.
func DefaultMap() *Map {
	m := &Map{Boards: []Spec{{Name: artifacts.HostBoard, Driver: artifacts.DriverHost, Class: artifacts.HostBoard}}}
	for _, mc := range qemu.Machines() {
		m.Boards = append(m.Boards, Spec{Name: mc.Class, Driver: artifacts.DriverQEMU, Class: mc.Class})
	}
	return m
}

// LoadMap reads and checks a hardware map file; relative firmware paths become relative to
// the file's directory.
func LoadMap(path string) (*Map, error) {
	data, err := yamlcheck.ReadFile(path, "hardware map")
	if err != nil {
		return nil, fmt.Errorf("read hardware map: %w", err)
	}
	m, err := ParseMap(data, path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	for i, b := range m.Boards {
		if b.TLS != nil && b.TLS.CADir != "" && !filepath.IsAbs(b.TLS.CADir) {
			b.TLS.CADir = filepath.Join(dir, b.TLS.CADir)
		}
		if b.Firmware != "" && !filepath.IsAbs(b.Firmware) {
			m.Boards[i].Firmware = filepath.Join(dir, b.Firmware)
		}
	}
	return m, nil
}

// ParseMap reads and checks a hardware map. Unknown fields, fields that do not belong to a
// board's driver, and impossible values are all reported with their line.
func ParseMap(data []byte, source string) (*Map, error) {
	var m Map
	c, decoded := yamlcheck.Decode(data, "hardware map", "a boards list", &m)
	v := &validator{Checker: *c}
	if decoded {
		v.check(&m)
	}
	if len(v.Problems) > 0 {
		return nil, &MapError{Source: source, Problems: v.Problems}
	}
	return &m, nil
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	hex4RE = regexp.MustCompile(`^[0-9a-fA-F]{4}$`)
	// The device each meter kind is read through.
	meterDevices = map[string]struct {
		re   *regexp.Regexp
		like string
	}{
		MeterFNB58:  {regexp.MustCompile(`^/dev/hidraw[0-9]{1,3}$`), "/dev/hidraw3"},
		MeterPPK2:   {regexp.MustCompile(`^/dev/(ttyACM[0-9]{1,3}|serial/by-id/[A-Za-z0-9:._-]{1,200})$`), "/dev/ttyACM0"},
		MeterINA2xx: {regexp.MustCompile(`^/sys/(class/hwmon/hwmon[0-9]{1,3}|devices/[A-Za-z0-9:._/-]{1,200}/hwmon/hwmon[0-9]{1,3})$`), "/sys/class/hwmon/hwmon2"},
	}
)

// The meter kinds a hardware map may name.
const (
	MeterFNB58  = "fnb58"
	MeterPPK2   = "ppk2"
	MeterINA2xx = "ina2xx"
)

// checkMeter checks a board's meter: a kind this runner reads and its device path.
func (v *validator) checkMeter(p string, m *MeterSpec) {
	dev, ok := meterDevices[m.Kind]
	if !ok {
		v.Add(p+".kind", "must be %s, %s or %s, got %q", MeterFNB58, MeterPPK2, MeterINA2xx, m.Kind)
		return
	}
	if !dev.re.MatchString(m.Device) {
		v.Add(p+".device", "a %s meter is read through a path like %s, got %q", m.Kind, dev.like, m.Device)
		return
	}
	if err := m.Attach().Validate(); err != nil {
		v.Add(p, "%v", err)
	}
}

// validator checks a decoded hardware map against its rules, adding each problem with its line.
type validator struct {
	yamlcheck.Checker
}

func (v *validator) check(m *Map) {
	if len(m.Boards) == 0 {
		v.Add("boards", "list at least one board")
	}
	names := map[string]int{}
	for i, b := range m.Boards {
		p := fmt.Sprintf("boards[%d]", i)
		if !nameRE.MatchString(b.Name) {
			v.Add(p+".name", "must be a lower-case name like desk-c6-1, got %q", b.Name)
		} else if j, dup := names[b.Name]; dup {
			v.Add(p+".name", "%q is already the name of boards[%d]", b.Name, j)
		}
		names[b.Name] = i
		if b.Class != "" && !artifacts.ValidBoardClass(b.Class) {
			v.Add(p+".class", "must be a lower-case board class like esp32c6, got %q", b.Class)
		}
		only := func(field string, set bool, driver string) {
			if set {
				v.Add(p+"."+field, "only %s boards have %s", driver, field)
			}
		}
		switch b.Driver {
		case artifacts.DriverHost:
			only("firmware", b.Firmware != "", "qemu and serial")
			only("tls", b.TLS != nil, "serial")
			only("emulator", b.Emulator != "", "qemu")
		case artifacts.DriverQEMU:
			only("tls", b.TLS != nil, "serial")
			if _, ok := qemu.LookupMachine(b.Class); !ok {
				var cs []string
				for _, mc := range qemu.Machines() {
					cs = append(cs, mc.Class)
				}
				v.Add(p+".class", "qemu boards are one of %s, got %q", strings.Join(cs, ", "), b.Class)
			}
		case artifacts.DriverSerial:
			if b.Class == "" {
				v.Add(p+".class", "a serial board needs its board class (e.g. esp32c6)")
			}
			only("emulator", b.Emulator != "", "qemu")
			v.checkSerial(p, b)
		default:
			v.Add(p+".driver", "must be host, qemu or serial, got %q", b.Driver)
		}
		if b.Meter != nil {
			v.checkMeter(p+".meter", b.Meter)
		}
		if b.Driver != artifacts.DriverSerial {
			only("port", b.Port != "", "serial")
			only("usb", b.USB != nil, "serial")
			only("baud", b.Baud != 0, "serial")
			only("flasher", b.Flasher != nil, "serial")
			only("reset", b.Reset != nil, "serial")
		}
	}
}

func (v *validator) checkSerial(p string, b Spec) {
	switch {
	case b.Port == "" && b.USB == nil:
		v.Add(p, "a serial board needs port (a device path) or usb (vid, pid)")
	case b.Port != "" && b.USB != nil:
		v.Add(p+".usb", "give port or usb, not both")
	}
	if b.USB != nil {
		if !hex4RE.MatchString(b.USB.VID) {
			v.Add(p+".usb.vid", "must be 4 hex digits (quote it: \"303a\"), got %q", b.USB.VID)
		}
		if !hex4RE.MatchString(b.USB.PID) {
			v.Add(p+".usb.pid", "must be 4 hex digits (quote it: \"1001\"), got %q", b.USB.PID)
		}
	}
	if b.Baud < 0 || b.Baud > 12_000_000 {
		v.Add(p+".baud", "must be a line speed up to 12000000, got %d", b.Baud)
	}
	if b.Flasher != nil {
		f := serialport.Flasher{Command: b.Flasher.Command}
		if b.Flasher.Retries != nil {
			f.Retries = *b.Flasher.Retries
		}
		if err := f.Validate(); err != nil {
			v.Add(p+".flasher", "%s", strings.TrimPrefix(err.Error(), "flasher: "))
		}
		if b.Flasher.Timeout < 0 || time.Duration(b.Flasher.Timeout) > 24*time.Hour {
			v.Add(p+".flasher.timeout", "must be between 0 and 24h")
		}
	}
	if b.Reset != nil && !slices.Contains([]string{serialport.ResetNone, serialport.ResetDTRRTS}, b.Reset.Method) {
		v.Add(p+".reset.method", "must be none or dtr-rts, got %q", b.Reset.Method)
	}
}
