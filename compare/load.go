package compare

import (
	"fmt"
	"slices"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// withheld says why a host-timed claim is not verdicted from this run, or "": other processes
// used the CPU while it measured (the runner's ExternalLoad above its threshold), or the claim
// is about timing noise and the run was on a virtual machine. Counts from emulated or hardware
// boards are never withheld for the host's load, and neither are claims that rest on no time
// (frame counts, overheads).
func withheld(cl experiments.Claim, run Run) string {
	if run.Result.Assurance != artifacts.AssuranceHost || run.Timing == nil || !restsOnTime(cl) {
		return ""
	}
	tc := run.Timing
	if cl.TimingNoise && tc.Virtualization != "" && tc.Virtualization != "none" {
		return fmt.Sprintf("a claim about timing noise, and this run was on a virtual machine (%s), whose hypervisor adds noise of its own", tc.Virtualization)
	}
	if x := tc.External; x != nil && x.Exceeded {
		return fmt.Sprintf("other processes used the CPU while this run measured (mean %.2f CPUs, 90th percentile %.2f, max %.2f over %d intervals; a run is verdicted only below a mean of %.2f); the checks are shown as measured",
			x.Mean, x.P90, x.Max, x.Intervals, x.Threshold)
	}
	return ""
}

// restsOnTime reports whether a claim's verdict rests on some timed check.
func restsOnTime(cl experiments.Claim) bool {
	untimed := []string{experiments.CheckOverhead, experiments.CheckAcceptedOnce}
	return slices.ContainsFunc(cl.Checks, func(ch experiments.Check) bool { return !ch.Info && !slices.Contains(untimed, ch.Kind) })
}
