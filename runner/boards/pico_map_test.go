package boards

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// TestPicoExampleMap keeps docs/examples/hwmap-pico.yml valid: it parses, its boards are
// serial boards of the classes pico-w and pico2-w (which experiments/boards.csv lists and
// the firmware's HELLO reports as its board), each with a flasher, and its firmware paths
// are the builds `make firmware` makes.
func TestPicoExampleMap(t *testing.T) {
	m, err := LoadMap("../../docs/examples/hwmap-pico.yml")
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]bool{}
	for _, b := range m.Boards {
		if b.Driver != artifacts.DriverSerial || b.Flasher == nil {
			t.Errorf("%s: driver %s, flasher %v: want a serial board with a flasher", b.Name, b.Driver, b.Flasher)
		}
		classes[b.Class] = true
		want := filepath.Join("firmware", "build", b.Class, FirmwareFile)
		if !strings.HasSuffix(filepath.ToSlash(b.Firmware), filepath.ToSlash(want)) {
			t.Errorf("%s: firmware %s, want …/%s", b.Name, b.Firmware, want)
		}
		if !slices.ContainsFunc(b.Flasher.Command, func(a string) bool { return strings.Contains(a, "{image}") }) {
			t.Errorf("%s: flasher without {image}", b.Name)
		}
	}
	if !classes["pico-w"] || !classes["pico2-w"] {
		t.Errorf("classes %v, want pico-w and pico2-w", classes)
	}
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	for c := range classes {
		if !slices.ContainsFunc(cat.Boards, func(b experiments.Board) bool { return b.Slug == c }) {
			t.Errorf("class %s is not in experiments/boards.csv", c)
		}
	}
}
