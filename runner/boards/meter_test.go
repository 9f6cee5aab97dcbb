package boards

import (
	"context"
	"os"
	"path/filepath"
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
		`line 5: boards[0].meter.kind: must be fnb58 or ina2xx, got "ppk3"`,
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
