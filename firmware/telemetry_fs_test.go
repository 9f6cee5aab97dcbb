package firmware

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/telemetry"
)

// fsCase is one forward-secret handshake: the gateway's offer for the device's request, the
// device's fixed inputs, and the plaintexts it seals.
type fsCase struct {
	gw    *telemetry.Gateway
	pk    []byte
	dev   string
	psk   []byte
	nonce []byte
	m     []byte
	now   time.Time
	offer telemetry.Message
	pts   [][]byte
}

func newFSCase(t *testing.T, dev string, psk []byte, pts [][]byte) *fsCase {
	t.Helper()
	pub, priv, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	c := &fsCase{dev: dev, psk: psk, pts: pts, now: time.Unix(1_790_000_000, 0), nonce: make([]byte, 16), m: make([]byte, 32)}
	rand.Read(c.nonce)
	rand.Read(c.m)
	c.pk, _ = pub.MarshalBinary()
	c.gw, err = telemetry.NewGateway(telemetry.GatewayConfig{SigningKey: priv, Devices: map[string][]byte{dev: psk},
		Now: func() time.Time { return c.now }})
	if err != nil {
		t.Fatal(err)
	}
	d, err := telemetry.NewDevice(telemetry.DeviceConfig{ID: dev, SigningKey: c.pk, PSK: psk})
	if err != nil {
		t.Fatal(err)
	}
	rq, _, err := d.RequestKey(bytes.NewReader(c.nonce))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.gw.Receive(rq)
	if err != nil || ev.Reply == nil {
		t.Fatalf("gateway on the request: %v", err)
	}
	c.offer = *ev.Reply
	return c
}

// cDevice runs katcli tel-fs on the case's offer (or payload, when not nil) at now:
// the request, handshake and frames, or the refusal's reason.
func (c *fsCase) cDevice(t *testing.T, k *katcli, payload []byte, now time.Time) (out []string, refused string) {
	t.Helper()
	if payload == nil {
		payload = c.offer.Payload
	}
	hx := []string{}
	for _, p := range c.pts {
		hx = append(hx, orDash(hex.EncodeToString(p)))
	}
	got := strings.Fields(k.do(t, "tel-fs", hex.EncodeToString(c.pk), c.dev, orDash(hex.EncodeToString(c.psk)),
		hex.EncodeToString(c.nonce), hex.EncodeToString(payload), fmt.Sprint(now.Unix()), hex.EncodeToString(c.m), strings.Join(hx, ",")))
	if len(got) == 2 && got[0] == "refused" {
		return nil, got[1]
	}
	if len(got) != 2+len(c.pts) {
		t.Fatalf("tel-fs: %v", got)
	}
	return got, ""
}

// goDevice is the same from the Go reference, each frame opened by the gateway.
func (c *fsCase) goDevice(t *testing.T) []string {
	t.Helper()
	d, err := telemetry.NewDevice(telemetry.DeviceConfig{ID: c.dev, SigningKey: c.pk, PSK: c.psk})
	if err != nil {
		t.Fatal(err)
	}
	rq, req, err := d.RequestKey(bytes.NewReader(c.nonce))
	if err != nil {
		t.Fatal(err)
	}
	hs, sess, err := req.Complete(c.offer, c.now, bytes.NewReader(c.m))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{hex.EncodeToString(rq.Payload), hex.EncodeToString(hs.Payload)}
	for _, p := range c.pts {
		f, err := sess.Seal(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, hex.EncodeToString(f.Payload))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// TestTelemetryForwardSecretMatchesGo: the C device's forward-secret handshake
// (firmware/crypto/telemetry: ML-DSA-44 verification of the gateway's signed ephemeral key,
// the nonce and expiry checks, encapsulation to the ephemeral key, the mode-2 key derivation)
// gives the Go reference's request, handshake and frames byte for byte for fixed inputs, and
// the Go gateway opens the C device's session and frames. Tampered offers are refused with
// the Go device's reason.
func TestTelemetryForwardSecretMatchesGo(t *testing.T) {
	k := startKatcli(t)
	for i, tc := range []struct {
		dev string
		psk []byte
		pts [][]byte
	}{
		{"sensor-1", nil, [][]byte{{}, []byte("21.5 C"), bytes.Repeat([]byte{0xa5}, 4096)}},
		{strings.Repeat("d", 64), bytes.Repeat([]byte{7}, 64), [][]byte{make([]byte, 16), make([]byte, 17)}},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c := newFSCase(t, tc.dev, tc.psk, tc.pts)
			got, refused := c.cDevice(t, k, nil, c.now)
			if refused != "" {
				t.Fatalf("the C device refuses a genuine offer: %s", refused)
			}
			want := c.goDevice(t)
			if !strings.EqualFold(strings.Join(got, " "), strings.Join(want, " ")) {
				t.Fatalf("C and Go differ:\n C %.80v\nGo %.80v", got, want)
			}
			// The gateway opens the C device's handshake and every frame.
			hs, _ := hex.DecodeString(got[1])
			ev, err := c.gw.Receive(telemetry.Message{Topic: telemetry.TopicPrefix + c.dev + "/hs", Payload: hs})
			if err != nil || ev.Kind != telemetry.EventSession {
				t.Fatalf("gateway on the C handshake: %v", err)
			}
			for j, p := range c.pts {
				f, _ := hex.DecodeString(got[2+j])
				ev, err := c.gw.Receive(telemetry.Message{Topic: telemetry.TopicPrefix + c.dev + "/d/" + ev.Session.String(), Payload: f})
				if err != nil || !bytes.Equal(ev.Plaintext, p) {
					t.Fatalf("gateway on C frame %d: %v", j, err)
				}
			}
		})
	}

	// Tampered offers: each refused by the C device with the reason the Go device gives.
	c := newFSCase(t, "sensor-2", nil, [][]byte{[]byte("x")})
	off := c.offer.Payload
	flip := func(i int) []byte {
		b := bytes.Clone(off)
		b[i] ^= 1
		return b
	}
	other := newFSCase(t, "sensor-2", nil, nil) // signed by another gateway key
	for _, bad := range []struct {
		name, want string
		payload    []byte
		now        time.Time
	}{
		{"signature bit", "signature", flip(len(off) - 1), c.now},
		{"ephemeral key bit", "signature", flip(1 + 16 + 8 + 100), c.now},
		{"nonce in the offer", "signature", flip(1), c.now},
		{"expiry in the offer", "signature", flip(1 + 16 + 7), c.now},
		{"another gateway's offer", "signature", other.offer.Payload, c.now},
		{"short", "malformed", off[:len(off)-1], c.now},
		{"version", "malformed", append([]byte{2}, off[1:]...), c.now},
		{"expired", "expired", off, c.now.Add(61 * time.Second)},
		{"from the future", "expired", off, c.now.Add(-541 * time.Second)},
	} {
		if _, got := c.cDevice(t, k, bad.payload, bad.now); got != bad.want {
			t.Errorf("%s: C device says %q, want %q", bad.name, got, bad.want)
		}
	}
	// An old offer the broker replays answers another request: the nonce check.
	c2 := *c
	c2.nonce = bytes.Clone(c.nonce)
	c2.nonce[0] ^= 0xff
	if _, got := c2.cDevice(t, k, nil, c.now); got != "nonce" {
		t.Errorf("an offer for another request: C device says %q, want nonce", got)
	}
}
