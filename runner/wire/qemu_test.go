package wire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/term"
)

// qemuBoard is how to start one emulated board.
type qemuBoard struct {
	target string
	qemu   string
	args   []string
	cc     string
	// lean boards share their C with another board (an505 with an386: the same CMSDK port
	// and crypto, another core), so TestQEMUBoards runs the default self-test on both boots
	// and skips the SLH-DSA BENCHes there, keeping the test's time in check.
	lean bool
	// subset is the declared algorithm subset of a board too small for the whole table (nil:
	// every algorithm). A subset board runs the default self-test and the ML-KEM BENCHes
	// of its first algorithm.
	subset []string
}

var qemuBoards = []qemuBoard{
	{"qemu-mps2-an386", "qemu-system-arm", []string{"-M", "mps2-an386"}, "arm-none-eabi-gcc", false, nil},
	{"qemu-mps2-an505", "qemu-system-arm", []string{"-M", "mps2-an505"}, "arm-none-eabi-gcc", true, nil},
	{"qemu-riscv32-virt", "qemu-system-riscv32", []string{"-M", "virt", "-bios", "none"}, "riscv64-unknown-elf-gcc", false, nil},
	{"qemu-microbit", "qemu-system-arm", []string{"-M", "microbit"}, "arm-none-eabi-gcc", true, []string{"ML-KEM-512"}},
}

// qemuSession is one running QEMU with the firmware's UART on a pty.
type qemuSession struct {
	cmd  *exec.Cmd
	pty  *os.File
	conn *Conn
	log  *logBuffer
}

var ptyRE = regexp.MustCompile(`char device redirected to (/dev/pts/[0-9]+)`)

// startQEMU boots elf the way the runner's QEMU driver does: paused (-S),
// the UART on a pty and a QMP socket; it opens the pty first and only then
// resumes the machine over QMP, so no byte the firmware sends is lost.
func startQEMU(t testing.TB, b qemuBoard, elf string) *qemuSession {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "qmp.sock")
	args := append(append([]string{}, b.args...),
		"-S", "-display", "none", "-monitor", "none", "-serial", "pty",
		"-qmp", "unix:"+sock+",server=on,wait=off",
		"-icount", "shift=0", "-kernel", elf)
	cmd := exec.Command(b.qemu, args...)
	// QEMU names the pty on stdout; errors go to stderr. Read both.
	out, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	err = cmd.Start()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := &qemuSession{cmd: cmd, log: &logBuffer{}}
	t.Cleanup(func() {
		if s.conn != nil {
			s.conn.Close()
		}
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s conversation:\n%s", b.target, s.log.String())
		}
	})

	ptyc := make(chan string, 1)
	go func() {
		defer out.Close()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := ptyRE.FindStringSubmatch(sc.Text()); m != nil {
				ptyc <- m[1]
			}
			s.log.Write([]byte("qemu: " + sc.Text() + "\n"))
		}
	}()
	var ptyPath string
	select {
	case ptyPath = <-ptyc:
	case <-time.After(10 * time.Second):
		t.Fatal("QEMU did not report its pty")
	}
	f, err := os.OpenFile(ptyPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var rawErr error
	rc.Control(func(fd uintptr) { _, rawErr = term.MakeRaw(int(fd)) })
	if rawErr != nil {
		t.Fatalf("raw mode on %s: %v", ptyPath, rawErr)
	}
	s.pty = f
	// Liveness follows the emulator, as in the runner's QEMU driver: an SLH-DSA "s" signature
	// runs for minutes of emulator time without a frame, and a busy host only slows it.
	opts := Options{Log: s.log, RetryInterval: 500 * time.Millisecond, Activity: ProcessActivity(cmd.Process.Pid), WorkLimit: 30 * time.Minute}
	s.conn = NewConn(f, opts)

	if err := qmpCont(sock); err != nil {
		t.Fatalf("QMP: %v", err)
	}
	return s
}

// qmpCont resumes the paused machine over QMP.
func qmpCont(sock string) error {
	var c net.Conn
	var err error
	for i := 0; i < 100; i++ {
		if c, err = net.Dial("unix", sock); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	dec := json.NewDecoder(c)
	var msg map[string]any
	if err := dec.Decode(&msg); err != nil { // greeting
		return err
	}
	for _, cmd := range []string{"qmp_capabilities", "cont"} {
		if _, err := fmt.Fprintf(c, `{"execute":%q}`+"\n", cmd); err != nil {
			return err
		}
		for {
			msg = nil
			if err := dec.Decode(&msg); err != nil {
				return err
			}
			if _, ok := msg["return"]; ok {
				break
			}
			if e, ok := msg["error"]; ok {
				return fmt.Errorf("%s: %v", cmd, e)
			}
		}
	}
	return nil
}

func qemuTools(t testing.TB, b qemuBoard) {
	t.Helper()
	for _, tool := range []string{b.qemu, b.cc} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make firmware installs it)", tool)
		}
	}
}

// benchCounts runs a short ML-KEM-768 benchmark and returns every count.
func benchCounts(ctx context.Context, t *testing.T, c *Conn) []uint64 {
	return benchCountsOf(ctx, t, c, "ML-KEM-768")
}

// benchCountsOf runs a short benchmark of a KEM's three operations and returns every count
// and stack mark.
func benchCountsOf(ctx context.Context, t *testing.T, c *Conn, alg string) []uint64 {
	t.Helper()
	var counts []uint64
	for _, op := range []string{"keygen", "encaps", "decaps"} {
		req := BenchRequest{Algorithm: alg, Operation: op, Iterations: 5, Warmup: 1}
		_, err := c.Bench(ctx, req, func(s Sample) {
			if !s.OK {
				t.Errorf("%s sample %d failed: %s", op, s.Index, s.Reason)
			}
			counts = append(counts, s.Count, uint64(s.StackBytes))
		})
		if err != nil {
			t.Fatalf("Bench %s: %v", op, err)
		}
	}
	return counts
}

// signCounts runs a short hedged ML-DSA-44 signing benchmark and returns every count, stack
// mark and round count.
func signCounts(ctx context.Context, t *testing.T, c *Conn) []uint64 {
	t.Helper()
	var counts []uint64
	req := BenchRequest{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 4, Warmup: 1, Message: []byte("Test message for ML-DSA benchmark")}
	_, err := c.Bench(ctx, req, func(s Sample) {
		if !s.OK || s.Rounds < 1 {
			t.Errorf("sign sample %d: %+v", s.Index, s)
		}
		counts = append(counts, s.Count, uint64(s.StackBytes), uint64(s.Rounds))
	})
	if err != nil {
		t.Fatalf("Bench sign: %v", err)
	}
	return counts
}

// corruptedSignatures asks the board to corrupt every signature before checking it (the
// fault=sig hook): each sample must be reported failed, none counted.
func corruptedSignatures(ctx context.Context, t *testing.T, c *Conn, alg string) {
	t.Helper()
	for _, op := range []string{"sign", "verify"} {
		var reasons []string
		sum, err := c.Bench(ctx, BenchRequest{Algorithm: alg, Operation: op, Iterations: 2, MessageLen: 33, Fault: "sig"},
			func(s Sample) {
				if s.OK {
					t.Errorf("%s sample %d with a corrupted signature counted: %+v", op, s.Index, s)
				}
				reasons = append(reasons, s.Reason)
			})
		if err != nil {
			t.Fatalf("Bench %s %s fault=sig: %v", alg, op, err)
		}
		if sum.OK != 0 || sum.Fail != 2 || strings.Join(reasons, ",") != "verify,verify" {
			t.Fatalf("%s %s fault=sig: summary %+v, reasons %v", alg, op, sum, reasons)
		}
	}
}

// slhCounts runs short hedged SLH-DSA-SHA2-128f and SLH-DSA-SHAKE-128f sign and verify
// benchmarks and returns every count and stack mark; SLH-DSA samples carry no rounds.
func slhCounts(ctx context.Context, t *testing.T, c *Conn) []uint64 {
	t.Helper()
	var counts []uint64
	// One SHA2 and one SHAKE set; one iteration each (a signature is half a billion
	// instructions): enough to show two boots count alike.
	for _, alg := range []string{"SLH-DSA-SHA2-128f", "SLH-DSA-SHAKE-128f"} {
		for _, op := range []string{"sign", "verify"} {
			req := BenchRequest{Algorithm: alg, Operation: op, Iterations: 1, MessageLen: 33}
			sum, err := c.Bench(ctx, req, func(s Sample) {
				if !s.OK || s.Rounds != 0 || s.Count == 0 {
					t.Errorf("%s %s sample %d: %+v", alg, op, s.Index, s)
				}
				counts = append(counts, s.Count, uint64(s.StackBytes))
			})
			if err != nil {
				t.Fatalf("Bench %s %s: %v", alg, op, err)
			}
			if sum.OK != 1 {
				t.Fatalf("Bench %s %s: summary %+v", alg, op, sum)
			}
		}
	}
	return counts
}

// TestQEMUBoards boots each emulated board twice, checks HELLO and the
// on-board ACVP self-test, and checks that a seeded ML-KEM-768 benchmark
// gives identical instruction counts and stack marks in both runs.
func TestQEMUBoards(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	for _, b := range qemuBoards {
		t.Run(b.target, func(t *testing.T) {
			qemuTools(t, b)
			dir := buildFirmware(t, b.target, b.cc)
			elf := filepath.Join(dir, "pqrepro-fw.elf")
			var meta struct {
				BuildID string `json:"build_id"`
			}
			if raw, err := os.ReadFile(filepath.Join(dir, "metadata.json")); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(raw, &meta); err != nil {
				t.Fatal(err)
			}
			var runs [][]uint64
			for run := 0; run < 2; run++ {
				s := startQEMU(t, b, elf)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a hang guard: liveness bounds a silent board
				h, err := s.conn.Hello(ctx)
				if err != nil {
					cancel()
					t.Fatalf("Hello: %v", err)
				}
				if h.Board != b.target || h.Unit != "instructions" || h.BuildID != meta.BuildID {
					t.Fatalf("Hello = %+v, metadata build_id %s", h, meta.BuildID)
				}
				// Both boots run the default self-test without the slow SLH-DSA groups (what a
				// measurement runs first); every vector (SELFTEST full=1, a minute of emulator
				// time per board) runs in TestQEMUSLHDSAReport, which is not part of the tests.
				full := false
				selftest := s.conn.SelfTestFull
				if !full {
					selftest = s.conn.SelfTest
				}
				t0 := time.Now()
				st, err := selftest(ctx)
				t.Logf("%s boot %d: self-test (full=%v) %v", b.target, run, full, time.Since(t0).Round(time.Millisecond))
				if err != nil {
					cancel()
					t.Fatalf("SelfTest: %v", err)
				}
				if b.subset != nil {
					// Hash groups and the subset's five ML-KEM groups, nothing else.
					if st.Fail != 0 || len(st.Groups) != 6+5*len(b.subset) || strings.Join(h.Algorithms, ",") != strings.Join(b.subset, ",") {
						t.Fatalf("SelfTest = %+v, algorithms %v", st, h.Algorithms)
					}
					if err := s.conn.Seed(ctx, []byte("qemu repeatability")); err != nil {
						t.Fatalf("Seed: %v", err)
					}
					runs = append(runs, benchCountsOf(ctx, t, s.conn, b.subset[0]), nil, nil)
					_, err := s.conn.Bench(ctx, BenchRequest{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 1, Message: []byte("m")}, nil)
					var de *DeviceError
					if !errors.As(err, &de) || de.Code != "unsupported" {
						t.Fatalf("ML-DSA-44 BENCH on a subset board: %v", err)
					}
					cancel()
					s.conn.Close()
					s.cmd.Process.Kill()
					s.cmd.Wait()
					continue
				}
				if st.Fail != 0 || st.Pass < 100 {
					t.Fatalf("SelfTest = %+v", st)
				}
				// The Wycheproof groups (BOARD_WYCHEPROOF, on every full board here): 3 ML-KEM
				// groups per set and ML-DSA sigVer per set, 2 vectors per file, every one passed.
				wp, wpPass := 0, 0
				for _, g := range st.Groups {
					if strings.HasPrefix(g.Function, "wycheproof-") {
						wp++
						wpPass += g.Pass
					}
				}
				if wp != 12 || wpPass != 12*2 || !strings.HasSuffix(st.Source, "+wycheproof") {
					t.Fatalf("Wycheproof: %d groups, %d vectors passed, source %s", wp, wpPass, st.Source)
				}
				// The ML-DSA groups run on the board too: 2 keyGen, 1 deterministic sigGen and
				// 2 sigVer (one to refuse, one to accept) per parameter set.
				dsa := map[string]int{}
				for _, g := range st.Groups {
					if strings.HasPrefix(g.Algorithm, "ML-DSA-") && g.Fail == 0 {
						dsa[g.Algorithm+"/"+g.Function] = g.Pass
					}
				}
				for _, set := range []string{"ML-DSA-44", "ML-DSA-65", "ML-DSA-87"} {
					if dsa[set+"/keyGen"] != 2 || dsa[set+"/sigGen"] != 1 || dsa[set+"/sigVer"] != 2 {
						t.Fatalf("SelfTest ML-DSA groups = %v", dsa)
					}
				}
				checkSLHGroups(t, st, full)
				checkAsconGroups(t, st, boardAsconKATs, false)
				if run == 0 {
					asconWrongMode(ctx, t, s.conn, boardAsconKATs)
				}
				if err := s.conn.Seed(ctx, []byte("qemu repeatability")); err != nil {
					cancel()
					t.Fatalf("Seed: %v", err)
				}
				runs = append(runs, benchCounts(ctx, t, s.conn))
				runs = append(runs, signCounts(ctx, t, s.conn))
				if !b.lean {
					t0 = time.Now()
					runs = append(runs, slhCounts(ctx, t, s.conn))
					t.Logf("%s boot %d: SLH-DSA sign/verify BENCHes %v", b.target, run, time.Since(t0).Round(time.Millisecond))
				} else {
					runs = append(runs, nil)
				}
				corruptedSignatures(ctx, t, s.conn, "ML-DSA-44")
				if run == 0 && !b.lean {
					// The cheapest SLH-DSA set; once (billions of instructions per boot).
					corruptedSignatures(ctx, t, s.conn, "SLH-DSA-SHA2-128f")
				}
				cancel()
				s.conn.Close()
				s.cmd.Process.Kill()
				s.cmd.Wait()
			}
			if fmt.Sprint(runs[:3]) != fmt.Sprint(runs[3:]) {
				t.Fatalf("counts differ between two runs:\n%v\n%v", runs[:3], runs[3:])
			}
			t.Logf("%s: ML-KEM (count, stack) pairs identical in two runs: %v", b.target, runs[0])
			t.Logf("%s: ML-DSA-44 sign (count, stack, rounds) identical in two runs: %v", b.target, runs[1])
			t.Logf("%s: SLH-DSA-SHA2-128f and SHAKE-128f sign, verify (count, stack) identical in two runs: %v", b.target, runs[2])
		})
	}
}

// checkSLHGroups checks the SLH-DSA self-test groups every board runs: per set 1 keyGen and 2
// sigVer tests (one refused, one accepted), and 1 deterministic sigGen test for SHAKE-128f and
// SHA2-256f; no sigGen group for the others.
// Without full, the "s" sets' keyGen and all sigGen groups are reported skipped (negative
// counts below).
func checkSLHGroups(t *testing.T, st SelfTestResult, full bool) {
	t.Helper()
	got := map[string]int{}
	for _, g := range st.Groups {
		if strings.HasPrefix(g.Algorithm, "SLH-DSA-") {
			if g.Fail != 0 {
				t.Fatalf("SelfTest %s %s: %+v", g.Algorithm, g.Function, g)
			}
			got[g.Algorithm+"/"+g.Function] = g.Pass - g.Skipped
		}
	}
	slow := 1
	if !full {
		slow = -1
	}
	want := map[string]int{}
	for _, h := range []string{"SHA2", "SHAKE"} {
		for _, set := range []string{"128s", "128f", "192s", "192f", "256s", "256f"} {
			alg := "SLH-DSA-" + h + "-" + set
			want[alg+"/keyGen"], want[alg+"/sigVer"] = 1, 2
			if strings.HasSuffix(set, "s") {
				want[alg+"/keyGen"] = slow
			}
		}
	}
	for _, alg := range []string{"SLH-DSA-SHAKE-128f", "SLH-DSA-SHA2-256f"} {
		want[alg+"/sigGen"] = slow
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("SelfTest SLH-DSA groups = %v, want %v", got, want)
	}
}

// TestQEMUSLHDSAReport prints instructions of one keygen, sign and verify of every SLH-DSA "f"
// set, and of the "s" sets with PQREPRO_QEMU_REPORT_SLH=all (or those named, e.g.
// PQREPRO_QEMU_REPORT_SLH=SHA2-128s,SHAKE-128s), on every emulated board, and the wall
// time of the self-test. It runs only with PQREPRO_QEMU_REPORT_SLH set.
func TestQEMUSLHDSAReport(t *testing.T) {
	mode := os.Getenv("PQREPRO_QEMU_REPORT_SLH")
	if mode == "" {
		t.Skip("set PQREPRO_QEMU_REPORT_SLH=f (or all) to print the SLH-DSA table")
	}
	for _, b := range qemuBoards {
		t.Run(b.target, func(t *testing.T) {
			qemuTools(t, b)
			dir := buildFirmware(t, b.target, b.cc)
			s := startQEMU(t, b, filepath.Join(dir, "pqrepro-fw.elf"))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
			defer cancel()
			if _, err := s.conn.Hello(ctx); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			st, err := s.conn.SelfTestFull(ctx)
			if err != nil || st.Fail != 0 {
				t.Fatalf("SelfTest: %v %+v", err, st)
			}
			checkSLHGroups(t, st, true)
			t.Logf("%s: full self-test %v wall", b.target, time.Since(start).Round(time.Millisecond))
			start = time.Now()
			if st, err := s.conn.SelfTest(ctx); err != nil || st.Fail != 0 {
				t.Fatalf("SelfTest: %v %+v", err, st)
			}
			t.Logf("%s: default self-test %v wall", b.target, time.Since(start).Round(time.Millisecond))
			if err := s.conn.Seed(ctx, []byte("report")); err != nil {
				t.Fatal(err)
			}
			for _, h := range []string{"SHA2", "SHAKE"} {
				for _, set := range []string{"128f", "192f", "256f", "128s", "192s", "256s"} {
					alg := "SLH-DSA-" + h + "-" + set
					if strings.HasSuffix(set, "s") && mode != "all" && !slices.Contains(strings.Split(mode, ","), h+"-"+set) {
						continue
					}
					row := fmt.Sprintf("%-19s", alg)
					for _, op := range []string{"keygen", "sign", "verify"} {
						start := time.Now()
						sum, err := s.conn.Bench(ctx, BenchRequest{Algorithm: alg, Operation: op, Iterations: 1, MessageLen: 33}, nil)
						if err != nil || sum.OK != 1 {
							t.Fatalf("%s %s: %v %+v", alg, op, err, sum)
						}
						row += fmt.Sprintf("  %s %11d (stack %5d, %5.1fs)", op, sum.Min, sum.StackMax, time.Since(start).Seconds())
					}
					t.Logf("%s: %s", b.target, row)
				}
			}
		})
	}
}

// TestQEMUReport prints instructions per operation for every ML-KEM set on
// every emulated board. It runs only with PQREPRO_QEMU_REPORT=1.
func TestQEMUReport(t *testing.T) {
	if os.Getenv("PQREPRO_QEMU_REPORT") != "1" {
		t.Skip("set PQREPRO_QEMU_REPORT=1 to print the full ML-KEM table")
	}
	for _, b := range qemuBoards {
		t.Run(b.target, func(t *testing.T) {
			qemuTools(t, b)
			dir := buildFirmware(t, b.target, b.cc)
			s := startQEMU(t, b, filepath.Join(dir, "pqrepro-fw.elf"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if _, err := s.conn.Hello(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.conn.Seed(ctx, []byte("report")); err != nil {
				t.Fatal(err)
			}
			var rows []string
			start := time.Now()
			for _, alg := range []string{"ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"} {
				for _, op := range []string{"keygen", "encaps", "decaps"} {
					var counts []uint64
					sum, err := s.conn.Bench(ctx, BenchRequest{Algorithm: alg, Operation: op, Iterations: 7, Warmup: 1},
						func(x Sample) { counts = append(counts, x.Count) })
					if err != nil || sum.Fail != 0 {
						t.Fatalf("%s %s: %v %+v", alg, op, err, sum)
					}
					sort.Slice(counts, func(i, j int) bool { return counts[i] < counts[j] })
					rows = append(rows, fmt.Sprintf("%-12s %-7s median %9d  min %9d  max %9d  stack %6d",
						alg, op, counts[len(counts)/2], sum.Min, sum.Max, sum.StackMax))
				}
			}
			t.Logf("%s (instructions, n=7 after 1 warm-up, wall %v):\n%s", b.target,
				time.Since(start).Round(time.Millisecond), strings.Join(rows, "\n"))
		})
	}
}
