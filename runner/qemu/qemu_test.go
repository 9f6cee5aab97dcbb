package qemu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/experiments"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/exec/kinds"
	"pqrepro/runner/wire"
)

// testManifest is a short ML-KEM run.
func testManifest(t *testing.T, class string, iterations int) *artifacts.Manifest {
	t.Helper()
	algs := "ML-KEM-512, ML-KEM-768, ML-KEM-1024"
	if mc, ok := LookupMachine(class); ok && mc.Algorithms != nil {
		algs = strings.Join(mc.Algorithms, ", ") // a board with a declared subset
	}
	y := `apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: paper001, name: qemu-test}
spec:
  algorithms: [` + algs + `]
  operations: [keygen, encaps, decaps]
  warmup: 1
  iterations: ` + strconv.Itoa(iterations) + `
  seed: "qemu driver test"
  boards: [` + class + `]
`
	m, err := artifacts.ParseManifest([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	idOnce sync.Once
	testID *identity.Identity
)

func testIdentity(t *testing.T) *identity.Identity {
	idOnce.Do(func() {
		var err error
		if testID, err = identity.GenerateIdentity(); err != nil {
			panic(err)
		}
	})
	return testID
}

// qemuMachines are the catalogue's machines that boot in QEMU (rp2040js_test.go tests the
// rp2040js board).
func qemuMachines() []Machine {
	var ms []Machine
	for _, m := range Machines() {
		if !m.IsRP2040JS() {
			ms = append(ms, m)
		}
	}
	return ms
}

// newBoard returns a QEMU board for m with the firmware built and a record of every QEMU
// process it started.
func newBoard(t *testing.T, m Machine) (*QEMU, *[]*session) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	elf := firmwareELF(t, m)
	var sessions []*session
	q := &QEMU{Class: m.Class, Firmware: elf, RetryInterval: 300 * time.Millisecond, SilenceTimeout: 5 * time.Second, Executors: kinds.Board()}
	q.started = func(s *session) { sessions = append(sessions, s) }
	t.Cleanup(func() {
		for _, s := range sessions {
			if err := syscall.Kill(s.pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("QEMU pid %d still exists after the run (kill 0: %v)", s.pid, err)
			}
		}
	})
	return q, &sessions
}

func execute(t *testing.T, b runner.Board, m *artifacts.Manifest, obs runner.Observer) (*artifacts.Bundle, *artifacts.Result, error) {
	t.Helper()
	// A guard against a hang only: the board's liveness bounds a silent board, and a busy
	// host may slow a run many times over.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	return runner.Execute(ctx, b, m, runner.Options{Identity: testIdentity(t), Version: "test", Observer: obs})
}

// TestRunsAreIdenticalAndVerify runs the same manifest twice on each emulated board, through
// the real UART pty, and requires identical instruction counts, a verifying bundle, and an
// environment that names the firmware digest and the emulator.
func TestRunsAreIdenticalAndVerify(t *testing.T) {
	for _, m := range qemuMachines() {
		t.Run(m.Class, func(t *testing.T) {
			q, sessions := newBoard(t, m)
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
				if res.Board != m.Class || res.Assurance != artifacts.AssuranceEmulated || len(res.Cells) != 3*len(man.Spec.Algorithms) {
					t.Fatalf("result board %s assurance %s cells %d", res.Board, res.Assurance, len(res.Cells))
				}
				for _, c := range res.Cells {
					if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitInstructions || c.Stats.N != 3 || c.Stats.Min <= 0 ||
						c.Memory == nil || c.Memory.StackBytes == nil || *c.Memory.StackBytes <= 0 || c.Sizes == nil || c.Counter != m.Counter {
						t.Fatalf("cell %+v", c)
					}
				}
				var env artifacts.Environment
				if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
					t.Fatal(err)
				}
				img, err := device.LoadImage(q.Firmware)
				if err != nil {
					t.Fatal(err)
				}
				bi := env.Board
				if bi.FirmwareDigest != img.Digest || !strings.HasPrefix(bi.Emulator, "QEMU emulator version") || bi.Driver != "qemu" ||
					bi.Class != m.Class || bi.Firmware != "pqrepro-fw" || bi.Chip == "" || bi.Assurance != artifacts.AssuranceEmulated ||
					env.TimerSource != m.Counter {
					t.Fatalf("environment board = %+v, timer %q", bi, env.TimerSource)
				}
				if bi.ClockHz != 0 {
					t.Errorf("an emulated board records a clock of %d Hz for an instruction count", bi.ClockHz)
				}
				log := string(b.Files[artifacts.FileLog])
				for _, want := range []string{"identify: flash: starting", "board says: " + m.Class, "@1:HELLO:", "measuring on the board identity booted", "SAMPLE", "stopped: quit over QMP"} {
					if !strings.Contains(log, want) {
						t.Errorf("log lacks %q", want)
					}
				}
			}
			if !bytes.Equal(samples[0], samples[1]) {
				t.Fatalf("instruction counts differ between two runs:\n%s\n%s", samples[0], samples[1])
			}
			if len(*sessions) != 2 { // one boot per run: the run measures on the board identity booted
				t.Errorf("%d QEMU sessions, want 2", len(*sessions))
			}
			t.Logf("%s: identical counts in two runs:\n%s", m.Class, samples[0])
		})
	}
}

func runLog(err error) string {
	var re *runner.RunError
	if errors.As(err, &re) {
		return string(re.Log)
	}
	return ""
}

// TestSkipsWhatTheFirmwareLacks: Ed25519 cells are skipped with the reason, not failed.
func TestSkipsWhatTheFirmwareLacks(t *testing.T) {
	mc, _ := LookupMachine("qemu-riscv32-virt")
	q, _ := newBoard(t, mc)
	m := testManifest(t, mc.Class, 2)
	m.Kind = artifacts.KindSigBench
	m.Spec.Algorithms = []string{"Ed25519"}
	m.Spec.Operations = []string{"keygen", "sign", "verify"}
	m.Spec.Message = artifacts.Message{Size: 32}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cells, err := q.Run(ctx, m, runner.NopObserver{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cells {
		c := r.Cell
		if c.Status != artifacts.StatusSkipped || !strings.Contains(c.Error, "does not implement Ed25519") {
			t.Errorf("cell %s %s: %s %q", c.Algorithm, c.Operation, c.Status, c.Error)
		}
	}
	// Nothing ran ok: no bundle is signed, and the run's log says why.
	if b, _, err := execute(t, q, m, nil); b != nil || !errors.Is(err, artifacts.ErrNoCellOK) || !strings.Contains(runLog(err), "does not implement Ed25519") {
		t.Errorf("Execute of a run that measured nothing: bundle %v, %v", b != nil, err)
	}
}

// TestSubsetBoardSkipsTheRest: on the Cortex-M0 board, whose firmware holds ML-KEM-512
// alone, a manifest of all three ML-KEM sets measures ML-KEM-512 and skips the others with
// the reason (the portal does not offer it such a manifest; the CLI runs what it can).
func TestSubsetBoardSkipsTheRest(t *testing.T) {
	mc, _ := LookupMachine("qemu-microbit")
	q, _ := newBoard(t, mc)
	m := testManifest(t, "qemu-mps2-an386", 2)
	m.Spec.Boards = []string{mc.Class}
	_, res, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog(err))
	}
	if len(res.Cells) != 9 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, c := range res.Cells {
		ok := c.Algorithm == "ML-KEM-512" && c.Status == artifacts.StatusOK && c.Unit == artifacts.UnitInstructions && c.Stats.N == 2
		skipped := c.Algorithm != "ML-KEM-512" && c.Status == artifacts.StatusSkipped && strings.Contains(c.Error, "does not implement "+c.Algorithm)
		if !ok && !skipped {
			t.Errorf("cell %s %s: %s %q", c.Algorithm, c.Operation, c.Status, c.Error)
		}
	}
}

// TestSLHDSABudgetedCell runs a budgeted SLH-DSA-SHA2-128f sign cell on the M4 board through
// the real driver: over its 1 ms budget from the first signature, it stops at its minimum of
// 2, one BENCH, with budgetReached and the n reached recorded, in instructions.
func TestSLHDSABudgetedCell(t *testing.T) {
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, _ := newBoard(t, mc)
	m := testManifest(t, mc.Class, 20)
	m.Kind = artifacts.KindSigBench
	m.Spec.Algorithms = []string{"SLH-DSA-SHA2-128f"}
	m.Spec.Operations = []string{"sign"}
	m.Spec.Message = artifacts.Message{Text: "Hello PQ world!"}
	m.Spec.Warmup = 0
	m.Spec.Budget = artifacts.Duration(time.Millisecond)
	m.Spec.MinIterations = 2
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	_, res, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 1 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	c := res.Cells[0]
	if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitInstructions || c.Stats.N != 2 || !c.BudgetReached ||
		c.Rounds != nil || c.Sizes == nil || c.Sizes.Signature != 17088 {
		t.Fatalf("cell %+v", c)
	}
	t.Logf("SLH-DSA-SHA2-128f sign on %s: stopped at n=%d of 20 by its 1 ms budget, median %v instructions", mc.Class, c.Stats.N, c.Stats.Median)
}

// TestMLDSARuns runs paper001's ML-DSA experiment (with few iterations) twice on each
// emulated board: every cell is ok in instructions, every sign cell carries one round count
// per signature, the bundles verify (result.json re-derives) and the counts, stack marks
// and rounds of the two runs are identical.
func TestMLDSARuns(t *testing.T) {
	for _, mc := range qemuMachines() {
		t.Run(mc.Class, func(t *testing.T) {
			if mc.Algorithms != nil && !slices.Contains(mc.Algorithms, "ML-DSA-44") {
				t.Skipf("%s declares only %v", mc.Class, mc.Algorithms)
			}
			q, _ := newBoard(t, mc)
			cat, err := experiments.Load()
			if err != nil {
				t.Fatal(err)
			}
			m, err := cat.Manifest("paper001/mldsa")
			if err != nil {
				t.Fatal(err)
			}
			m.Spec.Iterations, m.Spec.Warmup = 3, 1
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			var runs []*artifacts.Bundle
			var cells [][]artifacts.Cell
			for run := 0; run < 2; run++ {
				b, res, err := execute(t, q, m, nil)
				if err != nil {
					t.Fatalf("run %d: %v\n%s", run, err, runLog(err))
				}
				if _, err := attest.Verify(b, nil); err != nil {
					t.Fatalf("bundle does not verify: %v", err)
				}
				if len(res.Cells) != 9 {
					t.Fatalf("%d cells", len(res.Cells))
				}
				for _, c := range res.Cells {
					if c.Status != artifacts.StatusOK || c.Unit != artifacts.UnitInstructions || c.Stats.N != 3 || c.Stats.Min <= 0 ||
						c.Memory == nil || c.Memory.StackBytes == nil || *c.Memory.StackBytes < 4096 || c.Sizes == nil {
						t.Fatalf("cell %s %s: %+v", c.Algorithm, c.Operation, c)
					}
					if (c.Rounds != nil) != (c.Operation == artifacts.OpSign) {
						t.Fatalf("cell %s %s: rounds %+v", c.Algorithm, c.Operation, c.Rounds)
					}
					if c.Rounds != nil && (c.Rounds.Stats.N != 3 || c.Rounds.Stats.Min < 1) {
						t.Fatalf("cell %s %s: rounds %+v", c.Algorithm, c.Operation, c.Rounds)
					}
				}
				log := string(b.Files[artifacts.FileLog])
				// 30 ML-KEM, ML-DSA and hash groups, 26 SLH-DSA ones, 8 of which (the "s" sets'
				// keyGen, the sigGen tests) the default self-test reports skipped, 6 Ascon ones, and
				// the 12 Wycheproof ML-KEM and ML-DSA groups (BOARD_WYCHEPROOF, on every board this
				// test runs on).
				if !strings.Contains(log, "0 failed in 74 groups") || !strings.Contains(log, "+wycheproof)") ||
					strings.Count(log, " skipped 1") != 8 {
					t.Errorf("log lacks the self-test with the ML-DSA and SLH-DSA groups:\n%s", log)
				}
				runs = append(runs, b)
				cells = append(cells, res.Cells)
			}
			if !bytes.Equal(runs[0].Files[artifacts.FileSamples], runs[1].Files[artifacts.FileSamples]) {
				t.Fatalf("instruction counts differ between two runs:\n%s\n%s", runs[0].Files[artifacts.FileSamples], runs[1].Files[artifacts.FileSamples])
			}
			for i := range cells[0] {
				a, b := cells[0][i], cells[1][i]
				if *a.Memory.StackBytes != *b.Memory.StackBytes || !reflect.DeepEqual(a.Rounds, b.Rounds) {
					t.Fatalf("cell %s %s differs between runs: stack %d/%d rounds %v/%v", a.Algorithm, a.Operation,
						*a.Memory.StackBytes, *b.Memory.StackBytes, a.Rounds.Counts, b.Rounds.Counts)
				}
			}
			t.Logf("%s: identical ML-DSA counts in two runs:\n%s", mc.Class, runs[0].Files[artifacts.FileSamples])
		})
	}
}

// faultyLine sits between the driver and QEMU's UART pty: what the firmware sends goes through
// fromBoard, what the runner sends through toBoard (each may drop, alter or add lines).
type faultyLine struct {
	port io.ReadWriteCloser
	r    *io.PipeReader
	mu   sync.Mutex
	to   func(string) []string
}

func newFaultyLine(port io.ReadWriteCloser, toBoard, fromBoard func(string) []string) *faultyLine {
	pr, pw := io.Pipe()
	l := &faultyLine{port: port, r: pr, to: toBoard}
	go func() {
		br := bufio.NewReader(port)
		for {
			s, err := br.ReadString('\n')
			if s != "" {
				for _, o := range fromBoard(strings.TrimSuffix(s, "\n")) {
					if _, werr := io.WriteString(pw, o+"\n"); werr != nil {
						return
					}
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return l
}

func (l *faultyLine) Read(p []byte) (int, error) { return l.r.Read(p) }
func (l *faultyLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.to(strings.TrimSuffix(string(p), "\n")) {
		if _, err := l.port.Write([]byte(o + "\n")); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
func (l *faultyLine) Close() error { l.r.Close(); return l.port.Close() }

// onFirstTransmission applies f to the first transmission of each frame only, so that the
// frames sent again on RESEND get through.
func onFirstTransmission(f func(seq uint32, line string) []string) func(string) []string {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(line string) []string {
		fr, err := wire.Decode([]byte(line))
		if err != nil {
			return []string{line}
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[line] { // a frame sent again is byte for byte the same
			return []string{line}
		}
		seen[line] = true
		return f(fr.Seq, line)
	}
}

func flipByte(line string) string {
	b := []byte(line)
	i := strings.IndexByte(line, ':') + 2
	b[i] ^= 0x20
	return string(b)
}

// TestNoiseAndCorruptFrames puts noise and corrupted frames in both directions of the real
// line to the real firmware: the run resynchronises and gives exactly the clean counts.
func TestNoiseAndCorruptFrames(t *testing.T) {
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, _ := newBoard(t, mc)
	m := testManifest(t, mc.Class, 3)
	m.Spec.Algorithms = []string{"ML-KEM-512"}
	clean, _, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromBoard := onFirstTransmission(func(seq uint32, line string) []string {
		switch seq % 4 {
		case 1:
			return []string{"\x00\xff line noise", "@@ not a frame", flipByte(line)}
		case 2:
			return []string{"noise without a newline before the frame " + line}
		case 3:
			return nil // dropped
		}
		return []string{line}
	})
	toBoard := onFirstTransmission(func(seq uint32, line string) []string {
		if strings.Contains(line, ":BENCH:") || strings.Contains(line, ":SEED:") {
			return []string{flipByte(line)}
		}
		return []string{line}
	})
	q.line = func(p io.ReadWriteCloser) io.ReadWriteCloser { return newFaultyLine(p, toBoard, fromBoard) }
	noisy, _, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatalf("noisy run: %v\n%s", err, runLog(err))
	}
	log := string(noisy.Files[artifacts.FileLog])
	for _, want := range []string{"< @@ not a frame", ":RESEND:from=", "code=badframe"} {
		if !strings.Contains(log, want) {
			t.Errorf("noisy log lacks %q", want)
		}
	}
	if !bytes.Equal(clean.Files[artifacts.FileSamples], noisy.Files[artifacts.FileSamples]) {
		t.Fatalf("noisy run differs from the clean one:\n%s\n%s", clean.Files[artifacts.FileSamples], noisy.Files[artifacts.FileSamples])
	}
}

// obsFunc calls fn on every sample.
type obsFunc struct {
	runner.NopObserver
	fn func(cell, done int)
}

func (o obsFunc) Iteration(cell, done, _ int) { o.fn(cell, done) }

// TestFirmwareStopsAnswering pauses the emulated CPU over QMP in the middle of a BENCH: the
// emulator sits idle and silent, so that cell fails with a timeout once it has been idle for
// the silence limit, the board is restarted for the cells left, and the run still yields a
// signed bundle that verifies, with that cell marked failed and the others measured.
func TestFirmwareStopsAnswering(t *testing.T) {
	mc, _ := LookupMachine("qemu-riscv32-virt")
	q, sessions := newBoard(t, mc)
	// The silence is made during a BENCH; the self-test's slow groups are skipped.
	q.SkipSelfTest, q.SilenceTimeout = true, 2*time.Second
	m := testManifest(t, mc.Class, 5)
	stopped := false
	obs := obsFunc{fn: func(cell, done int) {
		if cell == 1 && done == 2 && !stopped {
			stopped = true
			s := (*sessions)[len(*sessions)-1]
			if _, err := s.qmp.execute("stop", nil, 5*time.Second); err != nil {
				t.Errorf("QMP stop: %v", err)
			}
		}
	}}
	b, res, err := execute(t, q, m, obs)
	if err != nil {
		t.Fatalf("a run with one silent cell gave no bundle: %v\n%s", err, runLog(err))
	}
	if _, err := attest.Verify(b, nil); err != nil {
		t.Fatalf("bundle does not verify: %v", err)
	}
	if len(*sessions) != 2 { // identity's boot, which the run measures on, and the restart
		t.Errorf("%d QEMU sessions, want 2 (the board restarted once)", len(*sessions))
	}
	log := string(b.Files[artifacts.FileLog])
	// The pause lands inside cell 1's BENCH or just after it (the next cell's SEED then goes
	// unanswered); either way exactly that cell fails, with the board idle and silent.
	var failed []int
	for i, c := range res.Cells {
		switch {
		case c.Status == artifacts.StatusOK:
		case (i == 1 || i == 2) && strings.Contains(c.Error, "idle for") && strings.Contains(c.Error, "link broke"):
			failed = append(failed, i)
		default:
			t.Errorf("cell %d %s %s = %s %q", i, c.Algorithm, c.Operation, c.Status, c.Error)
		}
	}
	if len(failed) != 1 {
		t.Errorf("failed cells %v, want one (cell 1 or 2, failed: board idle)", failed)
	}
	for _, want := range []string{"SAMPLE:re=", "i=1", "restarting it for the remaining cells", "stopped: quit over QMP"} {
		if !strings.Contains(log, want) {
			t.Errorf("bundle log lacks %q:\n%s", want, log)
		}
	}
}

// TestStoppedEmulatorIsWaitedFor stops QEMU with SIGSTOP in the middle of a BENCH for three
// times the silence limit, then resumes it with SIGCONT: a stopped (or starved) emulator is
// not a silent board, so the cell completes, nothing is re-sent while it is stopped, and the
// counts equal an undisturbed run's.
func TestStoppedEmulatorIsWaitedFor(t *testing.T) {
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, sessions := newBoard(t, mc)
	q.SkipSelfTest, q.SilenceTimeout = true, 2*time.Second
	m := testManifest(t, mc.Class, 4)
	m.Spec.Algorithms = []string{"ML-KEM-768"}
	_, quiet, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	obs := obsFunc{fn: func(cell, n int) {
		if cell == 1 && n == 1 {
			pid := (*sessions)[len(*sessions)-1].pid
			syscall.Kill(pid, syscall.SIGSTOP)
			go func() {
				defer close(done)
				time.Sleep(3 * q.SilenceTimeout)
				syscall.Kill(pid, syscall.SIGCONT)
			}()
		}
	}}
	b, res, err := execute(t, q, m, obs)
	<-done
	if err != nil {
		t.Fatalf("a run stopped by SIGSTOP for %v failed: %v\n%s", 3*q.SilenceTimeout, err, runLog(err))
	}
	if len(*sessions) != 2 { // one boot per run
		t.Errorf("%d QEMU sessions, want 2 (no restart)", len(*sessions))
	}
	for i, c := range res.Cells {
		if c.Status != artifacts.StatusOK || c.Stats.Median != quiet.Cells[i].Stats.Median || c.Stats.Max != quiet.Cells[i].Stats.Max {
			t.Errorf("cell %d = %s %q median %v, undisturbed %v", i, c.Status, c.Error, c.Stats.Median, quiet.Cells[i].Stats.Median)
		}
	}
	if log := string(b.Files[artifacts.FileLog]); strings.Contains(log, ":RESEND:") || strings.Contains(log, "link: cell") {
		t.Errorf("the runner talked to a stopped board:\n%s", log)
	}
}

// TestOperationLimit gives one operation less emulator time than it needs: that cell is
// failed as budget exhausted, the board restarts, the next cell is measured, and the bundle
// verifies.
func TestOperationLimit(t *testing.T) {
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, sessions := newBoard(t, mc)
	q.SkipSelfTest = true
	m := testManifest(t, mc.Class, 2)
	m.Kind = artifacts.KindSigBench
	m.Spec.Algorithms = []string{"SLH-DSA-SHA2-128s", "ML-DSA-44"}
	m.Spec.Operations = []string{"sign"}
	m.Spec.Message = artifacts.Message{Text: "Hello PQ world!"}
	m.Spec.Warmup = 0
	// An SLH-DSA-SHA2-128s signature is billions of instructions: seconds of emulator time.
	m.Spec.BoardBudgets = map[string]artifacts.BoardBudget{mc.Class: {Budget: artifacts.Duration(time.Minute), OperationLimit: artifacts.Duration(time.Second)}}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	b, res, err := execute(t, q, m, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog(err))
	}
	if _, err := attest.Verify(b, nil); err != nil {
		t.Fatal(err)
	}
	if c := res.Cells[0]; c.Status != artifacts.StatusFailed || !strings.Contains(c.Error, "budget exhausted") {
		t.Errorf("SLH-DSA cell = %s %q, want failed: budget exhausted", c.Status, c.Error)
	}
	if c := res.Cells[1]; c.Status != artifacts.StatusOK || c.Stats.N != 2 {
		t.Errorf("ML-DSA cell after the restart = %s %q n=%d", c.Status, c.Error, c.Stats.N)
	}
	if len(*sessions) != 2 { // the run's boot and the restart
		t.Errorf("%d QEMU sessions, want 2", len(*sessions))
	}
}

// TestQEMUKilledMidRun kills QEMU with SIGKILL during a BENCH: the run fails at once with
// the reason, no bundle, and the process is reaped (checked by newBoard's cleanup).
func TestQEMUKilledMidRun(t *testing.T) {
	mc, _ := LookupMachine("qemu-mps2-an386")
	q, sessions := newBoard(t, mc)
	m := testManifest(t, mc.Class, 5)
	var killed time.Time
	obs := obsFunc{fn: func(cell, done int) {
		if cell == 0 && done == 2 && killed.IsZero() {
			killed = time.Now()
			syscall.Kill((*sessions)[len(*sessions)-1].pid, syscall.SIGKILL)
		}
	}}
	b, _, err := execute(t, q, m, obs)
	if b != nil || err == nil {
		t.Fatal("a run whose emulator was killed produced a bundle")
	}
	if !strings.Contains(err.Error(), "exited during the run") || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("err = %v", err)
	}
	// The death is noticed at once (the line closes, or the next liveness look): not after
	// a silence limit. The bound is loose: a busy host is slow.
	if d := time.Since(killed); d > time.Minute {
		t.Errorf("took %v to notice QEMU died", d)
	}
	if log := runLog(err); !strings.Contains(log, "had already exited") {
		t.Errorf("log does not record the dead emulator:\n%s", log)
	}
}

// TestFirmwareMismatch: metadata of another build, a tampered ELF, an emulator that boots
// another image than the one checked, and a manifest pinning another digest all stop the
// run before anything is measured.
func TestFirmwareMismatch(t *testing.T) {
	arm, _ := LookupMachine("qemu-mps2-an386")
	rv, _ := LookupMachine("qemu-riscv32-virt")
	q, _ := newBoard(t, arm)
	rvELF := firmwareELF(t, rv)
	elf := q.Firmware
	data, err := os.ReadFile(elf)
	if err != nil {
		t.Fatal(err)
	}
	img, err := device.LoadImage(elf)
	if err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, dir, name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	copyMeta := func(t *testing.T, from, dir string) {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(from), "metadata.json"))
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "metadata.json", b)
	}
	// tampered changes one byte of the build-id note: a loadable image that is another build.
	tampered := bytes.Clone(data)
	i := bytes.Index(tampered, mustHex(t, img.BuildID))
	if i < 0 {
		t.Fatal("build-id not found in the ELF")
	}
	tampered[i] ^= 0xff

	tests := []struct {
		name  string
		setup func(t *testing.T, q *QEMU, m *artifacts.Manifest)
		want  string
	}{
		{"metadata of another build", func(t *testing.T, q *QEMU, _ *artifacts.Manifest) {
			dir := t.TempDir()
			q.Firmware = write(t, dir, "pqrepro-fw.elf", data)
			copyMeta(t, rvELF, dir)
		}, "describes another build"},
		{"tampered ELF beside its metadata", func(t *testing.T, q *QEMU, _ *artifacts.Manifest) {
			dir := t.TempDir()
			q.Firmware = write(t, dir, "pqrepro-fw.elf", tampered)
			copyMeta(t, elf, dir)
		}, "describes another build"},
		{"board runs another image", func(t *testing.T, q *QEMU, _ *artifacts.Manifest) {
			q.bootImage = write(t, t.TempDir(), "other.elf", tampered)
		}, "the build-id the board reports"},
		{"manifest pins another digest", func(t *testing.T, q *QEMU, m *artifacts.Manifest) {
			m.Spec.Firmware = "sha256:" + strings.Repeat("ab", 32)
		}, "pinned by the manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &QEMU{Class: q.Class, Firmware: elf, started: q.started}
			m := testManifest(t, arm.Class, 2)
			tt.setup(t, b, m)
			bundle, _, err := execute(t, b, m, nil)
			if bundle != nil || !errors.Is(err, device.ErrFirmwareMismatch) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a firmware mismatch naming %q", err, tt.want)
			}
			if log := runLog(err); strings.Contains(log, ":BENCH:") || !strings.Contains(log, "run failed") {
				t.Fatalf("log shows measuring or no failure:\n%s", log)
			}
		})
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCancelStopsQEMU: cancelling the run's context mid-BENCH returns the cancellation, no
// bundle, and leaves no QEMU behind (newBoard's cleanup checks the process is gone).
func TestCancelStopsQEMU(t *testing.T) {
	mc, _ := LookupMachine("qemu-riscv32-virt")
	q, _ := newBoard(t, mc)
	// The cancellation comes during a BENCH: the self-test before it is not what is tested,
	// and on a loaded machine its slow groups can outlast a short silence timeout.
	q.SkipSelfTest, q.SilenceTimeout = true, 30*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := obsFunc{fn: func(cell, done int) {
		if cell == 0 && done == 1 {
			cancel()
		}
	}}
	// Were the cancellation ignored, Execute would run all 20 iterations of every cell and
	// return a bundle; it must return the cancellation and none.
	b, _, err := runner.Execute(ctx, q, testManifest(t, mc.Class, 20), runner.Options{Identity: testIdentity(t), Version: "test", Observer: obs})
	if b != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation and no bundle", err)
	}
}
