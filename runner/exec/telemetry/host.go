package telemetry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/artifacts"
	"pqrepro/ascon"
	"pqrepro/runner/trial"
	"pqrepro/telemetry"
	"pqrepro/telemetry/mqtt"
)

// The mqtt-telemetry kind on the host board (artifacts.KindMQTTTelemetry): every cell runs
// against a real broker (the embedded mochi-mqtt unless spec.mqtt.broker names one) except
// the seal and open cells, which time the AEADs in process on the frame layout of the scheme.
// A broker that goes away fails the run (an error, not a failed cell): nothing half measured
// is signed.

// mqttDevice is the device id the host's device runs under.
const mqttDevice = "pqrepro-host-device"

// Host is the host board's mqtt-telemetry executor: the seal and open cells time the AEADs in
// process, the session and telemetry cells run a device of package pqrepro/telemetry in this
// process against the harness.
func Host(ctx context.Context, c trial.Cell) (trial.Outcome, error) {
	switch c.Ref.Operation {
	case artifacts.OpSeal, artifacts.OpOpen:
		return aeadCell(ctx, c.Manifest, c.Ref, c.Plan)
	case artifacts.OpSession:
		return mqttHandshakeCell(ctx, c.Manifest, c.Plan)
	case artifacts.OpTelemetry:
		return mqttTelemetryCell(ctx, c.Manifest, c.Plan)
	}
	return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "no mqtt-telemetry operation " + c.Ref.Operation}}, nil
}

// newAEAD returns the named AEAD of package ascon.
func newAEAD(name string, key []byte) (*ascon.AEAD, error) {
	switch name {
	case artifacts.AEADAscon128Std:
		return ascon.NewAEAD128(key)
	case artifacts.AEADAscon128a:
		return ascon.NewAscon128a(key)
	case artifacts.AEADAscon128:
		return ascon.NewAscon128(key)
	}
	return nil, fmt.Errorf("unknown AEAD %q", name)
}

type aeadIn struct {
	nonce, ad, pt, ct []byte
}

// aeadCell times Seal or Open of one frame per iteration, payload sizes round-robin, with the
// scheme's nonce (prefix || counter) and associated data (topic || counter). A seal is
// checked by opening it; an open by comparing with the plaintext sealed.
func aeadCell(ctx context.Context, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan) (trial.Outcome, error) {
	spec := m.Spec.MQTT
	rng := trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/"+ref.Operation)
	a, err := newAEAD(ref.Algorithm, rng.Bytes(ascon.KeySize))
	if err != nil {
		return trial.Outcome{Cell: trial.Failed(err.Error())}, nil
	}
	prefix := rng.Bytes(8)
	topic := telemetry.DataTopic(mqttDevice, telemetry.SessionID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef})
	seal := ref.Operation == artifacts.OpSeal
	t := trial.Trial[aeadIn, []byte]{
		Prep: func(i int) (aeadIn, error) {
			k := len(spec.PayloadSizes)
			size := spec.PayloadSizes[((i%k)+k)%k]
			c := uint64(i) & (1<<63 - 1)
			in := aeadIn{nonce: binary.BigEndian.AppendUint64(bytes.Clone(prefix), c), pt: rng.Bytes(size)}
			in.ad = binary.BigEndian.AppendUint64(append(binary.BigEndian.AppendUint16(nil, uint16(len(topic))), topic...), c)
			if !seal {
				in.ct = a.Seal(nil, in.nonce, in.pt, in.ad)
			}
			return in, nil
		},
		Op: func(in aeadIn) ([]byte, error) {
			if seal {
				return a.Seal(nil, in.nonce, in.pt, in.ad), nil
			}
			return a.Open(nil, in.nonce, in.ct, in.ad)
		},
		Check: func(in aeadIn, out []byte) error {
			if !seal {
				if !bytes.Equal(out, in.pt) {
					return errors.New("open returned another plaintext than was sealed")
				}
				return nil
			}
			if len(out) != len(in.pt)+ascon.TagSize {
				return fmt.Errorf("sealed %d bytes into %d, want %d", len(in.pt), len(out), len(in.pt)+ascon.TagSize)
			}
			pt, err := a.Open(nil, in.nonce, out, in.ad)
			if err != nil || !bytes.Equal(pt, in.pt) {
				return fmt.Errorf("the sealed frame does not open to its plaintext: %v", err)
			}
			return nil
		},
	}
	r, err := trial.Run(ctx, t, p)
	if err != nil || r.Cell.Status != artifacts.StatusOK {
		return r, err
	}
	fit, err := artifacts.FitMedians(spec.PayloadSizes, artifacts.GroupBySize(spec.PayloadSizes, r.Samples))
	if err != nil {
		return trial.Outcome{Cell: trial.Failed(err.Error())}, nil
	}
	r.Cell.MQTT = &artifacts.MQTTCell{Sizes: spec.PayloadSizes, Fit: &fit}
	return r, nil
}

// mqttSetup is one cell's gateway harness and device, all connected.
type mqttSetup struct {
	*Harness
	dl *mqtt.DeviceLink
	fs bool
}

// failedLink is the run-breaking error of a lost connection, the gateway's or the device's.
func (s *mqttSetup) failedLink() error { return s.FailedLink(s.dl.Client()) }

// newMQTTSetup starts the broker (embedded unless the spec names one), a gateway with fresh
// keys and a device pinned to them. The keys are drawn from crypto/rand: a session key must
// be unpredictable, also in a benchmark run whose payloads are seed-derived.
func newMQTTSetup(ctx context.Context, m *artifacts.Manifest, name string) (*mqttSetup, error) {
	spec := m.Spec.MQTT
	pk, sk, err := mlkem512.GenerateKeyPair(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gateway key: %w", err)
	}
	ek := make([]byte, telemetry.EncapKeySize)
	pk.Pack(ek)
	spk, ssk, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gateway signing key: %w", err)
	}
	psk := make([]byte, 16)
	rand.Read(psk)
	d, err := telemetry.NewDevice(telemetry.DeviceConfig{ID: mqttDevice, GatewayKey: ek, SigningKey: spk.Bytes(), PSK: psk})
	if err != nil {
		return nil, err
	}
	h, err := StartHarness(ctx, spec, name, telemetry.GatewayConfig{DecapsulationKey: sk, SigningKey: ssk, Devices: map[string][]byte{mqttDevice: psk}})
	if err != nil {
		return nil, err
	}
	s := &mqttSetup{Harness: h, fs: spec.ForwardSecret}
	s.dl, err = mqtt.DialDevice(ctx, s.Addr, mqttDevice, d)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("broker %s: %w", s.Broker, err)
	}
	s.OnClose(func() { s.dl.Close() })
	return s, nil
}

// handshake runs one handshake and waits for the gateway to open its session.
func (s *mqttSetup) handshake(ctx context.Context) (*telemetry.Session, error) {
	var sess *telemetry.Session
	var err error
	if s.fs {
		sess, err = s.dl.HandshakeForwardSecret(ctx, rand.Reader, time.Now)
	} else {
		sess, err = s.dl.Handshake(ctx, rand.Reader)
	}
	if err != nil {
		return nil, err
	}
	if err := s.AwaitSession(ctx, sess.ID()); err != nil {
		return nil, err
	}
	return sess, nil
}

// roundTrip sends one frame and waits for the gateway to deliver exactly its plaintext.
func (s *mqttSetup) roundTrip(ctx context.Context, sess *telemetry.Session, pt []byte) error {
	wait := s.CatchFrame(func(v mqtt.Verdict) bool { return v.Event.Session == sess.ID() })
	if _, err := s.dl.Send(ctx, sess, pt); err != nil {
		return err
	}
	p, err := wait()
	if err != nil {
		return err
	}
	if !bytes.Equal(p, pt) {
		return errors.New("the gateway delivered another plaintext than was sent")
	}
	return nil
}

// mqttHandshakeCell times handshakes through the broker: from the device drawing its
// randomness to the gateway holding the session. Each is checked by a frame that the new
// session seals and the gateway opens (untimed).
func mqttHandshakeCell(ctx context.Context, m *artifacts.Manifest, p trial.Plan) (trial.Outcome, error) {
	s, err := newMQTTSetup(ctx, m, "handshake")
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry handshake: %w", err)
	}
	defer s.Close()
	p.NoPasses = true
	// The whole cell is one turn: its device holds the broker session under the device's
	// client id, which the telemetry cell's device takes over on a shared broker.
	p.Turns = nil
	t := trial.Trial[struct{}, *telemetry.Session]{
		Prep: func(int) (struct{}, error) { return struct{}{}, nil },
		Op:   func(struct{}) (*telemetry.Session, error) { return s.handshake(ctx) },
		Check: func(_ struct{}, sess *telemetry.Session) error {
			return s.roundTrip(ctx, sess, []byte("handshake check"))
		},
	}
	r, err := trial.Run(ctx, t, p)
	if err != nil {
		return r, err
	}
	if lerr := s.failedLink(); lerr != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry handshake: %w", lerr)
	}
	if r.Cell.Status == artifacts.StatusOK {
		mode, bytes := "pinned", 2+telemetry.CiphertextSize
		if s.fs {
			mode, bytes = "forward-secret", 17+(1+telemetry.DeviceNonceSz+8+telemetry.EncapKeySize+mldsa44.SignatureSize)+(2+telemetry.DeviceNonceSz+telemetry.CiphertextSize)
		}
		r.Cell.MQTT = &artifacts.MQTTCell{Broker: s.Broker, Mode: mode, HandshakeBytes: bytes}
	}
	return r, nil
}

// mqttTelemetryCell sends spec.iterations genuine frames (payload sizes round-robin, in
// order, pipelined up to the broker's receive maximum) through the broker, then the run's adversary publishes the
// spec's replays (frames older than the window) and tamperings (a bit flipped). A sample is
// one genuine frame's time from sealing to delivery at the gateway, counted only when the
// plaintext delivered equals the one sealed.
func mqttTelemetryCell(ctx context.Context, m *artifacts.Manifest, p trial.Plan) (trial.Outcome, error) {
	spec := m.Spec.MQTT
	s, err := newMQTTSetup(ctx, m, "telemetry")
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream: %w", err)
	}
	defer s.Close()
	sess, err := s.handshake(ctx)
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream: handshake through %s: %w", s.Broker, err)
	}
	n := m.Spec.Iterations
	stream := s.Watch(n, s.failedLink, p.Progress)
	rng := trial.NewDRBG(m.Spec.Seed, artifacts.AEADAscon128Std+"/"+artifacts.OpTelemetry)
	frames := make([]telemetry.Message, n)
	plain := make([][]byte, n)
	starts := make([]time.Time, n)
	for i := range n {
		plain[i] = rng.Bytes(spec.PayloadSizes[i%len(spec.PayloadSizes)])
		starts[i] = time.Now()
		f, err := sess.Seal(plain[i])
		if err != nil {
			return trial.Outcome{Cell: trial.Failed(err.Error())}, nil
		}
		if c := binary.BigEndian.Uint64(f.Payload); c != uint64(i) {
			return trial.Outcome{Cell: trial.Failed(fmt.Sprintf("frame %d carries counter %d", i, c))}, nil
		}
		frames[i] = f
		if err := s.dl.Client().PublishAsync(ctx, f); err != nil {
			return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream through %s: frame %d: %w", s.Broker, i, err)
		}
	}
	fail, err := stream.AwaitFrames(ctx, n)
	if fail == "" && err == nil {
		fail, err = stream.Attack(ctx, frames, spec.Replays, spec.Tamperings)
	}
	if err != nil {
		return trial.Outcome{}, err
	}
	if fail != "" {
		return trial.Outcome{Cell: trial.Failed(fail)}, nil
	}
	samples := make([]float64, 0, n)
	counts, last, fail := stream.Counts(n, spec.Replays, spec.Tamperings, func(i int, d *Delivery) string {
		if !bytes.Equal(d.Plaintext, plain[i]) {
			return fmt.Sprintf("frame %d: the gateway delivered another plaintext than was sealed", i)
		}
		samples = append(samples, float64(d.At.Sub(starts[i]).Nanoseconds()))
		return ""
	})
	if fail != "" {
		return trial.Outcome{Cell: trial.Failed(fail)}, nil
	}
	over := Overheads(spec.PayloadSizes, n, func(i int) int { return len(frames[i].Payload) - len(plain[i]) })
	return trial.Outcome{
		Cell: artifacts.Cell{
			Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds,
			Counter: "monotonic clock (time.Now/time.Since), ns: seal to delivery at the gateway, frames pipelined (queueing included)",
			MQTT:    &artifacts.MQTTCell{Sizes: spec.PayloadSizes, Broker: s.Broker, Frames: counts, Overhead: over, ThroughputFPS: Throughput(n, starts[0], last)},
		},
		Samples: samples,
	}, nil
}
