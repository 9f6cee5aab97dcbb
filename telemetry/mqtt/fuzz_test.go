package mqtt

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzPacket feeds arbitrary bytes to the proxy's packet reader and PUBLISH parser: no panic,
// a bounded allocation, and a parsed PUBLISH re-encodes to the bytes it was read from.
func FuzzPacket(f *testing.F) {
	pub := Publish{QoS: 1, Topic: "pqrepro/tm/v1/dev-1/d/0011223344556677", PacketID: 7, Payload: []byte("counter+ct+tag")}
	f.Add(pub.Packet().Encode())
	f.Add(Publish{Topic: "a/b", Props: []byte{0x01, 0x01}, Payload: []byte{1, 2, 3}}.Packet().Encode())
	f.Add(puback(9).Encode())
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x32, 0x03, 0x00, 0x05, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for {
			pk, err := ReadPacket(r, 4096)
			if err != nil {
				return
			}
			if len(pk.Body) > 4096 {
				t.Fatalf("body of %d bytes above the limit", len(pk.Body))
			}
			p, err := ParsePublish(pk)
			if err != nil {
				continue
			}
			again := p.Packet()
			if again.Header != pk.Header || !bytes.Equal(again.Body, pk.Body) {
				t.Fatalf("re-encoded %x %x, read %x %x", again.Header, again.Body, pk.Header, pk.Body)
			}
		}
	})
}

func TestPacketRoundTrip(t *testing.T) {
	for _, p := range []Publish{
		{QoS: 1, Dup: true, Topic: "t", PacketID: 65535, Props: []byte{0x23, 0x00, 0x01}, Payload: bytes.Repeat([]byte{0xaa}, 300)},
		{QoS: 0, Retain: true, Topic: "", Payload: nil},
	} {
		enc := p.Packet().Encode()
		pk, err := ReadPacket(bufio.NewReader(bytes.NewReader(enc)), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParsePublish(pk)
		if err != nil {
			t.Fatal(err)
		}
		if got.QoS != p.QoS || got.Dup != p.Dup || got.Retain != p.Retain || got.Topic != p.Topic || got.PacketID != p.PacketID || !bytes.Equal(got.Props, p.Props) || !bytes.Equal(got.Payload, p.Payload) {
			t.Errorf("round trip %+v -> %+v", p, got)
		}
	}
	if _, err := ReadPacket(bufio.NewReader(bytes.NewReader([]byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01})), 1<<20); err == nil {
		t.Error("a 5-byte remaining length was accepted")
	}
	if _, err := ReadPacket(bufio.NewReader(bytes.NewReader([]byte{0x30, 0xff, 0x7f})), 100); err == nil {
		t.Error("a length above the limit was accepted")
	}
	if _, err := ParsePublish(Packet{Header: 0x36, Body: []byte{0, 1, 'a', 0, 1, 0}}); err == nil {
		t.Error("QoS 3 was accepted")
	}
}
