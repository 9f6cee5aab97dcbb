package qemu

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/internal/boardcat"
	"pqrepro/internal/cachedir"
	"pqrepro/runner"
	"pqrepro/runner/device"
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

// TestRP2040JSTLSMatrix runs C000-01's four corners of paper000's matrix (ML-KEM-512 and X25519
// with ML-DSA-44 and RSA-PSS) twice on the rp2040js-picow board: the run boots the class's TLS
// image (tls/, KindFirmware), not its bench image, and the bundle names that image; every cell
// is the board's own client over the serial line, in cycles of the rp2040js cycle model, its
// phase split summing to its count; and the two runs' counts are identical. The full 36-cell
// matrix takes minutes on this emulator (docs/BOARDS.md); these cells have its most and least
// expensive key exchange and signature of the pair the claim compares.
func TestRP2040JSTLSMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("boots rp2040js")
	}
	m, _ := LookupMachine("rp2040js-picow")
	if _, err := exec.LookPath(m.Binary); err != nil {
		t.Skip("node not installed")
	}
	mods := cachedir.Find("rp2040js", "../..")
	if mods == "" {
		t.Skip("rp2040js not installed: run make rp2040js at the repository root")
	}
	elf := firmwareELF(t, m)
	tlsELF := filepath.Join(filepath.Dir(elf), m.KindImages[artifacts.KindTLSMatrix], "pqrepro-fw.elf")
	img, err := device.LoadImage(tlsELF)
	if err != nil {
		t.Fatal(err)
	}
	q := &QEMU{Class: m.Class, Firmware: elf, KindFirmware: map[artifacts.Kind]string{artifacts.KindTLSMatrix: tlsELF},
		RetryInterval: 2 * time.Second, SilenceTimeout: 60 * time.Second, Executors: kinds.Board(), RP2040JSDir: mods}
	man, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: rp2040js-corners}
spec:
  tls: {groups: [ML-KEM-512, X25519], signatures: [ML-DSA-44, RSA-PSS], batch: 2, echo: 32}
  iterations: 2
  seed: "paper000/matrix/v1"
  boards: [rp2040js-picow]
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	var samples [][]byte
	for run := 0; run < 2; run++ {
		b, res, err := execute(t, q, man, nil)
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, runLog(err))
		}
		var env artifacts.Environment
		if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
			t.Fatal(err)
		}
		if env.Board.FirmwareDigest != img.Digest || env.Board.Chip != "cortex-m0plus" {
			t.Fatalf("run %d booted firmware %s on %s, want the TLS image %s", run, env.Board.FirmwareDigest, env.Board.Chip, img.Digest)
		}
		if len(res.Cells) != 4 {
			t.Fatalf("%d cells", len(res.Cells))
		}
		for _, c := range res.Cells {
			if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitCycles || !strings.HasPrefix(c.Counter, boardcat.RP2040JSCycleModel+"; the board's systick") ||
				c.TLS == nil || !strings.HasPrefix(c.TLS.Client, artifacts.SerialTLSClient) || c.Stats.N != 2 {
				t.Fatalf("cell %s: %s %s unit %s counter %q tls %+v", c.Algorithm, c.Status, c.Error, c.Unit, c.Counter, c.TLS)
			}
			sum := 0.0
			for _, p := range c.TLS.Phases {
				if p.Side == artifacts.SideClient {
					sum += p.Stats.Median
				}
			}
			if sum != c.Stats.Median {
				t.Fatalf("cell %s: the board's phases sum to %v, its count is %v", c.Algorithm, sum, c.Stats.Median)
			}
		}
		samples = append(samples, b.Files[artifacts.FileSamples])
	}
	if !bytes.Equal(samples[0], samples[1]) {
		t.Fatalf("counts differ between two runs:\n%s\n%s", samples[0], samples[1])
	}
	t.Logf("identical counts in two runs:\n%s", samples[0])
}

// TestForKind: a board whose class boots another image for a kind runs that kind from it, with
// the rest of its configuration; other kinds run on the board itself; a missing image is an
// error naming the make target, before anything boots.
func TestForKind(t *testing.T) {
	dir := t.TempDir()
	tlsELF := filepath.Join(dir, "tls", "pqrepro-fw.elf")
	q := &QEMU{Class: "rp2040js-picow", Firmware: filepath.Join(dir, "pqrepro-fw.elf"), SkipSelfTest: true, RP2040JSDir: "/mods",
		TLSOutside: &device.TLSOutside{}, KindFirmware: map[artifacts.Kind]string{artifacts.KindTLSMatrix: tlsELF}}
	if b, err := q.ForKind(artifacts.KindKEMBench); err != nil || b != runner.Board(q) {
		t.Fatalf("kem-bench: %v, %v", b, err)
	}
	if _, err := q.ForKind(artifacts.KindTLSMatrix); err == nil || !strings.Contains(err.Error(), "make -C firmware rp2040js-picow") {
		t.Fatalf("without the TLS image: %v", err)
	}
	os.MkdirAll(filepath.Dir(tlsELF), 0o755)
	os.WriteFile(tlsELF, []byte("elf"), 0o644)
	b, err := q.ForKind(artifacts.KindTLSMatrix)
	k, ok := b.(*QEMU)
	if err != nil || !ok || k.Firmware != tlsELF || k.KindFirmware != nil || !k.SkipSelfTest || k.RP2040JSDir != "/mods" || k.TLSOutside != q.TLSOutside || k.Class != q.Class {
		t.Fatalf("tls-matrix: %+v, %v", b, err)
	}
}
