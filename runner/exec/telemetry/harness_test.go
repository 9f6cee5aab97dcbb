package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/telemetry"
)

// TestStreamCountsWhatTheGatewayDid runs the harness for real (the embedded broker, a gateway
// and a device of package pqrepro/telemetry): a handshake opens a session the harness sees, a
// frame comes back whole, a stream of frames is delivered and counted, the adversary's replays
// and tamperings are all refused and counted, and a delivery the cell's check refuses fails the
// count naming its frame.
func TestStreamCountsWhatTheGatewayDid(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := &artifacts.Manifest{Spec: artifacts.Spec{MQTT: &artifacts.MQTTSpec{Broker: artifacts.MQTTBrokerEmbedded}}}
	s, err := newMQTTSetup(ctx, m, "harness-test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess, err := s.handshake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.roundTrip(ctx, sess, []byte("handshake check")); err != nil {
		t.Fatal(err)
	}
	// The stream runs in a session of its own: its frames count from 0.
	if sess, err = s.handshake(ctx); err != nil {
		t.Fatal(err)
	}
	const n, replays, tamperings = 6, 2, 3
	var progress atomic.Int32
	st := s.Watch(n, s.failedLink, func(d int) { progress.Store(int32(d)) })
	frames := make([]telemetry.Message, n)
	plain := make([][]byte, n)
	for i := range n {
		plain[i] = []byte(fmt.Sprintf("reading %d", i))
		if frames[i], err = sess.Seal(plain[i]); err != nil {
			t.Fatal(err)
		}
		if err := s.dl.Client().PublishAsync(ctx, frames[i]); err != nil {
			t.Fatal(err)
		}
	}
	if fail, err := st.AwaitFrames(ctx, n); fail != "" || err != nil {
		t.Fatalf("frames: %q %v", fail, err)
	}
	if fail, err := st.Attack(ctx, frames, replays, tamperings); fail != "" || err != nil {
		t.Fatalf("attack: %q %v", fail, err)
	}
	counts, last, fail := st.Counts(n, replays, tamperings, func(i int, d *Delivery) string {
		if !bytes.Equal(d.Plaintext, plain[i]) {
			return fmt.Sprintf("frame %d: another plaintext", i)
		}
		return ""
	})
	if fail != "" {
		t.Fatal(fail)
	}
	refused := 0
	for _, c := range counts.Rejected {
		refused += c
	}
	if counts.Sent != n || counts.Verified != n || counts.Duplicated != 0 || refused != replays+tamperings || last.IsZero() || progress.Load() != n {
		t.Errorf("counts %+v (refused %d), last %v, progress %d", counts, refused, last, progress.Load())
	}
	if _, _, fail := st.Counts(n, replays, tamperings, func(i int, _ *Delivery) string {
		if i == 3 {
			return "frame 3: refused by the check"
		}
		return ""
	}); fail != "frame 3: refused by the check" {
		t.Errorf("a refused delivery: %q", fail)
	}
	if got := Overheads([]int{9, 9}, n, func(i int) int { return len(frames[i].Payload) - len(plain[i]) }); len(got) != 2 || got[0].Frames != n/2 || got[0].Min <= 0 {
		t.Errorf("overheads %+v", got)
	}
}
