package telemetry

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/ascon"
)

// Sizes of the scheme, in bytes (firmware/TELEMETRY.md section 2).
const (
	Version        = 1                       // first byte of every handshake-topic payload
	CounterSize    = 8                       // frame counter, big-endian
	TagSize        = ascon.TagSize           // Ascon-AEAD128 full tag
	Overhead       = CounterSize + TagSize   // 24: what a frame adds to its payload
	SessionIDSize  = 8                       // first bytes of Ascon-Hash256(ciphertext)
	DeviceNonceSz  = 16                      // forward-secret mode: the device's fresh nonce
	MaxDeviceID    = 64                      // bytes of a device id
	MaxPSK         = 64                      // bytes of an optional device pre-shared key
	CiphertextSize = mlkem512.CiphertextSize // 768
	EncapKeySize   = mlkem512.PublicKeySize  // 800

	// MaxCounter is the last counter a session uses (2^64 - 2); 2^64 - 1 is
	// never sent, so the gateway's highest-accepted-plus-one cannot wrap.
	MaxCounter = math.MaxUint64 - 1

	// DefaultMaxPayload is the largest plaintext a frame carries unless
	// configured otherwise.
	DefaultMaxPayload = 4096
	// DefaultWindow is the gateway's replay window in counters.
	DefaultWindow = 64
)

// Handshake modes (second byte of a handshake payload; first byte of the
// key-derivation input).
const (
	ModePinned        byte = 1 // encapsulation to the pinned long-term gateway key
	ModeForwardSecret byte = 2 // encapsulation to a signed ephemeral gateway key
)

// Topic layout: TopicPrefix + deviceID + "/" + leaf.
const (
	TopicPrefix = "pqrepro/tm/v1/"
	leafHS      = "hs" // device -> gateway: handshake
	leafRQ      = "rq" // device -> gateway: forward-secret key request
	leafEK      = "ek" // gateway -> device: signed ephemeral key
	leafData    = "d/" // device -> gateway: frames, followed by the session id in hex
	kdfCustom   = "pqrepro/tm/v1 session key"
	signContext = "pqrepro/tm/v1 ephemeral key"
)

// Lengths of the handshake-topic payloads.
const (
	pinnedHSSize = 2 + CiphertextSize
	fsHSSize     = 2 + DeviceNonceSz + CiphertextSize
	requestSize  = 1 + DeviceNonceSz
	offerSize    = 1 + DeviceNonceSz + 8 + EncapKeySize + mldsa44.SignatureSize
)

// Message is one MQTT application message: the topic it is published on
// and its opaque payload.
type Message struct {
	Topic   string
	Payload []byte
}

// SessionID names a session: the first 8 bytes of Ascon-Hash256 of the
// handshake's ML-KEM ciphertext.
type SessionID [SessionIDSize]byte

func (s SessionID) String() string { return hex.EncodeToString(s[:]) }

// Errors of the parsers; the gateway wraps them in a *RejectError.
var (
	ErrMalformed = errors.New("telemetry: malformed message")
	ErrOversized = errors.New("telemetry: payload larger than the maximum")
)

// ValidDeviceID reports whether id may name a device: 1 to 64 bytes of
// A-Z a-z 0-9 '.' '_' '-' (nothing an MQTT topic treats specially).
func ValidDeviceID(id string) error {
	if len(id) == 0 || len(id) > MaxDeviceID {
		return fmt.Errorf("device id: %d bytes, want 1 to %d", len(id), MaxDeviceID)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("device id: byte %d (%q) is not A-Z a-z 0-9 . _ -", i, c)
		}
	}
	return nil
}

// topicKind is what a topic addresses.
type topicKind int

const (
	topicHandshake topicKind = iota + 1
	topicRequest
	topicOffer
	topicData
)

// parsedTopic is a topic split into its parts.
type parsedTopic struct {
	kind   topicKind
	device string
	sid    SessionID // topicData only
}

// parseTopic splits a topic of the scheme; anything else is ErrMalformed.
func parseTopic(topic string) (parsedTopic, error) {
	rest, ok := strings.CutPrefix(topic, TopicPrefix)
	if !ok {
		return parsedTopic{}, fmt.Errorf("%w: topic does not start with %q", ErrMalformed, TopicPrefix)
	}
	device, leaf, ok := strings.Cut(rest, "/")
	if !ok {
		return parsedTopic{}, fmt.Errorf("%w: topic has no leaf after the device id", ErrMalformed)
	}
	if err := ValidDeviceID(device); err != nil {
		return parsedTopic{}, fmt.Errorf("%w: topic: %v", ErrMalformed, err)
	}
	p := parsedTopic{device: device}
	switch {
	case leaf == leafHS:
		p.kind = topicHandshake
	case leaf == leafRQ:
		p.kind = topicRequest
	case leaf == leafEK:
		p.kind = topicOffer
	case strings.HasPrefix(leaf, leafData):
		h := leaf[len(leafData):]
		if len(h) != 2*SessionIDSize || strings.ToLower(h) != h {
			return parsedTopic{}, fmt.Errorf("%w: topic: session id %q is not 16 lowercase hex digits", ErrMalformed, h)
		}
		if _, err := hex.Decode(p.sid[:], []byte(h)); err != nil {
			return parsedTopic{}, fmt.Errorf("%w: topic: session id: %v", ErrMalformed, err)
		}
		p.kind = topicData
	default:
		return parsedTopic{}, fmt.Errorf("%w: topic leaf %q is not hs, rq, ek or d/<session>", ErrMalformed, leaf)
	}
	return p, nil
}

// The topics of the scheme, the one place they are spelled (firmware/TELEMETRY.md section 3):
// a device's handshakes, its forward-secret key requests, the gateway's signed offers to it,
// and the frames of one of its sessions.

// HandshakeTopic is where device publishes its handshakes.
func HandshakeTopic(device string) string { return TopicPrefix + device + "/" + leafHS }

// RequestTopic is where a forward-secret device publishes its key requests.
func RequestTopic(device string) string { return TopicPrefix + device + "/" + leafRQ }

// OfferTopic is where the gateway publishes its signed ephemeral keys for device, which a
// forward-secret device subscribes to.
func OfferTopic(device string) string { return TopicPrefix + device + "/" + leafEK }

// DataTopic is where device publishes the frames of session sid.
func DataTopic(device string, sid SessionID) string {
	return TopicPrefix + device + "/" + leafData + sid.String()
}

// GatewayFilters are the topic filters a gateway subscribes to: every device's handshakes,
// key requests and frames.
func GatewayFilters() []string {
	return []string{HandshakeTopic("+"), RequestTopic("+"), TopicPrefix + "+/" + leafData + "+"}
}

// IsDataTopic reports whether topic is a data topic of the scheme (frames of a session).
func IsDataTopic(topic string) bool {
	p, err := parseTopic(topic)
	return err == nil && p.kind == topicData
}

// frame is a parsed data payload: counter || ciphertext || tag.
type frame struct {
	counter uint64
	sealed  []byte // ciphertext || tag, aliases the payload
}

// parseFrame checks a data payload's length against maxPayload and splits
// it. It does not authenticate anything.
func parseFrame(payload []byte, maxPayload int) (frame, error) {
	if len(payload) < Overhead {
		return frame{}, fmt.Errorf("%w: frame is %d bytes, at least %d", ErrMalformed, len(payload), Overhead)
	}
	if n := len(payload) - Overhead; n > maxPayload {
		return frame{}, fmt.Errorf("%w: frame carries %d bytes, at most %d", ErrOversized, n, maxPayload)
	}
	c := binary.BigEndian.Uint64(payload)
	if c > MaxCounter {
		return frame{}, fmt.Errorf("%w: frame counter %d is above the last one, %d", ErrMalformed, c, uint64(MaxCounter))
	}
	return frame{counter: c, sealed: payload[CounterSize:]}, nil
}

// associatedData is u16be(len(topic)) || topic || counter (big-endian).
func associatedData(topic string, counter uint64) []byte {
	ad := make([]byte, 0, 2+len(topic)+CounterSize)
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(topic)))
	ad = append(ad, topic...)
	return binary.BigEndian.AppendUint64(ad, counter)
}

// nonceFor is prefix (8 bytes from the key derivation) || counter (big-endian).
func nonceFor(prefix *[8]byte, counter uint64) []byte {
	n := make([]byte, ascon.NonceSize)
	copy(n, prefix[:])
	binary.BigEndian.PutUint64(n[8:], counter)
	return n
}

// sessionKeys is what the key derivation yields.
type sessionKeys struct {
	key    [ascon.KeySize]byte
	prefix [8]byte
}

// fsBinding is the forward-secret handshake's extra key-derivation input.
type fsBinding struct {
	nonce  [DeviceNonceSz]byte
	expiry uint64
}

// deriveKeys is Ascon-CXOF128 with customization "pqrepro/tm/v1 session key"
// over mode || ss || H(ek) || H(ct) || len(id) || id || len(psk) || psk
// [|| device nonce || expiry in forward-secret mode], 24 bytes of output:
// the Ascon-AEAD128 key, then the nonce prefix. H is Ascon-Hash256.
func deriveKeys(mode byte, ss []byte, ekHash, ctHash *[32]byte, device string, psk []byte, fs *fsBinding) sessionKeys {
	x, err := ascon.NewCXOF128([]byte(kdfCustom))
	if err != nil {
		panic(err) // a constant customization string within the limit
	}
	x.Write([]byte{mode})
	x.Write(ss)
	x.Write(ekHash[:])
	x.Write(ctHash[:])
	x.Write([]byte{byte(len(device))})
	x.Write([]byte(device))
	x.Write([]byte{byte(len(psk))})
	x.Write(psk)
	if fs != nil {
		x.Write(fs.nonce[:])
		x.Write(binary.BigEndian.AppendUint64(nil, fs.expiry))
	}
	var out [ascon.KeySize + 8]byte
	x.Read(out[:])
	var k sessionKeys
	copy(k.key[:], out[:ascon.KeySize])
	copy(k.prefix[:], out[ascon.KeySize:])
	return k
}

// signedMessage is what the gateway signs in forward-secret mode:
// len(id) || id || device nonce || expiry (u64be Unix seconds) || ek.
func signedMessage(device string, nonce *[DeviceNonceSz]byte, expiry uint64, ek []byte) []byte {
	m := make([]byte, 0, 1+len(device)+DeviceNonceSz+8+len(ek))
	m = append(m, byte(len(device)))
	m = append(m, device...)
	m = append(m, nonce[:]...)
	m = binary.BigEndian.AppendUint64(m, expiry)
	return append(m, ek...)
}
