package telemetry

import (
	"bytes"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/ascon"
)

// DeviceConfig is what a device is provisioned with.
type DeviceConfig struct {
	// ID names the device in topics and in the key derivation (ValidDeviceID).
	ID string
	// GatewayKey is the pinned ML-KEM-512 encapsulation key (800 bytes) of
	// the pinned mode. It may be nil for a device that only uses the
	// forward-secret mode.
	GatewayKey []byte
	// SigningKey is the pinned ML-DSA-44 public key (1312 bytes) that signs
	// ephemeral gateway keys in the forward-secret mode; nil disables it.
	SigningKey []byte
	// PSK is an optional pre-shared key (0 to 64 bytes) the gateway also
	// holds for this device. Without it anyone who can publish (the broker)
	// can open a session in the device's name.
	PSK []byte
	// MaxPayload bounds a sealed plaintext; 0 means DefaultMaxPayload.
	MaxPayload int
	// MaxOfferLifetime bounds how far in the future a signed ephemeral key
	// may expire; 0 means 10 minutes.
	MaxOfferLifetime time.Duration
}

// Device is the sending side. Each Handshake or Complete gives a new
// Session with a fresh ML-KEM encapsulation: there is no way to resume a
// session, so a restart cannot reuse a (key, nonce) pair.
type Device struct {
	cfg    DeviceConfig
	ek     *mlkem512.PublicKey
	ekHash [32]byte
	sigKey *mldsa44.PublicKey
}

// NewDevice checks cfg and returns a device.
func NewDevice(cfg DeviceConfig) (*Device, error) {
	if err := ValidDeviceID(cfg.ID); err != nil {
		return nil, fmt.Errorf("device config: %w", err)
	}
	if len(cfg.PSK) > MaxPSK {
		return nil, fmt.Errorf("device config: psk: %d bytes, at most %d", len(cfg.PSK), MaxPSK)
	}
	if cfg.MaxPayload < 0 {
		return nil, fmt.Errorf("device config: max payload %d is negative", cfg.MaxPayload)
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.MaxOfferLifetime == 0 {
		cfg.MaxOfferLifetime = 10 * time.Minute
	}
	d := &Device{cfg: cfg}
	if cfg.GatewayKey != nil {
		d.ek = new(mlkem512.PublicKey)
		if err := d.ek.Unpack(cfg.GatewayKey); err != nil {
			return nil, fmt.Errorf("device config: gateway key: %w", err)
		}
		d.ekHash = ascon.Sum256(cfg.GatewayKey)
	}
	if cfg.SigningKey != nil {
		d.sigKey = new(mldsa44.PublicKey)
		if err := d.sigKey.UnmarshalBinary(cfg.SigningKey); err != nil {
			return nil, fmt.Errorf("device config: signing key: %w", err)
		}
	}
	if d.ek == nil && d.sigKey == nil {
		return nil, errors.New("device config: neither a gateway key nor a signing key")
	}
	return d, nil
}

// Handshake encapsulates to the pinned gateway key with 32 bytes read from
// rand and returns the handshake message to publish and the new session.
func (d *Device) Handshake(rand io.Reader) (Message, *Session, error) {
	if d.ek == nil {
		return Message{}, nil, errors.New("handshake: the device has no pinned gateway key")
	}
	var seed [mlkem512.EncapsulationSeedSize]byte
	if _, err := io.ReadFull(rand, seed[:]); err != nil {
		return Message{}, nil, fmt.Errorf("handshake: read encapsulation seed: %w", err)
	}
	payload := make([]byte, pinnedHSSize)
	payload[0], payload[1] = Version, ModePinned
	ct := payload[2:]
	var ss [mlkem512.SharedKeySize]byte
	d.ek.EncapsulateTo(ct, ss[:], seed[:])
	ctHash := ascon.Sum256(ct)
	k := deriveKeys(ModePinned, ss[:], &d.ekHash, &ctHash, d.cfg.ID, d.cfg.PSK, nil)
	s, err := d.newSession(&ctHash, k)
	if err != nil {
		return Message{}, nil, fmt.Errorf("handshake: %w", err)
	}
	return Message{Topic: HandshakeTopic(d.cfg.ID), Payload: payload}, s, nil
}

// Request is an outstanding forward-secret key request.
type Request struct {
	d     *Device
	nonce [DeviceNonceSz]byte
	used  bool
}

// RequestKey starts a forward-secret handshake: it draws a 16-byte nonce
// from rand and returns the request message to publish.
func (d *Device) RequestKey(rand io.Reader) (Message, *Request, error) {
	if d.sigKey == nil {
		return Message{}, nil, errors.New("key request: the device has no pinned signing key")
	}
	r := &Request{d: d}
	if _, err := io.ReadFull(rand, r.nonce[:]); err != nil {
		return Message{}, nil, fmt.Errorf("key request: read nonce: %w", err)
	}
	payload := append([]byte{Version}, r.nonce[:]...)
	return Message{Topic: RequestTopic(d.cfg.ID), Payload: payload}, r, nil
}

// Errors of Complete.
var (
	ErrOfferSignature = errors.New("telemetry: ephemeral key signature does not verify")
	ErrOfferNonce     = errors.New("telemetry: ephemeral key answers another request")
	ErrOfferExpired   = errors.New("telemetry: ephemeral key expired or expires too late")
	ErrRequestUsed    = errors.New("telemetry: key request already completed")
)

// Complete checks the gateway's signed ephemeral key against the pinned
// signing key, this request's nonce and now, encapsulates to it and returns
// the handshake to publish and the new session. A request completes once.
func (r *Request) Complete(offer Message, now time.Time, rand io.Reader) (Message, *Session, error) {
	d := r.d
	if r.used {
		return Message{}, nil, ErrRequestUsed
	}
	if offer.Topic != OfferTopic(d.cfg.ID) {
		return Message{}, nil, fmt.Errorf("%w: offer topic %q", ErrMalformed, offer.Topic)
	}
	p := offer.Payload
	if len(p) != offerSize || p[0] != Version {
		return Message{}, nil, fmt.Errorf("%w: offer is %d bytes, want %d with version %d", ErrMalformed, len(p), offerSize, Version)
	}
	var nonce [DeviceNonceSz]byte
	copy(nonce[:], p[1:])
	expiry := binary.BigEndian.Uint64(p[1+DeviceNonceSz:])
	ekBytes := p[1+DeviceNonceSz+8 : 1+DeviceNonceSz+8+EncapKeySize]
	sig := p[1+DeviceNonceSz+8+EncapKeySize:]
	if !mldsa44.Verify(d.sigKey, signedMessage(d.cfg.ID, &nonce, expiry, ekBytes), []byte(signContext), sig) {
		return Message{}, nil, ErrOfferSignature
	}
	if subtle.ConstantTimeCompare(nonce[:], r.nonce[:]) != 1 {
		return Message{}, nil, ErrOfferNonce
	}
	unix := now.Unix()
	if expiry > math.MaxInt64 || int64(expiry) <= unix || int64(expiry) > unix+int64(d.cfg.MaxOfferLifetime/time.Second) {
		return Message{}, nil, fmt.Errorf("%w: expiry %d, now %d", ErrOfferExpired, expiry, unix)
	}
	var ek mlkem512.PublicKey
	if err := ek.Unpack(ekBytes); err != nil {
		return Message{}, nil, fmt.Errorf("%w: ephemeral key: %v", ErrMalformed, err)
	}
	var seed [mlkem512.EncapsulationSeedSize]byte
	if _, err := io.ReadFull(rand, seed[:]); err != nil {
		return Message{}, nil, fmt.Errorf("forward-secret handshake: read encapsulation seed: %w", err)
	}
	payload := make([]byte, fsHSSize)
	payload[0], payload[1] = Version, ModeForwardSecret
	copy(payload[2:], nonce[:])
	ct := payload[2+DeviceNonceSz:]
	var ss [mlkem512.SharedKeySize]byte
	ek.EncapsulateTo(ct, ss[:], seed[:])
	ekHash, ctHash := ascon.Sum256(ekBytes), ascon.Sum256(ct)
	k := deriveKeys(ModeForwardSecret, ss[:], &ekHash, &ctHash, d.cfg.ID, d.cfg.PSK, &fsBinding{nonce: nonce, expiry: expiry})
	s, err := d.newSession(&ctHash, k)
	if err != nil {
		return Message{}, nil, fmt.Errorf("forward-secret handshake: %w", err)
	}
	r.used = true
	return Message{Topic: HandshakeTopic(d.cfg.ID), Payload: payload}, s, nil
}

func (d *Device) newSession(ctHash *[32]byte, k sessionKeys) (*Session, error) {
	aead, err := ascon.NewAEAD128(k.key[:])
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	s := &Session{aead: aead, key: k.key, prefix: k.prefix, maxPayload: d.cfg.MaxPayload}
	copy(s.id[:], ctHash[:SessionIDSize])
	s.topic = DataTopic(d.cfg.ID, s.id)
	return s, nil
}

// ErrCounterExhausted is returned by Seal once counter MaxCounter has been
// used: the device must run a new handshake.
var ErrCounterExhausted = errors.New("telemetry: session counter exhausted, run a new handshake")

// Session is one device session. Seal is safe for concurrent use; the
// counter only increases and is never exposed for setting.
type Session struct {
	aead       *ascon.AEAD
	key        [ascon.KeySize]byte
	prefix     [8]byte
	id         SessionID
	topic      string
	maxPayload int

	mu        sync.Mutex
	next      uint64
	exhausted bool
}

// ID returns the session id.
func (s *Session) ID() SessionID { return s.id }

// Topic returns the topic the session's frames are published on.
func (s *Session) Topic() string { return s.topic }

// Seal encrypts plaintext under the next counter and returns the frame.
func (s *Session) Seal(plaintext []byte) (Message, error) {
	if len(plaintext) > s.maxPayload {
		return Message{}, fmt.Errorf("seal: %w: %d bytes, at most %d", ErrOversized, len(plaintext), s.maxPayload)
	}
	s.mu.Lock()
	if s.exhausted {
		s.mu.Unlock()
		return Message{}, ErrCounterExhausted
	}
	c := s.next
	s.next++
	if s.next == MaxCounter+1 {
		s.exhausted = true
	}
	s.mu.Unlock()
	out := make([]byte, CounterSize, Overhead+len(plaintext))
	binary.BigEndian.PutUint64(out, c)
	out = s.aead.Seal(out, nonceFor(&s.prefix, c), plaintext, associatedData(s.topic, c))
	return Message{Topic: s.topic, Payload: out}, nil
}

// sameKey reports whether two sessions share a key (tests).
func (s *Session) sameKey(o *Session) bool { return bytes.Equal(s.key[:], o.key[:]) }
