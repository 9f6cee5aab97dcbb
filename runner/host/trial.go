package host

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
)

// trial splits one iteration of a cell into untimed input preparation, the timed operation
// and an untimed check of its output. Only an operation whose check passed contributes a sample.
type trial[I, O any] struct {
	prep  func(i int) (I, error)
	op    func(in I) (O, error)
	check func(in I, out O) error
	// sizes reports the byte sizes of one output, for the cell's record.
	sizes func(in I, out O) artifacts.Sizes
	// self, when set, is the operation's own measure of one output's time in ns (the sum of
	// the wall times of the commands it ran, for the openssl-cli method); the sample is then
	// self(out) instead of the time around op.
	self func(out O) float64
}

// cellPlan is what the host executor needs to run a cell: iteration limits and observers.
type cellPlan struct {
	warmup, iterations, minIterations int
	budget                            time.Duration
	// progress is called after each timed iteration with the count done so far.
	progress func(done int)
	energy   *raplMeter
	// noPasses skips the memory and energy passes, which measure this process: an operation
	// that runs in child processes has neither.
	noPasses bool
	// turns, when set, runs the cell in the run's rounds (rounds.go): the trial yields after
	// every block of iterations and its budget counts only its own turns.
	turns *turns
	// process says every iteration starts processes (openssl-cli, process-per-operation):
	// its blocks are one iteration and nothing is re-warmed.
	process bool
}

// cellRun is a cell's raw outcome before statistics.
type cellRun struct {
	cell    artifacts.Cell
	samples []float64
	// tls are a tls-matrix cell's CPU and phase series (tls.csv).
	tls []artifacts.TLSSeries
	// variants are cells measured beside this one (a tls-matrix's other stacks), recorded
	// right after it.
	variants []cellRun
	// rounds and offsets are each sample's round and start (since the run's measurement
	// began), for a cell run in rounds; nil otherwise.
	rounds  []int
	offsets []float64
}

// runTrial executes warm-up, timed iterations, then the memory and energy passes. A failed
// check ends the cell as failed with no timing. ctx cancellation returns ctx.Err().
//
// In rounds (p.turns), the first turn runs the warm-up and the first block; each later block
// waits for the cell's next turn, and a fast in-process cell (an iteration under warmTurn)
// starts every turn with one untimed iteration, so no timed iteration meets cold caches. The
// block length comes from the warm-up's last iteration, or the first timed one (blockSize).
func runTrial[I, O any](ctx context.Context, t trial[I, O], p cellPlan) (cellRun, error) {
	var r cellRun
	start := time.Now()
	elapsed := func() time.Duration {
		if p.turns != nil {
			return p.turns.elapsed()
		}
		return time.Since(start)
	}
	over := func(frac float64) bool {
		return p.budget > 0 && elapsed() >= time.Duration(float64(p.budget)*frac)
	}
	one := func(i int) (float64, O, I, error) {
		var zero O
		in, err := t.prep(i)
		if err != nil {
			return 0, zero, in, fmt.Errorf("prepare input %d: %w", i, err)
		}
		t0 := time.Now()
		out, err := t.op(in)
		d := time.Since(t0)
		if err != nil {
			return 0, zero, in, fmt.Errorf("iteration %d: %w", i, err)
		}
		if err := t.check(in, out); err != nil {
			return 0, zero, in, fmt.Errorf("iteration %d: output check failed: %w", i, err)
		}
		if t.self != nil {
			return t.self(out), out, in, nil
		}
		return float64(d.Nanoseconds()), out, in, nil
	}
	// Warm-up takes at most half the budget, so slow cells still get timed iterations.
	var perIteration time.Duration // the last warm-up or first timed iteration, for the block length
	for i := 0; i < p.warmup && !over(0.5); i++ {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		t0 := time.Now()
		if _, _, _, err := one(-1 - i); err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err() // a cancelled child process is not a failed operation
			}
			r.cell = failed("warm-up " + err.Error())
			return r, nil
		}
		perIteration = time.Since(t0)
	}
	block, inBlock := 0, 0
	if p.warmup > 0 && perIteration > 0 {
		block = blockSize(p.process, p.iterations, perIteration)
	}
	r.samples = make([]float64, 0, min(p.iterations, 1<<16))
	for i := 0; i < p.iterations; i++ {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if i >= max(p.minIterations, 1) && over(1) {
			r.cell.BudgetReached = true
			break
		}
		if p.turns != nil && i > 0 && inBlock == 0 {
			if err := p.turns.yield(ctx); err != nil {
				return r, err
			}
			if !p.process && perIteration < warmTurn {
				if _, _, _, err := one(-1_000_000 - i); err != nil {
					if ctx.Err() != nil {
						return r, ctx.Err()
					}
					r.cell = failed("re-warming at the start of a turn: " + err.Error())
					r.samples, r.rounds, r.offsets = nil, nil, nil
					return r, nil
				}
			}
		}
		var round int
		var offset time.Duration
		if p.turns != nil {
			round, offset = p.turns.now()
		}
		ns, out, in, err := one(i)
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.cell = failed(err.Error())
			r.samples, r.rounds, r.offsets = nil, nil, nil
			return r, nil
		}
		if i == 0 && t.sizes != nil {
			s := t.sizes(in, out)
			r.cell.Sizes = &s
		}
		r.samples = append(r.samples, ns)
		if p.turns != nil {
			r.rounds = append(r.rounds, round)
			r.offsets = append(r.offsets, float64(offset.Nanoseconds()))
			if block == 0 {
				perIteration = time.Duration(ns)
				block = blockSize(p.process, p.iterations, perIteration)
			}
			if inBlock++; inBlock >= block {
				inBlock = 0
			}
		}
		if p.progress != nil {
			p.progress(len(r.samples))
		}
	}
	r.cell.Status = artifacts.StatusOK
	r.cell.Block = block
	r.cell.Unit = artifacts.UnitNanoseconds
	r.cell.Counter = "monotonic clock (time.Now/time.Since), ns"
	if p.noPasses {
		return r, nil
	}
	median := runner.Summarize(r.samples).Median
	r.cell.Memory = memoryPass(ctx, t, median)
	r.cell.Energy = energyPass(ctx, t, median, p.energy)
	return r, nil
}

func failed(reason string) artifacts.Cell {
	return artifacts.Cell{Status: artifacts.StatusFailed, Error: reason}
}

// memoryPass measures heap bytes and allocations of the operation alone, over a few extra
// iterations bracketed by runtime.ReadMemStats (not during timing: it stops the world).
func memoryPass[I, O any](ctx context.Context, t trial[I, O], medianNs float64) *artifacts.Memory {
	k := 5
	if medianNs > 0 {
		k = min(k, max(1, int(2e9/medianNs)))
	}
	var before, after runtime.MemStats
	var bytes, allocs uint64
	n := 0
	for i := 0; i < k && ctx.Err() == nil; i++ {
		in, err := t.prep(1_000_000 + i)
		if err != nil {
			return nil
		}
		runtime.ReadMemStats(&before)
		out, err := t.op(in)
		runtime.ReadMemStats(&after)
		if err != nil || t.check(in, out) != nil {
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
