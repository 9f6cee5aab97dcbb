package wire

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// rp2040jsRun is one rp2040js process talking the framed protocol, with the harness's
// statistics read from its stderr when it ends.
type rp2040jsRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	conn  *Conn
	log   *logBuffer
}

// rp2040jsStats is the harness's --stats line: core.cycles at the end, the simulated
// nanoseconds the core slept, and the process's CPU and wall time.
type rp2040jsStats struct {
	Cycles, WaitedNanos, CPUMicros, WallNanos uint64
}

var statsLine = regexp.MustCompile(`run\.mjs: stats cycles=([0-9]+) waited_ns=([0-9]+) cpu_us=([0-9]+) wall_ns=([0-9]+)`)

// startRP2040JS boots the rp2040js test image under run.mjs with args (skipping when node,
// rp2040js or the image is missing).
func startRP2040JS(tb testing.TB, args ...string) *rp2040jsRun {
	tb.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		tb.Skip("node not installed")
	}
	if _, err := os.Stat(filepath.Join(rp2040jsDir, "node_modules", "rp2040js", "package.json")); err != nil {
		tb.Skip("rp2040js not installed: run make rp2040js at the repository root")
	}
	uf2 := "../../firmware/build/rp2040js/pico-w/pqrepro-fw.uf2"
	if _, err := os.Stat(uf2); err != nil {
		tb.Skip("pico-w firmware not built: run make firmware")
	}
	argv := append(append([]string{"../../firmware/tools/rp2040js/run.mjs", "--stats"}, args...), rp2040jsDir, uf2)
	cmd := exec.Command(node, argv...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	r := &rp2040jsRun{cmd: cmd, stdin: stdin, log: &logBuffer{}}
	cmd.Stderr = prefixed{r.log, "rp2040js: "}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	r.conn = NewConn(rw{stdout, stdin}, Options{Log: r.log, RetryInterval: 2 * time.Second, SilenceTimeout: 60 * time.Second,
		Activity: ProcessActivity(cmd.Process.Pid), WorkLimit: time.Hour})
	tb.Cleanup(func() {
		r.conn.Close()
		r.stdin.Close()
		r.cmd.Process.Kill()
		r.cmd.Wait()
		if tb.Failed() {
			tb.Logf("rp2040js conversation (%v):\n%s", args, r.log.String())
		}
	})
	return r
}

// finish closes stdin (the harness prints its statistics and exits) and returns them.
func (r *rp2040jsRun) finish(tb testing.TB) rp2040jsStats {
	tb.Helper()
	r.stdin.Close()
	if err := r.cmd.Wait(); err != nil {
		tb.Fatalf("run.mjs: %v", err)
	}
	m := statsLine.FindStringSubmatch(r.log.String())
	if m == nil {
		tb.Fatalf("run.mjs printed no stats line")
	}
	var v [4]uint64
	for i := range v {
		v[i], _ = strconv.ParseUint(m[i+1], 10, 64)
	}
	return rp2040jsStats{Cycles: v[0], WaitedNanos: v[1], CPUMicros: v[2], WallNanos: v[3]}
}

// rp2040jsWorkload is a fixed seeded conversation: HELLO, then ML-KEM-512 keygen, encaps and
// decaps and ML-DSA-44 keygen and sign, two iterations each. It returns every sample's
// count and stack mark in order.
func rp2040jsWorkload(tb testing.TB, conn *Conn) []uint64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a hang guard
	defer cancel()
	if _, err := conn.Hello(ctx); err != nil {
		tb.Fatalf("Hello: %v", err)
	}
	if err := conn.Seed(ctx, []byte("rp2040js speed")); err != nil {
		tb.Fatalf("Seed: %v", err)
	}
	var counts []uint64
	for _, req := range []BenchRequest{
		{Algorithm: "ML-KEM-512", Operation: "keygen", Iterations: 2},
		{Algorithm: "ML-KEM-512", Operation: "encaps", Iterations: 2},
		{Algorithm: "ML-KEM-512", Operation: "decaps", Iterations: 2},
		{Algorithm: "ML-DSA-44", Operation: "keygen", Iterations: 2, MessageLen: 33},
		{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 2, MessageLen: 33},
	} {
		if _, err := conn.Bench(ctx, req, func(s Sample) {
			if !s.OK {
				tb.Errorf("%s %s sample %d failed: %s", req.Algorithm, req.Operation, s.Index, s.Reason)
			}
			counts = append(counts, s.Count, uint64(s.StackBytes))
		}); err != nil {
			tb.Fatalf("Bench %s %s: %v", req.Algorithm, req.Operation, err)
		}
	}
	return counts
}

// TestRP2040JSLoopsAgree runs the same seeded workload under rp2040js's own loop with the
// RX line paced at 115,200 baud (the harness as it was) and under the batch loop with the
// RX FIFO fed as fast as it drains (the default): every count and stack mark must be the
// same, since neither the loop nor the arrival of input may change what a timed region
// counts.
func TestRP2040JSLoopsAgree(t *testing.T) {
	var runs [][]uint64
	for _, args := range [][]string{{"--loop", "stock", "--baud", "115200"}, {}} {
		r := startRP2040JS(t, args...)
		counts := rp2040jsWorkload(t, r.conn)
		st := r.finish(t)
		t.Logf("%v: %d cycles in %.1f s CPU: %.2f M cycles/s", args, st.Cycles, float64(st.CPUMicros)/1e6, float64(st.Cycles)/float64(st.CPUMicros))
		runs = append(runs, counts)
	}
	if len(runs[0]) == 0 || !slices.Equal(runs[0], runs[1]) {
		t.Errorf("counts differ between the stock paced loop and the batch loop:\n%v\n%v", runs[0], runs[1])
	}
}

// BenchmarkRP2040JS measures the harness's speed in emulated cycles per second of the node
// process's CPU time (and of wall time), on the fixed workload, for the stock loop paced at
// 115,200 baud and for the default batch loop.
func BenchmarkRP2040JS(b *testing.B) {
	for _, c := range []struct {
		name string
		args []string
	}{{"stock-115200", []string{"--loop", "stock", "--baud", "115200"}}, {"batch", nil}} {
		b.Run(c.name, func(b *testing.B) {
			var cycles, cpu, wall float64
			for i := 0; i < b.N; i++ {
				r := startRP2040JS(b, c.args...)
				rp2040jsWorkload(b, r.conn)
				st := r.finish(b)
				cycles += float64(st.Cycles)
				cpu += float64(st.CPUMicros) / 1e6
				wall += float64(st.WallNanos) / 1e9
			}
			b.ReportMetric(cycles/cpu, "cycles/cpu-s")
			b.ReportMetric(cycles/wall, "cycles/wall-s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

var spanLine = regexp.MustCompile(`run\.mjs: span cycles=([0-9]+) wraps=([0-9]+)`)

// TestRP2040JSCountsAreCoreCycles is the cross-check of the rp2040js board's sample: the
// harness (--spans) reports core.cycles between the SysTick readings that open and close each
// timed region, and the SysTick reloads in between; every count the firmware reports must
// equal its region's cycles plus its reloads, in order. rp2040js reloads SysTick as it
// reaches 0 (a period of RELOAD cycles, where the Cortex-M0+ counts RELOAD + 1), and the
// firmware adds RELOAD + 1 a wrap: one cycle a wrap (2^24 cycles) that the core did not run.
// A count that included anything else, or missed a wrap, would differ.
func TestRP2040JSCountsAreCoreCycles(t *testing.T) {
	r := startRP2040JS(t, "--spans")
	got := rp2040jsWorkload(t, r.conn)
	r.finish(t)
	var counts, spans []uint64
	for i := 0; i < len(got); i += 2 {
		counts = append(counts, got[i])
	}
	wrapped := 0
	for _, m := range spanLine.FindAllStringSubmatch(r.log.String(), -1) {
		c, _ := strconv.ParseUint(m[1], 10, 64)
		w, _ := strconv.ParseUint(m[2], 10, 64)
		if w > 0 {
			wrapped++
		}
		spans = append(spans, c+w)
	}
	if len(counts) == 0 || !slices.Equal(counts, spans) {
		t.Errorf("the firmware's counts are not core.cycles (plus SysTick reloads) over their regions:\ncounts %v\nspans  %v", counts, spans)
	}
	if wrapped == 0 {
		t.Error("no region saw a SysTick wrap: the workload no longer checks the wrap extension")
	}
	t.Logf("%d counts, each core.cycles over its region plus its SysTick reloads (%d regions wrapped): %v", len(counts), wrapped, counts)
}
