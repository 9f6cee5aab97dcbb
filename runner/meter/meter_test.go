package meter_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"pqrepro/runner/meter"
)

func TestTraceRefusesAGap(t *testing.T) {
	info := meter.Info{Kind: "fnb58", Rate: 100}
	s := []meter.Sample{{T: 0, Volts: 5, Amps: 0.4}, {T: 10 * time.Millisecond, Volts: 5, Amps: 0.5}, {T: 30 * time.Millisecond, Volts: 5, Amps: 0.5}}
	if _, err := meter.Trace(s, info, "w"); err == nil || !strings.Contains(err.Error(), "sample 2") {
		t.Errorf("a gap: %v", err)
	}
	tr, err := meter.Trace(s[:2], info, "w")
	if err != nil || tr.Power[1] != 2.5 || tr.Time[1] != 0.01 {
		t.Errorf("trace %+v, %v", tr, err)
	}
	if _, err := meter.Trace(nil, info, "w"); err == nil {
		t.Error("an empty window made a trace")
	}
}

func TestRecordRefusesAWindowOutOfBounds(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second, meter.MaxWindow + 1} {
		if _, err := meter.Record(context.Background(), nil, d); err == nil {
			t.Errorf("window %v accepted", d)
		}
	}
}

func TestMarked(t *testing.T) {
	ms := time.Millisecond
	var s []meter.Sample
	for i, m := range []uint8{1, 1, 0, 4, 5, 5, 0, 0, 1, 1} {
		s = append(s, meter.Sample{T: time.Duration(i) * ms, Markers: m})
	}
	got := meter.Marked(s, 0, 1000)
	want := []meter.Span{{0, 2, 0, 2 * ms, true}, {4, 6, 4 * ms, 6 * ms, false}, {8, 10, 8 * ms, 10 * ms, true}}
	if !slices.Equal(got, want) {
		t.Errorf("input 0: %+v, want %+v", got, want)
	}
	if got := meter.Marked(s, 2, 1000); !slices.Equal(got, []meter.Span{{3, 6, 3 * ms, 6 * ms, false}}) {
		t.Errorf("input 2: %+v", got)
	}
	if got := meter.Marked(s, 8, 1000); got != nil {
		t.Errorf("input 8 (no such input): %+v", got)
	}
}
