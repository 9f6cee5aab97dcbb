package qemu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
)

// linkCounts are what a run's log says about its line: frames received, and the events that
// mean bytes were lost or damaged, counted from the log itself so that any version of the
// runner can be measured the same way.
type linkCounts struct {
	frames, resends, repeats, corrupt, badframe, overflow int
}

var requestRE = regexp.MustCompile(`^> @([0-9]+):([A-Z]+):`)

func countLink(log string) linkCounts {
	var c linkCounts
	seen := map[string]bool{}
	for _, l := range strings.Split(log, "\n") {
		switch {
		case strings.HasPrefix(l, "< ") && strings.Contains(l, "@"):
			c.frames++
			if strings.Contains(l, "code=badframe") {
				c.badframe++
			}
			if strings.Contains(l, "code=overflow") {
				c.overflow++
			}
			if !regexp.MustCompile(`@[0-9]+:[A-Z]+:.*\*[0-9a-f]{8}$`).MatchString(l) {
				c.corrupt++
			}
		case strings.HasPrefix(l, "> "):
			m := requestRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			// HELLO is repeated until a freshly booted board answers (QEMU delivers the
			// first input some hundreds of ms after the boot): not a retry of the link.
			if m[2] == "RESEND" {
				c.resends++
			} else if seen[m[1]] && m[2] != "HELLO" {
				c.repeats++
			}
			seen[m[1]] = true
		}
	}
	return c
}

func (c linkCounts) String() string {
	per := func(n int) string { return strconv.FormatFloat(1000*float64(n)/float64(max(c.frames, 1)), 'f', 1, 64) }
	return fmt.Sprintf("%d frames; per thousand frames: RESEND %s, repeated requests %s, corrupt lines %s, ERROR badframe %s, ERROR overflow %s",
		c.frames, per(c.resends), per(c.repeats), per(c.corrupt), per(c.badframe), per(c.overflow))
}

// hogs starts n processes that spin on a CPU each until the test ends (or two minutes pass).
func hogs(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); cmd.Wait() })
	}
}

// TestNoRequestsToABusyBoard signs with SLH-DSA-SHA2-128f (billions of instructions: seconds
// of emulator time per signature, without a frame) while the runner's retry tick is 20 ms.
// The board reads its line only between operations, so every request sent meanwhile would
// wait in its 1 KiB receive ring; a runner that re-sent on every tick overflowed it and got
// ERROR badframe storms. The runner now sees the emulator working and sends nothing.
func TestNoRequestsToABusyBoard(t *testing.T) {
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, _ := newBoard(t, mc)
	q.SkipSelfTest, q.RetryInterval = true, 20*time.Millisecond
	m := testManifest(t, mc.Class, 2)
	m.Kind = artifacts.KindSigBench
	m.Spec.Algorithms = []string{"SLH-DSA-SHA2-128f"}
	m.Spec.Operations = []string{"sign"}
	m.Spec.Message = artifacts.Message{Text: "Hello PQ world!"}
	m.Spec.Warmup = 0
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	b, res, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog(err))
	}
	c := countLink(string(b.Files[artifacts.FileLog]))
	t.Logf("%s: %s", mc.Class, c)
	if res.Cells[0].Status != artifacts.StatusOK || c.resends != 0 || c.repeats != 0 || c.badframe != 0 || c.overflow != 0 || c.corrupt != 0 {
		t.Errorf("cell %s %q; link %s: want no RESEND, repeat or error", res.Cells[0].Status, res.Cells[0].Error, c)
	}
}

// TestLinkBesideCPUHogs runs the self-test and ML-KEM and ML-DSA cells on the Arm and the
// RISC-V board (two UART models) beside as many spinning processes as the machine has CPUs
// (PQREPRO_LINK_HOGS overrides the number): no frame may be lost or damaged on the way, and
// the board must never get a request it cannot read.
func TestLinkBesideCPUHogs(t *testing.T) {
	n := runtime.NumCPU()
	if v, err := strconv.Atoi(os.Getenv("PQREPRO_LINK_HOGS")); err == nil && v >= 0 {
		n = v
	}
	for _, class := range []string{"qemu-mps2-an386", "qemu-riscv32-virt"} {
		t.Run(class, func(t *testing.T) {
			mc, _ := LookupMachine(class)
			q, _ := newBoard(t, mc)
			q.RetryInterval = time.Second // the driver's default
			m := testManifest(t, mc.Class, 5)
			m.Kind = artifacts.KindSigBench
			m.Spec.Algorithms = []string{"ML-DSA-44", "ML-DSA-65", "ML-DSA-87"}
			m.Spec.Operations = []string{"keygen", "sign", "verify"}
			m.Spec.Message = artifacts.Message{Size: 33}
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			hogs(t, n)
			t0 := time.Now()
			b, res, err := execute(t, q, m, nil)
			if err != nil {
				t.Fatalf("beside %d CPU hogs: %v\n%s", n, err, runLog(err))
			}
			c := countLink(string(b.Files[artifacts.FileLog]))
			t.Logf("%s beside %d CPU hogs, %v: %s", class, n, time.Since(t0).Round(time.Millisecond), c)
			for _, cell := range res.Cells {
				if cell.Status != artifacts.StatusOK {
					t.Errorf("cell %s %s: %s %q", cell.Algorithm, cell.Operation, cell.Status, cell.Error)
				}
			}
			if c.corrupt != 0 || c.badframe != 0 || c.overflow != 0 {
				t.Errorf("bytes were lost or damaged on the line: %s", c)
			}
		})
	}
}
