package wire

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"pqrepro/internal/cachedir"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rp2040jsDir is where `make rp2040js` at the repository root installs the RP2040 emulator
// (npm package, pinned in firmware/tools/rp2040js) with npm ci: rp2040js in the cache folder
// (internal/cachedir), or an older checkout's .cache/rp2040js.
var rp2040jsDir = cachedir.Find("rp2040js", "../..")

// TestRP2040JSPicoW boots the pico-w image (the UF2 that goes onto a real Pico W) in
// rp2040js, from its second stage on (checked and copied to SRAM as the bootrom does; a
// corrupted one is refused), and talks to its UART0 through the framed protocol:
// the boot line's clk_sys (measured against the TIMER: 125 MHz from the firmware's own
// XOSC/PLL setup), HELLO (board, chip, counter, the build-id of the built ELF), the default SELFTEST with
// the image's own vectors (ML-KEM, ML-DSA, SLH-DSA: no failure), and a seeded ML-KEM-512
// BENCH twice (identical counts: the emulator's clock is a function of the instructions it
// ran). rp2040js times instructions by its own cycle table; these counts are not the
// chip's cycles and the test asserts nothing about their size.
func TestRP2040JSPicoW(t *testing.T) {
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
	raw, err := os.ReadFile("../../firmware/build/rp2040js/pico-w/metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		BuildID    string   `json:"build_id"`
		Algorithms []string `json:"algorithms"`
	}
	if err := json.Unmarshal(raw, &md); err != nil {
		t.Fatal(err)
	}

	// The harness plays the bootrom's last step (check boot2's CRC-32, copy it to SRAM, run
	// it there): an image whose boot2 has one byte changed must not start.
	bad, err := os.ReadFile(uf2)
	if err != nil {
		t.Fatal(err)
	}
	bad[32+8] ^= 0x40 // block 0's payload is the first 256 bytes of flash: boot2
	badPath := filepath.Join(t.TempDir(), "bad.uf2")
	if err := os.WriteFile(badPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, "../../firmware/tools/rp2040js/run.mjs", rp2040jsDir, badPath).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(out), "boot2 checksum") {
		t.Fatalf("a corrupted boot2 ran (or failed otherwise): %v: %s", err, out)
	}

	cmd := exec.Command(node, "../../firmware/tools/rp2040js/run.mjs", rp2040jsDir, uf2)
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
	conn := NewConn(struct {
		io.Reader
		io.Writer
	}{stdout, stdin}, Options{Log: log, RetryInterval: 2 * time.Second, SilenceTimeout: 60 * time.Second,
		// the emulator is a node process: its CPU time is the board's progress
		Activity: ProcessActivity(cmd.Process.Pid)})
	t.Cleanup(func() {
		conn.Close()
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("pico-w conversation:\n%s", log.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a hang guard: liveness follows the emulator
	defer cancel()

	start := time.Now()
	h, err := conn.Hello(ctx)
	if err != nil {
		t.Fatalf("Hello: %v", err)
	}
	if h.Board != "pico-w" || h.Chip != "cortex-m0plus" || h.Counter != "systick" || h.Unit != "cycles" || h.ClockHz != 125000000 {
		t.Errorf("HELLO board=%s chip=%s counter=%s unit=%s clock_hz=%d, want pico-w cortex-m0plus systick cycles 125000000",
			h.Board, h.Chip, h.Counter, h.Unit, h.ClockHz)
	}
	// The port's boot line: clk_sys measured by SysTick against the microsecond TIMER.
	// rp2040js derives clk_sys from the XOSC, PLL_SYS and CLOCKS registers the firmware
	// wrote and runs SysTick at it, so this checks the clock setup against its model.
	if m := regexp.MustCompile(`clk_sys ([0-9]+) kHz`).FindStringSubmatch(log.String()); m == nil {
		t.Error("no clk_sys line at boot")
	} else if khz, _ := strconv.Atoi(m[1]); khz < 124875 || khz > 125125 {
		t.Errorf("clk_sys measured %d kHz, want 125000 within 0.1%%", khz)
	} else {
		t.Logf("clk_sys measured at boot: %d kHz", khz)
	}
	if h.BuildID != md.BuildID {
		t.Errorf("build-id %s, metadata.json says %s", h.BuildID, md.BuildID)
	}
	if !slices.Equal(h.Algorithms, md.Algorithms) {
		t.Errorf("ALGS %v, metadata.json lists %v", h.Algorithms, md.Algorithms)
	}

	st, err := conn.SelfTest(ctx)
	if err != nil {
		t.Fatalf("SelfTest: %v", err)
	}
	if st.Fail != 0 || st.Pass == 0 {
		t.Errorf("SELFTEST pass=%d fail=%d", st.Pass, st.Fail)
	}
	ran := map[string]bool{}
	for _, g := range st.Groups {
		if g.Fail > 0 {
			t.Errorf("SELFTEST group %s", g)
		}
		for _, fam := range []string{"ML-KEM-", "ML-DSA-", "SLH-DSA-"} {
			if g.Pass > 0 && strings.HasPrefix(g.Algorithm, fam) {
				ran[strings.TrimSuffix(fam, "-")] = true
			}
		}
	}
	for _, fam := range []string{"ML-KEM", "ML-DSA", "SLH-DSA"} {
		if !ran[fam] {
			t.Errorf("SELFTEST ran no %s group (ran %v)", fam, ran)
		}
	}
	t.Logf("SELFTEST: %d vectors passed in %d groups, %.1f s after boot", st.Pass, len(st.Groups), time.Since(start).Seconds())

	bench := func() []uint64 {
		if err := conn.Seed(ctx, []byte("pico-w determinism")); err != nil {
			t.Fatalf("Seed: %v", err)
		}
		var counts []uint64
		for _, op := range []string{"keygen", "encaps", "decaps"} {
			_, err := conn.Bench(ctx, BenchRequest{Algorithm: "ML-KEM-512", Operation: op, Iterations: 2}, func(s Sample) {
				if !s.OK {
					t.Errorf("ML-KEM-512 %s sample %d failed: %s", op, s.Index, s.Reason)
				}
				counts = append(counts, s.Count, uint64(s.StackBytes))
			})
			if err != nil {
				t.Fatalf("Bench %s: %v", op, err)
			}
		}
		return counts
	}
	a, b := bench(), bench()
	if !slices.Equal(a, b) {
		t.Errorf("ML-KEM-512 counts and stack marks differ between two seeded runs:\n%v\n%v", a, b)
	}
	t.Logf("ML-KEM-512 keygen/encaps/decaps under rp2040js (emulator cycles, stack bytes): %v; %.1f s in all", a, time.Since(start).Seconds())
}

// prefixed writes each chunk to w with a prefix (the emulator's diagnostics in the log).
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
