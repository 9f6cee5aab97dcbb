package telemetry

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/telemetry"
	"pqrepro/telemetry/mqtt"
)

// A telemetry stream cell, on the host and on a board alike: the device sends n genuine frames
// through the broker, Stream tallies the gateway's verdicts, the run's adversary then replays
// old frames and publishes bit-flipped copies (Attack), and the counts are read at the end.
// Each step that waits returns a failure reason for the cell ("" when it passed) or an error
// that breaks the run (a lost broker link).

// Delivery is one frame counter as the gateway delivered it: the first plaintext, when, and
// how many times.
type Delivery struct {
	Plaintext []byte
	At        time.Time
	Times     int
}

// Stream tallies the gateway's verdicts on one cell's stream. Safe for concurrent use.
type Stream struct {
	h      *Harness
	failed func() error

	mu        sync.Mutex
	delivered map[uint64]*Delivery
	verdicts  int
	rejected  map[telemetry.Reason]int
	other     []error
}

// Watch sends the gateway's verdicts from now on to a new Stream of n frames. failed is the
// cell's link check (FailedLink with the device's client); progress, when set, is called with
// the number of distinct frames delivered after each new one.
func (h *Harness) Watch(n int, failed func() error, progress func(delivered int)) *Stream {
	s := &Stream{h: h, failed: failed, delivered: make(map[uint64]*Delivery, n), rejected: map[telemetry.Reason]int{}}
	h.Handle(func(v mqtt.Verdict) {
		now := time.Now()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.verdicts++
		d := s.delivered[v.Event.Counter]
		if d == nil {
			d = &Delivery{At: now, Plaintext: v.Event.Plaintext}
			s.delivered[v.Event.Counter] = d
		}
		d.Times++
		if progress != nil && d.Times == 1 {
			progress(len(s.delivered))
		}
	}, func(v mqtt.Verdict) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.verdicts++
		if r, ok := mqtt.IsRejection(v.Err); ok {
			s.rejected[r]++
		} else if v.Err != nil {
			s.other = append(s.other, v.Err)
		}
	})
	return s
}

// Delivered is the number of distinct frames delivered so far.
func (s *Stream) Delivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.delivered)
}

// linkLost is the run-breaking error of a lost broker link, or nil.
func (s *Stream) linkLost() error {
	if err := s.failed(); err != nil {
		return fmt.Errorf("mqtt-telemetry stream: %w", err)
	}
	return nil
}

// AwaitFrames waits until the gateway delivered n distinct frames.
func (s *Stream) AwaitFrames(ctx context.Context, n int) (fail string, err error) {
	werr := AwaitDelivery(ctx, &s.mu, s.failed, Wait, fmt.Sprintf("%d frames at the gateway", n), func() bool { return len(s.delivered) >= n })
	if werr == nil {
		return "", nil
	}
	if err := s.linkLost(); err != nil {
		return "", err
	}
	s.mu.Lock()
	got, why := len(s.delivered), fmt.Sprint(s.rejected)
	s.mu.Unlock()
	return fmt.Sprintf("%d of %d genuine frames verified (refused: %s; gateway counts %d missing): %v", got, n, why, s.h.Gateway.Stats().Missing, werr), nil
}

// Attack is the run's adversary, a client of its own on the broker: it publishes the first
// replays of frames again and tamperings bit-flipped copies of them, then waits for the
// gateway's verdict on each.
func (s *Stream) Attack(ctx context.Context, frames []telemetry.Message, replays, tamperings int) (fail string, err error) {
	s.mu.Lock()
	before := s.verdicts
	s.mu.Unlock()
	adv, err := mqtt.Dial(ctx, s.h.Addr, "pqrepro-adversary", nil)
	if err != nil {
		return "", fmt.Errorf("mqtt-telemetry adversary: %w", err)
	}
	defer adv.Close()
	for i := range replays {
		if err := adv.Publish(ctx, frames[i]); err != nil {
			return "", fmt.Errorf("mqtt-telemetry adversary: replay: %w", err)
		}
	}
	for j := range tamperings {
		f := frames[(j*7919)%len(frames)]
		t := telemetry.Message{Topic: f.Topic, Payload: bytes.Clone(f.Payload)}
		bit := (j * 131) % (8 * len(t.Payload))
		t.Payload[bit/8] ^= 1 << (bit % 8)
		if err := adv.Publish(ctx, t); err != nil {
			return "", fmt.Errorf("mqtt-telemetry adversary: tampering: %w", err)
		}
	}
	if werr := AwaitDelivery(ctx, &s.mu, s.failed, Wait, "the gateway's verdicts on the injected frames",
		func() bool { return s.verdicts >= before+replays+tamperings }); werr != nil {
		if err := s.linkLost(); err != nil {
			return "", err
		}
		return werr.Error(), nil
	}
	time.Sleep(20 * time.Millisecond) // a stray extra delivery would show in the counts
	return "", s.linkLost()
}

// Counts are the stream's frame counts once it is over: every frame 0..n-1 must have been
// delivered, and check accepts each delivery (returning "" , or why not; it also collects the
// cell's samples). fail names the first frame that was not, or the gateway's first error.
func (s *Stream) Counts(n, replays, tamperings int, check func(i int, d *Delivery) string) (counts *artifacts.FrameCounts, last time.Time, fail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.other) > 0 {
		return nil, last, fmt.Sprintf("gateway: %v", s.other[0])
	}
	counts = &artifacts.FrameCounts{Sent: n, InjectedReplays: replays, InjectedTamperings: tamperings, Rejected: map[string]int{}}
	for _, r := range telemetry.Reasons() {
		counts.Rejected[r.String()] = s.rejected[r]
	}
	counts.Missing = int(s.h.Gateway.Stats().Missing)
	for i := range n {
		d := s.delivered[uint64(i)]
		if d == nil {
			return nil, last, fmt.Sprintf("frame %d was never delivered", i)
		}
		if d.Times > 1 {
			counts.Duplicated++
		}
		if why := check(i, d); why != "" {
			return nil, last, why
		}
		counts.Verified++
		if d.At.After(last) {
			last = d.At
		}
	}
	return counts, last, ""
}

// Overheads are the bytes a frame adds to its payload, per payload size (frames round-robin
// over sizes), from overhead(i) of each of the n frames.
func Overheads(sizes []int, n int, overhead func(i int) int) []artifacts.SizeOverhead {
	var over []artifacts.SizeOverhead
	for k, size := range sizes {
		o := artifacts.SizeOverhead{Size: size, Min: -1}
		for i := k; i < n; i += len(sizes) {
			d := overhead(i)
			if o.Min < 0 || d < o.Min {
				o.Min = d
			}
			o.Max = max(o.Max, d)
			o.Frames++
		}
		o.Min = max(o.Min, 0)
		over = append(over, o)
	}
	return over
}

// Throughput is n frames over the time from start to last, in frames per second (0 when no
// time passed).
func Throughput(n int, start, last time.Time) float64 {
	if el := last.Sub(start); el > 0 {
		return float64(n) / el.Seconds()
	}
	return 0
}
