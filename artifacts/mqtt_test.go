package artifacts

import (
	"math"
	"strings"
	"testing"
)

func TestFitCost(t *testing.T) {
	x := []float64{16, 64, 256, 1024}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = 100 + 2.5*v
	}
	f, err := FitCost(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.Fixed-100) > 1e-9 || math.Abs(f.PerByte-2.5) > 1e-12 || f.R2 != 1 {
		t.Fatalf("fit %+v", f)
	}
	y[1] += 50
	if f, _ := FitCost(x, y); !(f.R2 < 1 && f.R2 > 0.9) {
		t.Fatalf("noisy fit %+v", f)
	}
	if _, err := FitCost([]float64{8, 8}, []float64{1, 2}); err == nil {
		t.Fatal("one size fitted")
	}
	g := GroupBySize([]int{16, 64}, []float64{1, 2, 3, 4, 5, 100})
	if f, err := FitMedians([]int{16, 64}, g); err != nil || f.N != 6 || math.Abs(f.Fixed-(3-16.0/48)) > 1e-12 || math.Abs(f.PerByte-1.0/48) > 1e-15 {
		t.Fatalf("median fit %+v %v (groups %v)", f, err, g)
	}
}

func TestMQTTBrokerAddr(t *testing.T) {
	for in, want := range map[string]string{"mqtt://127.0.0.1:1883": "127.0.0.1:1883", "tcp://h:1": "h:1", "mqtt://[::1]:9": "[::1]:9",
		"http://h:1": "", "mqtt://h": "", "mqtt://u@h:1": "", "mqtt://h:1/x": "", "mqtt://h:0": "", "mqtt://:1": "", "mqtt://h:1?q": ""} {
		got, err := MQTTBrokerAddr(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("MQTTBrokerAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func FuzzMQTTBrokerAddr(f *testing.F) {
	for _, s := range []string{"mqtt://127.0.0.1:1883", "tcp://[::1]:1", "mqtt://h:99999", "mqtt://%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, err := MQTTBrokerAddr(s)
		if err == nil && (addr == "" || strings.ContainsAny(addr, "/?#@")) {
			t.Fatalf("%q gave %q", s, addr)
		}
	})
}

const mqttSrc = `apiVersion: pqrepro/v1
kind: mqtt-telemetry
metadata: {paper: test, name: mqtt}
spec:
  seed: s
  mqtt:
    payloadSizes: [16, 64]
    framesPerSize: 40
`

func TestMQTTManifestDefaults(t *testing.T) {
	m, err := ParseManifest([]byte(mqttSrc), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec.Iterations != 80 || m.Spec.MQTT.Broker != MQTTBrokerEmbedded || len(m.Spec.MQTT.AEADs) != 3 {
		t.Fatalf("defaults: %+v", m.Spec.MQTT)
	}
	cells := m.Cells()
	if len(cells) != 8 || cells[0] != (CellRef{AlgHandshakePinned, OpSession}) || cells[7] != (CellRef{AEADAscon128Std, OpTelemetry}) {
		t.Fatalf("cells %v", cells)
	}
	bad := strings.Replace(mqttSrc, "framesPerSize: 40", "framesPerSize: 40\n    warp: 9", 1)
	if _, err := ParseManifest([]byte(bad), "m.yaml"); err == nil || !strings.Contains(err.Error(), "spec.mqtt.warp") {
		t.Fatalf("unknown field: %v", err)
	}
	if _, err := ParseManifest([]byte(strings.Replace(mqttSrc, "    payloadSizes: [16, 64]\n    framesPerSize: 40\n", "    payloadSizes: [16]\n", 1)), "m.yaml"); err == nil || !strings.Contains(err.Error(), "spec.mqtt.payloadSizes") || !strings.Contains(err.Error(), "spec.mqtt.framesPerSize") {
		t.Fatalf("one size, no frames: %v", err)
	}
	// manifest.yaml, as a bundle stores it, parses back to the same identity.
	again, err := ParseManifest(m.YAML(), "manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != m.ID() {
		t.Fatalf("manifest.yaml gives %s, the manifest is %s:\n%s\n%s", again.ID(), m.ID(), again.Canonical(), m.Canonical())
	}
	// A bench manifest's identity does not change with the new (nil) section.
	if strings.Contains(string(m.Canonical()), `"mqtt":null`) {
		t.Fatal("nil section in canonical form")
	}
}

// TestMQTTRederive: the fit is re-derived from samples.csv; a fit that does not match is named.
func TestMQTTRederive(t *testing.T) {
	m, err := ParseManifest([]byte(mqttSrc), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sizes := m.Spec.MQTT.PayloadSizes
	vals := make([]float64, m.Spec.Iterations)
	for i := range vals {
		vals[i] = 300 + 2*float64(sizes[i%2]) + float64(i%5)
	}
	fit, err := FitMedians(sizes, GroupBySize(sizes, vals))
	if err != nil {
		t.Fatal(err)
	}
	c := Cell{Algorithm: AEADAscon128Std, Operation: OpSeal, Status: StatusOK, MQTT: &MQTTCell{Sizes: sizes, Fit: &fit}}
	if err := checkKindSamples(m, &c, vals); err != nil {
		t.Fatalf("genuine fit refused: %v", err)
	}
	bent := fit
	bent.PerByte *= 0.9
	c.MQTT.Fit = &bent
	if err := checkKindSamples(m, &c, vals); err == nil || !strings.Contains(err.Error(), "fit.perByte") {
		t.Fatalf("altered fit: %v", err)
	}
	c.MQTT.Fit = &fit
	c.MQTT.Sizes = []int{16, 65}
	if err := mqttCheckCell(m, &c); err == nil || !strings.Contains(err.Error(), "mqtt.sizes") {
		t.Fatalf("altered sizes: %v", err)
	}
}
