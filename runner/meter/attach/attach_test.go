package attach_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/runner/meter/attach"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]attach.Spec{
		"fnb58:/dev/hidraw3":             {Kind: "fnb58", Device: "/dev/hidraw3"},
		"ppk2:/dev/ttyACM0:source:3300":  {Kind: "ppk2", Device: "/dev/ttyACM0", Mode: "source", Millivolts: 3300},
		"ppk2:/dev/ttyACM1:ampere:5000":  {Kind: "ppk2", Device: "/dev/ttyACM1", Mode: "ampere", Millivolts: 5000},
		"ina2xx:/sys/class/hwmon/hwmon2": {Kind: "ina2xx", Device: "/sys/class/hwmon/hwmon2"},
	} {
		got, err := attach.Parse(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("%s: %+v %v", in, got, err)
		}
	}
	for in, want := range map[string]string{
		"/dev/hidraw3":                   "want KIND:DEVICE",
		"acme:/dev/x":                    `kind "acme"`,
		"fnb58:hidraw3":                  "absolute",
		"fnb58:/dev/../dev/hidraw3":      "clean",
		"ppk2:/dev/ttyACM0":              "no default",
		"ppk2:/dev/ttyACM0:source:3.3":   "whole number",
		"ppk2:/dev/ttyACM0:sink:3300":    `mode "sink"`,
		"ppk2:/dev/ttyACM0:source:12000": "800..5000",
		strings.Repeat("x", 2000):        "limit",
	} {
		if _, err := attach.Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: %v, want %q", in, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"fnb58:/dev/hidraw3", "ppk2:/dev/ttyACM0:source:3300", "ina2xx:/sys/class/hwmon/hwmon2", "ppk2::::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := attach.Parse(s)
		if err == nil && (sp.Validate() != nil || sp.String() != s) {
			t.Fatalf("%q parsed to %+v", s, sp)
		}
	})
}

// TestOpenErrors: devices that are absent, of the wrong kind of file, or silent fail to
// attach with the device named and why.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plain := filepath.Join(dir, "hidraw0")
	os.WriteFile(plain, []byte("not a meter"), 0o644)
	cases := map[string]string{
		"fnb58:" + filepath.Join(dir, "hidraw9"): "no such file",
		"fnb58:" + plain:                         "not a character device",
		"fnb58:/dev/null":                        "no sample within",
		"ppk2:" + filepath.Join(dir, "ttyACM7") + ":source:3300": "ttyACM7",
		"ppk2:" + plain + ":ampere:3300":                         "hidraw0",
		"ina2xx:" + dir:                                          "name",
	}
	for in, want := range cases {
		sp, err := attach.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := attach.Open(ctx, sp); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), sp.Device) {
			t.Errorf("%s: %v, want the device named and %q", in, err, want)
		}
	}
}

// TestINA2xxDirectory: a hwmon directory of real files attaches, and a window of it records
// at the driver's default 10 samples/s.
func TestINA2xxDirectory(t *testing.T) {
	dir := t.TempDir()
	for attr, v := range map[string]string{"name": "ina219\n", "in1_input": "5050\n", "curr1_input": "612\n", "power1_input": "3090600\n"} {
		os.WriteFile(filepath.Join(dir, attr), []byte(v), 0o644)
	}
	m, err := attach.Open(context.Background(), attach.Spec{Kind: "ina2xx", Device: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, info, err := m.Window(context.Background(), false, 500*time.Millisecond)
	if err != nil || len(s) != 5 || s[4].Volts != 5.05 || s[4].Amps != 0.612 || info.Simulated || info.Kind != "ina2xx" {
		t.Fatalf("%+v %+v %v", s, info, err)
	}
}
