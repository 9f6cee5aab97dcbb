package boards

import (
	"context"
	"fmt"
	"os"

	"pqrepro/runner/host"
	"pqrepro/runner/meter/attach"
	"pqrepro/runner/meter/fnb58"
	"pqrepro/runner/meter/ina2xx"
	"pqrepro/runner/meter/ppk2"
)

// The hardware map's meters record the host board's metered pass.
var _ host.Meter = (*attach.Meter)(nil)

// NoMeter is a board's meter status when its map entry names none.
const NoMeter = "none: no meter in the hardware map, so its runs have no energy"

// meterStatus says, for people, which meter a board has and whether its device is here, or
// why it has none. A meter that is absent does not make the board unusable: its runs carry no
// energy, with this reason.
func meterStatus(ctx context.Context, m *MeterSpec) string {
	if m == nil {
		return NoMeter
	}
	switch m.Kind {
	case MeterFNB58:
		fi, err := os.Stat(m.Device)
		if err != nil {
			return fmt.Sprintf("fnb58 %s absent: %v", m.Device, err)
		}
		if fi.Mode()&os.ModeCharDevice == 0 {
			return fmt.Sprintf("fnb58 %s absent: not a character device", m.Device)
		}
		return fmt.Sprintf("fnb58 %s (protocol %s)", m.Device, fnb58.Note)
	case MeterPPK2:
		// Not opened: in source mode that would power the board.
		fi, err := os.Stat(m.Device)
		if err != nil {
			return fmt.Sprintf("ppk2 %s absent: %v", m.Device, err)
		}
		if fi.Mode()&os.ModeCharDevice == 0 {
			return fmt.Sprintf("ppk2 %s absent: not a character device", m.Device)
		}
		return fmt.Sprintf("ppk2 %s (%s mode at %d mV; protocol %s)", m.Device, m.Mode, m.Millivolts, ppk2.Note)
	case MeterINA2xx:
		im := ina2xx.New(m.Device, ina2xx.Options{})
		if err := im.Open(ctx); err != nil {
			return "ina2xx absent: " + err.Error()
		}
		defer im.Close()
		return fmt.Sprintf("ina2xx %s (%s)", m.Device, im.Info().Note)
	}
	return fmt.Sprintf("%s: not a meter kind this runner reads", m.Kind)
}
