package portal

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/portal/store"
)

func TestCellRowPrintsEveryNumberInItsUnitColumn(t *testing.T) {
	stack := 3736
	heap := 1184.0
	for _, tc := range []struct {
		name string
		cell artifacts.Cell
		unit string
		med  string
		nOf  string
	}{
		{"host µs", artifacts.Cell{Unit: artifacts.UnitNanoseconds, Stats: &artifacts.Stats{N: 20, Median: 41234, Min: 950, Max: 1.2e6}, Requested: 20}, "µs", "41.23", ""},
		{"host ms", artifacts.Cell{Unit: artifacts.UnitNanoseconds, Stats: &artifacts.Stats{N: 6, Median: 15.52e6}, Requested: 20, BudgetReached: true}, "ms", "15.520", "of 20 (time budget)"},
		{"host ns", artifacts.Cell{Unit: artifacts.UnitNanoseconds, Stats: &artifacts.Stats{N: 5, Median: 812}, Requested: 9}, "ns", "812", "of 9"},
		{"instructions", artifacts.Cell{Unit: artifacts.UnitInstructions, Stats: &artifacts.Stats{N: 20, Median: 1633744}, Requested: 20, Memory: &artifacts.Memory{StackBytes: &stack}}, "instructions", "1,633,744", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cell.Status, tc.cell.Algorithm, tc.cell.Operation = artifacts.StatusOK, "ML-KEM-768", "encaps"
			r := cellRow(tc.cell)
			if r.Unit != tc.unit || r.Median != tc.med || r.NOf != tc.nOf {
				t.Errorf("unit %q median %q n-of %q, want %q %q %q", r.Unit, r.Median, r.NOf, tc.unit, tc.med, tc.nOf)
			}
			for _, v := range []string{r.Min, r.Median, r.Max, r.Mean} {
				if strings.ContainsAny(v, "µmsn ") || strings.Contains(v, "e+") {
					t.Errorf("value %q carries a unit or an exponent beside the Unit column %q", v, r.Unit)
				}
			}
		})
	}
	rows, cols, _ := runCells([]artifacts.Cell{
		{Algorithm: "ML-KEM-768", Operation: "encaps", Status: artifacts.StatusOK, Unit: artifacts.UnitInstructions, Stats: &artifacts.Stats{N: 3, Median: 9}, Memory: &artifacts.Memory{StackBytes: &stack}},
		{Algorithm: "ML-KEM-768", Operation: "decaps", Status: artifacts.StatusFailed, Error: "x"},
	})
	if !cols.Stack || cols.Heap || cols.Energy || rows[0].Stack != "3,736 B" {
		t.Errorf("columns %+v, stack %q: want the stack column with 3,736 B and no empty heap or energy column", cols, rows[0].Stack)
	}
	rows, cols, _ = runCells([]artifacts.Cell{{Algorithm: "A", Operation: "b", Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds,
		Stats: &artifacts.Stats{N: 3, Median: 9}, Memory: &artifacts.Memory{HeapBytesPerOp: &heap}, Energy: &artifacts.Energy{JoulesPerOp: &artifacts.Stats{Median: 2.5e-5}}, Keys: "parsed"}})
	if !cols.Heap || !cols.Energy || !cols.Keys || rows[0].Energy != "25.000 µJ" || cols.Span() != 12 {
		t.Errorf("columns %+v energy %q span %d", cols, rows[0].Energy, cols.Span())
	}
}

func TestInUnitNeverPrintsAnExponent(t *testing.T) {
	for v, want := range map[[2]any]string{
		{15520.0, "ns"}:          "15.52 µs",
		{15520.0, "cycles"}:      "15,520 cycles",
		{1.2345e7, "cycles"}:     "12,350,000 cycles",
		{0.00123, "ratio"}:       "0.001230 ratio",
		{812.0, "µs"}:            "812.00 µs",
		{3.5, ""}:                "3.500",
		{1552.0, "instructions"}: "1552 instructions",
	} {
		if got := inUnit(v[0].(float64), v[1].(string)); got != want {
			t.Errorf("inUnit(%v, %q) = %q, want %q", v[0], v[1], got, want)
		}
	}
}

func TestLibrariesAreTheCodeThatRan(t *testing.T) {
	host := artifacts.Environment{Libraries: map[string]string{"github.com/cloudflare/circl": "v1.6.5", "github.com/labstack/echo/v4": "v4.16.0", "github.com/mattn/go-sqlite3": "v1.14.53"}}
	host.Board.Driver = "host"
	if got := librariesRan(host); got != "github.com/cloudflare/circl v1.6.5" {
		t.Errorf("host libraries %q: want circl only, not the portal's own modules", got)
	}
	emu := host
	emu.Board.Driver, emu.Board.Firmware, emu.Board.FirmwareVersion = "qemu", "pqrepro-fw", "0.1.0"
	emu.Board.FirmwareBuild = json.RawMessage(`{"toolchain":"arm-none-eabi-gcc 12.2","cflags":"-O2 -ffile-prefix-map=/work/main/firmware=firmware -I/work/main/firmware/core"}`)
	got := librariesRan(emu)
	if !strings.Contains(got, "pqrepro-fw 0.1.0") || !strings.Contains(got, "arm-none-eabi-gcc 12.2") || strings.Contains(got, "circl") {
		t.Errorf("emulated libraries %q: want the firmware and its toolchain, no Go module", got)
	}
	for _, kv := range environmentKVs(emu) {
		if kv.Key == "Firmware flags" && (strings.Contains(kv.Value, "/work/") || !strings.Contains(kv.Value, "-Ifirmware/core")) {
			t.Errorf("firmware flags %q name the build machine's paths", kv.Value)
		}
		if kv.Key == "Board" && strings.Count(kv.Value, "qemu") > 1 {
			t.Errorf("board %q repeats itself", kv.Value)
		}
	}
}

func TestBoardLabelNamesOnce(t *testing.T) {
	for in, want := range map[[3]string]string{
		{"host", "host", "host"}:            "host",
		{"pi4", "rpi4-b", "serial"}:         "pi4 (rpi4-b, serial)",
		{"mps2", "qemu-mps2-an386", "qemu"}: "mps2 (qemu-mps2-an386, qemu)",
	} {
		if got := boardLabel(in[0], in[1], artifacts.Driver(in[2])); got != want {
			t.Errorf("boardLabel%v = %q, want %q", in, got, want)
		}
	}
}

// TestJobViewReadsTheLog: a board's log is shown as human lines (logtext.Human) with the raw
// one kept; a host run's log, already human, is shown as it is.
func TestJobViewReadsTheLog(t *testing.T) {
	crc := func(body string) string { return fmt.Sprintf("@%s*%08x", body, crc32.ChecksumIEEE([]byte(body))) }
	raw := strings.Join([]string{
		"flash: starting qemu-system-arm",
		"< pqrepro-fw 0.1.0 ready",
		"> " + crc("3:BENCH:alg=ML-KEM-768 op=encaps n=3 warmup=1"),
		"< " + crc("7:BENCH:re=3 alg=ML-KEM-768 op=encaps n=3"),
		"< " + crc("8:SAMPLE:re=3 i=0 v=100"),
		"< " + crc("9:SAMPLE:re=3 i=1 v=101"),
		"> " + crc("4:RESEND:from=10"),
		"< " + crc("10:SAMPLE:re=3 i=2 v=99"),
		"< " + crc("11:SUMMARY:re=3 n=3"),
		"cell ML-KEM-768 encaps: ok n=3 in 12ms",
	}, "\n")
	v := jobView(store.Job{ID: 1, State: store.JobRunning}, store.LogView{Text: raw}, time.Now())
	want := strings.Join([]string{
		"flash: starting qemu-system-arm",
		"← pqrepro-fw 0.1.0 ready",
		"→ BENCH alg=ML-KEM-768 op=encaps n=3 warmup=1",
		"← BENCH re=3 alg=ML-KEM-768 op=encaps n=3",
		"← 3 SAMPLE frames",
		"← SUMMARY re=3 n=3",
		"link, in the frames above: 1 RESEND",
		"cell ML-KEM-768 encaps: ok n=3 in 12ms",
	}, "\n")
	if !v.Framed || v.HumanLog != want || v.Log != raw {
		t.Errorf("human log:\n%s\nwant:\n%s", v.HumanLog, want)
	}
	host := jobView(store.Job{ID: 1, State: store.JobRunning}, store.LogView{Text: "host run\ncell ok"}, time.Now())
	if host.Framed || host.HumanLog != host.Log {
		t.Errorf("a log without frames is changed: %q", host.HumanLog)
	}
}

// TestRunLogViewReadsRealLogs: the run log page of a real emulated board's log shows human
// lines and keeps the raw frames behind the toggle; a log with link trouble says what the
// link recovered; a log too long for the page keeps every summary line.
func TestRunLogViewReadsRealLogs(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "artifacts", "logtext", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	qemu := read("qemu-mps2-an386-mlkem.log")
	v := runLogView(store.Run{ID: 3, Experiment: "paper001/mlkem", BoardClass: "qemu-mps2-an386"}, qemu)
	if !v.Framed || v.Omitted != 0 || v.Log != string(qemu) || v.Trouble != "" || strings.Contains(v.HumanLog, "< @") ||
		!strings.Contains(v.HumanLog, "← 5 SAMPLE frames") || !strings.Contains(v.HumanLog, "cell ML-KEM-1024 decaps: ok n=5") {
		t.Errorf("QEMU log: framed %v, omitted %d, trouble %q\n%s", v.Framed, v.Omitted, v.Trouble, v.HumanLog)
	}
	trouble := read("host-link-trouble.log")
	if v := runLogView(store.Run{ID: 4}, trouble); !strings.Contains(v.Trouble, "RESEND") || !strings.Contains(v.Trouble, "damaged lines") {
		t.Errorf("trouble: %q", v.Trouble)
	}
	long := strings.Repeat(string(trouble), (runLogHead+runLogTail)/len(trouble)*3)
	v = runLogView(store.Run{ID: 5}, []byte(long))
	if v.Omitted == 0 || len(v.Log) > runLogHead+runLogTail+runLogSummary {
		t.Fatalf("long log: %d bytes shown, %d omitted", len(v.Log), v.Omitted)
	}
	n := 0
	for _, l := range strings.Split(long, "\n") {
		if strings.HasPrefix(l, "cell ") {
			n++
		}
	}
	if got := strings.Count(v.HumanLog, "\ncell "); got != n {
		t.Errorf("long log: %d cell lines in the human reading, %d in the log", got, n)
	}
}

func TestJobViewStates(t *testing.T) {
	now := time.Now()
	queued := jobView(store.Job{ID: 1, State: store.JobQueued, BoardClass: "host", CreatedAt: now}, store.LogView{}, now)
	if queued.Steps[0].State != "current" || len(queued.Steps) != 4 || !strings.Contains(queued.Detail, "waiting for a runner") {
		t.Errorf("queued: %+v %q", queued.Steps, queued.Detail)
	}
	preparing := jobView(store.Job{ID: 1, State: store.JobRunning, BoardClass: "qemu-mps2-an386", RunnerName: "lab", CreatedAt: now, StartedAt: now}, store.LogView{}, now)
	if strings.Contains(preparing.Detail, "0 of 0") || preparing.Steps[1].State != "current" || preparing.Steps[2].State != "todo" {
		t.Errorf("running before the first heartbeat: %+v %q", preparing.Steps, preparing.Detail)
	}
	j := store.Job{ID: 1, State: store.JobRunning, RunnerName: "lab", CreatedAt: now, StartedAt: now}
	j.Progress.CellsTotal, j.Progress.CellsDone = 9, 3
	measuring := jobView(j, store.LogView{}, now)
	if measuring.Steps[2].State != "current" || !strings.Contains(measuring.Detail, "3 of 9 cells") {
		t.Errorf("measuring: %+v %q", measuring.Steps, measuring.Detail)
	}
	pub := jobView(store.Job{ID: 1, State: store.JobPublished, RunID: 42, CreatedAt: now, StartedAt: now, FinishedAt: now}, store.LogView{}, now)
	if last := pub.Steps[len(pub.Steps)-1]; last.State != "done" || !strings.Contains(last.Name, "run #42") {
		t.Errorf("published: %+v", pub.Steps)
	}
	failed := jobView(store.Job{ID: 1, State: store.JobFailed, Error: "no cell ran ok", CreatedAt: now}, store.LogView{}, now)
	if last := failed.Steps[len(failed.Steps)-1]; last.State != "failed" {
		t.Errorf("failed: %+v", failed.Steps)
	}
}

func TestMaskToken(t *testing.T) {
	tok := "Zq0tYb3WcE6pLk2NmRsT8uVxA1yB4dFg"
	a, b := maskToken(tok), maskToken(tok)
	if a == b || strings.Contains(a, tok) || unmaskToken(a) != tok || unmaskToken(b) != tok {
		t.Errorf("masks %q %q unmask to %q %q", a, b, unmaskToken(a), unmaskToken(b))
	}
	if unmaskToken(tok) != tok || unmaskToken("m1.%%%") != "" || unmaskToken("m1.AAAA") != "" {
		t.Error("unmasking an unmasked or malformed value")
	}
}

// TestOneBoxPlotPerUnit: a run whose cells are in different units draws one box plot per
// unit, each holding only its unit's cells on an axis titled for it, in the cells' order;
// never two units on one axis.
func TestOneBoxPlotPerUnit(t *testing.T) {
	st := func(m float64) *artifacts.Stats {
		return &artifacts.Stats{N: 5, Min: m * 0.9, P25: m * 0.95, Median: m, P75: m * 1.05, Max: m * 1.1}
	}
	cells := []artifacts.Cell{
		{Algorithm: "ML-KEM-768", Operation: "encaps", Status: artifacts.StatusOK, Unit: artifacts.UnitCycles, Stats: st(7e5)},
		{Algorithm: "ML-KEM-768", Operation: "keygen", Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds, Stats: st(4e4)},
		{Algorithm: "ML-KEM-768", Operation: "decaps", Status: artifacts.StatusOK, Unit: artifacts.UnitCycles, Stats: st(8e5)},
		{Algorithm: "ML-DSA-65", Operation: "sign", Status: artifacts.StatusOK, Unit: artifacts.UnitInstructions, Stats: st(2e6)},
		{Algorithm: "ML-DSA-65", Operation: "verify", Status: artifacts.StatusFailed, Unit: artifacts.UnitInstructions, Error: "x"},
	}
	_, _, plots := runCells(cells)
	want := []struct {
		title string
		boxes []string
	}{
		{"cycles per operation", []string{"ML-KEM-768 encaps", "ML-KEM-768 decaps"}},
		{"time per operation", []string{"ML-KEM-768 keygen"}},
		{"emulated retired instructions per operation", []string{"ML-DSA-65 sign"}},
	}
	if len(plots) != len(want) {
		t.Fatalf("%d box plots for three units, want one per unit", len(plots))
	}
	for i, w := range want {
		f := plots[i].Figure
		var got []string
		for _, b := range f.Boxes {
			got = append(got, b.Label)
		}
		if !strings.HasPrefix(f.AxisTitle, w.title) || strings.Join(got, "|") != strings.Join(w.boxes, "|") {
			t.Errorf("plot %d: %q with %v, want %q with %v", i, f.AxisTitle, got, w.title, w.boxes)
		}
		if !strings.Contains(plots[i].Note, "One plot per unit") {
			t.Errorf("plot %d's caption does not say the plots are split by unit: %q", i, plots[i].Note)
		}
	}
	if _, _, one := runCells(cells[1:2]); len(one) != 1 || strings.Contains(one[0].Note, "One plot per unit") {
		t.Errorf("a run in one unit: %d plots, caption %q", len(one), one[0].Note)
	}
}
