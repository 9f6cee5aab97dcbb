package telemetry

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
)

const testDevice = "dev-1"

var testPSK = []byte("sixteen byte psk")

// fixture is a gateway with both keys and a device pinned to them.
type fixture struct {
	ek      []byte
	sk      *mlkem512.PrivateKey
	sigPub  []byte
	sigPriv *mldsa44.PrivateKey
	now     time.Time
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	pk, sk, err := mlkem512.GenerateKeyPair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ek := make([]byte, EncapKeySize)
	pk.Pack(ek)
	spk, ssk, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{ek: ek, sk: sk, sigPub: spk.Bytes(), sigPriv: ssk, now: time.Unix(1_800_000_000, 0)}
}

func (f *fixture) device(t testing.TB) *Device {
	t.Helper()
	d, err := NewDevice(DeviceConfig{ID: testDevice, GatewayKey: f.ek, SigningKey: f.sigPub, PSK: testPSK, MaxPayload: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (f *fixture) gateway(t testing.TB, window int) *Gateway {
	t.Helper()
	g, err := NewGateway(GatewayConfig{
		DecapsulationKey: f.sk, SigningKey: f.sigPriv,
		Devices: map[string][]byte{testDevice: testPSK}, Window: window, MaxPayload: 1024,
		Now: func() time.Time { return f.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// open runs a pinned handshake through g and returns the device session.
func open(t testing.TB, d *Device, g *Gateway) *Session {
	t.Helper()
	hs, s, err := d.Handshake(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := g.Receive(hs)
	if err != nil {
		t.Fatalf("handshake refused: %v", err)
	}
	if ev.Kind != EventSession || ev.Session != s.ID() {
		t.Fatalf("handshake event %+v, want session %s", ev, s.ID())
	}
	return s
}

func reasonOf(err error) (Reason, bool) {
	var re *RejectError
	if errors.As(err, &re) {
		return re.Reason, true
	}
	return 0, false
}

func payloadFor(c int) []byte { return []byte(fmt.Sprintf("reading %d: %d mK", c, 290000+c)) }

func TestOverheadIs24(t *testing.T) {
	f := newFixture(t)
	s := open(t, f.device(t), f.gateway(t, 0))
	for _, n := range []int{0, 1, 16, 64, 256, 1024} {
		m, err := s.Seal(make([]byte, n))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(m.Payload) - n; got != 24 {
			t.Errorf("%d-byte payload: overhead %d, want 24", n, got)
		}
	}
}

// step is one message the adversarial channel hands to the gateway and
// what the gateway must answer (accept, or one of the reasons).
type step struct {
	msg     Message
	counter int
	accept  bool
	reasons []Reason
}

// adversary builds, from n genuine frames in order, a delivery schedule
// that drops, reorders (inside and beyond the window), duplicates, replays
// and flips bits, and the expected answer to each delivery.
func adversary(t *testing.T, frames []Message, w int) (steps []step, dropped, late map[int]bool) {
	t.Helper()
	n := len(frames)
	dropped, late = map[int]bool{}, map[int]bool{}
	var base []int
	for c := 0; c < n; c++ {
		switch {
		case c%97 == 5:
			dropped[c] = true
		case c%89 == 7 && c+w+8 < n && !dropped[c+w+8]:
			late[c] = true
		default:
			base = append(base, c)
		}
	}
	for p := 0; p+1 < len(base); p++ { // swap neighbours: reordered inside the window
		if base[p]%13 == 3 {
			base[p], base[p+1] = base[p+1], base[p]
			p++
		}
	}
	after := map[int][]step{} // extra deliveries after the frame with this counter
	for c := range late {
		after[c+w+8] = append(after[c+w+8], step{msg: frames[c], counter: c, reasons: []Reason{ReasonLate}})
	}
	for _, c := range base {
		if c%101 == 50 && c+w+8 < n && !dropped[c+w+8] && !late[c+w+8] {
			after[c+w+8] = append(after[c+w+8], step{msg: frames[c], counter: c, reasons: []Reason{ReasonReplay}})
		}
	}
	for _, c := range base {
		m := frames[c]
		if c%17 == 9 { // a bit flipped in the payload, before the genuine copy
			p := bytes.Clone(m.Payload)
			p[(c*7)%len(p)] ^= 1 << (c % 8)
			steps = append(steps, step{msg: Message{Topic: m.Topic, Payload: p}, counter: c, reasons: []Reason{ReasonForged}})
		}
		if c%23 == 11 { // a bit flipped in the topic
			tp := []byte(m.Topic)
			tp[(c*5)%len(tp)] ^= 1 << (c % 7)
			steps = append(steps, step{msg: Message{Topic: string(tp), Payload: m.Payload}, counter: c, reasons: []Reason{ReasonMalformed, ReasonUnknownSession}})
		}
		steps = append(steps, step{msg: m, counter: c, accept: true})
		if c%11 == 0 { // QoS 1 redelivery
			steps = append(steps, step{msg: m, counter: c, reasons: []Reason{ReasonDuplicate}})
		}
		steps = append(steps, after[c]...)
	}
	return steps, dropped, late
}

func TestAdversarialChannel(t *testing.T) {
	const n, w = 1236, 64
	f := newFixture(t)
	g := f.gateway(t, w)
	s := open(t, f.device(t), g)
	frames := make([]Message, n)
	for c := range frames {
		m, err := s.Seal(payloadFor(c))
		if err != nil {
			t.Fatal(err)
		}
		frames[c] = m
	}
	steps, dropped, late := adversary(t, frames, w)
	delivered := map[int]int{}
	want := map[Reason]uint64{}
	for i, st := range steps {
		ev, err := g.Receive(st.msg)
		if st.accept {
			if err != nil {
				t.Fatalf("step %d: genuine frame %d refused: %v", i, st.counter, err)
			}
			if ev.Kind != EventFrame || ev.Counter != uint64(st.counter) || !bytes.Equal(ev.Plaintext, payloadFor(st.counter)) {
				t.Fatalf("step %d: frame %d delivered as %+v", i, st.counter, ev)
			}
			delivered[st.counter]++
			continue
		}
		r, ok := reasonOf(err)
		if !ok {
			t.Fatalf("step %d (frame %d): want refusal %v, got %+v, %v", i, st.counter, st.reasons, ev, err)
		}
		if !contains(st.reasons, r) {
			t.Fatalf("step %d (frame %d): refused as %s, want one of %v: %v", i, st.counter, r, st.reasons, err)
		}
		want[r]++
	}
	for c := 0; c < n; c++ {
		exp := 1
		if dropped[c] || late[c] {
			exp = 0
		}
		if delivered[c] != exp {
			t.Errorf("frame %d delivered %d times, want %d", c, delivered[c], exp)
		}
	}
	st := g.Stats()
	if st.Frames != uint64(n-len(dropped)-len(late)) {
		t.Errorf("stats: %d frames, want %d", st.Frames, n-len(dropped)-len(late))
	}
	for _, r := range Reasons() {
		if st.Rejected[r] != want[r] {
			t.Errorf("stats: %d refused as %s, the channel sent %d", st.Rejected[r], r, want[r])
		}
	}
	if st.Missing != uint64(len(dropped)+len(late)) {
		t.Errorf("stats: %d missing, want %d dropped + %d late", st.Missing, len(dropped), len(late))
	}
	for _, r := range []Reason{ReasonForged, ReasonDuplicate, ReasonReplay, ReasonLate} {
		if want[r] == 0 {
			t.Errorf("the channel produced no %s frame", r)
		}
	}
	t.Logf("%d genuine, %d delivered, %d dropped, refused %v", n, st.Frames, len(dropped), st.Rejected)
}

func contains(rs []Reason, r Reason) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// TestRestartNeverReusesNonce restarts the device mid-stream: the new
// process runs a new handshake, and no (key, nonce) pair repeats.
func TestRestartNeverReusesNonce(t *testing.T) {
	f := newFixture(t)
	g := f.gateway(t, 0)
	type pair struct{ key, nonce string }
	seen := map[pair]bool{}
	var sessions []*Session
	for boot := 0; boot < 3; boot++ {
		d := f.device(t) // a fresh process: nothing survives but the configuration
		s := open(t, d, g)
		for _, o := range sessions {
			if o.ID() == s.ID() || o.sameKey(s) {
				t.Fatalf("boot %d: session %s repeats an earlier key or id", boot, s.ID())
			}
		}
		sessions = append(sessions, s)
		for i := 0; i < 100; i++ {
			m, err := s.Seal(payloadFor(i))
			if err != nil {
				t.Fatal(err)
			}
			c := binary.BigEndian.Uint64(m.Payload)
			p := pair{string(s.key[:]), string(nonceFor(&s.prefix, c))}
			if seen[p] {
				t.Fatalf("boot %d frame %d: (key, nonce) used before", boot, i)
			}
			seen[p] = true
			if _, err := g.Receive(m); err != nil {
				t.Fatalf("boot %d frame %d refused: %v", boot, i, err)
			}
		}
	}
	if st := g.Stats(); st.Frames != 300 || st.Sessions != 3 {
		t.Errorf("stats %+v, want 300 frames in 3 sessions", st)
	}
}

// TestHandshakeReplay replays an old handshake: it must not reopen the
// session (which would let its old frames in again).
func TestHandshakeReplay(t *testing.T) {
	f := newFixture(t)
	g := f.gateway(t, 4)
	d := f.device(t)
	hs, s, err := d.Handshake(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Receive(hs); err != nil {
		t.Fatal(err)
	}
	var frames []Message
	for i := 0; i < 10; i++ {
		m, _ := s.Seal(payloadFor(i))
		frames = append(frames, m)
		if _, err := g.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.Receive(hs); !isReason(err, ReasonRepeat) {
		t.Fatalf("replayed handshake: %v, want %s", err, ReasonRepeat)
	}
	if _, err := g.Receive(frames[0]); !isReason(err, ReasonReplay) {
		t.Fatalf("old frame after the handshake replay: %v, want %s", err, ReasonReplay)
	}
	if _, err := g.Receive(frames[9]); !isReason(err, ReasonDuplicate) {
		t.Fatalf("newest frame again: %v, want %s", err, ReasonDuplicate)
	}
}

// TestHandshakeFlood opens more sessions than the gateway keeps, as a
// broker could (it can encapsulate to the public key): a session that has
// authenticated frames stays.
func TestHandshakeFlood(t *testing.T) {
	f := newFixture(t)
	g := f.gateway(t, 0)
	s := open(t, f.device(t), g)
	m, _ := s.Seal([]byte("first"))
	if _, err := g.Receive(m); err != nil {
		t.Fatal(err)
	}
	attacker, err := NewDevice(DeviceConfig{ID: testDevice, GatewayKey: f.ek})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		hs, as, _ := attacker.Handshake(rand.Reader)
		if _, err := g.Receive(hs); err != nil {
			t.Fatal(err)
		}
		fake, _ := as.Seal([]byte("fabricated"))
		if _, err := g.Receive(fake); !isReason(err, ReasonForged) && !isReason(err, ReasonUnknownSession) {
			t.Fatalf("frame from a session without the psk: %v, want forged or unknown session", err)
		}
	}
	m, _ = s.Seal([]byte("second"))
	if _, err := g.Receive(m); err != nil {
		t.Fatalf("genuine session evicted by a flood: %v", err)
	}
}

func isReason(err error, r Reason) bool {
	got, ok := reasonOf(err)
	return ok && got == r
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	g := f.gateway(t, 0)
	s := open(t, f.device(t), g)
	good, _ := s.Seal([]byte("ok"))
	big := make([]byte, CounterSize+2000+TagSize)
	unknownSID := DataTopic(testDevice, SessionID{1, 2, 3})
	for _, c := range []struct {
		name string
		m    Message
		want Reason
	}{
		{"empty payload", Message{good.Topic, nil}, ReasonMalformed},
		{"23-byte frame", Message{good.Topic, good.Payload[:23]}, ReasonMalformed},
		{"oversized", Message{good.Topic, big}, ReasonOversized},
		{"unknown session", Message{unknownSID, good.Payload}, ReasonUnknownSession},
		{"counter 2^64-1", Message{good.Topic, append([]byte{255, 255, 255, 255, 255, 255, 255, 255}, good.Payload[CounterSize:]...)}, ReasonMalformed},
		{"other prefix", Message{"other/v1/dev-1/hs", good.Payload}, ReasonMalformed},
		{"upper-case session", Message{TopicPrefix + testDevice + "/d/" + "ABCDEF0123456789", good.Payload}, ReasonMalformed},
		{"short session", Message{TopicPrefix + testDevice + "/d/abc", good.Payload}, ReasonMalformed},
		{"wildcard device", Message{TopicPrefix + "+/hs", good.Payload}, ReasonMalformed},
		{"no leaf", Message{TopicPrefix + testDevice, good.Payload}, ReasonMalformed},
		{"offer topic", Message{OfferTopic(testDevice), good.Payload}, ReasonMalformed},
		{"unknown device", Message{HandshakeTopic("dev-2"), make([]byte, pinnedHSSize)}, ReasonUnknownDevice},
		{"short handshake", Message{HandshakeTopic(testDevice), []byte{Version, ModePinned, 0}}, ReasonMalformed},
		{"handshake version", Message{HandshakeTopic(testDevice), append([]byte{9, ModePinned}, make([]byte, CiphertextSize)...)}, ReasonMalformed},
		{"handshake mode", Message{HandshakeTopic(testDevice), append([]byte{Version, 7}, make([]byte, CiphertextSize)...)}, ReasonMalformed},
		{"short request", Message{RequestTopic(testDevice), []byte{Version}}, ReasonMalformed},
		{"fs handshake without offer", Message{HandshakeTopic(testDevice), append([]byte{Version, ModeForwardSecret}, make([]byte, DeviceNonceSz+CiphertextSize)...)}, ReasonUnknownOffer},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := g.Stats().Rejected[c.want]
			ev, err := g.Receive(c.m)
			if !isReason(err, c.want) {
				t.Fatalf("got %+v, %v; want refusal %s", ev, err, c.want)
			}
			if g.Stats().Rejected[c.want] != before+1 {
				t.Errorf("%s not counted", c.want)
			}
		})
	}
	if _, err := s.Seal(make([]byte, 1025)); !errors.Is(err, ErrOversized) {
		t.Errorf("device sealed 1025 bytes with a 1024 maximum: %v", err)
	}
	if _, err := g.Receive(good); err != nil {
		t.Errorf("genuine frame after the bad ones: %v", err)
	}
}

func TestCounterExhausted(t *testing.T) {
	f := newFixture(t)
	s := open(t, f.device(t), f.gateway(t, 0))
	s.next = MaxCounter
	m, err := s.Seal(nil)
	if err != nil {
		t.Fatalf("last counter: %v", err)
	}
	if c := binary.BigEndian.Uint64(m.Payload); c != MaxCounter {
		t.Fatalf("last frame has counter %d, want %d", c, uint64(MaxCounter))
	}
	if _, err := s.Seal(nil); !errors.Is(err, ErrCounterExhausted) {
		t.Fatalf("after the last counter: %v, want ErrCounterExhausted", err)
	}
}

func TestWindowSizes(t *testing.T) {
	for _, w := range []int{1, 7, 64, 100, 1024} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			win := newWindow(w)
			order := []uint64{5, 3, 0, 9, 1}
			for _, c := range order {
				if v := win.check(c); v == verdictAccept {
					win.accept(c)
				}
			}
			for _, c := range order {
				v := win.check(c)
				if v == verdictAccept {
					t.Errorf("counter %d accepted twice", c)
				}
			}
			if win.check(10) != verdictAccept {
				t.Error("next counter refused")
			}
			if got := win.missing() + win.accepted; got != 10 {
				t.Errorf("missing + accepted = %d, want 10", got)
			}
		})
	}
}

func TestForwardSecret(t *testing.T) {
	f := newFixture(t)
	g := f.gateway(t, 0)
	d := f.device(t)

	rq, req, err := d.RequestKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := g.Receive(rq)
	if err != nil || ev.Kind != EventOffer {
		t.Fatalf("key request: %+v, %v", ev, err)
	}
	offer := *ev.Reply
	hs, s, err := req.Complete(offer, f.now, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := g.Receive(hs); err != nil || ev.Session != s.ID() {
		t.Fatalf("forward-secret handshake: %+v, %v", ev, err)
	}
	m, _ := s.Seal([]byte("forward secret"))
	if ev, err := g.Receive(m); err != nil || string(ev.Plaintext) != "forward secret" {
		t.Fatalf("frame: %+v, %v", ev, err)
	}
	if _, err := g.Receive(hs); !isReason(err, ReasonRepeat) {
		t.Errorf("replayed forward-secret handshake: %v, want %s", err, ReasonRepeat)
	}
	if _, _, err := req.Complete(offer, f.now, rand.Reader); !errors.Is(err, ErrRequestUsed) {
		t.Errorf("request completed twice: %v", err)
	}
	if st := g.Stats(); st.LiveOffers != 0 {
		t.Errorf("ephemeral key kept after use: %d live", st.LiveOffers)
	}

	t.Run("replayed offer", func(t *testing.T) {
		_, req2, _ := d.RequestKey(rand.Reader)
		if _, _, err := req2.Complete(offer, f.now, rand.Reader); !errors.Is(err, ErrOfferNonce) {
			t.Errorf("old offer for a new request: %v, want ErrOfferNonce", err)
		}
	})
	t.Run("expired offer", func(t *testing.T) {
		rq, req, _ := d.RequestKey(rand.Reader)
		ev, err := g.Receive(rq)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := req.Complete(*ev.Reply, f.now.Add(2*time.Minute), rand.Reader); !errors.Is(err, ErrOfferExpired) {
			t.Errorf("expired offer: %v, want ErrOfferExpired", err)
		}
	})
	t.Run("expiry too far", func(t *testing.T) {
		rq, req, _ := d.RequestKey(rand.Reader)
		ev, _ := g.Receive(rq)
		if _, _, err := req.Complete(*ev.Reply, f.now.Add(-time.Hour), rand.Reader); !errors.Is(err, ErrOfferExpired) {
			t.Errorf("offer expiring an hour after the device's now: %v, want ErrOfferExpired", err)
		}
	})
	t.Run("gateway refuses a late handshake", func(t *testing.T) {
		rq, req, _ := d.RequestKey(rand.Reader)
		ev, _ := g.Receive(rq)
		hs, _, err := req.Complete(*ev.Reply, f.now, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(2 * time.Minute)
		defer func() { f.now = f.now.Add(-2 * time.Minute) }()
		if _, err := g.Receive(hs); !isReason(err, ReasonUnknownOffer) {
			t.Errorf("handshake after the key expired: %v, want %s", err, ReasonUnknownOffer)
		}
	})
	t.Run("wrong signer", func(t *testing.T) {
		other := newFixture(t)
		og, err := NewGateway(GatewayConfig{SigningKey: other.sigPriv, Devices: map[string][]byte{testDevice: testPSK}, Now: func() time.Time { return f.now }})
		if err != nil {
			t.Fatal(err)
		}
		rq, req, _ := d.RequestKey(rand.Reader)
		ev, err := og.Receive(rq)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := req.Complete(*ev.Reply, f.now, rand.Reader); !errors.Is(err, ErrOfferSignature) {
			t.Errorf("offer signed by another key: %v, want ErrOfferSignature", err)
		}
	})
	t.Run("tampered offer", func(t *testing.T) {
		rq, req, _ := d.RequestKey(rand.Reader)
		ev, _ := g.Receive(rq)
		for _, at := range []int{1, 1 + DeviceNonceSz, 1 + DeviceNonceSz + 8 + 5, offerSize - 1} {
			p := bytes.Clone(ev.Reply.Payload)
			p[at] ^= 0x04
			if _, _, err := req.Complete(Message{Topic: ev.Reply.Topic, Payload: p}, f.now, rand.Reader); !errors.Is(err, ErrOfferSignature) {
				t.Errorf("offer with byte %d flipped: %v, want ErrOfferSignature", at, err)
			}
		}
	})
}

// TestWindowJump accepts the last counter right after the first: the
// gateway stays bounded, and the state stays consistent.
func TestWindowJump(t *testing.T) {
	win := newWindow(64)
	win.accept(0)
	if win.check(MaxCounter) != verdictAccept {
		t.Fatal("last counter refused")
	}
	win.accept(MaxCounter)
	if len(win.gaps) > maxGapsKept || len(win.gapFIFO) > maxGapsKept {
		t.Fatalf("%d gaps kept, at most %d", len(win.gaps), maxGapsKept)
	}
	if got, want := win.missing(), uint64(MaxCounter-1); got != want {
		t.Errorf("missing %d, want %d", got, want)
	}
	if v := win.check(MaxCounter - 64); v != verdictLate {
		t.Errorf("skipped counter just below the window: verdict %d, want late", v)
	}
	if v := win.check(MaxCounter - 1); v != verdictAccept {
		t.Errorf("skipped counter inside the window: verdict %d, want accept", v)
	}
	if v := win.check(MaxCounter); v != verdictDuplicate {
		t.Errorf("last counter again: verdict %d, want duplicate", v)
	}
}

// TestConcurrentReceive hands every frame to the gateway from four
// goroutines at once: each is still delivered exactly once.
func TestConcurrentReceive(t *testing.T) {
	const n, workers = 500, 4
	f := newFixture(t)
	g := f.gateway(t, 1024)
	s := open(t, f.device(t), g)
	frames := make([]Message, n)
	for i := range frames {
		frames[i], _ = s.Seal(payloadFor(i))
	}
	counts := make([][]int, workers)
	done := make(chan int)
	for w := 0; w < workers; w++ {
		counts[w] = make([]int, n)
		go func(w int) {
			for k := 0; k < n; k++ {
				i := (k*7 + w*131) % n
				if ev, err := g.Receive(frames[i]); err == nil {
					counts[w][ev.Counter]++
				} else if !isReason(err, ReasonDuplicate) {
					t.Errorf("frame %d: %v", i, err)
				}
			}
			done <- w
		}(w)
	}
	for range workers {
		<-done
	}
	for i := 0; i < n; i++ {
		total := 0
		for w := range workers {
			total += counts[w][i]
		}
		if total != 1 {
			t.Errorf("frame %d delivered %d times", i, total)
		}
	}
	if st := g.Stats(); st.Frames != n || st.Rejected[ReasonDuplicate] != n*(workers-1) {
		t.Errorf("stats: %d frames, %d duplicates; want %d and %d", st.Frames, st.Rejected[ReasonDuplicate], n, n*(workers-1))
	}
}

// TestGatewayRestart restarts the gateway: given the session ids it opened,
// it refuses the old handshake that a broker replays after the restart.
func TestGatewayRestart(t *testing.T) {
	f := newFixture(t)
	g := f.gateway(t, 0)
	hs, s, err := f.device(t).Handshake(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Receive(hs); err != nil {
		t.Fatal(err)
	}
	m, _ := s.Seal([]byte("before the restart"))
	if _, err := g.Receive(m); err != nil {
		t.Fatal(err)
	}
	g2, err := NewGateway(GatewayConfig{DecapsulationKey: f.sk, Devices: map[string][]byte{testDevice: testPSK}, Opened: g.OpenedSessions()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Receive(hs); !isReason(err, ReasonRepeat) {
		t.Fatalf("old handshake after the restart: %v, want %s", err, ReasonRepeat)
	}
	if _, err := g2.Receive(m); !isReason(err, ReasonUnknownSession) {
		t.Fatalf("old frame after the restart: %v, want %s", err, ReasonUnknownSession)
	}
	if _, err := NewGateway(GatewayConfig{DecapsulationKey: f.sk, Devices: map[string][]byte{testDevice: nil}, Opened: map[string][]SessionID{"dev-9": {{}}}}); err == nil {
		t.Error("opened sessions of an unknown device accepted")
	}
}

// TestTamperedHandshake flips a bit of the ciphertext: implicit rejection
// hides it from the gateway, which opens a session nobody can use, and the
// device's frames are refused as an unknown session, never delivered.
func TestTamperedHandshake(t *testing.T) {
	f := newFixture(t)
	g := f.gateway(t, 0)
	hs, s, err := f.device(t).Handshake(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := bytes.Clone(hs.Payload)
	p[100] ^= 0x10
	ev, err := g.Receive(Message{Topic: hs.Topic, Payload: p})
	if err != nil || ev.Session == s.ID() {
		t.Fatalf("tampered handshake: %+v, %v; want a session under another id", ev, err)
	}
	m, _ := s.Seal([]byte("x"))
	if _, err := g.Receive(m); !isReason(err, ReasonUnknownSession) {
		t.Fatalf("frame of the tampered session: %v, want %s", err, ReasonUnknownSession)
	}
	forged := Message{Topic: DataTopic(testDevice, ev.Session), Payload: m.Payload}
	if _, err := g.Receive(forged); !isReason(err, ReasonForged) {
		t.Fatalf("frame moved to the tampered session's topic: %v, want %s", err, ReasonForged)
	}
}
