package qemu

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/internal/boardcat"
	"pqrepro/internal/cachedir"
	"pqrepro/runner/exec/kinds"
)

// TestRP2040JSBoard runs a short ML-KEM manifest twice on the rp2040js-picow board (the
// pico-w image in rp2040js, through the embedded harness and its stdio): both bundles verify,
// the counts are identical, the cells are cycles labelled with the rp2040js cycle model, and
// the environment names rp2040js and the 125 MHz clk_sys the firmware set up.
func TestRP2040JSBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("boots rp2040js")
	}
	m, ok := LookupMachine("rp2040js-picow")
	if !ok || !m.IsRP2040JS() {
		t.Fatal("no rp2040js-picow in the catalogue")
	}
	if _, err := exec.LookPath(m.Binary); err != nil {
		t.Skip("node not installed")
	}
	mods := cachedir.Find("rp2040js", "../..")
	if mods == "" {
		t.Skip("rp2040js not installed: run make rp2040js at the repository root")
	}
	elf := firmwareELF(t, m)
	var sessions []*session
	q := &QEMU{Class: m.Class, Firmware: elf, RetryInterval: 2 * time.Second, SilenceTimeout: 60 * time.Second,
		Executors: kinds.Board(), RP2040JSDir: mods}
	q.started = func(s *session) { sessions = append(sessions, s) }
	man := testManifest(t, m.Class, 3)
	var samples [][]byte
	for run := 0; run < 2; run++ {
		b, res, err := execute(t, q, man, nil)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, runLog(err))
		}
		if _, err := attest.Verify(b, nil); err != nil {
			t.Fatalf("bundle does not verify: %v", err)
		}
		samples = append(samples, b.Files[artifacts.FileSamples])
		if res.Board != m.Class || res.Assurance != artifacts.AssuranceEmulated || len(res.Cells) != 9 {
			t.Fatalf("result board %s assurance %s cells %d", res.Board, res.Assurance, len(res.Cells))
		}
		for _, c := range res.Cells {
			if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitCycles || c.Stats.N != 3 || c.Stats.Min <= 0 || c.Counter != boardcat.RP2040JSCycleModel {
				t.Fatalf("cell %+v", c)
			}
		}
		var env artifacts.Environment
		if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
			t.Fatal(err)
		}
		bi := env.Board
		if !strings.HasPrefix(bi.Emulator, "rp2040js 1.4.1 (node ") || bi.Driver != "qemu" || bi.Class != m.Class ||
			bi.ClockHz != 125000000 || bi.Chip != "cortex-m0plus" || env.TimerSource != boardcat.RP2040JSCycleModel {
			t.Fatalf("environment board = %+v, timer %q", bi, env.TimerSource)
		}
		if log := string(b.Files[artifacts.FileLog]); !strings.Contains(log, "measuring on the board identity booted") || !strings.Contains(log, "rp2040js: pid") {
			t.Errorf("log:\n%s", log)
		}
	}
	if !bytes.Equal(samples[0], samples[1]) {
		t.Fatalf("counts differ between two runs:\n%s\n%s", samples[0], samples[1])
	}
	if len(sessions) != 2 {
		t.Errorf("%d rp2040js sessions, want 2", len(sessions))
	}
	t.Logf("identical counts in two runs:\n%s", samples[0])
}
