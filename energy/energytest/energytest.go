// Package energytest gives tests paper002's recorded FNB58 captures (../shared) as meter
// windows: real recorded power, for code that computes or shows energy from a window. Nothing
// here is a measurement of this machine.
package energytest

import (
	"os"
	"path/filepath"
	"testing"

	"pqrepro/artifacts"
	efnb58 "pqrepro/energy/fnb58"
	"pqrepro/internal/shareddata"
)

// Volts is the bus voltage the windows state: the captures hold power only, so each sample's
// current is its power over this voltage.
const Volts = 5.1

// Pi4Window is paper002's Pi 4 capture name (e.g. "01_pi4_baseline.csv") as a meter window at
// Volts, one sample per row, and the capture's sample rate.
func Pi4Window(t testing.TB, name string) (*artifacts.PowerWindow, float64) {
	t.Helper()
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings", "pi4", "csv_files")
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := efnb58.ReadCSV(f, name)
	if err != nil {
		t.Fatal(err)
	}
	w := &artifacts.PowerWindow{}
	for _, p := range c.Power {
		w.Volts, w.Amps = append(w.Volts, Volts), append(w.Amps, p/Volts)
	}
	return w, c.Rate
}
