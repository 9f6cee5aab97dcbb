package telemetry

// verdict is the replay window's answer for an authenticated counter.
type verdict int

const (
	verdictAccept    verdict = iota
	verdictDuplicate         // already accepted, still inside the window
	verdictReplay            // older than the window and accepted before (or forgotten)
	verdictLate              // older than the window and never accepted
)

// maxGapsKept bounds how many never-accepted counters older than the window
// a session remembers (to tell a late frame from a replay); beyond it the
// oldest are forgotten and a late frame for one of them counts as a replay.
const maxGapsKept = 4096

// window is a session's anti-replay state: the highest accepted counter,
// a bitmap of the last size counters, and the never-accepted counters that
// left it. Not safe for concurrent use.
type window struct {
	size     uint64
	top      uint64 // highest accepted counter + 1; 0 before the first
	bits     []uint64
	accepted uint64
	gaps     map[uint64]struct{}
	gapFIFO  []uint64
}

func newWindow(size int) *window {
	return &window{size: uint64(size), bits: make([]uint64, (size+63)/64), gaps: map[uint64]struct{}{}}
}

func (w *window) bit(c uint64) bool {
	i := c % w.size
	return w.bits[i/64]&(1<<(i%64)) != 0
}

func (w *window) set(c uint64, v bool) {
	i := c % w.size
	if v {
		w.bits[i/64] |= 1 << (i % 64)
	} else {
		w.bits[i/64] &^= 1 << (i % 64)
	}
}

func (w *window) addGap(c uint64) {
	if len(w.gapFIFO) >= maxGapsKept {
		delete(w.gaps, w.gapFIFO[0])
		w.gapFIFO = w.gapFIFO[1:]
	}
	w.gaps[c] = struct{}{}
	w.gapFIFO = append(w.gapFIFO, c)
}

// check classifies c without changing anything.
func (w *window) check(c uint64) verdict {
	switch {
	case c >= w.top:
		return verdictAccept
	case w.top-c <= w.size:
		if w.bit(c) {
			return verdictDuplicate
		}
		return verdictAccept
	default:
		if _, ok := w.gaps[c]; ok {
			return verdictLate
		}
		return verdictReplay
	}
}

// accept records c, which check answered verdictAccept for.
func (w *window) accept(c uint64) {
	if c >= w.top {
		newTop := c + 1
		lo, hi := sat(w.top, w.size), sat(newTop, w.size)
		// Counters leaving the window: those once inside it and not accepted,
		// then those skipped over entirely (at most maxGapsKept recorded).
		for x := lo; x < min(hi, w.top); x++ {
			if !w.bit(x) {
				w.addGap(x)
			}
		}
		if from := max(w.top, lo); from < hi {
			if hi-from > maxGapsKept {
				from = hi - maxGapsKept
			}
			for x := from; x < hi; x++ {
				w.addGap(x)
			}
		}
		for x := max(w.top, hi); x < newTop; x++ {
			w.set(x, false)
		}
		w.top = newTop
	}
	w.set(c, true)
	w.accepted++
}

// missing is how many counters below the highest accepted one were never
// accepted (dropped, or still on their way).
func (w *window) missing() uint64 { return w.top - w.accepted }

// sat is a - b, or 0 if b > a.
func sat(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}
