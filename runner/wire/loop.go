package wire

import (
	"context"
	"fmt"
	"strconv"
)

// LoopRequest asks the board to run one operation back to back until the timed calls'
// counts add up to Budget (in Hello.Unit), each call between the edges of its marker output
// (LOOP in firmware/PROTOCOL.md): the load window of a metered energy pass.
type LoopRequest struct {
	// Bench names the algorithm, operation and signature fields; its Iterations and Warmup
	// are not sent.
	Bench BenchRequest
	// Budget is the counter units the passed calls' counts add up to before the loop ends
	// (at least 1, below 2^63).
	Budget uint64
	// Max is at most how many operations run (0: the firmware's limit, 2^32-1).
	Max uint32
}

// Loop is what a LOOP did, as LOOPDONE reports it.
type Loop struct {
	Ops    uint64 // operations whose output check passed
	Fail   uint64 // 1 when one failed (the loop stops there), else 0
	Count  uint64 // the passed operations' counts added up, in Hello.Unit
	Min    uint64 // the smallest and largest of them (0 when none passed)
	Max    uint64
	Marker string // the output toggled around each call ("gpio2"), "none" on a board without one
	Reason string // why the failed operation failed
}

// Validate checks the request before it is sent.
func (r LoopRequest) Validate() error {
	b := r.Bench
	b.Iterations, b.Warmup = 1, 0
	if err := b.Validate(); err != nil {
		return err
	}
	if r.Budget == 0 || r.Budget >= 1<<63 {
		return fmt.Errorf("wire: loop: budget %d out of 1..2^63-1", r.Budget)
	}
	return nil
}

func (r LoopRequest) fields() []Field {
	f := []Field{{"alg", r.Bench.Algorithm}, {"op", r.Bench.Operation}, {"budget", strconv.FormatUint(r.Budget, 10)}}
	if r.Max > 0 {
		f = append(f, Field{"max", strconv.FormatUint(uint64(r.Max), 10)})
	}
	// The signature fields, as BENCH sends them.
	return append(f, r.Bench.fields()[4:]...)
}

// Loop runs req on the board. started is called when the board has accepted the request
// and made its setup (the LOOP frame: the loop starts now), so a meter's window can open
// there; it may be nil. It returns what LOOPDONE reported.
func (c *Conn) Loop(ctx context.Context, req LoopRequest, started func()) (Loop, error) {
	if err := req.Validate(); err != nil {
		return Loop{}, err
	}
	var l Loop
	accepted := false
	err := c.exchange(ctx, "LOOP", req.fields(), func(f Frame) (bool, error) {
		switch f.Type {
		case "LOOP":
			if !accepted && started != nil {
				started()
			}
			accepted = true
			return false, nil
		case "LOOPDONE":
			var err error
			if l, err = parseLoop(f); err != nil {
				return false, err
			}
			if !accepted {
				return false, fmt.Errorf("%w: LOOPDONE before LOOP", ErrProtocol)
			}
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	return l, err
}

func parseLoop(f Frame) (Loop, error) {
	var l Loop
	for _, p := range []struct {
		key string
		v   *uint64
	}{{"ops", &l.Ops}, {"fail", &l.Fail}, {"count", &l.Count}} {
		v, err := f.Uint(p.key)
		if err != nil {
			return l, err
		}
		*p.v = v
	}
	if l.Ops > 0 {
		var err error
		if l.Min, err = f.Uint("min"); err != nil {
			return l, err
		}
		if l.Max, err = f.Uint("max"); err != nil {
			return l, err
		}
	}
	l.Marker, _ = f.Get("marker")
	l.Reason, _ = f.Get("reason")
	if l.Fail > 1 || (l.Fail == 1) != (l.Reason != "") {
		return l, fmt.Errorf("%w: LOOPDONE fail=%d reason=%q", ErrProtocol, l.Fail, l.Reason)
	}
	return l, nil
}
