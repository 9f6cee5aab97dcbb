package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
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

const (
	mqttDevice = "pqrepro-host-device"
	mqttWait   = 30 * time.Second
)

func mqttCell(ctx context.Context, c hostCell) (trial.Outcome, error) {
	switch c.ref.Operation {
	case artifacts.OpSeal, artifacts.OpOpen:
		return aeadCell(ctx, c.m, c.ref, c.plan)
	case artifacts.OpSession:
		return mqttHandshakeCell(ctx, c.m, c.plan)
	case artifacts.OpTelemetry:
		return mqttTelemetryCell(ctx, c.m, c.plan)
	}
	return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "no mqtt-telemetry operation " + c.ref.Operation}}, nil
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
	topic := telemetry.TopicPrefix + mqttDevice + "/d/0123456789abcdef"
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

// mqttSetup is one cell's broker, gateway and device, all connected.
type mqttSetup struct {
	broker  string
	closers []func()
	gw      *telemetry.Gateway
	gl      *mqtt.GatewayLink
	dl      *mqtt.DeviceLink
	addr    string
	fs      bool

	mu       sync.Mutex
	sessions chan telemetry.SessionID
	onFrame  func(mqtt.Verdict)
	other    func(mqtt.Verdict)
}

func (s *mqttSetup) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// failedLink is the run-breaking error of a lost connection, or nil.
func (s *mqttSetup) failedLink() error {
	for _, c := range []*mqtt.Client{s.gl.Client(), s.dl.Client()} {
		if err := c.Err(); err != nil {
			return fmt.Errorf("broker %s: %w", s.broker, err)
		}
	}
	return nil
}

// newMQTTSetup starts the broker (embedded unless the spec names one), a gateway with fresh
// keys and a device pinned to them. The keys are drawn from crypto/rand: a session key must
// be unpredictable, also in a benchmark run whose payloads are seed-derived.
func newMQTTSetup(ctx context.Context, m *artifacts.Manifest, name string) (*mqttSetup, error) {
	spec := m.Spec.MQTT
	s := &mqttSetup{fs: spec.ForwardSecret, sessions: make(chan telemetry.SessionID, 16)}
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
	s.gw, err = telemetry.NewGateway(telemetry.GatewayConfig{DecapsulationKey: sk, SigningKey: ssk, Devices: map[string][]byte{mqttDevice: psk}})
	if err != nil {
		return nil, err
	}
	d, err := telemetry.NewDevice(telemetry.DeviceConfig{ID: mqttDevice, GatewayKey: ek, SigningKey: spk.Bytes(), PSK: psk})
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
	s.dl, err = mqtt.DialDevice(ctx, s.addr, mqttDevice, d)
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", s.broker, err)
	}
	s.closers = append(s.closers, func() { s.dl.Close() })
	ok = true
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
	timer := time.NewTimer(mqttWait)
	defer timer.Stop()
	for {
		select {
		case sid := <-s.sessions:
			if sid == sess.ID() {
				return sess, nil
			}
		case <-s.gl.Client().Gone():
			return nil, s.gl.Client().Err()
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, fmt.Errorf("the gateway opened no session %s within %s", sess.ID(), mqttWait)
		}
	}
}

// roundTrip sends one frame and waits for the gateway to deliver exactly its plaintext.
func (s *mqttSetup) roundTrip(ctx context.Context, sess *telemetry.Session, pt []byte) error {
	got := make(chan []byte, 1)
	s.mu.Lock()
	s.onFrame = func(v mqtt.Verdict) {
		if v.Event.Session == sess.ID() {
			select {
			case got <- v.Event.Plaintext:
			default:
			}
		}
	}
	s.mu.Unlock()
	if _, err := s.dl.Send(ctx, sess, pt); err != nil {
		return err
	}
	select {
	case p := <-got:
		if !bytes.Equal(p, pt) {
			return errors.New("the gateway delivered another plaintext than was sent")
		}
		return nil
	case <-s.gl.Client().Gone():
		return s.gl.Client().Err()
	case <-time.After(mqttWait):
		return fmt.Errorf("the gateway delivered no frame within %s", mqttWait)
	}
}

// mqttHandshakeCell times handshakes through the broker: from the device drawing its
// randomness to the gateway holding the session. Each is checked by a frame that the new
// session seals and the gateway opens (untimed).
func mqttHandshakeCell(ctx context.Context, m *artifacts.Manifest, p trial.Plan) (trial.Outcome, error) {
	s, err := newMQTTSetup(ctx, m, "handshake")
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry handshake: %w", err)
	}
	defer s.close()
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
		r.Cell.MQTT = &artifacts.MQTTCell{Broker: s.broker, Mode: mode, HandshakeBytes: bytes}
	}
	return r, nil
}

type delivery struct {
	at    time.Time
	pt    []byte
	times int
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
	defer s.close()
	sess, err := s.handshake(ctx)
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream: handshake through %s: %w", s.broker, err)
	}
	n := m.Spec.Iterations
	var (
		mu        sync.Mutex
		delivered = make(map[uint64]*delivery, n)
		verdicts  int
		rejected  = map[telemetry.Reason]int{}
		other     []error
	)
	s.mu.Lock()
	s.onFrame = func(v mqtt.Verdict) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		verdicts++
		d := delivered[v.Event.Counter]
		if d == nil {
			d = &delivery{at: now, pt: v.Event.Plaintext}
			delivered[v.Event.Counter] = d
		}
		d.times++
		if p.Progress != nil && d.times == 1 {
			p.Progress(len(delivered))
		}
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
		return AwaitDelivery(ctx, &mu, s.failedLink, mqttWait, what, cond)
	}

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
			return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream through %s: frame %d: %w", s.broker, i, err)
		}
	}
	if err := wait(fmt.Sprintf("%d frames at the gateway", n), func() bool { return len(delivered) >= n }); err != nil {
		if lerr := s.failedLink(); lerr != nil {
			return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream: %w", lerr)
		}
		mu.Lock()
		got, why := len(delivered), fmt.Sprint(rejected)
		mu.Unlock()
		st := s.gw.Stats()
		return trial.Outcome{Cell: trial.Failed(fmt.Sprintf("%d of %d genuine frames verified (refused: %s; gateway counts %d missing): %v", got, n, why, st.Missing, err))}, nil
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

	// The adversary: a client of its own, publishing old frames again and altered copies.
	adv, err := mqtt.Dial(ctx, s.addr, "pqrepro-adversary", nil)
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry adversary: %w", err)
	}
	defer adv.Close()
	for i := range spec.Replays {
		if err := adv.Publish(ctx, frames[i]); err != nil {
			return trial.Outcome{}, fmt.Errorf("mqtt-telemetry adversary: replay: %w", err)
		}
	}
	for j := range spec.Tamperings {
		f := frames[(j*7919)%n]
		t := telemetry.Message{Topic: f.Topic, Payload: bytes.Clone(f.Payload)}
		bit := (j * 131) % (8 * len(t.Payload))
		t.Payload[bit/8] ^= 1 << (bit % 8)
		if err := adv.Publish(ctx, t); err != nil {
			return trial.Outcome{}, fmt.Errorf("mqtt-telemetry adversary: tampering: %w", err)
		}
	}
	if err := wait("the gateway's verdicts on the injected frames", func() bool { return verdicts >= before+spec.Replays+spec.Tamperings }); err != nil {
		if lerr := s.failedLink(); lerr != nil {
			return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream: %w", lerr)
		}
		return trial.Outcome{Cell: trial.Failed(err.Error())}, nil
	}
	time.Sleep(20 * time.Millisecond) // a stray extra delivery would show in the counts
	if lerr := s.failedLink(); lerr != nil {
		return trial.Outcome{}, fmt.Errorf("mqtt-telemetry stream: %w", lerr)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(other) > 0 {
		return trial.Outcome{Cell: trial.Failed(fmt.Sprintf("gateway: %v", other[0]))}, nil
	}
	counts := &artifacts.FrameCounts{Sent: n, InjectedReplays: spec.Replays, InjectedTamperings: spec.Tamperings, Rejected: map[string]int{}}
	for _, r := range telemetry.Reasons() {
		counts.Rejected[r.String()] = rejected[r]
	}
	counts.Missing = int(s.gw.Stats().Missing)
	samples := make([]float64, 0, n)
	for i := range n {
		d := delivered[uint64(i)]
		if d == nil {
			return trial.Outcome{Cell: trial.Failed(fmt.Sprintf("frame %d was never delivered", i))}, nil
		}
		if d.times > 1 {
			counts.Duplicated++
		}
		if !bytes.Equal(d.pt, plain[i]) {
			return trial.Outcome{Cell: trial.Failed(fmt.Sprintf("frame %d: the gateway delivered another plaintext than was sealed", i))}, nil
		}
		samples = append(samples, float64(d.at.Sub(starts[i]).Nanoseconds()))
	}
	counts.Verified = len(samples)
	var over []artifacts.SizeOverhead
	for k, size := range spec.PayloadSizes {
		o := artifacts.SizeOverhead{Size: size, Min: -1}
		for i := k; i < n; i += len(spec.PayloadSizes) {
			d := len(frames[i].Payload) - len(plain[i])
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
	if el := last.Sub(starts[0]); el > 0 {
		fps = float64(n) / el.Seconds()
	}
	return trial.Outcome{
		Cell: artifacts.Cell{
			Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds,
			Counter: "monotonic clock (time.Now/time.Since), ns: seal to delivery at the gateway, frames pipelined (queueing included)",
			MQTT:    &artifacts.MQTTCell{Sizes: spec.PayloadSizes, Broker: s.broker, Frames: counts, Overhead: over, ThroughputFPS: fps},
		},
		Samples: samples,
	}, nil
}

// AwaitDelivery polls cond (under mu) until it holds, the broker link fails (failed), ctx ends
// or timeout passes, naming what it waited for. The host's and a board's telemetry runs wait
// for the gateway's verdicts this way.
func AwaitDelivery(ctx context.Context, mu *sync.Mutex, failed func() error, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		mu.Lock()
		ok := cond()
		mu.Unlock()
		if ok {
			return nil
		}
		if err := failed(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Millisecond)
	}
}
