package wire

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"
)

// loopAccounting checks what LOOPDONE reported against the request: the loop ran until the
// passed operations' counts reached the budget (the last one crossed it) or max operations
// had run, and its minimum and maximum bound every operation.
func loopAccounting(t *testing.T, req LoopRequest, l Loop) {
	t.Helper()
	if l.Fail != 0 || l.Reason != "" || l.Ops == 0 {
		t.Fatalf("LOOP %+v: %+v", req, l)
	}
	if l.Min > l.Max || l.Min*l.Ops > l.Count || l.Max*l.Ops < l.Count {
		t.Errorf("LOOP: %d ops of %d..%d cannot add up to %d", l.Ops, l.Min, l.Max, l.Count)
	}
	if req.Max > 0 && l.Ops == uint64(req.Max) {
		return
	}
	if l.Count < req.Budget || l.Count-l.Max >= req.Budget {
		t.Errorf("LOOP budget %d: %d ops added up to %d (largest %d): not stopped by the operation that crossed the budget", req.Budget, l.Ops, l.Count, l.Max)
	}
}

// TestLoopHost runs LOOP on the host build: the accounting holds, max= caps the operations,
// a corrupted signature stops the loop with the reason, and a budget of 0 is refused before
// it is sent.
func TestLoopHost(t *testing.T) {
	c, _ := startHost(t, nil, nil, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	req := LoopRequest{Bench: BenchRequest{Algorithm: "ML-KEM-512", Operation: "decaps"}, Budget: 20_000_000} // 20 ms of ns
	started := 0
	l, err := c.Loop(ctx, req, func() { started++ })
	if err != nil {
		t.Fatal(err)
	}
	loopAccounting(t, req, l)
	if started != 1 || l.Marker != "none" {
		t.Errorf("started called %d times, marker %q; want once, none", started, l.Marker)
	}
	capped := LoopRequest{Bench: req.Bench, Budget: 1 << 62, Max: 3}
	if l, err = c.Loop(ctx, capped, nil); err != nil || l.Ops != 3 {
		t.Errorf("LOOP max=3: %+v, %v", l, err)
	}
	sig := LoopRequest{Bench: BenchRequest{Algorithm: "ML-DSA-44", Operation: "sign", MessageLen: 33, Fault: "sig"}, Budget: 1 << 40}
	if l, err = c.Loop(ctx, sig, nil); err != nil || l.Ops != 0 || l.Fail != 1 || l.Reason != "verify" {
		t.Errorf("LOOP with corrupted signatures: %+v, %v; want no op, one failure, verify", l, err)
	}
	if _, err := c.Loop(ctx, LoopRequest{Bench: req.Bench}, nil); err == nil {
		t.Error("a LOOP without a budget was sent")
	}
	var de *DeviceError
	if _, err := c.Loop(ctx, LoopRequest{Bench: BenchRequest{Algorithm: "ML-KEM-512", Operation: "sign"}, Budget: 1}, nil); !errors.As(err, &de) || de.Code != "unsupported" {
		t.Errorf("LOOP of a KEM's sign: %v, want ERROR code=unsupported", err)
	}
}

// TestLoopQEMU runs LOOP on a real QEMU board (riscv32 virt, counts in emulated
// instructions, so repeatable): after the same seed, a LOOP of hedged ML-DSA-44 signing
// (whose counts vary with the rejection rounds) makes exactly the signatures a BENCH makes,
// with the same counts, and stops at the one that crosses its budget; the board has no
// marker output, so the toggles are no-ops reported as marker=none.
func TestLoopQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	b := qemuBoards[2]
	if b.target != "qemu-riscv32-virt" {
		t.Fatalf("qemuBoards[2] is %s", b.target)
	}
	qemuTools(t, b)
	s := startQEMU(t, b, filepath.Join(buildFirmware(t, b.target, b.cc), "pqrepro-fw.elf"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a hang guard: liveness bounds a silent board
	defer cancel()
	if _, err := s.conn.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	sign := BenchRequest{Algorithm: "ML-DSA-44", Operation: "sign", MessageLen: 33}
	seed := []byte("loop accounting")
	if err := s.conn.Seed(ctx, seed); err != nil {
		t.Fatal(err)
	}
	var counts []uint64
	bench := sign
	bench.Iterations = 4
	if _, err := s.conn.Bench(ctx, bench, func(x Sample) {
		if !x.OK {
			t.Errorf("sample %d: %s", x.Index, x.Reason)
		}
		counts = append(counts, x.Count)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Seed(ctx, seed); err != nil {
		t.Fatal(err)
	}
	// The budget is crossed by the fourth signature, not before.
	req := LoopRequest{Bench: sign, Budget: counts[0] + counts[1] + counts[2] + 1}
	l, err := s.conn.Loop(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	loopAccounting(t, req, l)
	var sum uint64
	for _, c := range counts {
		sum += c
	}
	if l.Ops != 4 || l.Count != sum || l.Min != slices.Min(counts) || l.Max != slices.Max(counts) || l.Marker != "none" {
		t.Errorf("LOOP after the same seed: %+v; BENCH's counts %v (sum %d)", l, counts, sum)
	}
	t.Logf("ML-DSA-44 sign: BENCH counts %v, LOOP %+v", counts, l)
}

// TestRP2040JSMarker runs LOOP on the pico-w image under rp2040js, which models the RP2040's
// GPIO: the marker output (GPIO2) rises once per operation, as many times as LOOPDONE counts
// operations, and LOOPDONE names it (marker=gpio2).
func TestRP2040JSMarker(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	if _, err := os.Stat(filepath.Join(rp2040jsDir, "node_modules", "rp2040js", "package.json")); err != nil {
		t.Skip("rp2040js not installed: run make rp2040js at the repository root")
	}
	uf2 := "../../firmware/build/rp2040js/pico-w/pqrepro-fw.uf2"
	if _, err := os.Stat(uf2); err != nil {
		t.Skip("pico-w firmware not built: run make firmware")
	}
	cmd := exec.Command(node, "../../firmware/tools/rp2040js/run.mjs", rp2040jsDir, uf2)
	cmd.Env = append(os.Environ(), "PQREPRO_MARKER_GPIO=2")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuffer{}
	cmd.Stderr = prefixed{log, "rp2040js: "}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	conn := NewConn(rw{stdout, stdin}, Options{Log: log, RetryInterval: 2 * time.Second, SilenceTimeout: 60 * time.Second,
		Activity: ProcessActivity(cmd.Process.Pid)})
	t.Cleanup(func() {
		conn.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pico-w conversation:\n%s", log.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a hang guard: liveness follows the emulator
	defer cancel()
	if _, err := conn.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	// A budget of 4,000,000 emulated cycles: three ML-KEM-512 encapsulations.
	req := LoopRequest{Bench: BenchRequest{Algorithm: "ML-KEM-512", Operation: "encaps"}, Budget: 4_000_000}
	l, err := conn.Loop(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	loopAccounting(t, req, l)
	if l.Marker != "gpio2" {
		t.Errorf("LOOPDONE marker=%q, want gpio2", l.Marker)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rp2040js: %v", err)
	}
	m := regexp.MustCompile(`marker gpio2: ([0-9]+) rising edges`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatal("rp2040js reported no marker edges")
	}
	if edges, _ := strconv.ParseUint(m[1], 10, 64); edges != l.Ops {
		t.Errorf("GPIO2 rose %d times, LOOPDONE counts %d operations", edges, l.Ops)
	}
	t.Logf("LOOP under rp2040js: %+v, GPIO2 rose %s times", l, m[1])
}
