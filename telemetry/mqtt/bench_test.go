package mqtt

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"pqrepro/telemetry"
)

// benchBrokers starts mochi and, when installed, Mosquitto for a benchmark.
func benchBrokers(b *testing.B) map[string]string {
	b.Helper()
	out := map[string]string{}
	e, err := StartEmbedded("", 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	out["mochi"] = e.Addr()
	if _, err := MosquittoPath(); err == nil {
		m, err := StartMosquitto(context.Background(), b.TempDir(), 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(m.Stop)
		out["mosquitto"] = m.Addr()
	}
	return out
}

// BenchmarkHandshakeOverBroker is one whole handshake through a real broker: the device
// encapsulates and publishes, the gateway decapsulates and opens the session (the time ends
// when the gateway's link reports it). Reports the median beside the mean.
func BenchmarkHandshakeOverBroker(b *testing.B) {
	for _, name := range []string{"mochi", "mosquitto"} {
		for _, fs := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/%s", name, map[bool]string{false: "pinned", true: "forward-secret"}[fs]), func(b *testing.B) {
				addr, ok := benchBrokers(b)[name]
				if !ok {
					b.Skip("mosquitto is not installed")
				}
				ctx := context.Background()
				k := newKeys(b)
				sessions := make(chan telemetry.SessionID, 1)
				gl, err := DialGateway(ctx, addr, "gw-bench", k.gateway(b), func(v Verdict) {
					if v.Err == nil && v.Event.Kind == telemetry.EventSession {
						sessions <- v.Event.Session
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				defer gl.Close()
				dl, err := DialDevice(ctx, addr, dev, k.device(b))
				if err != nil {
					b.Fatal(err)
				}
				defer dl.Close()
				var times []float64
				for b.Loop() {
					t0 := time.Now()
					var s *telemetry.Session
					if fs {
						s, err = dl.HandshakeForwardSecret(ctx, rand.Reader, time.Now)
					} else {
						s, err = dl.Handshake(ctx, rand.Reader)
					}
					if err != nil {
						b.Fatal(err)
					}
					if sid := <-sessions; sid != s.ID() {
						b.Fatalf("gateway opened %s, device holds %s", sid, s.ID())
					}
					times = append(times, float64(time.Since(t0).Nanoseconds()))
				}
				slices.Sort(times)
				b.ReportMetric(times[len(times)/2]/1e3, "p50-µs")
			})
		}
	}
}

// BenchmarkGatewayVsBroker measures, in one run and on the same broker and connections'
// shape, the broker's own message rate with no crypto (a publisher pipelining plain payloads
// of the frames' size to a subscriber that only counts them) and the gateway's rate (a
// device sealing and pipelining frames to a gateway that verifies, decrypts and
// window-checks each), alternating the two per round. Reports both rates and their ratio.
func BenchmarkGatewayVsBroker(b *testing.B) {
	const frames, size = 5000, 64
	for _, name := range []string{"mochi", "mosquitto"} {
		b.Run(name, func(b *testing.B) {
			addr, ok := benchBrokers(b)[name]
			if !ok {
				b.Skip("mosquitto is not installed")
			}
			ctx := context.Background()
			k := newKeys(b)
			var plainGot, framesGot atomic.Int64
			sub, err := Dial(ctx, addr, "plain-sub", func(telemetry.Message) { plainGot.Add(1) })
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Close()
			if err := sub.Subscribe(ctx, "bench/plain"); err != nil {
				b.Fatal(err)
			}
			pub, err := Dial(ctx, addr, "plain-pub", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			g := k.gateway(b)
			gl, err := DialGateway(ctx, addr, "gw-rate", g, func(v Verdict) {
				if v.Err == nil && v.Event.Kind == telemetry.EventFrame {
					framesGot.Add(1)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			defer gl.Close()
			dl, err := DialDevice(ctx, addr, dev, k.device(b))
			if err != nil {
				b.Fatal(err)
			}
			defer dl.Close()
			wait := func(c *atomic.Int64, n int64) {
				deadline := time.Now().Add(60 * time.Second)
				for c.Load() < n {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d messages arrived", c.Load(), n)
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
			payload := make([]byte, size+telemetry.Overhead) // the plain message is as long as a frame
			var plainTime, gwTime time.Duration
			rounds := 0
			plainRound := func() {
				plainGot.Store(0)
				t0 := time.Now()
				for range frames {
					if err := pub.PublishAsync(ctx, telemetry.Message{Topic: "bench/plain", Payload: payload}); err != nil {
						b.Fatal(err)
					}
				}
				wait(&plainGot, frames)
				plainTime += time.Since(t0)
			}
			gatewayRound := func() {
				s, err := dl.Handshake(ctx, rand.Reader)
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(5 * time.Millisecond) // the session opens before its first frame
				framesGot.Store(0)
				pt := make([]byte, size)
				t0 := time.Now()
				for range frames {
					f, err := s.Seal(pt)
					if err != nil {
						b.Fatal(err)
					}
					if err := dl.Client().PublishAsync(ctx, f); err != nil {
						b.Fatal(err)
					}
				}
				wait(&framesGot, frames)
				gwTime += time.Since(t0)
			}
			plainRound() // warm both paths up, untimed
			gatewayRound()
			plainTime, gwTime = 0, 0
			for b.Loop() {
				if rounds%2 == 0 { // alternate which goes first
					plainRound()
					gatewayRound()
				} else {
					gatewayRound()
					plainRound()
				}
				rounds++
			}
			if st := g.Stats(); st.Missing != 0 {
				b.Fatalf("gateway: %d missing, refused %v", st.Missing, st.Rejected)
			}
			brokerRate := float64(rounds*frames) / plainTime.Seconds()
			gwRate := float64(rounds*frames) / gwTime.Seconds()
			b.ReportMetric(brokerRate, "broker-msg/s")
			b.ReportMetric(gwRate, "gateway-frames/s")
			b.ReportMetric(gwRate/brokerRate, "ratio")
		})
	}
}
