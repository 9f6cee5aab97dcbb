package wire

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha3"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"

	"pqrepro/ascon"
	"pqrepro/telemetry"
)

// TestConnTelemetryDevice: the host firmware as the telemetry device over the line. The
// key arrives in TELEK chunks, TELHS and TELSEAL give the handshake and frames, and every
// frame is byte-identical to what the Go reference device seals from the same DRBG stream
// (SHAKE256 of the seed: m first, then the payloads), and the Go gateway opens each once.
// AEADBENCH checks every sample it sends and echoes the sizes asked for.
func TestConnTelemetryDevice(t *testing.T) {
	c, _ := startHost(t, nil, nil, Options{RetryInterval: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}

	// TELHS before a key is pinned: a setup error.
	_, err := c.TelHandshake(ctx, "dev", nil)
	var de *DeviceError
	if !errors.As(err, &de) || de.Code != "setup" {
		t.Fatalf("TELHS without a key: %v, want ERROR code=setup", err)
	}

	pk, sk, err := mlkem512.GenerateKeyPair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ek := make([]byte, mlkem512.PublicKeySize)
	pk.Pack(ek)
	ekh, err := c.TelPin(ctx, ek)
	if err != nil {
		t.Fatal(err)
	}
	if h := ascon.Sum256(ek); !bytes.Equal(ekh, h[:8]) {
		t.Fatalf("the board's H(ek) %x, Go's %x", ekh, h[:8])
	}

	seed := []byte("telemetry device over the line")
	if err := c.Seed(ctx, seed); err != nil {
		t.Fatal(err)
	}
	dev, psk := "pqrepro-board", []byte("sixteen byte psk")
	hs, err := c.TelHandshake(ctx, dev, psk)
	if err != nil {
		t.Fatal(err)
	}
	if hs.Count == 0 || hs.Encaps+hs.KDF != hs.Count || hs.StackBytes == 0 {
		t.Fatalf("handshake counts %+v", hs)
	}
	drbg := sha3.NewSHAKE256()
	drbg.Write(seed)
	d, err := telemetry.NewDevice(telemetry.DeviceConfig{ID: dev, GatewayKey: ek, PSK: psk})
	if err != nil {
		t.Fatal(err)
	}
	msg, sess, err := d.Handshake(drbg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(msg.Payload, hs.Payload) || sess.ID() != telemetry.SessionID(hs.SessionID) {
		t.Fatalf("the board's handshake differs from Go's for the same m")
	}
	gw, err := telemetry.NewGateway(telemetry.GatewayConfig{DecapsulationKey: sk, Devices: map[string][]byte{dev: psk}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Receive(telemetry.Message{Topic: msg.Topic, Payload: hs.Payload}); err != nil {
		t.Fatal(err)
	}

	sizes := []int{0, 1, 16, 100, 300}
	var frames []TelFrame
	done, err := c.TelSeal(ctx, 2*len(sizes), sizes, func(f TelFrame) error {
		frames = append(frames, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if done.OK != 2*len(sizes) || done.Next != uint64(2*len(sizes)) {
		t.Fatalf("TELDONE %+v", done)
	}
	for i, f := range frames {
		pt := make([]byte, sizes[i%len(sizes)])
		drbg.Read(pt)
		g, err := sess.Seal(pt)
		if err != nil {
			t.Fatal(err)
		}
		if !f.OK || f.Counter != uint64(i) || !bytes.Equal(f.Payload, g.Payload) {
			t.Fatalf("frame %d: the board's %x, Go's %x", i, f.Payload, g.Payload)
		}
		if h := ascon.Sum256(pt); !bytes.Equal(f.PlainHash, h[:]) {
			t.Fatalf("frame %d: pth differs", i)
		}
		ev, err := gw.Receive(telemetry.Message{Topic: sess.Topic(), Payload: f.Payload})
		if err != nil || !bytes.Equal(ev.Plaintext, pt) {
			t.Fatalf("frame %d: gateway: %v", i, err)
		}
	}
	// The board's frame replayed: refused.
	if _, err := gw.Receive(telemetry.Message{Topic: sess.Topic(), Payload: frames[0].Payload}); err == nil {
		t.Fatal("a replayed board frame was accepted")
	}

	// A new TELHS is a new encapsulation: another session id and key, the counter from 0, and
	// the old session's counter never used again (its frames keep being refused as replays).
	hs2, err := c.TelHandshake(ctx, dev, psk)
	if err != nil {
		t.Fatal(err)
	}
	if hs2.SessionID == hs.SessionID || bytes.Equal(hs2.Payload, hs.Payload) {
		t.Fatal("a second handshake gave the same session")
	}
	if _, err := gw.Receive(telemetry.Message{Topic: msg.Topic, Payload: hs2.Payload}); err != nil {
		t.Fatal(err)
	}
	var f2 TelFrame
	if _, err := c.TelSeal(ctx, 1, []int{8}, func(f TelFrame) error { f2 = f; return nil }); err != nil {
		t.Fatal(err)
	}
	topic2 := telemetry.TopicPrefix + dev + "/d/" + telemetry.SessionID(hs2.SessionID).String()
	if ev, err := gw.Receive(telemetry.Message{Topic: topic2, Payload: f2.Payload}); err != nil || f2.Counter != 0 || ev.Session != telemetry.SessionID(hs2.SessionID) {
		t.Fatalf("the new session's first frame: counter %d, %v", f2.Counter, err)
	}
	// The same frame under the old session's topic: its tag fails (the topic is in the AD).
	if _, err := gw.Receive(telemetry.Message{Topic: sess.Topic(), Payload: f2.Payload}); err == nil {
		t.Fatal("a frame moved to another session's topic was accepted")
	}

	for _, a := range []string{"Ascon-AEAD128", "Ascon-128a-v1.2", "Ascon-128-v1.2"} {
		for _, op := range []string{"seal", "open"} {
			n := 0
			sum, err := c.AEADBench(ctx, AEADBenchRequest{AEAD: a, Op: op, Sizes: []int{0, 64, 4096}, ADLen: 55, Iterations: 6, Warmup: 1}, func(s Sample, size int) {
				if !s.OK {
					t.Errorf("%s %s sample %d (%d bytes): %s", a, op, s.Index, size, s.Reason)
				}
				n++
			})
			if err != nil || sum.OK != 6 || n != 6 {
				t.Fatalf("%s %s: %+v %v", a, op, sum, err)
			}
		}
	}
	_, err = c.AEADBench(ctx, AEADBenchRequest{AEAD: "AES-GCM", Op: "seal", Sizes: []int{1}, Iterations: 1}, nil)
	if !errors.As(err, &de) || de.Code != "unsupported" {
		t.Fatalf("an unknown AEAD: %v, want unsupported", err)
	}

	// Requests out of range are refused with the field named, before anything runs.
	for _, bad := range []struct {
		typ    string
		fields []Field
		msg    string
	}{
		{"TELSEAL", []Field{{"n", "1"}, {"sizes", "4097"}}, "sizes"},
		{"TELSEAL", []Field{{"n", "1"}, {"sizes", "1,,2"}}, "sizes"},
		{"TELSEAL", []Field{{"n", "0"}, {"sizes", "1"}}, "n"},
		{"TELEK", []Field{{"off", "5"}, {"ek", "00"}}, "off"},
		{"TELEK", []Field{{"off", "0"}, {"ek", "0g"}}, "ek"},
		{"TELHS", []Field{{"dev", "a/b"}}, "dev"},
		{"TELHS", []Field{{"dev", "d"}, {"psk", strings.Repeat("00", 65)}}, "psk"},
		{"AEADBENCH", []Field{{"aead", "Ascon-AEAD128"}, {"op", "seal"}, {"sizes", "1"}, {"adlen", "129"}, {"n", "1"}}, "adlen"},
	} {
		err := c.exchange(ctx, bad.typ, bad.fields, func(Frame) (bool, error) { return true, nil })
		if !errors.As(err, &de) || de.Code != "badarg" || de.Msg != bad.msg {
			t.Errorf("%s %v: %v, want ERROR code=badarg msg=%s", bad.typ, bad.fields, err, bad.msg)
		}
	}

	// A restarted board has no session (RAM only): TELSEAL refuses until a new TELHS.
	c2, _ := startHost(t, nil, nil, Options{RetryInterval: 200 * time.Millisecond})
	if _, err := c2.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = c2.TelSeal(ctx, 1, []int{1}, nil)
	if !errors.As(err, &de) || de.Code != "setup" || de.Msg != "session" {
		t.Fatalf("TELSEAL after a restart: %v, want ERROR code=setup msg=session", err)
	}
}
