package mqtt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The MQTT 5 packet framing the adversarial proxy reads (OASIS MQTT 5.0 sections 2.1 and
// 3.3): a fixed header byte (packet type in the high nibble, flags in the low one), the
// remaining length as a variable byte integer of 1 to 4 bytes, then that many bytes. A
// PUBLISH's flags are DUP (bit 3), QoS (bits 2-1) and RETAIN (bit 0); its variable header is
// the topic (u16be length, UTF-8), the packet id (u16be) when QoS > 0, and the properties
// (a variable byte integer length, then the properties); the payload is the rest.

// Packet types the proxy handles.
const (
	typePublish = 3
	typePuback  = 4
)

// Errors of the packet reader.
var (
	ErrPacketTooLarge  = errors.New("mqtt packet: remaining length above the limit")
	ErrPacketMalformed = errors.New("mqtt packet: malformed")
)

// Packet is one MQTT control packet as read from the wire.
type Packet struct {
	Header byte   // fixed header byte: type << 4 | flags
	Body   []byte // the remaining length's bytes
}

// Type is the packet type (3 PUBLISH, 4 PUBACK, ...).
func (p Packet) Type() byte { return p.Header >> 4 }

// Encode returns the packet's bytes on the wire.
func (p Packet) Encode() []byte {
	out := []byte{p.Header}
	out = appendVarint(out, len(p.Body))
	return append(out, p.Body...)
}

// ReadPacket reads one packet whose remaining length is at most max bytes.
func ReadPacket(r *bufio.Reader, max int) (Packet, error) {
	h, err := r.ReadByte()
	if err != nil {
		return Packet{}, err
	}
	n, err := readVarint(r)
	if err != nil {
		return Packet{}, err
	}
	if n > max {
		return Packet{}, fmt.Errorf("%w: %d bytes, limit %d", ErrPacketTooLarge, n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return Packet{}, fmt.Errorf("%w: body of %d bytes: %v", ErrPacketMalformed, n, err)
	}
	return Packet{Header: h, Body: body}, nil
}

func readVarint(r io.ByteReader) (int, error) {
	v, mul := 0, 1
	for i := range 4 {
		b, err := r.ReadByte()
		if err != nil {
			if i > 0 {
				return 0, fmt.Errorf("%w: truncated remaining length", ErrPacketMalformed)
			}
			return 0, err
		}
		v += int(b&0x7f) * mul
		if b&0x80 == 0 {
			return v, nil
		}
		mul *= 128
	}
	return 0, fmt.Errorf("%w: remaining length longer than 4 bytes", ErrPacketMalformed)
}

func appendVarint(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// Publish is a parsed MQTT 5 PUBLISH.
type Publish struct {
	Dup, Retain bool
	QoS         byte
	Topic       string
	PacketID    uint16 // QoS > 0 only
	Props       []byte // the properties, as on the wire (without their length)
	Payload     []byte
}

// ParsePublish parses a PUBLISH packet of MQTT 5.
func ParsePublish(p Packet) (Publish, error) {
	if p.Type() != typePublish {
		return Publish{}, fmt.Errorf("%w: packet type %d is not PUBLISH", ErrPacketMalformed, p.Type())
	}
	f := p.Header & 0x0f
	pub := Publish{Dup: f&8 != 0, QoS: (f >> 1) & 3, Retain: f&1 != 0}
	if pub.QoS == 3 {
		return Publish{}, fmt.Errorf("%w: QoS 3", ErrPacketMalformed)
	}
	b := p.Body
	if len(b) < 2 {
		return Publish{}, fmt.Errorf("%w: no topic length", ErrPacketMalformed)
	}
	tl := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+tl {
		return Publish{}, fmt.Errorf("%w: topic of %d bytes, %d left", ErrPacketMalformed, tl, len(b)-2)
	}
	pub.Topic, b = string(b[2:2+tl]), b[2+tl:]
	if pub.QoS > 0 {
		if len(b) < 2 {
			return Publish{}, fmt.Errorf("%w: no packet id", ErrPacketMalformed)
		}
		pub.PacketID, b = binary.BigEndian.Uint16(b), b[2:]
	}
	br := &sliceReader{b: b}
	pl, err := readVarint(br)
	if err != nil {
		return Publish{}, fmt.Errorf("%w: properties length: %v", ErrPacketMalformed, err)
	}
	b = b[br.i:]
	if pl > len(b) {
		return Publish{}, fmt.Errorf("%w: properties of %d bytes, %d left", ErrPacketMalformed, pl, len(b))
	}
	pub.Props, pub.Payload = b[:pl:pl], b[pl:]
	return pub, nil
}

// Packet encodes the PUBLISH.
func (pub Publish) Packet() Packet {
	h := byte(typePublish<<4) | pub.QoS<<1
	if pub.Dup {
		h |= 8
	}
	if pub.Retain {
		h |= 1
	}
	body := binary.BigEndian.AppendUint16(nil, uint16(len(pub.Topic)))
	body = append(body, pub.Topic...)
	if pub.QoS > 0 {
		body = binary.BigEndian.AppendUint16(body, pub.PacketID)
	}
	body = appendVarint(body, len(pub.Props))
	body = append(body, pub.Props...)
	body = append(body, pub.Payload...)
	return Packet{Header: h, Body: body}
}

func puback(id uint16) Packet {
	return Packet{Header: typePuback << 4, Body: binary.BigEndian.AppendUint16(nil, id)}
}

type sliceReader struct {
	b []byte
	i int
}

func (s *sliceReader) ReadByte() (byte, error) {
	if s.i >= len(s.b) {
		return 0, io.ErrUnexpectedEOF
	}
	s.i++
	return s.b[s.i-1], nil
}
