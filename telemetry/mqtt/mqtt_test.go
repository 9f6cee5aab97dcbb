package mqtt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/sign/mldsa/mldsa44"

	"pqrepro/telemetry"
)

const dev = "dev-1"

var psk = []byte("sixteen byte psk")

type keys struct {
	ek      []byte
	sk      *mlkem512.PrivateKey
	sigPub  []byte
	sigPriv *mldsa44.PrivateKey
}

func newKeys(t testing.TB) keys {
	t.Helper()
	pk, sk, err := mlkem512.GenerateKeyPair(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ek := make([]byte, telemetry.EncapKeySize)
	pk.Pack(ek)
	spk, ssk, err := mldsa44.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return keys{ek: ek, sk: sk, sigPub: spk.Bytes(), sigPriv: ssk}
}

func (k keys) device(t testing.TB) *telemetry.Device {
	t.Helper()
	d, err := telemetry.NewDevice(telemetry.DeviceConfig{ID: dev, GatewayKey: k.ek, SigningKey: k.sigPub, PSK: psk})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (k keys) gateway(t testing.TB) *telemetry.Gateway {
	t.Helper()
	g, err := telemetry.NewGateway(telemetry.GatewayConfig{DecapsulationKey: k.sk, SigningKey: k.sigPriv, Devices: map[string][]byte{dev: psk}})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// brokers starts each real broker the tests run against: the embedded mochi-mqtt and a
// Mosquitto process (skipped with a reason when mosquitto is not installed).
func brokers(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	e, err := StartEmbedded("", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	out["mochi"] = e.Addr()
	if _, err := MosquittoPath(); err != nil {
		t.Logf("mosquitto: %v", err)
		return out
	}
	m, err := StartMosquitto(context.Background(), t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	out["mosquitto"] = m.Addr()
	return out
}

// recorder collects the gateway's verdicts.
type recorder struct {
	mu        sync.Mutex
	delivered map[uint64]int
	plain     map[uint64][]byte
	reasons   map[telemetry.Reason]int
	sessions  int
	n         int
	other     []error
}

func newRecorder() *recorder {
	return &recorder{delivered: map[uint64]int{}, plain: map[uint64][]byte{}, reasons: map[telemetry.Reason]int{}}
}

func (r *recorder) on(v Verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if v.Err != nil {
		if reason, ok := IsRejection(v.Err); ok {
			r.reasons[reason]++
		} else {
			r.other = append(r.other, v.Err)
		}
		return
	}
	switch v.Event.Kind {
	case telemetry.EventFrame:
		r.delivered[v.Event.Counter]++
		r.plain[v.Event.Counter] = v.Event.Plaintext
	case telemetry.EventSession:
		r.sessions++
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// attacker is one proxy's plan: by counter mod 20, the slots it acts on.
type attacker struct {
	drop, dup, flip, reorder, replay uint64
	stop                             uint64 // no action at or above this counter
	window                           uint64

	mu      sync.Mutex
	held    *Publish
	stored  []Publish // kept for a later replay
	seen    map[uint64]bool
	counted map[string]int
}

// snapshot returns the counts once the attacker has seen counter last.
func (a *attacker) snapshot(t *testing.T, last uint64) map[string]int {
	t.Helper()
	waitFor(t, fmt.Sprintf("the proxy to see counter %d", last), func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.seen[last]
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.counted)
}

func newAttacker(base, stop, window uint64) *attacker {
	return &attacker{drop: base, dup: base + 2, flip: base + 4, reorder: base + 6, replay: base + 8, stop: stop, window: window, seen: map[uint64]bool{}, counted: map[string]int{}}
}

func (a *attacker) act(p Publish) []Publish {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(p.Payload) < telemetry.Overhead {
		return []Publish{p}
	}
	c := binary.BigEndian.Uint64(p.Payload)
	var out []Publish
	// Replays of stored frames once they are older than the window.
	kept := a.stored[:0]
	for _, s := range a.stored {
		if c >= binary.BigEndian.Uint64(s.Payload)+a.window+10 {
			out = append(out, s)
			a.counted["replay"]++
		} else {
			kept = append(kept, s)
		}
	}
	a.stored = kept
	first := !a.seen[c]
	a.seen[c] = true
	slot := c % 20
	switch {
	case !first || c >= a.stop:
		out = append(out, p)
	case slot == a.drop:
		a.counted["drop"]++
	case slot == a.dup:
		out = append(out, p, p)
		a.counted["dup"]++
	case slot == a.flip:
		f := p
		f.Payload = bytes.Clone(p.Payload)
		f.Payload[len(f.Payload)-1] ^= 0x01 // the tag's last bit: the counter stays readable
		out = append(out, p, f)
		a.counted["flip"]++
	case slot == a.reorder:
		h := p
		a.held = &h
		a.counted["reorder"]++
		return out
	case slot == a.replay:
		out = append(out, p)
		a.stored = append(a.stored, p)
	default:
		out = append(out, p)
	}
	if a.held != nil && c != binary.BigEndian.Uint64(a.held.Payload) {
		out = append(out, *a.held) // after the next frame: reordered
		a.held = nil
	}
	return out
}

// TestAdversarialBroker runs a device and a gateway through a real broker with an attacker
// on both sides of it (device -> broker and broker -> gateway): drops, duplicates, bit flips,
// reordering and replays. Every genuine frame that reached the gateway is delivered exactly
// once with its plaintext, every tampered or replayed copy is refused with its reason
// counted, and every dropped frame shows up as missing.
func TestAdversarialBroker(t *testing.T) {
	for name, addr := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const n, stop = 230, 200
			k := newKeys(t)
			a := newAttacker(1, stop, telemetry.DefaultWindow)  // device side: slots 1,3,5,7,9
			b := newAttacker(11, stop, telemetry.DefaultWindow) // gateway side: slots 11,13,15,17,19
			pa, err := StartProxy(addr, ToBroker, a.act)
			if err != nil {
				t.Fatal(err)
			}
			defer pa.Close()
			pb, err := StartProxy(addr, ToClient, b.act)
			if err != nil {
				t.Fatal(err)
			}
			defer pb.Close()
			g := k.gateway(t)
			rec := newRecorder()
			gl, err := DialGateway(ctx, pb.Addr(), "gw-adv-"+name, g, rec.on)
			if err != nil {
				t.Fatal(err)
			}
			defer gl.Close()
			dl, err := DialDevice(ctx, pa.Addr(), dev, k.device(t))
			if err != nil {
				t.Fatal(err)
			}
			defer dl.Close()
			s, err := dl.Handshake(ctx, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the session", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.sessions == 1 })
			sent := map[uint64][]byte{}
			for i := range n {
				pt := fmt.Appendf(nil, "reading %d: %x", i, i*i)
				f, err := dl.Send(ctx, s, pt)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				sent[binary.BigEndian.Uint64(f.Payload)] = pt
			}
			ac := a.snapshot(t, n-1)
			bc := b.snapshot(t, n-1)
			drops := ac["drop"] + bc["drop"]
			arrivals := 1 + n - drops + ac["dup"] + bc["dup"] + ac["flip"] + bc["flip"] + ac["replay"] + bc["replay"]
			waitFor(t, fmt.Sprintf("%d messages at the gateway", arrivals), func() bool { return rec.count() >= arrivals })
			time.Sleep(50 * time.Millisecond) // nothing more may arrive
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.n != arrivals || len(rec.other) > 0 {
				t.Fatalf("gateway saw %d messages, want %d; other errors %v", rec.n, arrivals, rec.other)
			}
			for c, pt := range sent {
				dropped := c < stop && (c%20 == a.drop || c%20 == b.drop)
				switch got := rec.delivered[c]; {
				case dropped && got != 0:
					t.Errorf("counter %d was dropped but delivered %d times", c, got)
				case !dropped && got != 1:
					t.Errorf("counter %d delivered %d times, want once", c, got)
				case !dropped && !bytes.Equal(rec.plain[c], pt):
					t.Errorf("counter %d: plaintext %q, sent %q", c, rec.plain[c], pt)
				}
			}
			want := map[telemetry.Reason]int{
				telemetry.ReasonDuplicate: ac["dup"] + bc["dup"],
				telemetry.ReasonForged:    ac["flip"] + bc["flip"],
				telemetry.ReasonReplay:    ac["replay"] + bc["replay"],
			}
			for _, r := range telemetry.Reasons() {
				if rec.reasons[r] != want[r] {
					t.Errorf("reason %s: %d refused, want %d", r, rec.reasons[r], want[r])
				}
			}
			st := g.Stats()
			if st.Missing != uint64(drops) || st.Frames != uint64(n-drops) {
				t.Errorf("gateway stats: %d frames, %d missing; want %d and %d", st.Frames, st.Missing, n-drops, drops)
			}
			if ac["replay"] == 0 || bc["replay"] == 0 || ac["reorder"] == 0 || bc["reorder"] == 0 || drops == 0 {
				t.Fatalf("the attack did not exercise every action: %v %v", ac, bc)
			}
			t.Logf("%s: %d frames, device side %v, gateway side %v, delivered %d, refused %v, missing %d", name, n, ac, bc, st.Frames, want, st.Missing)
		})
	}
}

// TestBadInput sends what a device never would through a real broker: a malformed frame, a
// frame for an unknown session, an oversized frame; each is refused with its reason and the
// genuine frame after them is still delivered.
func TestBadInput(t *testing.T) {
	for name, addr := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			k := newKeys(t)
			g := k.gateway(t)
			rec := newRecorder()
			gl, err := DialGateway(ctx, addr, "gw-bad-"+name, g, rec.on)
			if err != nil {
				t.Fatal(err)
			}
			defer gl.Close()
			dl, err := DialDevice(ctx, addr, dev, k.device(t))
			if err != nil {
				t.Fatal(err)
			}
			defer dl.Close()
			s, err := dl.Handshake(ctx, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			bad := []struct {
				msg    telemetry.Message
				reason telemetry.Reason
			}{
				{telemetry.Message{Topic: s.Topic(), Payload: []byte("short")}, telemetry.ReasonMalformed},
				{telemetry.Message{Topic: telemetry.TopicPrefix + dev + "/d/0011223344556677", Payload: make([]byte, 40)}, telemetry.ReasonUnknownSession},
				{telemetry.Message{Topic: s.Topic(), Payload: make([]byte, telemetry.Overhead+telemetry.DefaultMaxPayload+1)}, telemetry.ReasonOversized},
				{telemetry.Message{Topic: telemetry.TopicPrefix + "stranger/hs", Payload: make([]byte, 770)}, telemetry.ReasonUnknownDevice},
				{telemetry.Message{Topic: telemetry.TopicPrefix + dev + "/d/zz", Payload: make([]byte, 40)}, telemetry.ReasonMalformed},
			}
			for _, b := range bad {
				if err := dl.Client().Publish(ctx, b.msg); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := dl.Send(ctx, s, []byte("genuine")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "every message", func() bool { return rec.count() >= len(bad)+2 })
			rec.mu.Lock()
			defer rec.mu.Unlock()
			want := map[telemetry.Reason]int{}
			for _, b := range bad {
				want[b.reason]++
			}
			for r, n := range want {
				if rec.reasons[r] != n {
					t.Errorf("reason %s: %d, want %d (all: %v)", r, rec.reasons[r], n, rec.reasons)
				}
			}
			if rec.delivered[0] != 1 || string(rec.plain[0]) != "genuine" {
				t.Errorf("the genuine frame was not delivered once: %v", rec.delivered)
			}
		})
	}
}

// TestBrokerPacketLimit: a packet above the broker's bound is refused by the broker itself
// (the connection is closed), never routed to the gateway.
func TestBrokerPacketLimit(t *testing.T) {
	for name, addr := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rec := newRecorder()
			k := newKeys(t)
			gl, err := DialGateway(ctx, addr, "gw-lim-"+name, k.gateway(t), rec.on)
			if err != nil {
				t.Fatal(err)
			}
			defer gl.Close()
			c, err := Dial(ctx, addr, "big-"+name, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			err = c.Publish(pctx, telemetry.Message{Topic: telemetry.TopicPrefix + dev + "/d/0011223344556677", Payload: make([]byte, 2*DefaultMaxPacket)})
			pcancel()
			t.Logf("publish above the limit: %v", err)
			if err == nil {
				select {
				case <-c.Gone():
				case <-time.After(5 * time.Second):
					t.Fatal("the broker accepted a packet above its limit and kept the connection")
				}
			}
			time.Sleep(100 * time.Millisecond)
			if rec.count() != 0 {
				t.Fatalf("the gateway received %d messages", rec.count())
			}
		})
	}
}

// TestForwardSecretOverBroker runs the forward-secret handshake through each broker.
func TestForwardSecretOverBroker(t *testing.T) {
	for name, addr := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			k := newKeys(t)
			rec := newRecorder()
			gl, err := DialGateway(ctx, addr, "gw-fs-"+name, k.gateway(t), rec.on)
			if err != nil {
				t.Fatal(err)
			}
			defer gl.Close()
			dl, err := DialDevice(ctx, addr, dev, k.device(t))
			if err != nil {
				t.Fatal(err)
			}
			defer dl.Close()
			s, err := dl.HandshakeForwardSecret(ctx, rand.Reader, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dl.Send(ctx, s, []byte("fs")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the frame", func() bool { rec.mu.Lock(); defer rec.mu.Unlock(); return rec.delivered[0] == 1 })
		})
	}
}

// TestBrokerGoesAway: a broker killed mid-stream makes the next publish fail with
// ErrBrokerGone rather than hang or succeed.
func TestBrokerGoesAway(t *testing.T) {
	if _, err := MosquittoPath(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, err := StartMosquitto(ctx, t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	k := newKeys(t)
	dl, err := DialDevice(ctx, m.Addr(), dev, k.device(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := dl.Handshake(ctx, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	m.Stop()
	<-dl.Client().Gone()
	_, err = dl.Send(ctx, s, []byte("after"))
	if !errors.Is(err, ErrBrokerGone) {
		t.Fatalf("send after the broker went away: %v, want ErrBrokerGone", err)
	}
}

// TestDeviceRestartOverBroker: a device that restarts mid-stream (its counter lost) runs a
// new handshake; the gateway delivers both sessions' frames, under different session ids and
// so different keys, and refuses nothing.
func TestDeviceRestartOverBroker(t *testing.T) {
	for name, addr := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			k := newKeys(t)
			var mu sync.Mutex
			got := map[telemetry.SessionID]int{}
			refused := 0
			gl, err := DialGateway(ctx, addr, "gw-restart-"+name, k.gateway(t), func(v Verdict) {
				mu.Lock()
				defer mu.Unlock()
				if v.Err != nil {
					refused++
				} else if v.Event.Kind == telemetry.EventFrame {
					got[v.Event.Session]++
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer gl.Close()
			var sids []telemetry.SessionID
			for life := range 2 {
				dl, err := DialDevice(ctx, addr, dev, k.device(t)) // a fresh device: nothing kept
				if err != nil {
					t.Fatal(err)
				}
				s, err := dl.Handshake(ctx, rand.Reader)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
				for i := range 10 {
					if _, err := dl.Send(ctx, s, fmt.Appendf(nil, "life %d frame %d", life, i)); err != nil {
						t.Fatal(err)
					}
				}
				sids = append(sids, s.ID())
				dl.Close() // the restart: the session and its counter are gone
			}
			waitFor(t, "both sessions' frames", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return got[sids[0]]+got[sids[1]] >= 20
			})
			mu.Lock()
			defer mu.Unlock()
			if sids[0] == sids[1] || got[sids[0]] != 10 || got[sids[1]] != 10 || refused != 0 {
				t.Fatalf("sessions %v, delivered %v, refused %d", sids, got, refused)
			}
		})
	}
}
