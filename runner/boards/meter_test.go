package boards

import (
	"context"
	"os"
	"path/filepath"
	"pqrepro/runner/host"
	"pqrepro/runner/meter/attach"
	"strings"
	"testing"
)

func TestMapMeter(t *testing.T) {
	m, err := ParseMap([]byte("boards:\n  - name: pi4\n    driver: host\n    meter: {kind: fnb58, device: /dev/hidraw3}\n"+
		"  - name: pi3\n    driver: host\n    meter:\n      kind: ina2xx\n      device: /sys/class/hwmon/hwmon2\n"), "lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := *m.Boards[0].Meter; got != (MeterSpec{Kind: MeterFNB58, Device: "/dev/hidraw3"}) {
		t.Errorf("meter %+v", got)
	}
	if got := *m.Boards[1].Meter; got != (MeterSpec{Kind: MeterINA2xx, Device: "/sys/class/hwmon/hwmon2"}) {
		t.Errorf("meter %+v", got)
	}
	_, err = ParseMap([]byte("boards:\n  - name: a\n    driver: host\n    meter:\n      kind: ppk3\n      device: /dev/ttyACM0\n"+
		"  - name: b\n    driver: host\n    meter:\n      kind: fnb58\n      device: /dev/ttyACM0\n"+
		"  - name: c\n    driver: host\n    meter:\n      kind: ina2xx\n      device: /sys/class/hwmon/../../etc\n"+
		"  - name: d\n    driver: host\n    meter:\n      kind: fnb58\n      devise: /dev/hidraw1\n"), "lab.yaml")
	for _, want := range []string{
		`line 5: boards[0].meter.kind: must be fnb58, ppk2 or ina2xx, got "ppk3"`,
		`line 11: boards[1].meter.device: a fnb58 meter is read through a path like /dev/hidraw3, got "/dev/ttyACM0"`,
		`line 16: boards[2].meter.device: a ina2xx meter is read through a path like /sys/class/hwmon/hwmon2`,
		`line 21: boards[3].meter.devise: unknown field`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestMeterStatus(t *testing.T) {
	ctx := context.Background()
	hw := t.TempDir()
	for attr, v := range map[string]string{"name": "ina226\n", "in1_input": "5100\n", "curr1_input": "412\n", "power1_input": "2101200\n"} {
		os.WriteFile(filepath.Join(hw, attr), []byte(v), 0o644)
	}
	missing := filepath.Join(t.TempDir(), "hidraw7")
	for _, c := range []struct {
		m    *MeterSpec
		want string
	}{
		{nil, NoMeter},
		{&MeterSpec{Kind: MeterFNB58, Device: missing}, "fnb58 " + missing + " absent: "},
		{&MeterSpec{Kind: MeterFNB58, Device: hw + "/name"}, "fnb58 " + hw + "/name absent: not a character device"},
		{&MeterSpec{Kind: MeterFNB58, Device: "/dev/null"}, "fnb58 /dev/null (protocol per community documentation, not verified on a meter here)"},
		{&MeterSpec{Kind: MeterINA2xx, Device: hw}, "ina2xx " + hw + " (Linux hwmon ina2xx driver, chip ina226)"},
		{&MeterSpec{Kind: MeterINA2xx, Device: missing}, "ina2xx absent: "},
	} {
		if got := meterStatus(ctx, c.m); !strings.HasPrefix(got, c.want) {
			t.Errorf("meter %+v: %q, want %q", c.m, got, c.want)
		}
	}
	es := Discover(ctx, Config{Map: &Map{Boards: []Spec{{Name: "pi", Driver: "host", Class: "host", Meter: &MeterSpec{Kind: MeterINA2xx, Device: hw}}}}})
	if len(es) != 1 || !strings.HasPrefix(es[0].Meter, "ina2xx "+hw) {
		t.Errorf("discovered %+v", es)
	}
}

// TestPPK2MeterEntry: a PPK2 needs its mode and voltage in the map (no default: in source mode
// it powers the board); other kinds take neither; a host entry's meter is attached to the
// board the runner opens (the agent's path), unchecked.
func TestPPK2MeterEntry(t *testing.T) {
	m, err := ParseMap([]byte("boards:\n  - name: pico\n    driver: host\n    meter: {kind: ppk2, device: /dev/ttyACM0, mode: source, millivolts: 3300}\n"), "lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Boards[0].Meter.Attach(); got.String() != "ppk2:/dev/ttyACM0:source:3300" {
		t.Errorf("attach spec %+v", got)
	}
	_, err = ParseMap([]byte("boards:\n  - name: a\n    driver: host\n    meter: {kind: ppk2, device: /dev/ttyACM0}\n"+
		"  - name: b\n    driver: host\n    meter: {kind: ppk2, device: /dev/ttyACM1, mode: source, millivolts: 9000}\n"+
		"  - name: c\n    driver: host\n    meter: {kind: fnb58, device: /dev/hidraw1, mode: source}\n"), "lab.yaml")
	for _, want := range []string{`line 4: boards[0].meter: ppk2 mode ""`, "line 7: boards[1].meter: ppk2: VDD 9000 mV", "line 10: boards[2].meter: a fnb58 meter takes no mode"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	es := Discover(context.Background(), Config{Map: m})
	if !strings.HasPrefix(es[0].Meter, "ppk2 /dev/ttyACM0 absent") && !strings.HasPrefix(es[0].Meter, "ppk2 /dev/ttyACM0 (source mode at 3300 mV") {
		t.Errorf("status %q", es[0].Meter)
	}
	b, err := es[0].Board("")
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := b.(*host.Host); !ok || h.Meter == nil || h.Meter.(*attach.Meter).Spec.Device != "/dev/ttyACM0" {
		t.Errorf("board %+v: want the host with the map's meter attached", b)
	}
}
