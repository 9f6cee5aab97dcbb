package artifacts

import (
	"errors"
	"fmt"
	"math"
)

// Hashing is the share of a board cell's instructions spent in the firmware's SHA-2 and
// SHA-3 functions (pqm4's hashing table, here in the board's counter unit rather than
// cycles), from an untimed pass after the timed samples: the firmware redirects its hash
// functions to copies that add the counter's advance across each outermost call, so the
// pass's counts are never the cell's timed samples. Either Absent says why it was not measured
// or the figures are set.
type Hashing struct {
	// Share is Hashed / Total.
	Share float64 `json:"share,omitempty"`
	// Bound is the largest error of Share that the counter's resolution allows: each
	// outermost call is two counter reads, each up to one step off, so Calls × resolution /
	// Total; 0 on a counter that counts every instruction (minstret).
	Bound float64 `json:"bound,omitempty"`
	// Hashed is the counter's advance inside the hash functions, summed over the pass's samples.
	Hashed uint64 `json:"hashed,omitempty"`
	// Total is the pass's counts summed (they include the counting copies' own few
	// instructions per call, which is why the pass is not timed).
	Total uint64 `json:"total,omitempty"`
	// Calls is the outermost hash calls the pass counted.
	Calls uint64 `json:"calls,omitempty"`
	// Samples is the pass's operations.
	Samples int `json:"samples,omitempty"`
	// Absent says why the share was not measured (an implementation the build brought has
	// its own hash functions; a firmware without the pass).
	Absent string `json:"absent,omitempty"`
}

// NewHashing is the share of a hashing pass whose samples summed to hashed of total
// counter units in calls outermost hash calls, on a counter of the given resolution.
func NewHashing(hashed, total, calls uint64, samples int, resolution uint64) (*Hashing, error) {
	if total == 0 || samples < 1 {
		return nil, fmt.Errorf("hashing pass: %d samples counting %d in all", samples, total)
	}
	h := &Hashing{Hashed: hashed, Total: total, Calls: calls, Samples: samples,
		Share: float64(hashed) / float64(total)}
	if resolution > 1 {
		h.Bound = float64(calls) * float64(resolution) / float64(total)
	}
	return h, h.Validate()
}

// Validate checks that a recorded share agrees with its figures.
func (h *Hashing) Validate() error {
	if h.Absent != "" {
		if h.Total != 0 || h.Hashed != 0 || h.Calls != 0 || h.Samples != 0 || h.Share != 0 || h.Bound != 0 {
			return errors.New("hashing: absent, yet figures are recorded")
		}
		return nil
	}
	switch {
	case h.Samples < 1 || h.Total == 0:
		return fmt.Errorf("hashing: %d samples counting %d, neither may be 0", h.Samples, h.Total)
	case math.IsNaN(h.Bound) || h.Bound < 0 || h.Bound > 1:
		return fmt.Errorf("hashing: bound %v, want 0..1", h.Bound)
	case math.Abs(h.Share-float64(h.Hashed)/float64(h.Total)) > 1e-12:
		return fmt.Errorf("hashing: share %v, hashed/total give %v", h.Share, float64(h.Hashed)/float64(h.Total))
	case h.Share > 1+h.Bound:
		return fmt.Errorf("hashing: share %v exceeds 1 by more than its bound %v", h.Share, h.Bound)
	}
	return nil
}
