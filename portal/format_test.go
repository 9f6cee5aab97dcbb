package portal

import "testing"

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{16293, "ns", "16.29 µs"},
		{1.77e9, "ns", "1.770 s"},
		{1129680, "instructions", "1,129,680 instructions"},
		{616680, "instructions", "616,680 instructions"},
		{616680.5, "instructions", "616.7 k instructions"},
		{12345, "cycles", "12,345 cycles"},
		{980, "instructions", "980 instructions"},
		{4616, "B", "4616 B"},
	} {
		if got := human(tc.v, tc.unit); got != tc.want {
			t.Errorf("human(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
	// Plot ticks stay compact.
	if got := compact(1129680.0, "instructions"); got != "1.13 M instructions" {
		t.Errorf("compact = %q", got)
	}
}
