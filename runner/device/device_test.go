package device

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/wire"
)

// cc links a tiny program with the given build-id option into dir/name.
func cc(t *testing.T, dir, name, buildID string) string {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("cc not installed")
	}
	src := filepath.Join(t.TempDir(), "x.c")
	os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644)
	out := filepath.Join(dir, name)
	if b, err := exec.Command("cc", "-Wl,--build-id="+buildID, "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, b)
	}
	return out
}

func TestLoadImage(t *testing.T) {
	dir := t.TempDir()
	elf := cc(t, dir, "pqrepro-fw.elf", "0x0123456789abcdef0123")
	data, _ := os.ReadFile(elf)
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	writeMeta := func(md Metadata) {
		b, _ := json.Marshal(md)
		os.WriteFile(filepath.Join(dir, "metadata.json"), b, 0o644)
	}

	img, err := LoadImage(elf)
	if err != nil || img.BuildID != "0123456789abcdef0123" || img.Digest != "sha256:"+digest || img.Metadata != nil {
		t.Fatalf("no metadata: %+v %v", img, err)
	}
	writeMeta(Metadata{ELF: "pqrepro-fw.elf", ELFSHA256: digest, BuildID: "0123456789abcdef0123", Version: "0.1.0"})
	if img, err := LoadImage(elf); err != nil || img.Metadata == nil || img.Metadata.Version != "0.1.0" {
		t.Fatalf("matching metadata: %+v %v", img, err)
	}
	writeMeta(Metadata{ELF: "pqrepro-fw.elf", ELFSHA256: strings.Repeat("0", 64), BuildID: "0123456789abcdef0123"})
	if _, err := LoadImage(elf); !errors.Is(err, ErrFirmwareMismatch) || !strings.Contains(err.Error(), "describes another build") {
		t.Fatalf("metadata of another file: %v", err)
	}
	writeMeta(Metadata{ELF: "pqrepro-fw.elf", ELFSHA256: digest, BuildID: "ffff"})
	if _, err := LoadImage(elf); !errors.Is(err, ErrFirmwareMismatch) || !strings.Contains(err.Error(), "build-id note") {
		t.Fatalf("metadata with another build-id: %v", err)
	}
	writeMeta(Metadata{ELF: "other.elf", ELFSHA256: strings.Repeat("0", 64)})
	if _, err := LoadImage(elf); err != nil {
		t.Fatalf("metadata of a sibling file applied: %v", err)
	}
	if _, err := LoadImage(cc(t, t.TempDir(), "x", "none")); err == nil || !strings.Contains(err.Error(), "no GNU build-id") {
		t.Fatalf("ELF without build-id: %v", err)
	}
	notELF := filepath.Join(t.TempDir(), "fw.bin")
	os.WriteFile(notELF, []byte("not an elf"), 0o644)
	if _, err := LoadImage(notELF); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Fatalf("not an ELF: %v", err)
	}
	m := &artifacts.Manifest{Spec: artifacts.Spec{Firmware: "sha256:" + digest}}
	if err := CheckPin(m, img); err != nil {
		t.Errorf("pin of the same digest: %v", err)
	}
	m.Spec.Firmware = "sha256:" + strings.Repeat("1", 64)
	if err := CheckPin(m, img); !errors.Is(err, ErrFirmwareMismatch) {
		t.Errorf("pin of another digest: %v", err)
	}
}

func TestCellSeed(t *testing.T) {
	a := CellSeed("s", artifacts.CellRef{Algorithm: "ML-KEM-768", Operation: "keygen"})
	if !bytes.Equal(a, CellSeed("s", artifacts.CellRef{Algorithm: "ML-KEM-768", Operation: "keygen"})) || len(a) != 32 {
		t.Fatal("not deterministic")
	}
	for _, b := range [][]byte{
		CellSeed("t", artifacts.CellRef{Algorithm: "ML-KEM-768", Operation: "keygen"}),
		CellSeed("s", artifacts.CellRef{Algorithm: "ML-KEM-768", Operation: "encaps"}),
	} {
		if bytes.Equal(a, b) {
			t.Fatal("distinct cells share a seed")
		}
	}
}

// hostFirmware builds the host port of the firmware (make, under the shared lock file).
func hostFirmware(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"make", "cc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	root := "../../firmware"
	os.MkdirAll(filepath.Join(root, "build"), 0o755)
	lock, err := os.OpenFile(filepath.Join(root, "build", ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
	out, err := exec.Command("make", "-C", root, "build/host/pqrepro-fw", "build/host/metadata.json").CombinedOutput()
	lock.Close()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	p, _ := filepath.Abs(filepath.Join(root, "build", "host", "pqrepro-fw"))
	return p
}

type rwc struct {
	io.Reader
	io.WriteCloser
}

// hostConn runs the host firmware; rewrite may change each frame the firmware sends.
func hostConn(t *testing.T, rewrite func(wire.Frame) wire.Frame) (*wire.Conn, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(hostFirmware(t))
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(outp)
		for sc.Scan() {
			line := sc.Text()
			if f, err := wire.Decode([]byte(line)); err == nil && rewrite != nil {
				if b, err := wire.Encode(rewrite(f)); err == nil {
					line = strings.TrimSuffix(string(b), "\n")
				}
			}
			io.WriteString(pw, line+"\n")
		}
		pw.Close()
	}()
	log := &bytes.Buffer{}
	var mu sync.Mutex
	c := wire.NewConn(rwc{pr, in}, wire.Options{Log: lockedWriter{&mu, log}, RetryInterval: 300 * time.Millisecond})
	t.Cleanup(func() { c.Close(); cmd.Process.Kill(); cmd.Wait() })
	return c, log
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func manifest(t *testing.T, kind artifacts.Kind, algs, ops string) *artifacts.Manifest {
	t.Helper()
	y := "apiVersion: pqrepro/v1\nkind: " + string(kind) + "\nmetadata: {paper: paper001, name: device-test}\nspec:\n  algorithms: [" + algs +
		"]\n  operations: [" + ops + "]\n  warmup: 1\n  iterations: 4\n  seed: device\n  boards: [host]\n"
	if kind == artifacts.KindSigBench {
		y += "  message: {size: 32}\n"
	}
	m, err := artifacts.ParseManifest([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func run(t *testing.T, c *wire.Conn, m *artifacts.Manifest) ([]runner.CellResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	return Run(ctx, c, h, m, runner.NopObserver{}, &log, RunOptions{SelfTest: true})
}

func TestRunCells(t *testing.T) {
	c, _ := hostConn(t, nil)
	cells, err := run(t, c, manifest(t, artifacts.KindKEMBench, "ML-KEM-768, X25519", "keygen, encaps, decaps, derive"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]artifacts.Status{"ML-KEM-768/keygen": "ok", "ML-KEM-768/encaps": "ok", "ML-KEM-768/decaps": "ok",
		"X25519/keygen": "skipped", "X25519/derive": "skipped"}
	if len(cells) != len(want) {
		t.Fatalf("%d cells", len(cells))
	}
	for _, r := range cells {
		c := r.Cell
		if want[c.Algorithm+"/"+c.Operation] != c.Status {
			t.Errorf("%s %s: %s %s", c.Algorithm, c.Operation, c.Status, c.Error)
		}
		if c.Status == artifacts.StatusOK && (len(r.Samples) != 4 || c.Unit != artifacts.UnitNanoseconds || c.Requested != 4 ||
			c.Memory == nil || *c.Memory.StackBytes <= 0 || c.Sizes == nil || !strings.Contains(c.Counter, "clock_monotonic")) {
			t.Errorf("cell %+v, %d samples", c, len(r.Samples))
		}
	}
	if s := cells[0].Cell.Sizes; s.PublicKey != 1184 || s.PrivateKey != 2400 {
		t.Errorf("keygen sizes %+v", s)
	}
}

// TestFailedSampleFailsTheCell: one sample the firmware marks failed fails the whole cell,
// with its reason and no samples kept. The frames are rewritten on the line, as a firmware
// whose output check failed would send them.
func TestFailedSampleFailsTheCell(t *testing.T) {
	c, _ := hostConn(t, func(f wire.Frame) wire.Frame {
		set := func(k, v string) {
			for i := range f.Fields {
				if f.Fields[i].Key == k {
					f.Fields[i].Value = v
					return
				}
			}
			f.Fields = append(f.Fields, wire.Field{Key: k, Value: v})
		}
		if i, _ := f.Get("i"); f.Type == "SAMPLE" && i == "2" {
			set("ok", "0")
			set("reason", "mismatch")
		}
		if f.Type == "SUMMARY" {
			set("ok", "3")
			set("fail", "1")
		}
		return f
	})
	cells, err := run(t, c, manifest(t, artifacts.KindKEMBench, "ML-KEM-512", "decaps"))
	if err != nil {
		t.Fatal(err)
	}
	cell := cells[0]
	if cell.Cell.Status != artifacts.StatusFailed || cell.Samples != nil || !strings.Contains(cell.Cell.Error, "1 of 4 samples failed") ||
		!strings.Contains(cell.Cell.Error, "iteration 2: mismatch") {
		t.Fatalf("cell %+v, samples %v", cell.Cell, cell.Samples)
	}
}

// TestSummaryMustAgree: a summary that disagrees with the samples breaks the run.
func TestSummaryMustAgree(t *testing.T) {
	c, _ := hostConn(t, func(f wire.Frame) wire.Frame {
		if f.Type == "SUMMARY" {
			for i := range f.Fields {
				if f.Fields[i].Key == "ok" {
					f.Fields[i].Value = "2"
				}
			}
		}
		return f
	})
	_, err := run(t, c, manifest(t, artifacts.KindKEMBench, "ML-KEM-512", "keygen"))
	if !errors.Is(err, wire.ErrProtocol) {
		t.Fatalf("err = %v", err)
	}
}

// TestSignatureCells: ML-DSA cells are measured (each sign sample's rounds summarised in the
// cell, the message size recorded), Ed25519, which the firmware lacks, is skipped, and a
// message the firmware cannot take skips its cells with the reason.
func TestSignatureCells(t *testing.T) {
	c, _ := hostConn(t, nil)
	cells, err := run(t, c, manifest(t, artifacts.KindSigBench, "ML-DSA-44, Ed25519", "keygen, sign, verify"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 6 {
		t.Fatalf("%d cells", len(cells))
	}
	for _, r := range cells {
		c := r.Cell
		if c.Algorithm == "Ed25519" {
			if c.Status != artifacts.StatusSkipped || !strings.Contains(c.Error, "does not implement Ed25519") {
				t.Errorf("%+v", c)
			}
			continue
		}
		if c.Status != artifacts.StatusOK || len(r.Samples) != 4 || c.Memory == nil || *c.Memory.StackBytes < 4096 || c.Sizes == nil {
			t.Fatalf("cell %+v", c)
		}
		switch c.Operation {
		case artifacts.OpSign:
			if c.Rounds == nil {
				t.Fatalf("sign cell without rounds: %+v", c)
			}
			n := 0
			for _, k := range c.Rounds.Counts {
				n += k
			}
			if n != 4 || c.Rounds.Stats.N != 4 || c.Rounds.Stats.Min < 1 || c.Sizes.Signature != 2420 || c.Sizes.Message != 32 ||
				c.Keys != artifacts.KeysEncoded {
				t.Errorf("sign cell %+v rounds %+v", c, c.Rounds)
			}
		case artifacts.OpVerify:
			if c.Rounds != nil || c.Sizes.Message != 32 {
				t.Errorf("verify cell %+v", c)
			}
		}
	}

	long := manifest(t, artifacts.KindSigBench, "ML-DSA-44", "sign")
	long.Spec.Message = artifacts.Message{Text: strings.Repeat("x", wire.MaxFixedMessage+1)}
	big := manifest(t, artifacts.KindSigBench, "ML-DSA-44", "sign")
	big.Spec.Message = artifacts.Message{Size: 4097}
	for _, m := range []*artifacts.Manifest{long, big} {
		cells, err := run(t, c, m)
		if err != nil {
			t.Fatal(err)
		}
		if cells[0].Cell.Status != artifacts.StatusSkipped || !strings.Contains(cells[0].Cell.Error, "at most") {
			t.Errorf("message %+v: %+v", m.Spec.Message, cells[0].Cell)
		}
	}
}

// TestRoundsOnlyOnSign: a firmware that reports rounds on a verify sample breaks the run.
func TestRoundsOnlyOnSign(t *testing.T) {
	c, _ := hostConn(t, func(f wire.Frame) wire.Frame {
		if f.Type == "SAMPLE" {
			f.Fields = append(f.Fields, wire.Field{Key: "rounds", Value: "3"})
		}
		return f
	})
	_, err := run(t, c, manifest(t, artifacts.KindSigBench, "ML-DSA-44", "verify"))
	if !errors.Is(err, wire.ErrProtocol) {
		t.Fatalf("err = %v", err)
	}
}

// TestChunkSize checks how many iterations a budgeted cell asks for per BENCH: the minimum
// first, then what fits in the rest of the budget at the pace so far, at least one and at
// most chunk, never more than are left.
func TestChunkSize(t *testing.T) {
	s := time.Second
	for _, tt := range []struct {
		left, done, minIter int
		elapsed, budget     time.Duration
		want                int
	}{
		{20, 0, 3, 0, 8 * s, 3},                         // the minimum first
		{20, 0, 0, 0, 8 * s, 1},                         // at least one
		{2, 0, 3, 0, 8 * s, 2},                          // never more than are left
		{17, 3, 3, 6 * s, 8 * s, 1},                     // 2 s each, 2 s left: one more
		{17, 3, 3, 12 * s, 8 * s, 1},                    // over budget: the caller stops; never 0
		{17, 3, 3, 30 * time.Millisecond, 8 * s, chunk}, // fast: a full chunk
		{17, 4, 3, 4 * s, 8 * s, 4},                     // 1 s each, 4 s left
		{3, 4, 3, 4 * s, 8 * s, 3},
	} {
		if got := chunkSize(tt.left, tt.done, tt.minIter, tt.elapsed, tt.budget); got != tt.want {
			t.Errorf("chunkSize(%d, %d, %d, %v, %v) = %d, want %d", tt.left, tt.done, tt.minIter, tt.elapsed, tt.budget, got, tt.want)
		}
	}
}

// TestSLHDSABudgetedCell runs SLH-DSA cells through the real host firmware: the "f" set's
// sign and verify cells are ok and carry no rounds, and a budgeted "s" set's sign cell stops
// at the budget after its minimum, with the n reached and budgetReached recorded.
func TestSLHDSABudgetedCell(t *testing.T) {
	c, _ := hostConn(t, nil)
	m := manifest(t, artifacts.KindSigBench, "SLH-DSA-SHA2-128f, SLH-DSA-SHAKE-128s", "sign, verify")
	m.Spec.Iterations = 20
	m.Spec.Warmup = 0
	m.Spec.Budget = artifacts.Duration(time.Millisecond)
	m.Spec.MinIterations = 2
	cells, err := run(t, c, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 4 {
		t.Fatalf("%d cells", len(cells))
	}
	for _, r := range cells {
		c := r.Cell
		if c.Status != artifacts.StatusOK || c.Rounds != nil || c.Sizes == nil {
			t.Fatalf("cell %+v", c)
		}
		// Every operation of either set takes longer than the 1 ms budget on the host: each
		// cell runs its minimum of 2 (asked for in one BENCH) and stops.
		if len(r.Samples) != 2 || !c.BudgetReached {
			t.Errorf("%s %s: %d samples, budgetReached %v", c.Algorithm, c.Operation, len(r.Samples), c.BudgetReached)
		}
		if c.Operation == artifacts.OpSign && c.Sizes.Signature != map[string]int{"SLH-DSA-SHA2-128f": 17088, "SLH-DSA-SHAKE-128s": 7856}[c.Algorithm] {
			t.Errorf("%s sign: sizes %+v", c.Algorithm, c.Sizes)
		}
	}
}

// TestAlgorithmListMustAgree: the runner refuses a board whose ALGS answer disagrees with its
// own count or HELLO's nalgs, or names an algorithm twice.
func TestAlgorithmListMustAgree(t *testing.T) {
	for name, rewrite := range map[string]func(wire.Frame) wire.Frame{
		"count": func(f wire.Frame) wire.Frame {
			if f.Type == "ALGS" {
				f.Fields[1].Value = "17"
			}
			return f
		},
		"nalgs": func(f wire.Frame) wire.Frame {
			for i, fl := range f.Fields {
				if f.Type == "HELLO" && fl.Key == "nalgs" {
					f.Fields[i].Value = "19"
				}
			}
			return f
		},
		"twice": func(f wire.Frame) wire.Frame {
			// The frames go one implementation at a time (one algorithm each, their source
			// digests differ): the ML-KEM-768 frame names ML-KEM-512 again.
			for i, fl := range f.Fields {
				if f.Type == "ALG" && fl.Key == "algs" && strings.Contains(fl.Value, "ML-KEM-768") {
					f.Fields[i].Value = strings.Replace(fl.Value, "ML-KEM-768", "ML-KEM-512", 1)
				}
			}
			return f
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := hostConn(t, rewrite)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if h, err := c.Hello(ctx); !errors.Is(err, wire.ErrProtocol) {
				t.Fatalf("Hello = %v, %v; want a protocol error", h.Algorithms, err)
			}
		})
	}
}
