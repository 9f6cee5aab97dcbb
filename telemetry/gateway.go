package telemetry

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/ascon"
)

// Reason is why the gateway refused a message.
type Reason int

// The reasons, each counted apart in Stats.
const (
	ReasonMalformed      Reason = iota // topic or payload does not parse
	ReasonOversized                    // frame carries more than MaxPayload bytes
	ReasonUnknownDevice                // handshake or request from a device not configured
	ReasonUnknownSession               // frame for a session the gateway does not hold
	ReasonForged                       // tag does not verify
	ReasonDuplicate                    // authenticated, counter accepted before and still in the window (QoS 1 redelivery or a replay: the same bytes)
	ReasonReplay                       // authenticated, counter accepted before and older than the window
	ReasonLate                         // authenticated, never accepted, older than the window (reordered too far)
	ReasonRepeat                       // handshake or key request seen before (a QoS 1 duplicate or a replay)
	ReasonUnknownOffer                 // forward-secret handshake for no live ephemeral key (unknown, used or expired)
	numReasons
)

var reasonNames = [numReasons]string{"malformed", "oversized", "unknown-device", "unknown-session", "forged", "duplicate", "replay", "late", "repeat", "unknown-offer"}

func (r Reason) String() string {
	if r < 0 || r >= numReasons {
		return fmt.Sprintf("reason(%d)", int(r))
	}
	return reasonNames[r]
}

// Reasons lists every reason in order.
func Reasons() []Reason {
	rs := make([]Reason, numReasons)
	for i := range rs {
		rs[i] = Reason(i)
	}
	return rs
}

// RejectError is the error Receive returns for a refused message.
type RejectError struct {
	Reason Reason
	Err    error
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("telemetry: refused (%s): %v", e.Reason, e.Err)
}
func (e *RejectError) Unwrap() error { return e.Err }

func reject(r Reason, format string, args ...any) error {
	return &RejectError{Reason: r, Err: fmt.Errorf(format, args...)}
}

// GatewayConfig configures a gateway.
type GatewayConfig struct {
	// DecapsulationKey is the long-term ML-KEM-512 key of the pinned mode;
	// nil refuses pinned handshakes.
	DecapsulationKey *mlkem512.PrivateKey
	// SigningKey signs ephemeral keys in the forward-secret mode; nil
	// refuses key requests.
	SigningKey *mldsa44.PrivateKey
	// Devices maps each known device id to its pre-shared key (may be empty).
	Devices map[string][]byte
	// Window is the replay window in counters; 0 means DefaultWindow.
	Window int
	// MaxPayload bounds a frame's plaintext; 0 means DefaultMaxPayload.
	MaxPayload int
	// MaxSessionsPerDevice bounds the sessions held per device (the oldest
	// session that never authenticated a frame goes first, else the
	// oldest); 0 means 4.
	MaxSessionsPerDevice int
	// OfferLifetime is how long an ephemeral key stays usable; 0 means 60 s.
	OfferLifetime time.Duration
	// MaxPendingOffers bounds the unused ephemeral keys per device (the
	// oldest goes first); 0 means 4.
	MaxPendingOffers int
	// Opened lists, per device, the session ids a previous run of the
	// gateway opened (from OpenedSessions): they stay refused as repeats,
	// so a restart cannot be used to replay an old handshake and its frames.
	Opened map[string][]SessionID
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand feeds ephemeral keys and signatures; nil means crypto/rand.
	Rand io.Reader
}

// EventKind is what an accepted message was.
type EventKind int

// Kinds of accepted messages.
const (
	EventFrame   EventKind = iota + 1 // a frame: Plaintext is delivered
	EventSession                      // a handshake: a new session
	EventOffer                        // a key request: Reply is the signed ephemeral key to publish
)

// Event is an accepted message.
type Event struct {
	Kind      EventKind
	Device    string
	Session   SessionID // EventFrame, EventSession
	Counter   uint64    // EventFrame
	Plaintext []byte    // EventFrame
	Reply     *Message  // EventOffer
}

// Stats are the gateway's counters.
type Stats struct {
	Frames     uint64            // frames accepted and delivered
	Sessions   uint64            // sessions opened by handshakes
	Offers     uint64            // ephemeral keys issued
	Rejected   map[Reason]uint64 // refusals by reason (every reason present)
	Missing    uint64            // counters below a session's highest accepted one never accepted: dropped or still in flight
	LiveOffers int               // ephemeral keys not yet used or expired
}

// Gateway is the receiving side: it opens sessions and delivers each
// genuine frame once. Receive is safe for concurrent use.
type Gateway struct {
	cfg    GatewayConfig
	ekHash [32]byte

	rejected [numReasons]atomic.Uint64
	frames   atomic.Uint64

	mu       sync.Mutex
	devices  map[string]*gwDevice
	sessions uint64
	offers   uint64
	missing  uint64 // of evicted sessions
}

type gwDevice struct {
	psk      []byte
	sessions []*gwSession // oldest first
	seen     map[SessionID]struct{}
	offers   []*offer // oldest first
}

type gwSession struct {
	id    SessionID
	topic string
	aead  *ascon.AEAD
	pfx   [8]byte

	mu        sync.Mutex
	win       *window
	confirmed bool
}

type offer struct {
	nonce  [DeviceNonceSz]byte
	expiry uint64
	sk     *mlkem512.PrivateKey
	ekHash [32]byte
}

// NewGateway checks cfg and returns a gateway.
func NewGateway(cfg GatewayConfig) (*Gateway, error) {
	if cfg.DecapsulationKey == nil && cfg.SigningKey == nil {
		return nil, errors.New("gateway config: neither a decapsulation key nor a signing key")
	}
	if len(cfg.Devices) == 0 {
		return nil, errors.New("gateway config: no devices")
	}
	g := &Gateway{cfg: cfg, devices: map[string]*gwDevice{}}
	for id, psk := range cfg.Devices {
		if err := ValidDeviceID(id); err != nil {
			return nil, fmt.Errorf("gateway config: devices: %w", err)
		}
		if len(psk) > MaxPSK {
			return nil, fmt.Errorf("gateway config: device %s: psk: %d bytes, at most %d", id, len(psk), MaxPSK)
		}
		g.devices[id] = &gwDevice{psk: append([]byte(nil), psk...), seen: map[SessionID]struct{}{}}
	}
	for id, sids := range cfg.Opened {
		d := g.devices[id]
		if d == nil {
			return nil, fmt.Errorf("gateway config: opened sessions: device %q is not configured", id)
		}
		for _, sid := range sids {
			d.seen[sid] = struct{}{}
		}
	}
	for name, v := range map[string]int{"window": cfg.Window, "max payload": cfg.MaxPayload, "max sessions per device": cfg.MaxSessionsPerDevice, "max pending offers": cfg.MaxPendingOffers} {
		if v < 0 {
			return nil, fmt.Errorf("gateway config: %s %d is negative", name, v)
		}
	}
	if cfg.OfferLifetime < 0 {
		return nil, fmt.Errorf("gateway config: offer lifetime %v is negative", cfg.OfferLifetime)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&g.cfg.Window, DefaultWindow)
	def(&g.cfg.MaxPayload, DefaultMaxPayload)
	def(&g.cfg.MaxSessionsPerDevice, 4)
	def(&g.cfg.MaxPendingOffers, 4)
	if g.cfg.OfferLifetime == 0 {
		g.cfg.OfferLifetime = time.Minute
	}
	if g.cfg.Now == nil {
		g.cfg.Now = time.Now
	}
	if g.cfg.Rand == nil {
		g.cfg.Rand = rand.Reader
	}
	if cfg.DecapsulationKey != nil {
		ek := make([]byte, EncapKeySize)
		cfg.DecapsulationKey.Public().(*mlkem512.PublicKey).Pack(ek)
		g.ekHash = ascon.Sum256(ek)
	}
	return g, nil
}

// Receive handles one message from the broker. It returns the accepted
// event, or a *RejectError whose reason has been counted.
func (g *Gateway) Receive(m Message) (Event, error) {
	ev, err := g.receive(m)
	if err != nil {
		var re *RejectError
		if !errors.As(err, &re) {
			re = &RejectError{Reason: ReasonMalformed, Err: err}
			err = re
		}
		g.rejected[re.Reason].Add(1)
	}
	return ev, err
}

func (g *Gateway) receive(m Message) (Event, error) {
	t, err := parseTopic(m.Topic)
	if err != nil {
		return Event{}, &RejectError{Reason: ReasonMalformed, Err: err}
	}
	switch t.kind {
	case topicData:
		return g.frame(t, m)
	case topicHandshake:
		return g.handshake(t, m.Payload)
	case topicRequest:
		return g.request(t, m.Payload)
	default:
		return Event{}, reject(ReasonMalformed, "%w: topic %q is not one the gateway receives", ErrMalformed, m.Topic)
	}
}

func (g *Gateway) frame(t parsedTopic, m Message) (Event, error) {
	g.mu.Lock()
	var s *gwSession
	if d := g.devices[t.device]; d != nil {
		for _, x := range d.sessions {
			if x.id == t.sid {
				s = x
			}
		}
	}
	g.mu.Unlock()
	if s == nil {
		return Event{}, reject(ReasonUnknownSession, "device %s session %s", t.device, t.sid)
	}
	f, err := parseFrame(m.Payload, g.cfg.MaxPayload)
	if errors.Is(err, ErrOversized) {
		return Event{}, &RejectError{Reason: ReasonOversized, Err: err}
	} else if err != nil {
		return Event{}, &RejectError{Reason: ReasonMalformed, Err: err}
	}
	pt, err := s.aead.Open(nil, nonceFor(&s.pfx, f.counter), f.sealed, associatedData(m.Topic, f.counter))
	if err != nil {
		return Event{}, reject(ReasonForged, "device %s session %s counter %d: %w", t.device, t.sid, f.counter, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.confirmed = true
	switch s.win.check(f.counter) {
	case verdictDuplicate:
		return Event{}, reject(ReasonDuplicate, "device %s session %s counter %d already delivered", t.device, t.sid, f.counter)
	case verdictReplay:
		return Event{}, reject(ReasonReplay, "device %s session %s counter %d already delivered, older than the window", t.device, t.sid, f.counter)
	case verdictLate:
		return Event{}, reject(ReasonLate, "device %s session %s counter %d older than the window, never delivered", t.device, t.sid, f.counter)
	}
	s.win.accept(f.counter)
	g.frames.Add(1)
	return Event{Kind: EventFrame, Device: t.device, Session: t.sid, Counter: f.counter, Plaintext: pt}, nil
}

func (g *Gateway) handshake(t parsedTopic, p []byte) (Event, error) {
	g.mu.Lock()
	d := g.devices[t.device]
	g.mu.Unlock()
	if d == nil {
		return Event{}, reject(ReasonUnknownDevice, "handshake from device %s", t.device)
	}
	if len(p) < 2 || p[0] != Version {
		return Event{}, reject(ReasonMalformed, "%w: handshake: %d bytes, want version %d and a mode", ErrMalformed, len(p), Version)
	}
	var (
		ct     []byte
		ss     [mlkem512.SharedKeySize]byte
		ekHash [32]byte
		fs     *fsBinding
	)
	switch p[1] {
	case ModePinned:
		if g.cfg.DecapsulationKey == nil {
			return Event{}, reject(ReasonMalformed, "%w: pinned handshake, the gateway has no pinned key", ErrMalformed)
		}
		if len(p) != pinnedHSSize {
			return Event{}, reject(ReasonMalformed, "%w: pinned handshake: %d bytes, want %d", ErrMalformed, len(p), pinnedHSSize)
		}
		ct = p[2:]
	case ModeForwardSecret:
		if len(p) != fsHSSize {
			return Event{}, reject(ReasonMalformed, "%w: forward-secret handshake: %d bytes, want %d", ErrMalformed, len(p), fsHSSize)
		}
		ct = p[2+DeviceNonceSz:]
	default:
		return Event{}, reject(ReasonMalformed, "%w: handshake mode %d", ErrMalformed, p[1])
	}
	ctHash := ascon.Sum256(ct)
	var sid SessionID
	copy(sid[:], ctHash[:])

	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := d.seen[sid]; ok {
		return Event{}, reject(ReasonRepeat, "device %s session %s opened before", t.device, sid)
	}
	if p[1] == ModePinned {
		g.cfg.DecapsulationKey.DecapsulateTo(ss[:], ct)
		ekHash = g.ekHash
	} else {
		var nonce [DeviceNonceSz]byte
		copy(nonce[:], p[2:])
		o := d.takeOffer(&nonce, uint64(g.cfg.Now().Unix()))
		if o == nil {
			return Event{}, reject(ReasonUnknownOffer, "device %s: no live ephemeral key for nonce %x", t.device, nonce)
		}
		o.sk.DecapsulateTo(ss[:], ct)
		ekHash = o.ekHash
		fs = &fsBinding{nonce: nonce, expiry: o.expiry}
	}
	k := deriveKeys(p[1], ss[:], &ekHash, &ctHash, t.device, d.psk, fs)
	aead, err := ascon.NewAEAD128(k.key[:])
	if err != nil {
		return Event{}, fmt.Errorf("handshake: session key: %w", err)
	}
	d.seen[sid] = struct{}{}
	if len(d.sessions) >= g.cfg.MaxSessionsPerDevice {
		g.evict(d)
	}
	d.sessions = append(d.sessions, &gwSession{id: sid, topic: DataTopic(t.device, sid), aead: aead, pfx: k.prefix, win: newWindow(g.cfg.Window)})
	g.sessions++
	return Event{Kind: EventSession, Device: t.device, Session: sid}, nil
}

// evict drops the oldest session that never authenticated a frame, else the
// oldest. g.mu is held.
func (g *Gateway) evict(d *gwDevice) {
	i := 0
	for j, s := range d.sessions {
		s.mu.Lock()
		c := s.confirmed
		s.mu.Unlock()
		if !c {
			i = j
			break
		}
	}
	s := d.sessions[i]
	s.mu.Lock()
	g.missing += s.win.missing()
	s.mu.Unlock()
	d.sessions = append(d.sessions[:i:i], d.sessions[i+1:]...)
}

// takeOffer removes and returns the live offer for nonce, dropping expired
// ones. g.mu is held.
func (d *gwDevice) takeOffer(nonce *[DeviceNonceSz]byte, now uint64) *offer {
	var found *offer
	kept := d.offers[:0]
	for _, o := range d.offers {
		switch {
		case o.expiry <= now:
		case o.nonce == *nonce:
			found = o
		default:
			kept = append(kept, o)
		}
	}
	clear(d.offers[len(kept):])
	d.offers = kept
	return found
}

// dropExpired forgets the offers expired at now. g.mu is held.
func (d *gwDevice) dropExpired(now uint64) {
	kept := d.offers[:0]
	for _, o := range d.offers {
		if o.expiry > now {
			kept = append(kept, o)
		}
	}
	clear(d.offers[len(kept):])
	d.offers = kept
}

func (g *Gateway) request(t parsedTopic, p []byte) (Event, error) {
	if g.cfg.SigningKey == nil {
		return Event{}, reject(ReasonMalformed, "%w: key request, the gateway has no signing key", ErrMalformed)
	}
	g.mu.Lock()
	d := g.devices[t.device]
	g.mu.Unlock()
	if d == nil {
		return Event{}, reject(ReasonUnknownDevice, "key request from device %s", t.device)
	}
	if len(p) != requestSize || p[0] != Version {
		return Event{}, reject(ReasonMalformed, "%w: key request: %d bytes, want %d with version %d", ErrMalformed, len(p), requestSize, Version)
	}
	o := &offer{}
	copy(o.nonce[:], p[1:])
	now := g.cfg.Now()
	o.expiry = uint64(now.Add(g.cfg.OfferLifetime).Unix())

	g.mu.Lock()
	d.dropExpired(uint64(now.Unix()))
	for _, x := range d.offers {
		if x.nonce == o.nonce {
			g.mu.Unlock()
			return Event{}, reject(ReasonRepeat, "device %s: key request nonce %x pending already", t.device, o.nonce)
		}
	}
	g.mu.Unlock()

	seed := make([]byte, mlkem512.KeySeedSize)
	if _, err := io.ReadFull(g.cfg.Rand, seed); err != nil {
		return Event{}, fmt.Errorf("key request: ephemeral key seed: %w", err)
	}
	pk, sk := mlkem512.NewKeyFromSeed(seed)
	clear(seed)
	o.sk = sk
	reply := make([]byte, 1+DeviceNonceSz+8, offerSize)
	reply[0] = Version
	copy(reply[1:], o.nonce[:])
	binary.BigEndian.PutUint64(reply[1+DeviceNonceSz:], o.expiry)
	reply = reply[:1+DeviceNonceSz+8+EncapKeySize]
	ek := reply[1+DeviceNonceSz+8:]
	pk.Pack(ek)
	o.ekHash = ascon.Sum256(ek)
	sig := make([]byte, mldsa44.SignatureSize)
	if err := mldsa44.SignTo(g.cfg.SigningKey, signedMessage(t.device, &o.nonce, o.expiry, ek), []byte(signContext), true, sig); err != nil {
		return Event{}, fmt.Errorf("key request: sign ephemeral key: %w", err)
	}
	reply = append(reply, sig...)

	g.mu.Lock()
	if len(d.offers) >= g.cfg.MaxPendingOffers {
		d.offers = append(d.offers[:0:0], d.offers[1:]...)
	}
	d.offers = append(d.offers, o)
	g.offers++
	g.mu.Unlock()
	return Event{Kind: EventOffer, Device: t.device, Reply: &Message{Topic: OfferTopic(t.device), Payload: reply}}, nil
}

// Stats returns a snapshot of the counters.
func (g *Gateway) Stats() Stats {
	st := Stats{Frames: g.frames.Load(), Rejected: map[Reason]uint64{}}
	for r := range numReasons {
		st.Rejected[r] = g.rejected[r].Load()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st.Sessions, st.Offers, st.Missing = g.sessions, g.offers, g.missing
	for _, d := range g.devices {
		st.LiveOffers += len(d.offers)
		for _, s := range d.sessions {
			s.mu.Lock()
			st.Missing += s.win.missing()
			s.mu.Unlock()
		}
	}
	return st
}

// OpenedSessions returns, per device, every session id the gateway has
// opened (or was given in GatewayConfig.Opened), for the caller to keep
// across a restart.
func (g *Gateway) OpenedSessions() map[string][]SessionID {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]SessionID{}
	for id, d := range g.devices {
		for sid := range d.seen {
			out[id] = append(out[id], sid)
		}
	}
	return out
}
