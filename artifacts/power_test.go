package artifacts_test

import (
	"reflect"
	"strings"
	"testing"

	"pqrepro/artifacts"
)

func TestPowerRoundTrip(t *testing.T) {
	p := &artifacts.Power{Idle: &artifacts.PowerWindow{Volts: []float64{5.1, 5.1}, Amps: []float64{0.39215686274509803, 0.4}}}
	p.AddLoad(artifacts.CellKey{Algorithm: "ML-KEM-768", Operation: "keygen"}, &artifacts.PowerWindow{Volts: []float64{5.1}, Amps: []float64{0.1 + 0.2}})
	p.AddLoad(artifacts.CellKey{Algorithm: "Ed25519", Operation: "sign"}, &artifacts.PowerWindow{Volts: []float64{5.0, 5.0, 5.0}, Amps: []float64{1, 2, 3}})
	data := artifacts.FormatPower(p)
	got, err := artifacts.ParsePower(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Fatalf("read back %+v, wrote %+v", got, p)
	}
	if w, v, a := got.Idle.Watts(), got.Idle.Volts[1], got.Idle.Amps[1]; w[1] != v*a || len(w) != 2 {
		t.Errorf("watts %v", w)
	}
}

// TestPowerMarkers: a meter with logic inputs writes the markers column, read back sample by
// sample; a marker outside 0..255 or not written as a plain integer is refused.
func TestPowerMarkers(t *testing.T) {
	p := &artifacts.Power{Idle: &artifacts.PowerWindow{Volts: []float64{3.3, 3.3}, Amps: []float64{0.01, 0.01}, Markers: []uint8{0, 0}}}
	p.AddLoad(artifacts.CellKey{Algorithm: "ML-KEM-512", Operation: "encaps"}, &artifacts.PowerWindow{Volts: []float64{3.3, 3.3, 3.3}, Amps: []float64{0.02, 0.03, 0.02}, Markers: []uint8{0, 1, 0}})
	data := artifacts.FormatPower(p)
	if !strings.HasPrefix(string(data), strings.Join(artifacts.PowerHeader, ",")+",markers\n") {
		t.Fatalf("no markers column:\n%s", data)
	}
	got, err := artifacts.ParsePower(data)
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("read back %+v (%v), wrote %+v", got, err, p)
	}
	head := strings.Join(artifacts.PowerHeader, ",") + ",markers\n"
	for _, bad := range []string{",,idle,0,5,1,256\n", ",,idle,0,5,1,-1\n", ",,idle,0,5,1,01\n", ",,idle,0,5,1\n"} {
		if _, err := artifacts.ParsePower([]byte(head + bad)); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}

func TestParsePowerRefusals(t *testing.T) {
	head := strings.Join(artifacts.PowerHeader, ",") + "\n"
	for body, want := range map[string]string{
		"":                                    "empty",
		"a,b\n":                               "line 1",
		head + "x,y,idle,0,5,1\n":             "line 2: an idle row names a cell",
		head + ",,load,0,5,1\n":               "line 2: a load row with an empty",
		head + ",,busy,0,5,1\n":               `line 2: window "busy"`,
		head + ",,idle,1,5,1\n":               "line 2: sample 1 of the idle window",
		head + ",,idle,0,5,1\n,,idle,2,5,1\n": "line 3: sample 2",
		head + ",,idle,0,5,1\n,,idle,0,5,1\n": "line 3: a second idle window",
		head + ",,idle,0,-5,1\n":              `line 2: volts "-5"`,
		head + ",,idle,0,5,NaN\n":             `line 2: amps "NaN"`,
		head + ",,idle,0,5,+Inf\n":            `line 2: amps "+Inf"`,
		head + ",,idle,x,5,1\n":               `line 2: sample "x"`,
		head + ",,idle,0,5\n":                 "wrong number of fields",
		head + "a,b,load,0,5,1\n,,idle,0,5,1\na,b,load,1,5,1\n": "line 4: sample 1 of the load window",
	} {
		if _, err := artifacts.ParsePower([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

func FuzzParsePower(f *testing.F) {
	head := strings.Join(artifacts.PowerHeader, ",") + "\n"
	f.Add([]byte(head + ",,idle,0,5.1,0.39\n,,idle,1,5.1,0.4\nML-KEM-768,keygen,load,0,5.1,0.6\n"))
	f.Add([]byte(head + ",,idle,0,5,1\n,,idle,0,5,1\n"))
	f.Add([]byte("algorithm,operation\n"))
	f.Add([]byte(head[:len(head)-1] + ",markers\n,,idle,0,3.3,0.01,0\nML-KEM-512,encaps,load,0,3.3,0.02,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := artifacts.ParsePower(data)
		if err != nil {
			return
		}
		again, err := artifacts.ParsePower(artifacts.FormatPower(p))
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("format of a parsed power.csv reads back as %+v (%v), want %+v", again, err, p)
		}
	})
}
