package portal

import (
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{16293, "ns", "16.29 µs"},
		{1.77e9, "ns", "1.770 s"},
		{1129680, "instructions", "1,129,680 instructions"},
		{616680, "instructions", "616,680 instructions"},
		{616680.5, "instructions", "616.7 k instructions"},
		{12345, "cycles", "12,345 cycles"},
		{980, "instructions", "980 instructions"},
		{4616, "B", "4616 B"},
	} {
		if got := human(tc.v, tc.unit); got != tc.want {
			t.Errorf("human(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
	// Plot ticks stay compact.
	if got := compact(1129680.0, "instructions"); got != "1.13 M instructions" {
		t.Errorf("compact = %q", got)
	}
}

// TestNaturalCompare checks parameter sets sort by their numbers.
func TestNaturalCompare(t *testing.T) {
	names := []string{"ML-KEM-1024", "ML-DSA-87", "ML-KEM-512", "ML-DSA-44", "ML-KEM-768", "ML-DSA-65", "X25519", "ML-KEM-768+ML-DSA-44", "ML-KEM-512+ML-DSA-65"}
	slices.SortFunc(names, naturalCompare)
	want := []string{"ML-DSA-44", "ML-DSA-65", "ML-DSA-87", "ML-KEM-512", "ML-KEM-512+ML-DSA-65", "ML-KEM-768", "ML-KEM-768+ML-DSA-44", "ML-KEM-1024", "X25519"}
	if !slices.Equal(names, want) {
		t.Errorf("sorted %q, want %q", names, want)
	}
}

// TestEqualResultsShareARank checks identical medians share a rank and the next one skips:
// two boards with the same emulated count are both first, the slower one third.
func TestEqualResultsShareARank(t *testing.T) {
	row := func(board string, median float64) store.Standing {
		return store.Standing{Unit: "instructions", Level: "emulated", Method: "in-process", ClassStatus: "verified", BoardClass: board, Origin: "community", Median: median}
	}
	out := rankStandings([]store.Standing{row("qemu-mps2-an505", 1129680), row("qemu-mps2-an386", 1129680), row("qemu-microbit", 1200000)}, store.MetricLatency, "encaps")
	var ranks []int
	for _, st := range out {
		ranks = append(ranks, st.Rank)
	}
	if !slices.Equal(ranks, []int{1, 1, 3}) {
		t.Errorf("ranks %v, want [1 1 3]", ranks)
	}
}

// TestTelemetryIsNamedForWhatItMeasures checks mqtt-telemetry's "telemetry" cell is never
// shown as a time per operation: on the host it is a pipelined delivery latency (queueing
// included), kept out of the box plot of the run's times per operation and named in the cells
// table; on a board it is the board's seal of one frame; its leaderboard says which.
func TestTelemetryIsNamedForWhatItMeasures(t *testing.T) {
	st := &artifacts.Stats{N: 3, Min: 1e4, P25: 1e4, Median: 1.1e4, P75: 1.2e4, Max: 1.3e4}
	slow := &artifacts.Stats{N: 3, Min: 1e8, P25: 1.1e8, Median: 1.18e8, P75: 1.2e8, Max: 1.3e8}
	cells := []artifacts.Cell{
		{Algorithm: artifacts.AEADAscon128Std, Operation: artifacts.OpSeal, Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds, Stats: st},
		{Algorithm: artifacts.AEADAscon128Std, Operation: artifacts.OpTelemetry, Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds, Stats: slow},
	}
	rows, _, plots := runCells(cells)
	if len(plots) != 2 || len(plots[0].Figure.Boxes) != 1 || plots[0].Figure.AxisTitle != "time per operation (µs, linear axis)" {
		t.Fatalf("the run's box plot of times per operation holds the telemetry cell: %+v", plots)
	}
	if f := plots[1].Figure; len(f.Boxes) != 1 || !strings.HasPrefix(f.AxisTitle, "pipelined delivery latency per frame") {
		t.Errorf("the telemetry cell's own plot: %+v", f)
	}
	if !strings.Contains(rows[1].Operation, "pipelined delivery latency") {
		t.Errorf("the cells table names the telemetry cell %q", rows[1].Operation)
	}
	out := rankStandings([]store.Standing{{Unit: "ns", Level: "host", Method: "in-process", ClassStatus: "verified", BoardClass: "host", Origin: "community", Median: 1.18e8}},
		store.MetricLatency, artifacts.OpTelemetry)
	if !strings.HasPrefix(out[0].groupTitle, "pipelined delivery latency per frame") {
		t.Errorf("telemetry leaderboard titled %q", out[0].groupTitle)
	}
	if q := quantityTitle(artifacts.OpTelemetry, artifacts.UnitInstructions); !strings.Contains(q, "board's seal of one delivered frame") {
		t.Errorf("board telemetry named %q", q)
	}
}

// TestUploadedBuildProvenance checks a run on a firmware uploaded here shows the upload's
// record (file, toolchain, implementations, source), labelled as the upload's declaration.
func TestUploadedBuildProvenance(t *testing.T) {
	kv := uploadedBuildKVs(store.Firmware{Digest: "sha256:ab", Filename: "pqrepro-fw.elf", Size: 2179444, BoardClass: "qemu-mps2-an386",
		Toolchain: "arm-none-eabi-gcc 12.2.1", Libraries: "pqrepro-fw 0.1.0", SourceURL: "https://example.org/fw", SourceCommit: "0123abcd", UploadedBy: "lab"})
	got := map[string]string{}
	for _, e := range kv {
		got[e.Key] = e.Value
	}
	if !strings.HasPrefix(got["Firmware toolchain"], "arm-none-eabi-gcc 12.2.1 (declared at upload") ||
		got["Firmware source"] != "https://example.org/fw at commit 0123abcd" || !strings.Contains(got["Uploaded firmware build"], "pqrepro-fw.elf for qemu-mps2-an386") {
		t.Errorf("uploaded build shown as %q", got)
	}
	if kv := uploadedBuildKVs(store.Firmware{Filename: "x.elf", BoardClass: "b"}); len(kv) != 1 {
		t.Errorf("an upload without toolchain or source shows %q", kv)
	}
	// How it was built, as read from the ELF at upload, with where each fact came from.
	kv = uploadedBuildKVs(store.Firmware{Filename: "x.elf", BoardClass: "b", Build: store.FirmwareBuildInfo{Compiler: "GNU C11 12.2.1", CompilerFrom: fromDWARF,
		Flags: "-mcpu=cortex-m4 -O2", FlagsFrom: fromDWARF, Sections: []store.FirmwareSection{{Name: ".text", Kind: "text", Size: 1182208}}, Text: 1182244, BSS: 193424,
		CodeSize: []store.FirmwareCodeGroup{{Group: "ML-KEM-768", Total: 3994}}}})
	got = map[string]string{}
	for _, e := range kv {
		got[e.Key] = e.Value
	}
	if got["Firmware compiler"] != "GNU C11 12.2.1 (read from the ELF's DWARF producer at upload)" || !strings.HasPrefix(got["Firmware flags"], "-mcpu=cortex-m4 -O2 (read from") ||
		got["Firmware size"] != "text 1,182,244 B, data 0 B, bss 193,424 B (the ELF's section headers)" ||
		got["Code size (code + read-only data)"] != "ML-KEM-768 3,994 B (from the upload's metadata.json)" {
		t.Errorf("uploaded build's provenance shown as %q", got)
	}
}

// TestCopyNamesThings checks the boards page's paper list and the figures table's metric
// names read as words, not as the data files' keys.
func TestCopyNamesThings(t *testing.T) {
	if got := paperList("000;003;"); got != "paper000, paper003" {
		t.Errorf("paperList = %q", got)
	}
	for key, want := range map[string]string{"latency_ratio_x": "latency ratio", "energy_efficiency_ratio_x": "energy efficiency ratio", "speedup_x": "speedup"} {
		if got := metricName(key); got != want {
			t.Errorf("metricName(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestHighlightTiesShareARank checks the home page's top five give equal results one rank.
func TestHighlightTiesShareARank(t *testing.T) {
	row := func(board, median string) templates.LeaderRow {
		return templates.LeaderRow{Board: board, Median: median, Assurance: templates.Assurance{Level: "emulated", Origin: "community"}}
	}
	hl := highlightLists("ML-KEM-768", "encaps", []templates.LeaderGroup{{Title: "t", Rows: []templates.LeaderRow{
		row("qemu-mps2-an386", "1,129,680 instructions"), row("qemu-mps2-an505", "1,129,680 instructions"), row("qemu-microbit", "1,200,000 instructions")}}})
	var ranks []int
	for _, r := range hl[0].Rows {
		ranks = append(ranks, r.Rank)
	}
	if !slices.Equal(ranks, []int{1, 1, 3}) {
		t.Errorf("highlight ranks %v, want [1 1 3]", ranks)
	}
}

// A ranking's column has one time unit (never 800 ns above 1.50 ms), and a published figure
// printed in seconds reads in the measured rankings' unit with the paper's own text beside it.
func TestOneTimeUnitPerColumn(t *testing.T) {
	st := []Standing{
		{Board: "a", Unit: "ns", Median: 800, P25: 790, P75: 810, group: "g", Rank: 1},
		{Board: "b", Unit: "ns", Median: 1.5e6, P25: 1.4e6, P75: 1.6e6, group: "g", Rank: 2},
	}
	g := leaderGroups(st)
	if len(g) != 1 || len(g[0].Rows) != 2 {
		t.Fatalf("groups: %+v", g)
	}
	if got := g[0].Rows[0].Median + " | " + g[0].Rows[1].Median; got != "800 ns | 1,500,000 ns" {
		t.Errorf("a column mixes units or loses digits: %q", got)
	}
	lb := Leaderboard{Measured: []Standing{{Unit: "ns", Median: 12000}},
		Published: []Standing{{Unit: "s", Median: 0.000012345, ValueText: "0.000012345"}, {Unit: "cycles", Median: 5, ValueText: "5"}}}
	rows := publishedRows(lb)
	if rows[0].Value != "12.35 µs" || rows[0].Original != "0.000012345 s" {
		t.Errorf("published seconds under µs rankings: %+v", rows[0])
	}
	if rows[1].Value != "5 cycles" || rows[1].Original != "" {
		t.Errorf("a published count is not a time and stays as printed: %+v", rows[1])
	}
	if s := columnTimeScale(0, 999.4e3).format(-0.004); s != "0.00 µs" {
		t.Errorf("a value rounding to zero keeps no sign: %q", s)
	}
}
