package meter_test

import (
	"context"
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
