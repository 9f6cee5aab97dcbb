package firmware

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"

	"pqrepro/telemetry"
)

// telFrames runs katcli's tel-frames: the C device's handshake payload and one frame per
// plaintext (firmware/crypto/telemetry).
func telFrames(t *testing.T, k *katcli, ek, m []byte, dev string, psk []byte, pts [][]byte) (hs []byte, frames [][]byte) {
	t.Helper()
	hx := make([]string, len(pts))
	for i, p := range pts {
		hx[i] = hex.EncodeToString(p)
		if len(p) == 0 {
			hx[i] = "-"
		}
	}
	out := strings.Fields(k.do(t, "tel-frames", hex.EncodeToString(ek), hex.EncodeToString(m), dev, hex.EncodeToString(psk), strings.Join(hx, ",")))
	if len(out) != 1+len(pts) {
		t.Fatalf("tel-frames: %d fields, want %d: %v", len(out), 1+len(pts), out)
	}
	dec := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatalf("tel-frames: %q: %v", s, err)
		}
		return b
	}
	hs = dec(out[0])
	for _, f := range out[1:] {
		frames = append(frames, dec(f))
	}
	return hs, frames
}

// goFrames is the same from the Go reference (package telemetry), and the gateway's
// verdict on each frame: every one must open to its plaintext.
func goFrames(t *testing.T, sk *mlkem512.PrivateKey, ek, m []byte, dev string, psk []byte, pts [][]byte) (hs []byte, frames [][]byte) {
	t.Helper()
	d, err := telemetry.NewDevice(telemetry.DeviceConfig{ID: dev, GatewayKey: ek, PSK: psk})
	if err != nil {
		t.Fatal(err)
	}
	msg, sess, err := d.Handshake(bytes.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	var gw *telemetry.Gateway
	if sk != nil {
		if gw, err = telemetry.NewGateway(telemetry.GatewayConfig{DecapsulationKey: sk, Devices: map[string][]byte{dev: psk}}); err != nil {
			t.Fatal(err)
		}
		if _, err := gw.Receive(msg); err != nil {
			t.Fatalf("gateway refuses the handshake: %v", err)
		}
	}
	for _, p := range pts {
		f, err := sess.Seal(p)
		if err != nil {
			t.Fatal(err)
		}
		if gw != nil {
			ev, err := gw.Receive(f)
			if err != nil || !bytes.Equal(ev.Plaintext, p) {
				t.Fatalf("gateway on the Go frame: %v", err)
			}
		}
		frames = append(frames, f.Payload)
	}
	return msg.Payload, frames
}

// TestTelemetryDeviceMatchesGo: the C device (firmware/crypto/telemetry) gives the same
// handshake payload and the same frames, byte for byte, as the Go reference for fixed
// inputs: the project's vector (telemetry/testdata/vector.json) and random keys, devices,
// psks and plaintexts of every length class (0, under a block, blocks, 4096).
func TestTelemetryDeviceMatchesGo(t *testing.T) {
	k := startKatcli(t)

	raw, err := os.ReadFile("../telemetry/testdata/vector.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		EK     string `json:"ek"`
		M      string `json:"encaps_m"`
		Device string `json:"device"`
		PSK    string `json:"psk"`
		HS     string `json:"handshake_payload"`
		Frames []struct {
			Plaintext, Payload string
		} `json:"frames"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var pts [][]byte
	for _, f := range v.Frames {
		pts = append(pts, unhex(f.Plaintext))
	}
	hs, frames := telFrames(t, k, unhex(v.EK), unhex(v.M), v.Device, unhex(v.PSK), pts)
	if hex.EncodeToString(hs) != v.HS {
		t.Fatalf("vector: the C handshake payload differs from vector.json")
	}
	for i, f := range frames {
		if hex.EncodeToString(f) != v.Frames[i].Payload {
			t.Fatalf("vector frame %d: C %x, vector.json %s", i, f, v.Frames[i].Payload)
		}
	}

	for trial := range 12 {
		pk, sk, err := mlkem512.GenerateKeyPair(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		ek := make([]byte, mlkem512.PublicKeySize)
		pk.Pack(ek)
		m := make([]byte, 32)
		rand.Read(m)
		dev := []string{"d", "pqrepro-board", strings.Repeat("x", 64), "A.b_c-9"}[trial%4]
		psk := make([]byte, []int{0, 16, 64, 1}[trial%4])
		rand.Read(psk)
		var pts [][]byte
		for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 512, 4096}[:3+trial%9] {
			p := make([]byte, n)
			rand.Read(p)
			pts = append(pts, p)
		}
		chs, cframes := telFrames(t, k, ek, m, dev, psk, pts)
		ghs, gframes := goFrames(t, sk, ek, m, dev, psk, pts)
		if !bytes.Equal(chs, ghs) {
			t.Fatalf("trial %d: handshake payloads differ", trial)
		}
		for i := range pts {
			if !bytes.Equal(cframes[i], gframes[i]) {
				t.Fatalf("trial %d frame %d (%d bytes): C %x, Go %x", trial, i, len(pts[i]), cframes[i], gframes[i])
			}
		}
	}

	// An invalid encapsulation key (a coefficient not reduced mod q) and a bad device id are
	// refused.
	bad := bytes.Repeat([]byte{0xff}, mlkem512.PublicKeySize)
	if got := k.do(t, "tel-frames", hex.EncodeToString(bad), strings.Repeat("00", 32), "dev", "-", "-"); got != "fail" {
		t.Fatalf("an invalid ek: %q, want fail", got)
	}
	if got := k.do(t, "tel-frames", v.EK, v.M, "a/b", "-", "-"); got != "fail" {
		t.Fatalf("device id a/b: %q, want fail", got)
	}
}
