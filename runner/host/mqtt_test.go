package host

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/runner"
	"pqrepro/telemetry/mqtt"
)

func mqttManifest(t *testing.T, broker string, fs bool) *artifacts.Manifest {
	t.Helper()
	src := `apiVersion: pqrepro/v1
kind: mqtt-telemetry
metadata: {paper: test, name: mqtt}
spec:
  warmup: 2
  seed: test-seed
  mqtt:
    payloadSizes: [16, 256, 1024]
    framesPerSize: 40
    replays: 3
    tamperings: 4
    broker: ` + broker + `
    forwardSecret: ` + map[bool]string{true: "true", false: "false"}[fs] + `
`
	return manifest(t, src)
}

// TestMQTTTelemetryRun runs the kind end to end on both real brokers and checks what the
// result records: every genuine frame verified once, the injected replays and tamperings
// refused with their reasons, 24 bytes of overhead, fits that re-derive.
func TestMQTTTelemetryRun(t *testing.T) {
	brokers := map[string]string{"mochi": "embedded"}
	if _, err := mqtt.MosquittoPath(); err == nil {
		m, err := mqtt.StartMosquitto(context.Background(), t.TempDir(), 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Stop)
		brokers["mosquitto"] = "mqtt://" + m.Addr()
	} else {
		t.Logf("mosquitto: %v", err)
	}
	for name, url := range brokers {
		for _, fs := range []bool{false, true} {
			t.Run(name+map[bool]string{true: "-fs", false: ""}[fs], func(t *testing.T) {
				m := mqttManifest(t, url, fs)
				b, res, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: testIdentity(t), Version: "test"})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Cells) != 8 {
					t.Fatalf("%d cells", len(res.Cells))
				}
				for _, c := range res.Cells {
					if c.Status != artifacts.StatusOK {
						t.Fatalf("%s %s: %s %s", c.Algorithm, c.Operation, c.Status, c.Error)
					}
					if c.Stats.N != 120 || c.MQTT == nil {
						t.Fatalf("%s %s: n=%d mqtt=%v", c.Algorithm, c.Operation, c.Stats.N, c.MQTT)
					}
					switch c.Operation {
					case artifacts.OpSeal, artifacts.OpOpen:
						if f := c.MQTT.Fit; f == nil || !(f.PerByte > 0) || f.R2 <= 0 || f.R2 > 1 {
							t.Errorf("%s %s: fit %+v", c.Algorithm, c.Operation, f)
						}
					case artifacts.OpTelemetry:
						f := c.MQTT.Frames
						if f.Sent != 120 || f.Verified != 120 || f.Duplicated != 0 || f.Missing != 0 || f.Rejected["replay"] != 3 || f.Rejected["forged"] != 4 {
							t.Errorf("frames %+v", f)
						}
						for _, o := range c.MQTT.Overhead {
							if o.Min != 24 || o.Max != 24 || o.Frames != 40 {
								t.Errorf("overhead %+v", o)
							}
						}
						if !(c.MQTT.ThroughputFPS > 0) {
							t.Errorf("throughput %v", c.MQTT.ThroughputFPS)
						}
					case artifacts.OpSession:
						want := map[bool]string{false: "pinned", true: "forward-secret"}[fs]
						if c.MQTT.Mode != want || c.Algorithm != m.Spec.MQTT.MQTTHandshakeAlgorithm() {
							t.Errorf("handshake %s mode %s", c.Algorithm, c.MQTT.Mode)
						}
					}
				}
				if _, err := attest.Verify(b, nil); err != nil {
					t.Fatalf("fresh bundle does not verify: %v", err)
				}
				if _, _, err := artifacts.RederiveBundle(b); err != nil {
					t.Fatalf("fresh bundle does not re-derive from its own manifest.yaml: %v", err)
				}
			})
		}
	}
}

// brokerKiller stops the broker once the telemetry cell has delivered some frames.
type brokerKiller struct {
	runner.NopObserver
	once sync.Once
	cell int
	stop func()
}

func (k *brokerKiller) CellStarted(i, _ int, ref artifacts.CellRef) {
	if ref.Operation == artifacts.OpSession {
		k.cell = i
	}
}

func (k *brokerKiller) Iteration(i, done, _ int) {
	if i == k.cell && done >= 10 {
		k.once.Do(k.stop)
	}
}

// TestMQTTBrokerGoesAway: a broker killed mid-run fails the run with its log and no bundle.
func TestMQTTBrokerGoesAway(t *testing.T) {
	if _, err := mqtt.MosquittoPath(); err != nil {
		t.Skip(err)
	}
	mq, err := mqtt.StartMosquitto(context.Background(), t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mq.Stop()
	m := mqttManifest(t, "mqtt://"+mq.Addr(), false)
	b, res, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: testIdentity(t), Version: "test", Observer: &brokerKiller{stop: mq.Stop, cell: -1}})
	var re *runner.RunError
	if !errors.As(err, &re) || b != nil || res != nil {
		t.Fatalf("run with a broker gone: bundle %v, err %v; want a runner.RunError and no bundle", b != nil, err)
	}
	if !errors.Is(err, mqtt.ErrBrokerGone) || !strings.Contains(string(re.Log), "run failed") {
		t.Fatalf("error %v, log %q", err, re.Log)
	}
}

// TestMQTTManifestProblems: every bad field is named.
func TestMQTTManifestProblems(t *testing.T) {
	src := `apiVersion: pqrepro/v1
kind: mqtt-telemetry
metadata: {paper: test, name: mqtt}
spec:
  iterations: 7
  seed: s
  algorithms: [ML-KEM-512]
  mqtt:
    payloadSizes: [64, 16, 5000]
    framesPerSize: 10
    replays: -1
    tamperings: 1000
    broker: https://example:1
    aeads: [Ascon-AEAD128, Ascon-80pq, Ascon-AEAD128]
`
	_, err := artifacts.ParseManifest([]byte(src), "bad.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, field := range []string{"spec:", "spec.iterations", "spec.mqtt.payloadSizes[1]", "spec.mqtt.payloadSizes[2]", "spec.mqtt.replays", "spec.mqtt.tamperings", "spec.mqtt.broker", "spec.mqtt.aeads[1]", "spec.mqtt.aeads[2]"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("no problem for %s in:\n%v", field, err)
		}
	}
}
