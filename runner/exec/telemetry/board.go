package telemetry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/artifacts"
	"pqrepro/ascon"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
	"pqrepro/telemetry"
	"pqrepro/telemetry/mqtt"
)

// The mqtt-telemetry kind on a board (firmware/PROTOCOL.md, "Telemetry device"): the
// firmware is the device of firmware/TELEMETRY.md, the runner is its network (what the board
// sends on the serial line, the runner publishes on the broker) and runs the gateway, which
// verifies and decrypts every frame before it counts. Counts are the board's: instructions
// under QEMU. Both modes: pinned, and forward-secret (the board verifies the gateway's
// ML-DSA-44-signed ephemeral key, which the runner relays from the broker, TELSK/TELRQ/TELOF/
// TELFS).

// BoardDevice is the device id a board runs under.
const BoardDevice = "pqrepro-board"

// boardAD is the length of the associated data of the board's frames (u16 length, topic,
// u64 counter), which the AEAD cells time with: the same cost as a frame's.
var boardAD = 2 + len(telemetry.DataTopic(BoardDevice, telemetry.SessionID{})) + 8

// mqttRun is one cell's gateway harness and the board's network link.
type mqttRun struct {
	*Harness
	net     *mqtt.Client // the board's network: publishes what the board sends
	ek, psk []byte
	fs      bool                   // forward-secret handshakes
	offers  chan telemetry.Message // the gateway's offers, as the board's network receives them
}

// failedLink is the run-breaking error of a lost connection, the gateway's or the board's
// network's.
func (s *mqttRun) failedLink() error { return s.FailedLink(s.net) }

// boardGatewayKey derives the gateway's key pair and the device's psk from the manifest
// seed, so that two runs of a manifest give the board the same key and so the same counts
// (ML-KEM's matrix sampling depends on the key). These are benchmark keys, as predictable as
// the board's seeded DRBG; a deployment draws both at random.
func boardGatewayKey(seed string) (ek []byte, sk *mlkem512.PrivateKey, psk []byte) {
	h := sha256.Sum256([]byte("pqrepro board gateway key\x00" + seed))
	h2 := sha256.Sum256(append(h[:], 1))
	pk, sk := mlkem512.NewKeyFromSeed(append(h[:], h2[:]...))
	ek = make([]byte, mlkem512.PublicKeySize)
	pk.Pack(ek)
	p := sha256.Sum256([]byte("pqrepro board psk\x00" + seed))
	return ek, sk, p[:16]
}

// boardSigningKey derives the gateway's ML-DSA-44 key of the forward-secret mode from the
// manifest seed, as boardGatewayKey does (a benchmark key; the ephemeral keys and signatures
// are drawn from crypto/rand by the gateway).
func boardSigningKey(seed string) (*mldsa44.PublicKey, *mldsa44.PrivateKey) {
	h := sha256.Sum256([]byte("pqrepro board gateway signing key\x00" + seed))
	return mldsa44.NewKeyFromSeed(&h)
}

// newMQTTRun starts the broker (embedded unless the spec names one), the gateway and the
// board's network link, and pins the gateway's key on the board.
func newMQTTRun(ctx context.Context, c *wire.Conn, m *artifacts.Manifest, name string, log io.Writer) (*mqttRun, error) {
	spec := m.Spec.MQTT
	ek, sk, psk := boardGatewayKey(m.Spec.Seed)
	gcfg := telemetry.GatewayConfig{DecapsulationKey: sk, Devices: map[string][]byte{BoardDevice: psk}}
	var spk *mldsa44.PublicKey
	if spec.ForwardSecret {
		spk, gcfg.SigningKey = boardSigningKey(m.Spec.Seed)
	}
	h, err := StartHarness(ctx, spec, name, gcfg)
	if err != nil {
		return nil, err
	}
	s := &mqttRun{Harness: h, ek: ek, psk: psk, fs: spec.ForwardSecret, offers: make(chan telemetry.Message, 4)}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	var onOffer mqtt.Handler
	if s.fs {
		onOffer = func(msg telemetry.Message) {
			if msg.Topic != telemetry.OfferTopic(BoardDevice) {
				return
			}
			select {
			case s.offers <- msg:
			default:
			}
		}
	}
	s.net, err = mqtt.Dial(ctx, s.Addr, "pqrepro-dev-"+BoardDevice, onOffer)
	if err != nil {
		return nil, fmt.Errorf("broker %s: the board's link: %w", s.Broker, err)
	}
	s.OnClose(func() { s.net.Close() })
	if s.fs {
		if err := s.net.Subscribe(ctx, telemetry.OfferTopic(BoardDevice)); err != nil {
			return nil, fmt.Errorf("broker %s: the board's offer topic: %w", s.Broker, err)
		}
		pkh, err := c.TelPinSigner(ctx, spk.Bytes())
		if err != nil {
			return nil, fmt.Errorf("pinning the gateway's signing key on the board: %w", err)
		}
		if h := ascon.Sum256(spk.Bytes()); !bytes.Equal(pkh, h[:8]) {
			return nil, fmt.Errorf("%w: the board's H(pk) %x differs from the signing key's %x", wire.ErrProtocol, pkh, h[:8])
		}
		fmt.Fprintf(log, "mqtt %s: gateway signing key (ML-DSA-44) pinned on the board (H(pk) %x…)\n", name, pkh)
	}
	ekh, err := c.TelPin(ctx, ek)
	if err != nil {
		return nil, fmt.Errorf("pinning the gateway key on the board: %w", err)
	}
	if h := ascon.Sum256(ek); !bytes.Equal(ekh, h[:8]) {
		return nil, fmt.Errorf("%w: the board's H(ek) %x differs from the gateway key's %x", wire.ErrProtocol, ekh, h[:8])
	}
	fmt.Fprintf(log, "mqtt %s: broker %s at %s, gateway key pinned on the board (H(ek) %x…)\n", name, s.Broker, s.Addr, ekh)
	ok = true
	return s, nil
}

// handshake has the board open a session, publishes its handshake and waits for the gateway
// to open the same session.
func (s *mqttRun) handshake(ctx context.Context, c *wire.Conn) (wire.TelHandshake, error) {
	hs, err := c.TelHandshake(ctx, BoardDevice, s.psk)
	if err != nil {
		return hs, err
	}
	if err := s.net.Publish(ctx, telemetry.Message{Topic: telemetry.HandshakeTopic(BoardDevice), Payload: hs.Payload}); err != nil {
		return hs, fmt.Errorf("broker %s: handshake: %w", s.Broker, err)
	}
	return hs, s.AwaitSession(ctx, telemetry.SessionID(hs.SessionID))
}

// handshakeFS is the forward-secret handshake: the board's request published, the gateway's
// signed offer relayed from the broker to the board, which checks it (against the runner's
// clock: the board has none) and encapsulates; its handshake published; then as handshake.
// An offer the board refuses is an error naming the board's reason.
func (s *mqttRun) handshakeFS(ctx context.Context, c *wire.Conn) (wire.TelFSHandshake, error) {
	for len(s.offers) > 0 {
		<-s.offers
	}
	rq, err := c.TelRequest(ctx, BoardDevice, s.psk)
	if err != nil {
		return wire.TelFSHandshake{}, err
	}
	if err := s.net.Publish(ctx, telemetry.Message{Topic: telemetry.RequestTopic(BoardDevice), Payload: rq}); err != nil {
		return wire.TelFSHandshake{}, fmt.Errorf("broker %s: key request: %w", s.Broker, err)
	}
	var offer telemetry.Message
	select {
	case offer = <-s.offers:
	case <-s.net.Gone():
		return wire.TelFSHandshake{}, s.net.Err()
	case <-ctx.Done():
		return wire.TelFSHandshake{}, ctx.Err()
	case <-time.After(Wait):
		return wire.TelFSHandshake{}, fmt.Errorf("the gateway sent no signed key within %s", Wait)
	}
	if err := c.TelOffer(ctx, offer.Payload); err != nil {
		return wire.TelFSHandshake{}, err
	}
	hs, err := c.TelForwardSecret(ctx, time.Now().Unix())
	if err != nil {
		return hs, err
	}
	if !hs.OK {
		return hs, fmt.Errorf("the board refused the gateway's signed key: %s", hs.Reason)
	}
	if err := s.net.Publish(ctx, telemetry.Message{Topic: telemetry.HandshakeTopic(BoardDevice), Payload: hs.Payload}); err != nil {
		return hs, fmt.Errorf("broker %s: handshake: %w", s.Broker, err)
	}
	return hs, s.AwaitSession(ctx, telemetry.SessionID(hs.SessionID))
}

func dataTopic(sid [8]byte) string { return telemetry.DataTopic(BoardDevice, telemetry.SessionID(sid)) }

// roundTrip has the board seal one frame in its session and waits for the gateway to deliver
// the plaintext the board hashed.
func (s *mqttRun) roundTrip(ctx context.Context, c *wire.Conn, sid [8]byte) error {
	wait := s.CatchFrame(nil)
	var f wire.TelFrame
	if _, err := c.TelSeal(ctx, 1, []int{15}, func(tf wire.TelFrame) error {
		f = tf
		if !tf.OK {
			return fmt.Errorf("the board could not seal: %s", tf.Reason)
		}
		return s.net.Publish(ctx, telemetry.Message{Topic: dataTopic(sid), Payload: tf.Payload})
	}); err != nil {
		return err
	}
	p, err := wait()
	if err != nil {
		return err
	}
	if h := ascon.Sum256(p); !bytes.Equal(h[:], f.PlainHash) {
		return errors.New("the gateway delivered another plaintext than the board sealed")
	}
	return nil
}

// Board is the device layer's mqtt-telemetry executor (device.Executor): it measures one
// cell with the board as the device.
func Board(ctx context.Context, dc device.Cell) (runner.CellResult, error) {
	c, h, m, ref, log, progress := dc.Conn, dc.Hello, dc.Manifest, dc.Ref, dc.Log, dc.Progress
	spec := m.Spec.MQTT
	fw := h.Firmware + " " + h.Version
	if err := c.Seed(ctx, device.CellSeed(m.Spec.Seed, ref)); err != nil {
		return runner.CellResult{}, err
	}
	var r runner.CellResult
	var err error
	switch ref.Operation {
	case artifacts.OpSeal, artifacts.OpOpen:
		r, err = boardAEADCell(ctx, c, m, ref, progress)
	case artifacts.OpSession:
		if spec.ForwardSecret {
			r, err = boardFSHandshakeCell(ctx, c, m, log, progress)
		} else {
			r, err = boardHandshakeCell(ctx, c, m, log, progress)
		}
	case artifacts.OpTelemetry:
		r, err = boardTelemetryCell(ctx, c, m, log, progress)
	default:
		return device.Skipped("no mqtt-telemetry operation " + ref.Operation), nil
	}
	var de *wire.DeviceError
	if errors.As(err, &de) && de.Code == "unknown" {
		return device.Skipped(fmt.Sprintf("firmware %s is not a telemetry device (it does not know %s)", fw, "TELEK/TELHS/TELSK/TELRQ/TELOF/TELFS/TELSEAL/AEADBENCH")), nil
	}
	return r, err
}

// boardAEADCell times the board's seal or open of one AEAD, payload sizes round-robin, with
// associated data as long as a frame's, and fits fixed and per-byte costs.
func boardAEADCell(ctx context.Context, c *wire.Conn, m *artifacts.Manifest, ref artifacts.CellRef, progress func(int)) (runner.CellResult, error) {
	spec := m.Spec.MQTT
	var (
		samples  []float64
		stackMax uint32
		firstBad string
	)
	req := wire.AEADBenchRequest{AEAD: ref.Algorithm, Op: ref.Operation, Sizes: spec.PayloadSizes, ADLen: boardAD,
		Iterations: m.Spec.Iterations, Warmup: min(m.Spec.Warmup, 1000)}
	sum, err := c.AEADBench(ctx, req, func(s wire.Sample, size int) {
		if !s.OK {
			if firstBad == "" {
				firstBad = fmt.Sprintf("iteration %d (%d bytes): %s", s.Index, size, device.OrNone(s.Reason))
			}
			return
		}
		samples = append(samples, float64(s.Count))
		stackMax = max(stackMax, s.StackBytes)
		progress(len(samples))
	})
	var de *wire.DeviceError
	switch {
	case errors.As(err, &de) && de.Code == "unsupported":
		return device.Skipped(fmt.Sprintf("the firmware refuses %s %s: %v", ref.Algorithm, ref.Operation, de)), nil
	case err != nil:
		return runner.CellResult{}, err
	}
	if firstBad != "" {
		return device.Failed(fmt.Sprintf("%d of %d samples failed the firmware's check; first: %s", sum.Fail, sum.N, firstBad)), nil
	}
	if sum.OK != len(samples) {
		return runner.CellResult{}, fmt.Errorf("%w: the firmware's summary (%d ok) disagrees with the samples it sent (%d)", wire.ErrProtocol, sum.OK, len(samples))
	}
	fit, err := artifacts.FitMedians(spec.PayloadSizes, artifacts.GroupBySize(spec.PayloadSizes, samples))
	if err != nil {
		return device.Failed(err.Error()), nil
	}
	r := runner.CellResult{Samples: samples}
	r.Cell.Status = artifacts.StatusOK
	stack := int(stackMax)
	r.Cell.Memory = &artifacts.Memory{StackBytes: &stack}
	r.Cell.MQTT = &artifacts.MQTTCell{Sizes: spec.PayloadSizes, Fit: &fit}
	return r, nil
}

// boardHandshakeCell: per iteration the board encapsulates to the pinned key and derives the
// session keys (the timed part, on the board), the runner publishes the handshake through the
// broker and the gateway must open that session; an untimed frame sealed in it must reach the
// gateway before the sample counts.
func boardHandshakeCell(ctx context.Context, c *wire.Conn, m *artifacts.Manifest, log io.Writer, progress func(int)) (runner.CellResult, error) {
	s, err := newMQTTRun(ctx, c, m, "handshake", log)
	if err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry handshake: %w", err)
	}
	defer s.Close()
	var (
		samples     []float64
		stackMax    uint32
		encaps, kdf []float64
	)
	for i := -m.Spec.Warmup; i < m.Spec.Iterations; i++ {
		hs, err := s.handshake(ctx, c)
		if err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry handshake %d: %w", i, err)
		}
		if err := s.roundTrip(ctx, c, hs.SessionID); err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry handshake %d: its check frame: %w", i, err)
		}
		if i < 0 {
			continue
		}
		samples = append(samples, float64(hs.Count))
		encaps, kdf = append(encaps, float64(hs.Encaps)), append(kdf, float64(hs.KDF))
		stackMax = max(stackMax, hs.StackBytes)
		progress(len(samples))
	}
	if err := s.failedLink(); err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry handshake: %w", err)
	}
	fmt.Fprintf(log, "mqtt handshake: median %.0f = encapsulation %.0f + key derivation %.0f (board counter), stack %d bytes\n",
		artifacts.Summarize(samples).Median, artifacts.Summarize(encaps).Median, artifacts.Summarize(kdf).Median, stackMax)
	r := runner.CellResult{Samples: samples}
	r.Cell.Status = artifacts.StatusOK
	stack := int(stackMax)
	r.Cell.Memory = &artifacts.Memory{StackBytes: &stack}
	r.Cell.MQTT = &artifacts.MQTTCell{Broker: s.Broker, Mode: "pinned", HandshakeBytes: wire.TelHandshakeSize}
	r.Cell.Counter = "the board's counter around its ML-KEM-512 encapsulation and the Ascon key derivation (the broker and gateway are not in the count)"
	return r, nil
}

// boardFSHandshakeCell: forward-secret handshakes through the broker, each checked with a
// frame the gateway must deliver. A sample is the board's count for one handshake: the
// ML-DSA-44 verification of the offer, its nonce, expiry and key checks, the ML-KEM-512
// encapsulation and the key derivation; the log gives the verification apart.
func boardFSHandshakeCell(ctx context.Context, c *wire.Conn, m *artifacts.Manifest, log io.Writer, progress func(int)) (runner.CellResult, error) {
	s, err := newMQTTRun(ctx, c, m, "handshake", log)
	if err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry forward-secret handshake: %w", err)
	}
	defer s.Close()
	var (
		samples                     []float64
		stackMax                    uint32
		verify, accept, encaps, kdf []float64
	)
	for i := -m.Spec.Warmup; i < m.Spec.Iterations; i++ {
		hs, err := s.handshakeFS(ctx, c)
		if err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry forward-secret handshake %d: %w", i, err)
		}
		if err := s.roundTrip(ctx, c, hs.SessionID); err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry forward-secret handshake %d: its check frame: %w", i, err)
		}
		if i < 0 {
			continue
		}
		samples = append(samples, float64(hs.Count))
		verify, accept = append(verify, float64(hs.Verify)), append(accept, float64(hs.Accept))
		encaps, kdf = append(encaps, float64(hs.Encaps)), append(kdf, float64(hs.KDF))
		stackMax = max(stackMax, hs.StackBytes)
		progress(len(samples))
	}
	if err := s.failedLink(); err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry forward-secret handshake: %w", err)
	}
	med := func(x []float64) float64 { return artifacts.Summarize(x).Median }
	fmt.Fprintf(log, "mqtt forward-secret handshake: median %.0f = ML-DSA-44 verification %.0f + offer checks %.0f + encapsulation %.0f + key derivation %.0f (board counter), stack %d bytes\n",
		med(samples), med(verify), med(accept), med(encaps), med(kdf), stackMax)
	r := runner.CellResult{Samples: samples}
	r.Cell.Status = artifacts.StatusOK
	stack := int(stackMax)
	r.Cell.Memory = &artifacts.Memory{StackBytes: &stack}
	r.Cell.MQTT = &artifacts.MQTTCell{Broker: s.Broker, Mode: "forward-secret",
		HandshakeBytes: wire.TelRequestSize + wire.TelOfferSize + wire.TelFSHandshakeSize}
	r.Cell.Counter = "the board's counter around its ML-DSA-44 verification of the signed ephemeral key, the nonce/expiry/key checks, its ML-KEM-512 encapsulation and the Ascon key derivation (the broker and gateway are not in the count)"
	return r, nil
}

// boardTelemetryCell: one handshake, then the board seals spec.iterations frames (payload
// sizes round-robin) which the runner publishes as they arrive on the line; the run's
// adversary then replays old frames and publishes bit-flipped copies. A sample is the board's
// count for sealing one frame, kept only once the gateway delivered exactly the plaintext the
// board hashed.
func boardTelemetryCell(ctx context.Context, c *wire.Conn, m *artifacts.Manifest, log io.Writer, progress func(int)) (runner.CellResult, error) {
	spec := m.Spec.MQTT
	s, err := newMQTTRun(ctx, c, m, "telemetry", log)
	if err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: %w", err)
	}
	defer s.Close()
	// The stream's session is opened in the manifest's mode.
	var sid [8]byte
	if s.fs {
		hs, err := s.handshakeFS(ctx, c)
		if err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: forward-secret handshake through %s: %w", s.Broker, err)
		}
		sid = hs.SessionID
	} else {
		hs, err := s.handshake(ctx, c)
		if err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: handshake through %s: %w", s.Broker, err)
		}
		sid = hs.SessionID
	}
	topic := dataTopic(sid)
	n := m.Spec.Iterations
	stream := s.Watch(n, s.failedLink, nil)
	frames := make([]wire.TelFrame, 0, n)
	msgs := make([]telemetry.Message, 0, n)
	var start time.Time
	var failed string
	_, err = c.TelSeal(ctx, n, spec.PayloadSizes, func(f wire.TelFrame) error {
		if !f.OK {
			if failed == "" {
				failed = fmt.Sprintf("frame %d: the board could not seal: %s", f.Index, device.OrNone(f.Reason))
			}
			return nil
		}
		if f.Counter != uint64(f.Index) {
			return fmt.Errorf("%w: frame %d carries counter %d", wire.ErrProtocol, f.Index, f.Counter)
		}
		if len(frames) == 0 {
			start = time.Now()
		}
		frames = append(frames, f)
		msgs = append(msgs, telemetry.Message{Topic: topic, Payload: f.Payload})
		if err := s.net.PublishAsync(ctx, msgs[len(msgs)-1]); err != nil {
			return fmt.Errorf("broker %s: frame %d: %w", s.Broker, f.Index, err)
		}
		progress(stream.Delivered())
		return nil
	})
	if err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: %w", err)
	}
	if failed != "" {
		return device.Failed(failed), nil
	}
	fail, err := stream.AwaitFrames(ctx, n)
	if fail == "" && err == nil {
		fail, err = stream.Attack(ctx, msgs, spec.Replays, spec.Tamperings)
	}
	if err != nil {
		return runner.CellResult{}, err
	}
	if fail != "" {
		return device.Failed(fail), nil
	}
	samples := make([]float64, 0, n)
	var stackMax uint32
	counts, last, fail := stream.Counts(n, spec.Replays, spec.Tamperings, func(i int, d *Delivery) string {
		if h := ascon.Sum256(d.Plaintext); !bytes.Equal(h[:], frames[i].PlainHash) {
			return fmt.Sprintf("frame %d: the gateway delivered another plaintext than the board sealed", i)
		}
		samples = append(samples, float64(frames[i].Count))
		stackMax = max(stackMax, frames[i].StackBytes)
		return ""
	})
	if fail != "" {
		return device.Failed(fail), nil
	}
	over := Overheads(spec.PayloadSizes, n, func(i int) int { return len(frames[i].Payload) - frames[i].Size })
	fps := Throughput(n, start, last)
	fmt.Fprintf(log, "mqtt stream: %d frames sealed by the board, %d verified, refused %v, %d missing; %.0f frames/s through the serial line and the broker\n",
		n, counts.Verified, counts.Rejected, counts.Missing, fps)
	r := runner.CellResult{Samples: samples}
	r.Cell.Status = artifacts.StatusOK
	stack := int(stackMax)
	r.Cell.Memory = &artifacts.Memory{StackBytes: &stack}
	r.Cell.Counter = "the board's counter around sealing one frame (nonce, associated data, Ascon-AEAD128), kept once the gateway verified it; throughput is wall time through the serial line"
	r.Cell.MQTT = &artifacts.MQTTCell{Sizes: spec.PayloadSizes, Broker: s.Broker, Frames: counts, Overhead: over, ThroughputFPS: fps}
	return r, nil
}
