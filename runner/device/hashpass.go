package device

import (
	"context"
	"errors"
	"fmt"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/wire"
)

// HashPassSamples is how many operations the hashing pass of a cell measures, at most the
// cell's own samples; a cell whose median operation is longer than hashPassLong counter units
// (an SLH-DSA signature is hundreds of millions to billions of instructions, seconds to tens of
// seconds under QEMU) gets one.
const (
	HashPassSamples = 3
	hashPassLong    = 500_000_000
)

// hashPassN is how many operations the hashing pass of a cell with these timed samples runs.
func hashPassN(samples []float64) int {
	n := min(len(samples), HashPassSamples)
	if artifacts.Summarize(samples).Median > hashPassLong {
		n = 1
	}
	return n
}

// Absent reasons of a cell's hashing share.
const (
	HashingOwnHash  = "not measured: the implementation brings its own hash functions"
	HashingNoPass   = "not measured: the firmware has no hashing pass"
	hashingFailedAt = "not measured: the hashing pass's sample %d failed its check (%s)"
)

// benchWithHashing measures a cell with BENCH and then, when the run asks for it and the cell
// is ok, its hashing share with an untimed pass (hashPass). A pass that breaks the link
// returns the error with the cell's result, as a timed BENCH would.
func benchWithHashing(ctx context.Context, c Cell) (runner.CellResult, error) {
	r, err := runCell(ctx, c.Conn, c.Hello, c.Manifest, c.Ref, c.Budget, c.Clock, c.Progress)
	if err != nil || !c.Options.HashPass || r.Cell.Status != artifacts.StatusOK || len(r.Samples) == 0 {
		return r, err
	}
	h, err := hashPass(ctx, c.Conn, c.Hello, c.Manifest, c.Ref, hashPassN(r.Samples))
	if err != nil {
		return runner.CellResult{Samples: r.Samples}, fmt.Errorf("hashing pass: %w", err)
	}
	r.Cell.Hashing = h
	return r, nil
}

// hashPass asks the firmware for n operations of the cell with hash=1 (PROTOCOL.md): after the
// timed samples, so the DRBG they drew from is untouched, and kept apart from them, as the
// pass's counts include its counting copies. The firmware refuses it for an implementation the
// build brought (its own hash functions); an older firmware ignores the field and sends plain
// samples. Either way the share is absent with the reason.
func hashPass(ctx context.Context, c *wire.Conn, h wire.Hello, m *artifacts.Manifest, ref artifacts.CellRef, n int) (*artifacts.Hashing, error) {
	msg, msgLen, _ := benchMessage(h, m)
	req := wire.BenchRequest{Algorithm: ref.Algorithm, Operation: ref.Operation, Iterations: max(n, 1), Message: msg, MessageLen: msgLen, Hash: true}
	var (
		hashed, total, calls uint64
		plain                int
		failed               *wire.Sample
	)
	_, err := c.Bench(ctx, req, func(s wire.Sample) {
		switch {
		case !s.OK:
			if failed == nil {
				failed = &s
			}
		case !s.HasHash:
			plain++
		default:
			hashed, total, calls = hashed+s.Hash, total+s.Count, calls+s.HashCalls
		}
	})
	var de *wire.DeviceError
	switch {
	case errors.As(err, &de) && de.Code == "unsupported" && de.Msg == "hash-impl":
		return &artifacts.Hashing{Absent: HashingOwnHash}, nil
	case errors.As(err, &de) && (de.Code == "unsupported" || de.Code == "badarg"):
		return &artifacts.Hashing{Absent: fmt.Sprintf("%s (%v)", HashingNoPass, de)}, nil
	case err != nil:
		return nil, err
	case failed != nil:
		return &artifacts.Hashing{Absent: fmt.Sprintf(hashingFailedAt, failed.Index, OrNone(failed.Reason))}, nil
	case plain > 0:
		return &artifacts.Hashing{Absent: HashingNoPass}, nil
	}
	hs, err := artifacts.NewHashing(hashed, total, calls, req.Iterations, h.Resolution)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", wire.ErrProtocol, err)
	}
	return hs, nil
}
