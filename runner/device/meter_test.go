package device

import (
	"testing"

	"pqrepro/runner/wire"
)

// TestUnitsPerSecond: LOOP's budget is made from a window's length only on a board that
// counts time (ns, µs, or cycles of a stated clock); an emulator's instruction count, or
// cycles without a clock, has no rate.
func TestUnitsPerSecond(t *testing.T) {
	for _, tc := range []struct {
		h    wire.Hello
		want float64
	}{
		{wire.Hello{Unit: "ns"}, 1e9},
		{wire.Hello{Unit: "us"}, 1e6},
		{wire.Hello{Unit: "cycles", ClockHz: 125_000_000}, 125e6},
	} {
		if got, err := UnitsPerSecond(tc.h); err != nil || got != tc.want {
			t.Errorf("%+v: %g, %v; want %g", tc.h, got, err, tc.want)
		}
	}
	for _, h := range []wire.Hello{{Unit: "instructions", ClockHz: 25_000_000}, {Unit: "cycles"}} {
		if got, err := UnitsPerSecond(h); err == nil {
			t.Errorf("%+v: %g units per second, want none", h, got)
		}
	}
}
