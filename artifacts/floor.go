package artifacts

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Two refusals every reader of a bundle applies before it publishes or submits it: a run that
// measured nothing (no ok cell), and timings no clock could have produced (below the
// physical floor).

// ErrNoCellOK is wrapped by CheckSomeCellOK's error: no cell of the result ran ok, so the
// run is not a result.
var ErrNoCellOK = errors.New("no cell ran ok")

// CheckSomeCellOK returns nil when at least one cell of res ran ok, else an error wrapping
// ErrNoCellOK that says why none did: its cells' distinct reasons, most common first (three
// at most).
func CheckSomeCellOK(res *Result) error {
	for _, c := range res.Cells {
		if c.Status == StatusOK {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrNoCellOK, noCellReason(res.Cells))
}

// noCellReason says why no cell ran: the distinct cell errors, most common first, at most three.
func noCellReason(cells []Cell) string {
	if len(cells) == 0 {
		return "the result has no cells"
	}
	count := map[string]int{}
	var order []string
	for _, c := range cells {
		e := cmp.Or(strings.TrimSpace(c.Error), string(c.Status))
		if count[e] == 0 {
			order = append(order, e)
		}
		count[e]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return count[b] - count[a] })
	var parts []string
	for _, e := range order[:min(len(order), 3)] {
		parts = append(parts, fmt.Sprintf("%d of %d cells: %s", count[e], len(cells), e))
	}
	if len(order) > 3 {
		parts = append(parts, fmt.Sprintf("and %d other reasons", len(order)-3))
	}
	return strings.Join(parts, "; ")
}

// ErrBelowFloor is wrapped by CheckFloor's error.
var ErrBelowFloor = errors.New("timing below the physical floor")

// CheckFloor refuses timings no clock or counter could have produced: a timed sample of zero
// or less (every operation takes time, and retires instructions), and, for a host run's
// nanosecond samples, a sample below the clock's resolution as the run measured it
// (environment.json timing.resolutionNs: the smallest non-zero step between two clock reads,
// so a single operation timed between two reads is at least one step). The error names the
// cell, the first offending sample and the floor. Energy samples are not timings and are not
// checked here.
func CheckFloor(res *Result, s Samples, env *Environment) error {
	resolution := 0.0
	if res.Assurance == AssuranceHost && env != nil && env.Timing != nil && env.Timing.ResolutionNs > 0 {
		resolution = env.Timing.ResolutionNs
	}
	for _, c := range res.Cells {
		if c.Status != StatusOK {
			continue
		}
		vals := s.Values[KeyOf(c)]
		for i, v := range vals {
			name := strings.TrimSpace(c.Algorithm + " " + c.Operation + " " + c.Variant)
			if v <= 0 {
				return fmt.Errorf("%w: cell %s: sample %d is %g %s: no operation takes no time (the floor is one step of the clock or counter)",
					ErrBelowFloor, name, i, v, c.Unit)
			}
			if c.Unit == UnitNanoseconds && resolution > 0 && v < resolution {
				return fmt.Errorf("%w: cell %s: sample %d is %g ns, below the clock's resolution of %g ns measured on this machine (timing.resolutionNs): one operation timed between two clock reads takes at least one step",
					ErrBelowFloor, name, i, v, resolution)
			}
		}
	}
	return nil
}

// CheckPublishable applies to a bundle the refusals a portal applies before it publishes one
// (after verifying its signatures): a cell ran ok (CheckSomeCellOK) and no timing is below the
// physical floor (CheckFloor), and its energy, if any, is not from a simulated meter
// (CheckMeasuredEnergy). pqrepro submit runs it so that such a bundle never leaves the
// machine.
func CheckPublishable(b *Bundle) error {
	res, err := ParseResult(b.Files[FileResult])
	if err != nil {
		return err
	}
	if err := CheckSomeCellOK(res); err != nil {
		return err
	}
	var env Environment
	if err := json.Unmarshal(b.Files[FileEnvironment], &env); err != nil {
		return fmt.Errorf("parse %s: %w", FileEnvironment, err)
	}
	if err := CheckMeasuredEnergy(res, &env); err != nil {
		return err
	}
	s, err := ParseBundleSamples(b)
	if err != nil {
		return err
	}
	return CheckFloor(res, s, &env)
}
