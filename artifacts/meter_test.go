package artifacts_test

import (
	"errors"
	"strings"
	"testing"

	"pqrepro/artifacts"
)

func TestCheckMeasuredEnergy(t *testing.T) {
	sim := &artifacts.MeterInfo{Kind: "fnb58", Device: "sim:fnb58:i.csv,l.csv", Rate: 100, Simulated: true}
	real := &artifacts.MeterInfo{Kind: "fnb58", Device: "/dev/hidraw3", Rate: 100}
	cell := func(simulated bool) artifacts.Cell {
		return artifacts.Cell{Algorithm: "ML-KEM-768", Operation: "keygen", Status: artifacts.StatusOK,
			Energy: &artifacts.Energy{Source: "fnb58", Absent: "x", Simulated: simulated}}
	}
	for _, c := range []struct {
		name  string
		meter *artifacts.MeterInfo
		cell  artifacts.Cell
		want  string // "" passes
	}{
		{"no meter", nil, artifacts.Cell{Algorithm: "a", Operation: "b"}, ""},
		{"a real meter", real, cell(false), ""},
		{"a simulated meter", sim, cell(true), "cells[0] (ML-KEM-768 keygen): simulated meter"},
		{"a simulated meter, no energy", sim, artifacts.Cell{Algorithm: "a", Operation: "b"}, "environment.json: meter sim:fnb58:i.csv,l.csv: simulated meter"},
		{"a simulated cell, a real meter", real, cell(true), "environment.json names no simulated meter"},
	} {
		err := artifacts.CheckMeasuredEnergy(&artifacts.Result{Cells: []artifacts.Cell{c.cell}}, &artifacts.Environment{Meter: c.meter})
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if strings.Contains(c.want, ": simulated meter") && !errors.Is(err, artifacts.ErrSimulatedMeter) {
			t.Errorf("%s: %v does not wrap ErrSimulatedMeter", c.name, err)
		}
	}
}
