package telemetry

import (
	"crypto/rand"
	"fmt"
	"testing"
)

var benchSizes = []int{16, 64, 256, 1024}

// BenchmarkHandshakeDevice is the device's side of a pinned handshake:
// ML-KEM-512 encapsulation, two Ascon-Hash256, the CXOF128 derivation.
func BenchmarkHandshakeDevice(b *testing.B) {
	f := newFixture(b)
	d := f.device(b)
	for b.Loop() {
		m, s, err := d.Handshake(rand.Reader)
		if err != nil || s == nil || len(m.Payload) != pinnedHSSize {
			b.Fatalf("handshake: %v", err)
		}
	}
}

// BenchmarkHandshakeGateway is the gateway's side: decapsulation and
// derivation; each iteration's session is checked to open.
func BenchmarkHandshakeGateway(b *testing.B) {
	f := newFixture(b)
	d := f.device(b)
	g := f.gateway(b, 0)
	const batch = 256
	hs := make([]Message, 0, batch)
	for b.Loop() {
		if len(hs) == 0 {
			b.StopTimer()
			for range batch {
				m, _, err := d.Handshake(rand.Reader)
				if err != nil {
					b.Fatal(err)
				}
				hs = append(hs, m)
			}
			b.StartTimer()
		}
		ev, err := g.Receive(hs[len(hs)-1])
		hs = hs[:len(hs)-1]
		if err != nil || ev.Kind != EventSession {
			b.Fatalf("handshake refused: %v", err)
		}
	}
}

// BenchmarkHandshakeForwardSecret is a whole forward-secret handshake, both
// sides: key request, ephemeral ML-KEM-512 key generation and ML-DSA-44
// signature, verification and encapsulation, decapsulation.
func BenchmarkHandshakeForwardSecret(b *testing.B) {
	f := newFixture(b)
	d := f.device(b)
	g := f.gateway(b, 0)
	for b.Loop() {
		rq, req, err := d.RequestKey(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		ev, err := g.Receive(rq)
		if err != nil {
			b.Fatal(err)
		}
		hs, _, err := req.Complete(*ev.Reply, f.now, rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		if ev, err := g.Receive(hs); err != nil || ev.Kind != EventSession {
			b.Fatalf("handshake refused: %v", err)
		}
	}
}

// BenchmarkHandshakePinned is a whole pinned handshake, both sides, to set
// beside the forward-secret one.
func BenchmarkHandshakePinned(b *testing.B) {
	f := newFixture(b)
	d := f.device(b)
	g := f.gateway(b, 0)
	for b.Loop() {
		hs, _, err := d.Handshake(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		if ev, err := g.Receive(hs); err != nil || ev.Kind != EventSession {
			b.Fatalf("handshake refused: %v", err)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			f := newFixture(b)
			s := open(b, f.device(b), f.gateway(b, 0))
			pt := make([]byte, n)
			b.SetBytes(int64(n))
			for b.Loop() {
				m, err := s.Seal(pt)
				if err != nil || len(m.Payload) != n+Overhead {
					b.Fatalf("seal: %v", err)
				}
			}
		})
	}
}

// BenchmarkOpen is the gateway's whole path for a genuine frame: topic
// parse, session look-up, Ascon-AEAD128 open, window. Frames are sealed in
// batches outside the timer.
func BenchmarkOpen(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			f := newFixture(b)
			g := f.gateway(b, 0)
			s := open(b, f.device(b), g)
			pt := make([]byte, n)
			const batch = 4096
			frames := make([]Message, 0, batch)
			b.SetBytes(int64(n))
			for b.Loop() {
				if len(frames) == 0 {
					b.StopTimer()
					for range batch {
						m, _ := s.Seal(pt)
						frames = append(frames, m)
					}
					b.StartTimer()
				}
				ev, err := g.Receive(frames[0])
				frames = frames[1:]
				if err != nil || len(ev.Plaintext) != n {
					b.Fatalf("open: %v", err)
				}
			}
		})
	}
}
