package boards

import (
	"errors"
	"testing"

	"pqrepro/artifacts"
)

// FuzzParseMap: no hardware map panics; a refused map is a MapError naming its problems; an
// accepted one names every board with a known driver and a valid class (a host board may
// leave it out: it is then "host").
func FuzzParseMap(f *testing.F) {
	f.Add([]byte("boards:\n  - name: host\n    driver: host\n    class: rpi4-b\n  - name: mps2\n    driver: qemu\n    class: qemu-mps2-an386\n    firmware: fw/mps2.elf\n"))
	f.Add([]byte("boards:\n  - name: c6\n    driver: serial\n    class: esp32c6\n    usb: {vid: \"303a\", pid: \"1001\"}\n    flasher:\n      command: [esptool.py, write_flash, \"{image}\"]\n"))
	f.Add([]byte("boards: [1, 2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		m, err := ParseMap(data, "fuzz")
		if err != nil {
			var me *MapError
			if !errors.As(err, &me) || len(me.Problems) == 0 {
				t.Fatalf("error is not a MapError with problems: %v", err)
			}
			return
		}
		for _, b := range m.Boards {
			if b.Name == "" || (b.Class != "" || b.Driver != artifacts.DriverHost) && !artifacts.ValidBoardClass(b.Class) {
				t.Fatalf("accepted board %+v", b)
			}
			switch b.Driver {
			case artifacts.DriverHost, artifacts.DriverQEMU, artifacts.DriverSerial:
			default:
				t.Fatalf("accepted driver %q", b.Driver)
			}
		}
	})
}
