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
		{1129680, "instructions", "1.13 M instructions"},
		{616680, "instructions", "616.7 k instructions"},
		{980, "instructions", "980 instructions"},
		{4616, "B", "4616 B"},
	} {
		if got := human(tc.v, tc.unit); got != tc.want {
			t.Errorf("human(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}
