package portal

import (
	"fmt"
	"strconv"

	"pqrepro/artifacts"
	"pqrepro/templates"
)

// runTiming is the run page's board class check and timing context: the class status as the
// portal established it at publication, with the portal's own check's note (never the
// bundle's), and the context the runner recorded (fields Linux did not expose are labelled
// so, never filled in).
func (s *Server) runTiming(classStatus string, env *artifacts.Environment) templates.RunTiming {
	t := templates.RunTiming{ClassStatus: classStatus}
	if env == nil {
		return t
	}
	if chk, err := s.catalog.CheckClass(env.Board.Class, *env); err != nil {
		t.ClassNote = err.Error()
	} else {
		t.ClassNote = chk.Note
	}
	tc := env.Timing
	if tc == nil {
		return t
	}
	hostTimed := env.Board.Driver == "host"
	t.Present, t.Scope, t.Warnings = true, tc.Scope, tc.Warnings
	t.Virtual = hostTimed && tc.Virtualization != "" && tc.Virtualization != "none"
	t.Loaded = hostTimed && tc.Loaded
	absent := "not exposed by this machine"
	text := func(s string) string {
		if s == "" {
			return absent
		}
		return s
	}
	khz := func(v int64) string {
		if v <= 0 {
			return absent
		}
		return fmt.Sprintf("%.0f MHz", float64(v)/1000)
	}
	load := func(l *[3]float64) string {
		if l == nil {
			return "not recorded (/proc/loadavg unreadable)"
		}
		return fmt.Sprintf("%.2f %.2f %.2f (1, 5, 15 min) on %d CPUs", l[0], l[1], l[2], env.CPUs)
	}
	virt := text(tc.Virtualization)
	if tc.VirtualizationSource != "" {
		virt += " (" + tc.VirtualizationSource + ")"
	}
	threshold := "–"
	if tc.LoadThreshold > 0 {
		threshold = fmt.Sprintf("1-minute load average above %.1f × CPUs (%.2f here), before or after the run", tc.LoadThreshold, tc.LoadThreshold*float64(env.CPUs))
	}
	external := "not measured (recorded before the runner sampled it)"
	if x := tc.External; x != nil {
		switch {
		case x.Absent != "":
			external = "not measured: " + x.Absent
		default:
			external = fmt.Sprintf("mean %.2f CPUs, 90th percentile %.2f, max %.2f over %d intervals of about a second", x.Mean, x.P90, x.Max, x.Intervals)
			if x.MeanPressure != nil {
				external += fmt.Sprintf("; CPU pressure (some) %.0f%% of the time", *x.MeanPressure*100)
			}
			if hostTimed {
				threshold = fmt.Sprintf("other processes' mean demand above %.2f CPUs: such a run's claims are shown, not verdicted", x.Threshold)
			}
		}
	}
	t.Facts = []templates.KV{
		{Key: "Clock source", Value: text(tc.ClockSource)},
		{Key: "Clock resolution", Value: ns(tc.ResolutionNs) + " (smallest non-zero step between successive reads)"},
		{Key: "Clock read cost", Value: ns(tc.ReadCostNs) + " (" + text(tc.ReadCostMethod) + ")"},
		{Key: "GOMAXPROCS", Value: strconv.Itoa(tc.GOMAXPROCS)},
		{Key: "Load before", Value: load(tc.LoadBefore)},
		{Key: "Load after", Value: load(tc.LoadAfter)},
		{Key: "Other processes' CPU demand", Value: external},
		{Key: "Loaded when", Value: threshold},
		{Key: "CPU 0 governor", Value: text(tc.Governor)},
		{Key: "CPU 0 frequency", Value: frequency(khz, tc.FrequencyKHz, tc.MaxFrequencyKHz, absent)},
		{Key: "Virtualization", Value: virt},
	}
	return t
}

// frequency says CPU 0's current and maximum frequency once each, or once that the machine
// exposes neither ("not exposed by this machine", never "… now, … max" of two absences).
func frequency(khz func(int64) string, now, max int64, absent string) string {
	switch {
	case now <= 0 && max <= 0:
		return absent
	case max <= 0:
		return khz(now) + " now (maximum " + absent + ")"
	case now <= 0:
		return khz(max) + " max (current " + absent + ")"
	}
	return khz(now) + " now, " + khz(max) + " max"
}

func ns(v float64) string {
	if v <= 0 {
		return "not measured"
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " ns"
}
