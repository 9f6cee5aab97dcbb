package portal

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/templates"
)

// human renders a value in its unit; nanoseconds get a readable time unit. A whole count of
// instructions or cycles is printed exactly, digits grouped ("616,680 instructions"): an
// emulated count is deterministic, and rounding it would hide the figure pqm4 and the papers
// print in full. Plot ticks use compact instead.
func human[U ~string](v float64, unit U) string {
	switch artifacts.Unit(unit) {
	case artifacts.UnitInstructions, artifacts.UnitCycles:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return groupDigits(int64(v)) + " " + string(unit)
		}
	}
	return compact(v, unit)
}

// compact renders a value in its unit with at most four significant digits and an SI prefix
// for counts ("1.13 M instructions"): for plot ticks, where an exact count would not fit.
func compact[U ~string](v float64, unit U) string {
	switch artifacts.Unit(unit) {
	case artifacts.UnitNanoseconds:
		return artifacts.FormatNanoseconds(v)
	case "B":
		return fmt.Sprintf("%.0f B", v)
	case "":
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	// Counts (instructions, cycles) read best with an SI prefix: "1.13 M instructions".
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.4g G %s", v/1e9, unit)
	case a >= 1e6:
		return fmt.Sprintf("%.4g M %s", v/1e6, unit)
	case a >= 1e4:
		return fmt.Sprintf("%.4g k %s", v/1e3, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

// quantityTitle names what a cell of operation op in unit measures. One operation name can
// carry two quantities: mqtt-telemetry's "telemetry" cell is, on the host, a frame's pipelined
// delivery latency (sealed, through the broker, verified at the gateway, queueing included:
// not the time of one operation) and, on a board, the board's count for sealing one frame.
// Every other cell measures its unit per operation (unitTitle).
func quantityTitle[U ~string](op string, unit U) string {
	if op != artifacts.OpTelemetry {
		return unitTitle(unit)
	}
	switch artifacts.Unit(unit) {
	case artifacts.UnitNanoseconds:
		return "pipelined delivery latency per frame (seal to verified delivery, queueing included)"
	case artifacts.UnitInstructions:
		return "the board's seal of one delivered frame, in emulated retired instructions"
	case artifacts.UnitCycles, artifacts.UnitMicroseconds:
		return "the board's seal of one delivered frame, " + unitTitle(unit)
	}
	return unitTitle(unit)
}

// quantityNote is the short name of a cell's quantity shown beside its operation where the
// operation's name alone would mislead ("" where it does not).
func quantityNote[U ~string](op string, unit U) string {
	if op != artifacts.OpTelemetry {
		return ""
	}
	if artifacts.Unit(unit) == artifacts.UnitNanoseconds {
		return "pipelined delivery latency, queueing included"
	}
	return "the board's seal of one frame"
}

// unitTitle names what a unit measures, for leaderboard and plot headings.
func unitTitle[U ~string](u U) string {
	unit := string(u)
	switch artifacts.Unit(unit) {
	case artifacts.UnitNanoseconds:
		return "time per operation"
	case artifacts.UnitInstructions:
		return "emulated retired instructions per operation (not cycles)"
	case artifacts.UnitCycles:
		return "cycles per operation"
	case artifacts.UnitMicroseconds:
		return "microseconds per operation (board timer)"
	case "B":
		return "bytes per operation"
	case "J":
		return "joules per operation"
	}
	return unit
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func bytesHuman(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// inUnit prints a value given in a published figure's unit: times (ns, µs, ms, s) in a
// readable time unit, anything else with four significant digits and never an exponent.
func inUnit(v float64, unit string) string {
	scale := map[string]float64{"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
	if f, ok := scale[unit]; ok {
		return human(v*f, artifacts.UnitNanoseconds)
	}
	return strings.TrimSpace(sig4(v) + " " + unit)
}

// sig4 prints v with four significant digits, in positional notation.
func sig4(v float64) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	d := 3 - int(math.Floor(math.Log10(math.Abs(v))))
	if d < 0 {
		p := math.Pow(10, float64(-d))
		return groupDigits(int64(math.Round(v/p) * p))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// naturalCompare orders names with their numbers read as numbers, so parameter sets sort by
// size: ML-KEM-512 before ML-KEM-768 before ML-KEM-1024 (plain string order puts 1024 first).
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun is the length of s's leading run of ASCII digits.
func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// timeScale is one time unit for a whole column: its name and how many nanoseconds it holds.
type timeScale struct {
	name     string
	ns       float64
	decimals int
}

var timeScales = []timeScale{{"s", 1e9, 3}, {"ms", 1e6, 3}, {"µs", 1e3, 2}, {"ns", 1, 0}}

// columnTimeScale picks one time unit for a column of nanosecond values, so a column never
// mixes ns and µs: the unit FormatNanoseconds would give its smallest non-zero magnitude, so
// no row loses a digit it would have had alone (larger rows have their digits grouped).
func columnTimeScale(ns ...float64) timeScale {
	small := math.Inf(1)
	for _, v := range ns {
		if a := math.Abs(v); a > 0 && a < small && !math.IsInf(a, 0) && !math.IsNaN(a) {
			small = a
		}
	}
	for _, t := range timeScales {
		if small >= t.ns && !math.IsInf(small, 1) {
			return t
		}
	}
	return timeScales[len(timeScales)-1]
}

// format prints a nanosecond value in the column's unit: the unit's usual decimals, the
// whole part's digits grouped ("1,204.50 µs").
func (t timeScale) format(ns float64) string {
	if math.IsInf(ns, 0) || math.IsNaN(ns) {
		return strconv.FormatFloat(ns, 'f', -1, 64) + " " + t.name
	}
	s := strconv.FormatFloat(math.Abs(ns/t.ns), 'f', t.decimals, 64)
	whole, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return s + " " + t.name
	}
	out := groupDigits(n)
	if frac != "" {
		out += "." + frac
	}
	if ns < 0 && strings.Trim(s, "0.") != "" {
		out = "-" + out
	}
	return out + " " + t.name
}

// publishedNanoseconds converts a published time figure to nanoseconds, for display beside
// measured times; ok is false for a figure that is not a time.
func publishedNanoseconds(v float64, unit string) (float64, bool) {
	scale := map[string]float64{"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
	f, ok := scale[unit]
	return v * f, ok
}

// assurance is the badge shown beside a number measured on board: its level and origin. The
// level is left out of the badge when the board's name already is the level's (the host
// board at level host), so the name is not shown twice.
func assurance(board, level, origin string) templates.Assurance {
	return templates.Assurance{Level: level, Origin: origin, LevelIsBoard: board == level}
}
