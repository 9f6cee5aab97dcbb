package qemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/telemetry/mqtt"
)

// mqttManifest is a small paper003 telemetry run for a board: a few frames per size, the
// three AEADs, 3 replays and 2 tamperings through the embedded broker.
func mqttManifest(t *testing.T, class string) *artifacts.Manifest {
	t.Helper()
	y := `apiVersion: pqrepro/v1
kind: mqtt-telemetry
metadata: {paper: paper003, name: board-test}
spec:
  warmup: 1
  seed: "qemu telemetry test"
  boards: [` + class + `]
  mqtt:
    payloadSizes: [16, 64, 256, 1024]
    framesPerSize: 18
    replays: 3
    tamperings: 2
`
	m, err := artifacts.ParseManifest([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMQTTTelemetryOnBoards: the emulated boards play the telemetry device. Each cell is ok in
// instructions; every frame the board sealed is verified by the gateway exactly once, the
// replays of the board's own frames injected at the broker are refused as replays and the
// bit-flipped copies as forged; the seal and open fits are re-derivable (the bundle
// verifies), and two runs give identical counts.
func TestMQTTTelemetryOnBoards(t *testing.T) {
	for _, class := range []string{"qemu-mps2-an386", "qemu-riscv32-virt"} {
		t.Run(class, func(t *testing.T) {
			mc, _ := LookupMachine(class)
			q, _ := newBoard(t, mc)
			q.SkipSelfTest = true
			m := mqttManifest(t, class)
			var samples [][]byte
			for run := 0; run < 2; run++ {
				b, res, err := execute(t, q, m, nil)
				if err != nil {
					t.Fatalf("run %d: %v\n%s", run, err, runLog(err))
				}
				if _, err := attest.Verify(b, nil); err != nil {
					t.Fatalf("bundle does not verify: %v", err)
				}
				if len(res.Cells) != 8 {
					t.Fatalf("%d cells, want 8", len(res.Cells))
				}
				for _, c := range res.Cells {
					if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitInstructions || c.Stats.Min <= 0 || c.MQTT == nil ||
						c.Memory == nil || c.Memory.StackBytes == nil || *c.Memory.StackBytes <= 0 {
						t.Fatalf("cell %s %s: %+v", c.Algorithm, c.Operation, c)
					}
					switch c.Operation {
					case artifacts.OpSeal, artifacts.OpOpen:
						f := c.MQTT.Fit
						if f == nil || f.PerByte <= 0 || f.Fixed <= 0 || f.R2 < 0.999 || f.N != 72 {
							t.Fatalf("cell %s %s: fit %+v", c.Algorithm, c.Operation, f)
						}
					case artifacts.OpTelemetry:
						fc := c.MQTT.Frames
						if fc.Sent != 72 || fc.Verified != 72 || fc.Duplicated != 0 || fc.Missing != 0 ||
							fc.Rejected["replay"] != 3 || fc.Rejected["forged"] != 2 {
							t.Fatalf("frames %+v", fc)
						}
						for _, o := range c.MQTT.Overhead {
							if o.Min != 24 || o.Max != 24 || o.Frames != 18 {
								t.Fatalf("overhead %+v", o)
							}
						}
					case artifacts.OpSession:
						if c.MQTT.Mode != "pinned" || c.MQTT.HandshakeBytes != 770 {
							t.Fatalf("handshake cell %+v", c.MQTT)
						}
					}
				}
				samples = append(samples, b.Files[artifacts.FileSamples])
				if run == 0 {
					var sb strings.Builder
					for _, c := range res.Cells {
						if c.MQTT.Fit != nil {
							fmt.Fprintf(&sb, "%s %s: fixed %.0f + %.2f/byte (R² %.5f), stack %d\n", c.Algorithm, c.Operation, c.MQTT.Fit.Fixed, c.MQTT.Fit.PerByte, c.MQTT.Fit.R2, *c.Memory.StackBytes)
						} else {
							fmt.Fprintf(&sb, "%s %s: median %.0f, stack %d\n", c.Algorithm, c.Operation, c.Stats.Median, *c.Memory.StackBytes)
						}
					}
					t.Logf("%s:\n%s", class, sb.String())
				}
			}
			if !bytes.Equal(samples[0], samples[1]) {
				t.Fatalf("instruction counts differ between two runs")
			}
		})
	}
}

// TestMQTTForwardSecretOnBoards: the forward-secret handshake cell on the emulated boards: the
// runner relays the gateway's signed ephemeral key from the broker to the board, which verifies
// it with the pinned ML-DSA-44 key and encapsulates to it; the cell is ok in instructions and
// says its mode and bytes on the wire (request, offer and handshake). One board (64
// handshakes, the fewest a manifest allows, about 20 s); runner/wire's
// TestQEMUTelemetryForwardSecret runs the board side on qemu-riscv32-virt too.
func TestMQTTForwardSecretOnBoards(t *testing.T) {
	for _, class := range []string{"qemu-mps2-an386"} {
		t.Run(class, func(t *testing.T) {
			mc, _ := LookupMachine(class)
			q, _ := newBoard(t, mc)
			q.SkipSelfTest = true
			y := `apiVersion: pqrepro/v1
kind: mqtt-telemetry
metadata: {paper: paper003, name: board-fs-test}
spec:
  warmup: 0
  seed: "qemu forward-secret test"
  boards: [` + class + `]
  mqtt:
    payloadSizes: [16, 64]
    framesPerSize: 32
    replays: 0
    tamperings: 1
    aeads: [Ascon-AEAD128]
    forwardSecret: true
`
			m, err := artifacts.ParseManifest([]byte(y), "test")
			if err != nil {
				t.Fatal(err)
			}
			b, res, err := execute(t, q, m, nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, runLog(err))
			}
			if _, err := attest.Verify(b, nil); err != nil {
				t.Fatalf("bundle does not verify: %v", err)
			}
			found := false
			for _, c := range res.Cells {
				if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitInstructions {
					t.Fatalf("cell %s %s: %+v", c.Algorithm, c.Operation, c)
				}
				if c.Operation == artifacts.OpSession {
					found = true
					if c.MQTT == nil || c.MQTT.Mode != "forward-secret" || c.MQTT.HandshakeBytes != 17+3245+786 || c.Stats.Min < 1e6 {
						t.Fatalf("forward-secret handshake cell: %+v %+v", c.MQTT, c.Stats)
					}
					t.Logf("%s: forward-secret handshake median %.0f instructions (n %d), stack %d", class, c.Stats.Median, c.Stats.N, *c.Memory.StackBytes)
				}
			}
			if !found {
				t.Fatal("no handshake cell")
			}
		})
	}
}

// TestMQTTTelemetryNotOnSmallBoards: the 16 KiB qemu-microbit has no Ascon: the portal does
// not offer it mqtt-telemetry, and a run there skips every cell with the reason; the
// forward-secret manifest is offered to the boards that hold the telemetry device (they
// verify ML-DSA-44), and to no other.
func TestMQTTTelemetryNotOnSmallBoards(t *testing.T) {
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := cat.Manifest("paper003/telemetry-fs")
	if err != nil {
		t.Fatal(err)
	}
	for _, mc := range qemuMachines() {
		// The machine's kinds are what its image holds (tools/fwmeta's experiments).
		var meta struct {
			Experiments []artifacts.Kind `json:"experiments"`
		}
		raw, err := os.ReadFile(filepath.Join(filepath.Dir(firmwareELF(t, mc)), "metadata.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(meta.Experiments, mc.Kinds) {
			t.Errorf("%s: the image runs %v, the machine declares %v", mc.Class, meta.Experiments, mc.Kinds)
		}
		info := protocol.BoardInfo{Name: mc.Class, Class: mc.Class, Driver: "qemu", Kinds: mc.Kinds, Algorithms: mc.Algorithms}
		why := experiments.BoardCanRun(info, mqttManifest(t, mc.Class))
		if (why == "") != (mc.Class != "qemu-microbit") {
			t.Errorf("%s: BoardCanRun(pinned telemetry) = %q", mc.Class, why)
		}
		if why := experiments.BoardCanRun(info, fs); (why == "") != (mc.Class != "qemu-microbit") {
			t.Errorf("%s: BoardCanRun(forward-secret telemetry) = %q", mc.Class, why)
		}
	}
	mc, _ := LookupMachine("qemu-microbit")
	q, _ := newBoard(t, mc)
	q.SkipSelfTest = true
	// Every cell is skipped, so nothing is signed: the run fails with the cells' reason.
	b, _, err := execute(t, q, mqttManifest(t, mc.Class), nil)
	if b != nil || !errors.Is(err, artifacts.ErrNoCellOK) || !strings.Contains(err.Error(), "not a telemetry device") {
		t.Fatalf("bundle %v, %v\n%s", b != nil, err, runLog(err))
	}
}

// TestMQTTTelemetryBoardMosquitto: the same board run through Mosquitto (Debian's, on a free
// loopback port) instead of the embedded broker, then a run during which Mosquitto is stopped
// while the board's frames stream: the run fails with the broker's error, keeps its log, and
// produces no bundle.
func TestMQTTTelemetryBoardMosquitto(t *testing.T) {
	if _, err := mqtt.MosquittoPath(); err != nil {
		t.Skip(err)
	}
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, _ := newBoard(t, mc)
	q.SkipSelfTest = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a hang guard: liveness bounds a silent board
	defer cancel()
	mos, err := mqtt.StartMosquitto(ctx, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mos.Stop()
	m := mqttManifest(t, mc.Class)
	m.Spec.MQTT.Broker = "mqtt://" + mos.Addr()
	m.Spec.MQTT.AEADs = []string{artifacts.AEADAscon128Std}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	b, res, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog(err))
	}
	if _, err := attest.Verify(b, nil); err != nil {
		t.Fatal(err)
	}
	tel := res.Cells[len(res.Cells)-1]
	if tel.Status != artifacts.StatusOK || tel.MQTT.Broker != m.Spec.MQTT.Broker || tel.MQTT.Frames.Verified != 72 ||
		tel.MQTT.Frames.Rejected["replay"] != 3 || tel.MQTT.Frames.Rejected["forged"] != 2 {
		t.Fatalf("telemetry cell through Mosquitto: %+v %+v", tel, tel.MQTT.Frames)
	}

	// The broker goes away mid-stream (cell 3 is the telemetry stream).
	stopped := false
	obs := obsFunc{fn: func(cell, done int) {
		if cell == 3 && done >= 5 && !stopped {
			stopped = true
			mos.Stop()
		}
	}}
	b, _, err = execute(t, q, m, obs)
	if b != nil || err == nil || !stopped {
		t.Fatalf("a run whose broker went away: bundle %v, err %v, stopped %v", b != nil, err, stopped)
	}
	if !strings.Contains(err.Error(), "broker") {
		t.Fatalf("err = %v, want the broker named", err)
	}
	t.Logf("broker gone: %v", err)
	if log := runLog(err); !strings.Contains(log, "TELSEAL") || !strings.Contains(log, "run failed:") {
		t.Fatalf("kept log:\n%s", log)
	}
}
