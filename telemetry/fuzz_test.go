package telemetry

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"
)

// FuzzReceive feeds arbitrary topics and payloads to the parsers and to a
// gateway holding one session: nothing panics, every refusal is counted
// under a reason, and nothing but the genuine frame is ever delivered.
func FuzzReceive(f *testing.F) {
	fx := newFixture(f)
	g := fx.gateway(f, 8)
	d := fx.device(f)
	hs, s, err := d.Handshake(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := g.Receive(hs); err != nil {
		f.Fatal(err)
	}
	genuine, _ := s.Seal([]byte("genuine"))
	f.Add(genuine.Topic, genuine.Payload)
	f.Add(hs.Topic, hs.Payload)
	f.Add(RequestTopic(testDevice), []byte{Version, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(TopicPrefix+testDevice+"/d/0000000000000000", make([]byte, Overhead))
	f.Add("", []byte{})
	f.Fuzz(func(t *testing.T, topic string, payload []byte) {
		if p, err := parseTopic(topic); err == nil {
			if p.kind == topicData && DataTopic(p.device, p.sid) != topic {
				t.Fatalf("topic %q parses to %+v, which prints as %q", topic, p, DataTopic(p.device, p.sid))
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("parseTopic error does not wrap ErrMalformed: %v", err)
		}
		if fr, err := parseFrame(payload, 64); err == nil && len(fr.sealed)+CounterSize != len(payload) {
			t.Fatalf("frame of %d bytes split into %d sealed bytes", len(payload), len(fr.sealed))
		}
		before := g.Stats()
		ev, err := g.Receive(Message{Topic: topic, Payload: payload})
		after := g.Stats()
		if err != nil {
			r, ok := reasonOf(err)
			if !ok || after.Rejected[r] != before.Rejected[r]+1 {
				t.Fatalf("refusal not counted: %v", err)
			}
			return
		}
		if ev.Kind == EventFrame && (topic != genuine.Topic || !bytes.Equal(payload, genuine.Payload)) {
			t.Fatalf("delivered a frame that is not the genuine one: %+v", ev)
		}
	})
}
