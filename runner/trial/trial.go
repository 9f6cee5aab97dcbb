// Package trial times one cell of a host-side executor: the generic prep → op → check trial
// (Trial, Run) in which only an operation whose check passed contributes a sample, its plan
// (Plan), its raw outcome (Outcome), the interleaving of a run's cells in rounds (Scheduler,
// Turns), the seeded input streams (DRBG) and the RAPL energy meter. Every host executor —
// the benchmarks, the openssl-cli and process-per-operation methods, the TLS matrix and the
// telemetry cells — times through it.
package trial

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"pqrepro/artifacts"
)

// Trial splits one iteration of a cell into untimed input preparation, the timed operation
// and an untimed check of its output. Only an operation whose check passed contributes a sample.
type Trial[I, O any] struct {
	Prep  func(i int) (I, error)
	Op    func(in I) (O, error)
	Check func(in I, out O) error
	// Sizes reports the byte sizes of one output, for the cell's record.
	Sizes func(in I, out O) artifacts.Sizes
	// Self, when set, is the operation's own measure of one output's time in ns (the sum of
	// the wall times of the commands it ran, for the openssl-cli method); the sample is then
	// Self(out) instead of the time around op.
	Self func(out O) float64
}

// Plan is what the host executor needs to run a cell: iteration limits and observers.
type Plan struct {
	Warmup, Iterations, MinIterations int
	Budget                            time.Duration
	// Progress is called after each timed iteration with the count done so far.
	Progress func(done int)
	Energy   *RAPL
	// Meter, when set, records a load window of MeterLoad while the cell's operation runs back
	// to back, after the timed iterations (the metered energy pass).
	Meter     LoadWindow
	MeterLoad time.Duration
	// NoPasses skips the memory and energy passes, which measure this process: an operation
	// that runs in child processes has neither. Its metered pass (a meter sees the whole
	// machine) is the caller's: MeterPass.
	NoPasses bool
	// Turns, when set, runs the cell in the run's rounds (rounds.go): the trial yields after
	// every block of iterations and its budget counts only its own turns.
	Turns *Turns
	// Process says every iteration starts processes (openssl-cli, process-per-operation):
	// its blocks are one iteration and nothing is re-warmed.
	Process bool
}

// Outcome is a cell's raw outcome before statistics.
type Outcome struct {
	Cell    artifacts.Cell
	Samples []float64
	// TLS are a tls-matrix cell's CPU and phase series (tls.csv).
	TLS []artifacts.TLSSeries
	// TLSRounds are the signature rounds of each timed handshake, when the signer reported
	// them (tls.csv's rounds column).
	TLSRounds []int
	// Variants are cells measured beside this one (a tls-matrix's other stacks), recorded
	// right after it.
	Variants []Outcome
	// Rounds and offsets are each sample's round and start (since the run's measurement
	// began), for a cell run in rounds; nil otherwise.
	Rounds  []int
	Offsets []float64
	// Power is the cell's load window from the metered energy pass; nil without a meter or
	// when the pass failed (PowerAbsent says why).
	Power       *artifacts.PowerWindow
	PowerAbsent string
	// LoadOps is how many operations the load window started (the last may end after it).
	LoadOps int
}

// Run executes warm-up, timed iterations, then the memory and energy passes. A failed
// check ends the cell as failed with no timing. ctx cancellation returns ctx.Err().
//
// In rounds (p.turns), the first turn runs the warm-up and the first block; each later block
// waits for the cell's next turn, and a fast in-process cell (an iteration under warmTurn)
// starts every turn with one untimed iteration, so no timed iteration meets cold caches. The
// block length comes from the warm-up's last iteration, or the first timed one (blockSize).
func Run[I, O any](ctx context.Context, t Trial[I, O], p Plan) (Outcome, error) {
	var r Outcome
	c := &cellTrial[I, O]{t: t, p: p, start: time.Now()}
	perIteration, fail, err := c.warmUp(ctx)
	if err != nil || fail != "" {
		if fail != "" {
			r.Cell = Failed(fail)
		}
		return r, err
	}
	one := c.once
	over := c.over
	block, inBlock := 0, 0
	if p.Warmup > 0 && perIteration > 0 {
		block = blockSize(p.Process, p.Iterations, perIteration)
	}
	r.Samples = make([]float64, 0, min(p.Iterations, 1<<16))
	for i := 0; i < p.Iterations; i++ {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if i >= max(p.MinIterations, 1) && over(1) {
			r.Cell.BudgetReached = true
			break
		}
		if p.Turns != nil && i > 0 && inBlock == 0 {
			if err := p.Turns.Yield(ctx); err != nil {
				return r, err
			}
			if !p.Process && perIteration < warmTurn {
				if _, _, _, err := one(-1_000_000 - i); err != nil {
					if ctx.Err() != nil {
						return r, ctx.Err()
					}
					r.Cell = Failed("re-warming at the start of a turn: " + err.Error())
					r.Samples, r.Rounds, r.Offsets = nil, nil, nil
					return r, nil
				}
			}
		}
		var round int
		var offset time.Duration
		if p.Turns != nil {
			round, offset = p.Turns.Now()
		}
		ns, out, in, err := one(i)
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.Cell = Failed(err.Error())
			r.Samples, r.Rounds, r.Offsets = nil, nil, nil
			return r, nil
		}
		if i == 0 && t.Sizes != nil {
			s := t.Sizes(in, out)
			r.Cell.Sizes = &s
		}
		r.Samples = append(r.Samples, ns)
		if p.Turns != nil {
			r.Rounds = append(r.Rounds, round)
			r.Offsets = append(r.Offsets, float64(offset.Nanoseconds()))
			if block == 0 {
				perIteration = time.Duration(ns)
				block = blockSize(p.Process, p.Iterations, perIteration)
			}
			if inBlock++; inBlock >= block {
				inBlock = 0
			}
		}
		if p.Progress != nil {
			p.Progress(len(r.Samples))
		}
	}
	r.Cell.Status = artifacts.StatusOK
	r.Cell.Block = block
	r.Cell.Unit = artifacts.UnitNanoseconds
	r.Cell.Counter = "monotonic clock (time.Now/time.Since), ns"
	if p.NoPasses {
		return r, nil
	}
	median := artifacts.Summarize(r.Samples).Median
	r.Cell.Memory = memoryPass(ctx, t, median)
	r.Cell.Energy = energyPass(ctx, t, median, p.Energy)
	if p.Meter != nil && ctx.Err() == nil {
		r.Power, r.LoadOps, r.PowerAbsent = MeterPass(ctx, t, p.Meter, p.MeterLoad)
	}
	return r, nil
}

// cellTrial is one Run: the trial, its plan and when it started.
type cellTrial[I, O any] struct {
	t     Trial[I, O]
	p     Plan
	start time.Time
}

// elapsed is the cell's own time: its turns' when it runs in rounds.
func (c *cellTrial[I, O]) elapsed() time.Duration {
	if c.p.Turns != nil {
		return c.p.Turns.Elapsed()
	}
	return time.Since(c.start)
}

// over reports whether the cell has used frac of its budget (never without a budget).
func (c *cellTrial[I, O]) over(frac float64) bool {
	return c.p.Budget > 0 && c.elapsed() >= time.Duration(float64(c.p.Budget)*frac)
}

// once runs iteration i: prepare, time the operation, check its output. It returns the
// sample (ns, or the operation's own measure), the output and the input.
func (c *cellTrial[I, O]) once(i int) (float64, O, I, error) {
	t := c.t
	var zero O
	in, err := t.Prep(i)
	if err != nil {
		return 0, zero, in, fmt.Errorf("prepare input %d: %w", i, err)
	}
	t0 := time.Now()
	out, err := t.Op(in)
	d := time.Since(t0)
	if err != nil {
		return 0, zero, in, fmt.Errorf("iteration %d: %w", i, err)
	}
	if err := t.Check(in, out); err != nil {
		return 0, zero, in, fmt.Errorf("iteration %d: output check failed: %w", i, err)
	}
	if t.Self != nil {
		return t.Self(out), out, in, nil
	}
	return float64(d.Nanoseconds()), out, in, nil
}

// warmUp runs the untimed warm-up iterations, within half the budget so slow cells still get
// timed iterations. It returns the last one's time (for the block length), or why the cell
// fails, or ctx.Err().
func (c *cellTrial[I, O]) warmUp(ctx context.Context) (perIteration time.Duration, fail string, err error) {
	for i := 0; i < c.p.Warmup && !c.over(0.5); i++ {
		if err := ctx.Err(); err != nil {
			return 0, "", err
		}
		t0 := time.Now()
		if _, _, _, err := c.once(-1 - i); err != nil {
			if ctx.Err() != nil {
				return 0, "", ctx.Err() // a cancelled child process is not a failed operation
			}
			return 0, "warm-up " + err.Error(), nil
		}
		perIteration = time.Since(t0)
	}
	return perIteration, "", nil
}

// Failed is a failed cell with the reason.
func Failed(reason string) artifacts.Cell {
	return artifacts.Cell{Status: artifacts.StatusFailed, Error: reason}
}

// memoryPass measures heap bytes and allocations of the operation alone, over a few extra
// iterations bracketed by runtime.ReadMemStats (not during timing: it stops the world).
func memoryPass[I, O any](ctx context.Context, t Trial[I, O], medianNs float64) *artifacts.Memory {
	k := 5
	if medianNs > 0 {
		k = min(k, max(1, int(2e9/medianNs)))
	}
	var before, after runtime.MemStats
	var bytes, allocs uint64
	n := 0
	for i := 0; i < k && ctx.Err() == nil; i++ {
		in, err := t.Prep(1_000_000 + i)
		if err != nil {
			return nil
		}
		runtime.ReadMemStats(&before)
		out, err := t.Op(in)
		runtime.ReadMemStats(&after)
		if err != nil || t.Check(in, out) != nil {
			return nil
		}
		bytes += after.TotalAlloc - before.TotalAlloc
		allocs += after.Mallocs - before.Mallocs
		n++
	}
	if n == 0 {
		return nil
	}
	b, a := float64(bytes)/float64(n), float64(allocs)/float64(n)
	return &artifacts.Memory{HeapBytesPerOp: &b, AllocsPerOp: &a}
}

// Cell is one cell as a host executor gets it: the manifest, the cell and its plan.
type Cell struct {
	Manifest *artifacts.Manifest
	Ref      artifacts.CellRef
	Plan     Plan
}

// Executor measures the cells of one run of one experiment kind, one cell at a time (a run's
// cells take turns). A cell whose check fails is a failed Outcome, not an error; an error
// means the run broke and nothing of it may be published.
type Executor interface {
	Cell(ctx context.Context, c Cell) (Outcome, error)
}

// ExecutorFunc is a stateless Executor.
type ExecutorFunc func(ctx context.Context, c Cell) (Outcome, error)

// Cell implements Executor.
func (f ExecutorFunc) Cell(ctx context.Context, c Cell) (Outcome, error) { return f(ctx, c) }
