package trial

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// Rounds (see docs/DECISIONS.md, "The host board"): the host board runs a run's cells in
// rounds, so that drift of the machine over the run (a neighbour's build starting, a frequency
// step) falls on every cell alike instead of on whichever cell ran at the time. Each round
// visits every cell still running once, in an order drawn from the manifest's seed for that
// round, and a cell's turn runs one block of its iterations (blockSize). Exactly one cell runs
// at any moment: a cell's goroutine runs only between being granted a turn and yielding it,
// so the cells never compete for the CPU and share state (signature pools, chains) as safely
// as when they ran one after another.

// RoundOrder describes how a round's order is drawn, for result.json.
const RoundOrder = "each round visits every cell still running once, in a Fisher-Yates shuffle drawn from SHAKE256(manifest seed, \"rounds/<round>\"); a turn runs one block of the cell's iterations"

// minRounds is the fewest rounds a fast in-process cell's iterations are spread over, when
// its iterations allow: a ratio's moving-block bootstrap resamples rounds.
const minRounds = 10

// warmBlock is the block length of a fast in-process cell (one whose iteration takes less than
// warmTurn): long enough that the cell's code and data stay in cache through its turn, as in
// the papers' loops; every turn of such a cell also starts with one untimed iteration.
const (
	warmBlock = 5
	warmTurn  = 10 * time.Millisecond
)

// blockSize is the iterations of one turn: 1 for a process method (every operation starts a
// process, nothing stays warm) and for an in-process iteration of warmTurn or more; otherwise
// warmBlock, lowered so that the requested iterations still span minRounds rounds (never
// below 1).
func blockSize(process bool, iterations int, perIteration time.Duration) int {
	if process || perIteration >= warmTurn {
		return 1
	}
	return max(1, min(warmBlock, iterations/minRounds))
}

// roundOrder returns the cells of one round (indices into the run's cells, ascending) in the
// round's seeded order.
func roundOrder(seed string, round int, cells []int) []int {
	out := append([]int(nil), cells...)
	d := NewDRBG(seed, fmt.Sprintf("rounds/%d", round))
	for i := len(out) - 1; i > 0; i-- {
		j := int(uniform(d, uint64(i+1)))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// uniform draws an integer in [0, n) from d without modulo bias.
func uniform(d *DRBG, n uint64) uint64 {
	limit := ^uint64(0) - ^uint64(0)%n
	var b [8]byte
	for {
		d.Read(b[:])
		if v := binary.BigEndian.Uint64(b[:]); v < limit {
			return v % n
		}
	}
}

// Scheduler runs cells in rounds. Create it with NewScheduler, add each cell's body with
// start, then run.
type Scheduler struct {
	seed   string
	origin time.Time // the run's measurement start, from which sample offsets count
	cells  []*Turns
	back   chan turnEnd
	rounds int
}

// turnEnd is a cell's message to the scheduler: its turn ended, and whether the cell is done.
type turnEnd struct {
	cell int
	done bool
}

// Turns is one cell's side of the scheduler: the body waits for its turns through it.
type Turns struct {
	s      *Scheduler
	index  int
	body   func(*Turns)
	grant  chan int // the round of the turn granted
	round  int
	start  time.Time     // when the current turn began
	active time.Duration // the cell's time in turns before the current one
	mu     sync.Mutex
}

func NewScheduler(seed string, origin time.Time) *Scheduler {
	return &Scheduler{seed: seed, origin: origin}
}

// Add registers a cell whose body runs in turns; the body calls Yield between blocks and
// returns when the cell is done.
func (s *Scheduler) Add(body func(*Turns)) {
	s.cells = append(s.cells, &Turns{s: s, index: len(s.cells), body: body, grant: make(chan int)})
}

// Run grants turns round after round until every cell is done, and returns the number of
// rounds. It returns ctx.Err() when cancelled, after every cell's body has returned (each
// sees the cancellation in its next yield).
func (s *Scheduler) Run(ctx context.Context) (int, error) {
	s.back = make(chan turnEnd, len(s.cells))
	active := make([]int, len(s.cells))
	started := make([]bool, len(s.cells))
	for i := range active {
		active[i] = i
	}
	running := 0 // bodies started and not yet done
	for round := 0; len(active) > 0; round++ {
		s.rounds = round + 1
		var done []int
		for _, i := range roundOrder(s.seed, round, active) {
			t := s.cells[i]
			if ctx.Err() != nil {
				break
			}
			if !started[i] {
				started[i] = true
				running++
				t.round, t.start = round, time.Now()
				go func() {
					t.body(t)
					s.back <- turnEnd{cell: t.index, done: true}
				}()
			} else {
				t.grant <- round
			}
			end := <-s.back
			if end.done {
				running--
				done = append(done, end.cell)
			}
		}
		if err := ctx.Err(); err != nil {
			// Every started body not done waits in yield; release them all, and wait until
			// each has returned.
			for _, i := range active {
				if started[i] && !contains(done, i) {
					close(s.cells[i].grant)
				}
			}
			for running > 0 {
				if end := <-s.back; end.done {
					running--
				}
			}
			return s.rounds, err
		}
		next := active[:0]
		for _, i := range active {
			if !contains(done, i) {
				next = append(next, i)
			}
		}
		active = next
	}
	return s.rounds, nil
}

func contains(v []int, x int) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// Yield ends the cell's turn and waits for its next one; it returns ctx.Err() (the body must
// then return) when the run was cancelled meanwhile.
func (t *Turns) Yield(ctx context.Context) error {
	t.mu.Lock()
	t.active += time.Since(t.start)
	t.mu.Unlock()
	t.s.back <- turnEnd{cell: t.index}
	round, ok := <-t.grant
	if !ok {
		return ctx.Err()
	}
	t.mu.Lock()
	t.round, t.start = round, time.Now()
	t.mu.Unlock()
	return nil
}

// Elapsed is the cell's own time in turns so far (its budget counts only this).
func (t *Turns) Elapsed() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.active + time.Since(t.start)
}

// Now is the current round and the offset of this instant from the run's measurement start.
func (t *Turns) Now() (round int, offset time.Duration) {
	return t.round, time.Since(t.s.origin)
}
