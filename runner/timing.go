package runner

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"pqrepro/artifacts"
)

// LoadThreshold is the 1-minute load average per CPU above which a run is marked loaded when
// the external load could not be measured (no /proc/stat): above half the CPUs busy, before
// or after the run (see docs/DECISIONS.md). The load average counts the run's own work too;
// ExternalThreshold on the measured external load decides wherever it exists.
const LoadThreshold = 0.5

const (
	resolutionReads = 200_000 // successive reads scanned for the smallest non-zero step
	readCostBatches = 201     // batches whose per-read cost gives the median
	readCostBatch   = 1_000   // reads per batch: one batch spans many clock ticks
)

// clockResolution is the smallest non-zero step between successive time.Now reads (the
// monotonic clock every host sample is taken with) over n reads, in nanoseconds; 0 when the
// clock never moved.
func clockResolution(n int) float64 {
	best := time.Duration(0)
	prev := time.Now()
	for range n {
		now := time.Now()
		if d := now.Sub(prev); d > 0 && (best == 0 || d < best) {
			best = d
		}
		prev = now
	}
	return float64(best)
}

// clockReadCost is the median, over batches, of one batch's wall time divided by its reads:
// the cost of one time.Now read measured with that same clock. A single read is often shorter
// than the clock's step, so it is timed in batches.
func clockReadCost(batches, per int) float64 {
	costs := make([]float64, batches)
	var sink int64
	for b := range costs {
		t0 := time.Now()
		for range per {
			sink += time.Now().UnixNano() & 1
		}
		costs[b] = float64(time.Since(t0)) / float64(per)
	}
	_ = sink
	slices.Sort(costs)
	return costs[len(costs)/2]
}

// startTiming measures the timing context at a run's start: the clock, the scheduler, the
// load, the frequency and the virtualization of the machine under r. hostTimed says whether
// the board's samples are timed with this machine's clock (the host board) or counted on
// the board or emulator (whose counts this context does not affect).
func startTiming(r Roots, hostTimed bool) *artifacts.TimingContext {
	m := detectMachine(r, runtime.GOARCH)
	tc := &artifacts.TimingContext{
		ClockSource:  readText(r.sys("devices", "system", "clocksource", "clocksource0", "current_clocksource")),
		ResolutionNs: clockResolution(resolutionReads),
		ReadCostNs:   clockReadCost(readCostBatches, readCostBatch),
		ReadCostMethod: fmt.Sprintf("median over %d batches of %d successive time.Now reads, each batch timed with time.Now and divided by %d",
			readCostBatches, readCostBatch, readCostBatch),
		GOMAXPROCS: runtime.GOMAXPROCS(0), LoadBefore: readLoadavg(r),
		Governor: m.governor, FrequencyKHz: m.curKHz, MaxFrequencyKHz: m.maxKHz,
		Virtualization: m.virt, VirtualizationSource: m.virtSource, LoadThreshold: LoadThreshold,
	}
	if hostTimed {
		tc.Scope = "host: the host board's samples are timed with this machine's monotonic clock"
	} else {
		tc.Scope = "the host only: this board's cells count instructions or cycles on the board or emulator, which the host's clock, load and frequency do not change"
	}
	return tc
}

// finishTiming records the load after the run and the warnings of a host-timed run: a
// virtual machine, or a 1-minute load average above LoadThreshold × CPUs before or after.
//
// With the external load measured (tc.External, sampled while the board ran), a run is loaded
// when other processes' mean demand was above its threshold; the load average, which counts
// the run's own work (on two CPUs a TLS client and its server child cross 0.5 × CPUs alone),
// decides only for a machine whose /proc/stat could not be read. An emulated or hardware run
// records the external load but is never loaded: the host does not time it.
func finishTiming(tc *artifacts.TimingContext, r Roots, hostTimed bool, cpus int) {
	tc.LoadAfter = readLoadavg(r)
	if x := tc.External; x != nil && !hostTimed {
		x.Exceeded = false
	}
	if !hostTimed {
		return
	}
	tc.Warnings = timingWarnings(tc, cpus)
	if x := tc.External; x != nil && x.Absent == "" {
		tc.Loaded = x.Exceeded
		return
	}
	tc.Loaded = loaded(tc.LoadBefore, cpus) || loaded(tc.LoadAfter, cpus)
}

func loaded(l *[3]float64, cpus int) bool {
	return l != nil && cpus > 0 && l[0] > LoadThreshold*float64(cpus)
}

func timingWarnings(tc *artifacts.TimingContext, cpus int) []string {
	var w []string
	if tc.Virtualization != "" && tc.Virtualization != "none" {
		w = append(w, fmt.Sprintf("virtual machine (%s): the hypervisor shares and schedules the CPUs, so timings are noisier than a bare machine's", tc.Virtualization))
	}
	if x := tc.External; x != nil && x.Absent == "" {
		if x.Exceeded {
			w = append(w, fmt.Sprintf("loaded machine: other processes used %.2f CPUs on average (90th percentile %.2f, max %.2f) while the run measured, above %.2f (%.1f × CPUs): its claims are shown, not verdicted",
				x.Mean, x.P90, x.Max, x.Threshold, ExternalThreshold))
		}
		return w
	}
	for _, at := range []struct {
		l    *[3]float64
		when string
	}{{tc.LoadBefore, "before"}, {tc.LoadAfter, "after"}} {
		if loaded(at.l, cpus) {
			w = append(w, fmt.Sprintf("loaded machine: 1-minute load average %.2f on %d CPUs %s the run (above %.1f × CPUs = %.2f)",
				at.l[0], cpus, at.when, LoadThreshold, LoadThreshold*float64(cpus)))
		}
	}
	return w
}
