package device

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/artifacts"
	"pqrepro/ascon"
	"pqrepro/runner"
	hostboard "pqrepro/runner/host"
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

const (
	// BoardDevice is the device id a board runs under.
	BoardDevice = "pqrepro-board"
	mqttWait    = 30 * time.Second
)

// boardAD is the length of the associated data of the board's frames (u16 length, topic,
// u64 counter), which the AEAD cells time with: the same cost as a frame's.
var boardAD = 2 + len(telemetry.TopicPrefix+BoardDevice+"/d/") + 16 + 8

// mqttRun is one cell's broker, gateway and the board's network link.
type mqttRun struct {
	broker  string
	addr    string
	closers []func()
	gw      *telemetry.Gateway
	gl      *mqtt.GatewayLink
	net     *mqtt.Client // the board's network: publishes what the board sends
	ek, psk []byte
	fs      bool                   // forward-secret handshakes
	offers  chan telemetry.Message // the gateway's offers, as the board's network receives them

	mu       sync.Mutex
	sessions chan telemetry.SessionID
	onFrame  func(mqtt.Verdict)
	other    func(mqtt.Verdict)
}

func (s *mqttRun) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

func (s *mqttRun) failedLink() error {
	for _, c := range []*mqtt.Client{s.gl.Client(), s.net} {
		if err := c.Err(); err != nil {
			return fmt.Errorf("broker %s: %w", s.broker, err)
		}
	}
	return nil
}

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
	s := &mqttRun{sessions: make(chan telemetry.SessionID, 16), fs: spec.ForwardSecret, offers: make(chan telemetry.Message, 4)}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	if spec.Broker == artifacts.MQTTBrokerEmbedded {
		e, err := mqtt.StartEmbedded("", 0, nil)
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, func() { e.Close() })
		s.addr, s.broker = e.Addr(), e.Name()
	} else {
		addr, err := artifacts.MQTTBrokerAddr(spec.Broker)
		if err != nil {
			return nil, err
		}
		s.addr, s.broker = addr, spec.Broker
	}
	ek, sk, psk := boardGatewayKey(m.Spec.Seed)
	s.ek, s.psk = ek, psk
	var err error
	gcfg := telemetry.GatewayConfig{DecapsulationKey: sk, Devices: map[string][]byte{BoardDevice: psk}}
	var spk *mldsa44.PublicKey
	if s.fs {
		spk, gcfg.SigningKey = boardSigningKey(m.Spec.Seed)
	}
	s.gw, err = telemetry.NewGateway(gcfg)
	if err != nil {
		return nil, err
	}
	s.gl, err = mqtt.DialGateway(ctx, s.addr, "pqrepro-gateway-"+name, s.gw, func(v mqtt.Verdict) {
		if v.Err == nil && v.Event.Kind == telemetry.EventSession {
			select {
			case s.sessions <- v.Event.Session:
			default:
			}
			return
		}
		s.mu.Lock()
		f, o := s.onFrame, s.other
		s.mu.Unlock()
		if v.Err == nil && v.Event.Kind == telemetry.EventFrame && f != nil {
			f(v)
		} else if o != nil {
			o(v)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", s.broker, err)
	}
	s.closers = append(s.closers, func() { s.gl.Close() })
	var onOffer mqtt.Handler
	if s.fs {
		onOffer = func(msg telemetry.Message) {
			if msg.Topic != mqtt.OfferTopic(BoardDevice) {
				return
			}
			select {
			case s.offers <- msg:
			default:
			}
		}
	}
	s.net, err = mqtt.Dial(ctx, s.addr, "pqrepro-dev-"+BoardDevice, onOffer)
	if err != nil {
		return nil, fmt.Errorf("broker %s: the board's link: %w", s.broker, err)
	}
	s.closers = append(s.closers, func() { s.net.Close() })
	if s.fs {
		if err := s.net.Subscribe(ctx, mqtt.OfferTopic(BoardDevice)); err != nil {
			return nil, fmt.Errorf("broker %s: the board's offer topic: %w", s.broker, err)
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
	fmt.Fprintf(log, "mqtt %s: broker %s at %s, gateway key pinned on the board (H(ek) %x…)\n", name, s.broker, s.addr, ekh)
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
	if err := s.net.Publish(ctx, telemetry.Message{Topic: telemetry.TopicPrefix + BoardDevice + "/hs", Payload: hs.Payload}); err != nil {
		return hs, fmt.Errorf("broker %s: handshake: %w", s.broker, err)
	}
	timer := time.NewTimer(mqttWait)
	defer timer.Stop()
	for {
		select {
		case sid := <-s.sessions:
			if sid == telemetry.SessionID(hs.SessionID) {
				return hs, nil
			}
		case <-s.gl.Client().Gone():
			return hs, s.gl.Client().Err()
		case <-ctx.Done():
			return hs, ctx.Err()
		case <-timer.C:
			return hs, fmt.Errorf("the gateway opened no session %x within %s", hs.SessionID, mqttWait)
		}
	}
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
	if err := s.net.Publish(ctx, telemetry.Message{Topic: telemetry.TopicPrefix + BoardDevice + "/rq", Payload: rq}); err != nil {
		return wire.TelFSHandshake{}, fmt.Errorf("broker %s: key request: %w", s.broker, err)
	}
	var offer telemetry.Message
	select {
	case offer = <-s.offers:
	case <-s.net.Gone():
		return wire.TelFSHandshake{}, s.net.Err()
	case <-ctx.Done():
		return wire.TelFSHandshake{}, ctx.Err()
	case <-time.After(mqttWait):
		return wire.TelFSHandshake{}, fmt.Errorf("the gateway sent no signed key within %s", mqttWait)
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
	if err := s.net.Publish(ctx, telemetry.Message{Topic: telemetry.TopicPrefix + BoardDevice + "/hs", Payload: hs.Payload}); err != nil {
		return hs, fmt.Errorf("broker %s: handshake: %w", s.broker, err)
	}
	return hs, s.awaitSession(ctx, hs.SessionID)
}

// awaitSession waits for the gateway to open session sid.
func (s *mqttRun) awaitSession(ctx context.Context, sid [8]byte) error {
	timer := time.NewTimer(mqttWait)
	defer timer.Stop()
	for {
		select {
		case got := <-s.sessions:
			if got == telemetry.SessionID(sid) {
				return nil
			}
		case <-s.gl.Client().Gone():
			return s.gl.Client().Err()
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("the gateway opened no session %x within %s", sid, mqttWait)
		}
	}
}

func dataTopic(sid [8]byte) string {
	return fmt.Sprintf("%s%s/d/%x", telemetry.TopicPrefix, BoardDevice, sid[:])
}

// roundTrip has the board seal one frame in its session and waits for the gateway to deliver
// the plaintext the board hashed.
func (s *mqttRun) roundTrip(ctx context.Context, c *wire.Conn, sid [8]byte) error {
	got := make(chan []byte, 1)
	s.mu.Lock()
	s.onFrame = func(v mqtt.Verdict) {
		select {
		case got <- v.Event.Plaintext:
		default:
		}
	}
	s.mu.Unlock()
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
	select {
	case p := <-got:
		if h := ascon.Sum256(p); !bytes.Equal(h[:], f.PlainHash) {
			return errors.New("the gateway delivered another plaintext than the board sealed")
		}
		return nil
	case <-s.gl.Client().Gone():
		return s.gl.Client().Err()
	case <-time.After(mqttWait):
		return fmt.Errorf("the gateway delivered no frame within %s", mqttWait)
	}
}

// runMQTTCell measures one mqtt-telemetry cell with the board as the device.
func runMQTTCell(ctx context.Context, c *wire.Conn, h wire.Hello, m *artifacts.Manifest, ref artifacts.CellRef, log io.Writer, progress func(int)) (runner.CellResult, error) {
	spec := m.Spec.MQTT
	fw := h.Firmware + " " + h.Version
	if err := c.Seed(ctx, CellSeed(m.Spec.Seed, ref)); err != nil {
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
		return skipped("no mqtt-telemetry operation " + ref.Operation), nil
	}
	var de *wire.DeviceError
	if errors.As(err, &de) && de.Code == "unknown" {
		return skipped(fmt.Sprintf("firmware %s is not a telemetry device (it does not know %s)", fw, "TELEK/TELHS/TELSK/TELRQ/TELOF/TELFS/TELSEAL/AEADBENCH")), nil
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
				firstBad = fmt.Sprintf("iteration %d (%d bytes): %s", s.Index, size, orNone(s.Reason))
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
		return skipped(fmt.Sprintf("the firmware refuses %s %s: %v", ref.Algorithm, ref.Operation, de)), nil
	case err != nil:
		return runner.CellResult{}, err
	}
	if firstBad != "" {
		return failedCell(fmt.Sprintf("%d of %d samples failed the firmware's check; first: %s", sum.Fail, sum.N, firstBad)), nil
	}
	if sum.OK != len(samples) {
		return runner.CellResult{}, fmt.Errorf("%w: the firmware's summary (%d ok) disagrees with the samples it sent (%d)", wire.ErrProtocol, sum.OK, len(samples))
	}
	fit, err := artifacts.FitMedians(spec.PayloadSizes, artifacts.GroupBySize(spec.PayloadSizes, samples))
	if err != nil {
		return failedCell(err.Error()), nil
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
	defer s.close()
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
	r.Cell.MQTT = &artifacts.MQTTCell{Broker: s.broker, Mode: "pinned", HandshakeBytes: wire.TelHandshakeSize}
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
	defer s.close()
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
	r.Cell.MQTT = &artifacts.MQTTCell{Broker: s.broker, Mode: "forward-secret",
		HandshakeBytes: wire.TelRequestSize + wire.TelOfferSize + wire.TelFSHandshakeSize}
	r.Cell.Counter = "the board's counter around its ML-DSA-44 verification of the signed ephemeral key, the nonce/expiry/key checks, its ML-KEM-512 encapsulation and the Ascon key derivation (the broker and gateway are not in the count)"
	return r, nil
}

type boardDelivery struct {
	pt    []byte
	times int
	at    time.Time
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
	defer s.close()
	// The stream's session is opened in the manifest's mode.
	var sid [8]byte
	if s.fs {
		hs, err := s.handshakeFS(ctx, c)
		if err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: forward-secret handshake through %s: %w", s.broker, err)
		}
		sid = hs.SessionID
	} else {
		hs, err := s.handshake(ctx, c)
		if err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: handshake through %s: %w", s.broker, err)
		}
		sid = hs.SessionID
	}
	topic := dataTopic(sid)
	n := m.Spec.Iterations
	var (
		mu        sync.Mutex
		delivered = make(map[uint64]*boardDelivery, n)
		verdicts  int
		rejected  = map[telemetry.Reason]int{}
		other     []error
	)
	s.mu.Lock()
	s.onFrame = func(v mqtt.Verdict) {
		mu.Lock()
		defer mu.Unlock()
		verdicts++
		d := delivered[v.Event.Counter]
		if d == nil {
			d = &boardDelivery{pt: v.Event.Plaintext, at: time.Now()}
			delivered[v.Event.Counter] = d
		}
		d.times++
	}
	s.other = func(v mqtt.Verdict) {
		mu.Lock()
		defer mu.Unlock()
		verdicts++
		if r, ok := mqtt.IsRejection(v.Err); ok {
			rejected[r]++
		} else if v.Err != nil {
			other = append(other, v.Err)
		}
	}
	s.mu.Unlock()
	wait := func(what string, cond func() bool) error {
		return hostboard.AwaitDelivery(ctx, &mu, s.failedLink, mqttWait, what, cond)
	}

	frames := make([]wire.TelFrame, 0, n)
	var start time.Time
	var failed string
	_, err = c.TelSeal(ctx, n, spec.PayloadSizes, func(f wire.TelFrame) error {
		if !f.OK {
			if failed == "" {
				failed = fmt.Sprintf("frame %d: the board could not seal: %s", f.Index, orNone(f.Reason))
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
		if err := s.net.PublishAsync(ctx, telemetry.Message{Topic: topic, Payload: f.Payload}); err != nil {
			return fmt.Errorf("broker %s: frame %d: %w", s.broker, f.Index, err)
		}
		mu.Lock()
		progress(len(delivered))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: %w", err)
	}
	if failed != "" {
		return failedCell(failed), nil
	}
	if err := wait(fmt.Sprintf("%d frames at the gateway", n), func() bool { return len(delivered) >= n }); err != nil {
		if lerr := s.failedLink(); lerr != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: %w", lerr)
		}
		mu.Lock()
		got, why := len(delivered), fmt.Sprint(rejected)
		mu.Unlock()
		return failedCell(fmt.Sprintf("%d of %d genuine frames verified (refused: %s; gateway counts %d missing): %v", got, n, why, s.gw.Stats().Missing, err)), nil
	}
	mu.Lock()
	last := time.Time{}
	for _, d := range delivered {
		if d.at.After(last) {
			last = d.at
		}
	}
	before := verdicts
	mu.Unlock()

	// The adversary: a client of its own on the broker, publishing the board's old frames again
	// and altered copies of them.
	adv, err := mqtt.Dial(ctx, s.addr, "pqrepro-adversary", nil)
	if err != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry adversary: %w", err)
	}
	defer adv.Close()
	for i := range spec.Replays {
		if err := adv.Publish(ctx, telemetry.Message{Topic: topic, Payload: frames[i].Payload}); err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry adversary: replay: %w", err)
		}
	}
	for j := range spec.Tamperings {
		p := bytes.Clone(frames[(j*7919)%n].Payload)
		bit := (j * 131) % (8 * len(p))
		p[bit/8] ^= 1 << (bit % 8)
		if err := adv.Publish(ctx, telemetry.Message{Topic: topic, Payload: p}); err != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry adversary: tampering: %w", err)
		}
	}
	if err := wait("the gateway's verdicts on the injected frames", func() bool { return verdicts >= before+spec.Replays+spec.Tamperings }); err != nil {
		if lerr := s.failedLink(); lerr != nil {
			return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: %w", lerr)
		}
		return failedCell(err.Error()), nil
	}
	time.Sleep(20 * time.Millisecond) // a stray extra delivery would show in the counts
	if lerr := s.failedLink(); lerr != nil {
		return runner.CellResult{}, fmt.Errorf("mqtt-telemetry stream: %w", lerr)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(other) > 0 {
		return failedCell(fmt.Sprintf("gateway: %v", other[0])), nil
	}
	counts := &artifacts.FrameCounts{Sent: n, InjectedReplays: spec.Replays, InjectedTamperings: spec.Tamperings, Rejected: map[string]int{}}
	for _, r := range telemetry.Reasons() {
		counts.Rejected[r.String()] = rejected[r]
	}
	counts.Missing = int(s.gw.Stats().Missing)
	samples := make([]float64, 0, n)
	var stackMax uint32
	for i, f := range frames {
		d := delivered[uint64(i)]
		if d == nil {
			return failedCell(fmt.Sprintf("frame %d was never delivered", i)), nil
		}
		if d.times > 1 {
			counts.Duplicated++
		}
		if h := ascon.Sum256(d.pt); !bytes.Equal(h[:], f.PlainHash) {
			return failedCell(fmt.Sprintf("frame %d: the gateway delivered another plaintext than the board sealed", i)), nil
		}
		samples = append(samples, float64(f.Count))
		stackMax = max(stackMax, f.StackBytes)
	}
	counts.Verified = len(samples)
	var over []artifacts.SizeOverhead
	for k, size := range spec.PayloadSizes {
		o := artifacts.SizeOverhead{Size: size, Min: -1}
		for i := k; i < n; i += len(spec.PayloadSizes) {
			d := len(frames[i].Payload) - frames[i].Size
			if o.Min < 0 || d < o.Min {
				o.Min = d
			}
			o.Max = max(o.Max, d)
			o.Frames++
		}
		o.Min = max(o.Min, 0)
		over = append(over, o)
	}
	fps := 0.0
	if el := last.Sub(start); el > 0 {
		fps = float64(n) / el.Seconds()
	}
	fmt.Fprintf(log, "mqtt stream: %d frames sealed by the board, %d verified, refused %v, %d missing; %.0f frames/s through the serial line and the broker\n",
		n, counts.Verified, counts.Rejected, counts.Missing, fps)
	r := runner.CellResult{Samples: samples}
	r.Cell.Status = artifacts.StatusOK
	stack := int(stackMax)
	r.Cell.Memory = &artifacts.Memory{StackBytes: &stack}
	r.Cell.Counter = "the board's counter around sealing one frame (nonce, associated data, Ascon-AEAD128), kept once the gateway verified it; throughput is wall time through the serial line"
	r.Cell.MQTT = &artifacts.MQTTCell{Sizes: spec.PayloadSizes, Broker: s.broker, Frames: counts, Overhead: over, ThroughputFPS: fps}
	return r, nil
}
