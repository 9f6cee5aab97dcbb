package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/internal/shareddata"
	"pqrepro/runner/meter/sim"
	"pqrepro/runner/qemu"
	"pqrepro/runner/serialport"
)

// TestMeterOnBoards: --meter attaches the meter to a serial board (whose firmware runs LOOP
// in each load window) and refuses a QEMU board, whose instruction counts are no time.
func TestMeterOnBoards(t *testing.T) {
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings", "pi4", "csv_files")
	spec := "sim:fnb58:" + filepath.Join(dir, "01_pi4_baseline.csv") + "," + filepath.Join(dir, "03_pi4_keys_ecdsa.csv")
	m, err := artifacts.ParseManifest([]byte(meteredManifest), "test")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s := &serialport.Serial{Name: "desk-1"}
	if err := useMeter(context.Background(), s, m, spec, &out); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Meter.(*sim.Bench); !ok || !strings.Contains(out.String(), "simulated meter") {
		t.Errorf("serial board's meter %T, said %q", s.Meter, out.String())
	}
	if err := useMeter(context.Background(), &qemu.QEMU{Name: "an386"}, m, spec, &out); err == nil || !strings.Contains(err.Error(), "serial boards") {
		t.Errorf("--meter on a QEMU board: %v", err)
	}
}
