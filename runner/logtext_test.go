package runner_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
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
	"pqrepro/artifacts/logtext"
	"pqrepro/internal/lockedio"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
)

var captureLog = flag.String("capture-log", "", "write the log of TestLogTextFollowsTheLink to this file (artifacts/logtext/testdata/host-link-trouble.log was made so)")

// hostFirmware builds the host port of the firmware (under the lock file the other packages'
// firmware builds take) and returns its executable; it skips without make or a C compiler.
func hostFirmware(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"make", "cc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: cannot build the host firmware", tool)
		}
	}
	fw := filepath.Join("..", "firmware")
	os.MkdirAll(filepath.Join(fw, "build"), 0o755)
	if lock, err := os.OpenFile(filepath.Join(fw, "build", ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644); err == nil {
		syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		defer lock.Close()
	}
	out, err := exec.Command("make", "-C", fw, "build/host/pqrepro-fw", "build/host/metadata.json").CombinedOutput()
	if err != nil {
		t.Fatalf("make host firmware: %v\n%s", err, out)
	}
	p, err := filepath.Abs(filepath.Join(fw, "build", "host", "pqrepro-fw"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cable carries lines from src to dst, changing the first transmission of some frames: the
// line between the runner and the real firmware in this test.
func cable(dst io.WriteCloser, src io.Reader, change func(seq int, line string) []string) {
	defer dst.Close()
	var mu sync.Mutex
	seen := map[int]bool{}
	r := bufio.NewReader(src)
	for {
		l, err := r.ReadString('\n')
		if l != "" {
			out := []string{l}
			line := strings.TrimSuffix(l, "\n")
			if f := logtext.Parse("< " + line); f.Kind == logtext.Frame {
				mu.Lock()
				first := !seen[int(f.Seq)]
				seen[int(f.Seq)] = true
				mu.Unlock()
				if first {
					out = nil
					for _, o := range change(int(f.Seq), line) {
						out = append(out, o+"\n")
					}
				}
			}
			for _, o := range out {
				if _, werr := io.WriteString(dst, o); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// damage flips one bit of a frame's type, so its checksum fails.
func damage(line string) string {
	b := []byte(line)
	b[strings.IndexByte(line, ':')+2] ^= 0x20
	return string(b)
}

// syncBuf is a log safe for the run and the test reading it.
type syncBuf = lockedio.Buffer

type rw struct {
	io.Reader
	io.Writer
}

// TestLogTextFollowsTheLink runs real cells on the host firmware over a line that damages,
// drops and garbles frames in both directions, and reads the log the runner wrote with
// logtext: what it counts (RESEND, damaged lines, the board's ERROR badframe, frames
// received again) is what the link counted, the human reading holds no raw frame and every
// summary line, and a bound of the log keeps every summary line.
func TestLogTextFollowsTheLink(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the host firmware")
	}
	cmd := exec.Command(hostFirmware(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	// Requests: every fourth one arrives damaged the first time (the board answers ERROR
	// badframe). Answers: every fifth frame damaged, every seventh lost, the first time.
	go cable(stdin, reqR, func(seq int, line string) []string {
		if seq%4 == 2 && !strings.Contains(line, ":RESEND:") {
			return []string{damage(line)}
		}
		return []string{line}
	})
	go cable(respW, stdout, func(seq int, line string) []string {
		switch {
		case seq%5 == 3:
			return []string{damage(line)}
		case seq%7 == 4:
			return nil
		}
		return []string{line}
	})
	log := &syncBuf{}
	c := wire.NewConn(rw{respR, reqW}, wire.Options{Log: log, RetryInterval: 100 * time.Millisecond})
	t.Cleanup(func() {
		reqW.Close()
		respR.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatalf("hello: %v\n%s", err, log)
	}
	m, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: paper001, name: link-trouble}
spec:
  algorithms: [ML-KEM-512, ML-KEM-768]
  operations: [keygen, encaps, decaps]
  warmup: 1
  iterations: 12
  seed: "logtext"
  boards: [host]
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	cells, err := device.Run(ctx, c, h, m, runner.NopObserver{}, log, device.RunOptions{SelfTest: true})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	for _, r := range cells {
		if r.Cell.Status != artifacts.StatusOK {
			t.Fatalf("cell %s %s: %s %s", r.Cell.Algorithm, r.Cell.Operation, r.Cell.Status, r.Cell.Error)
		}
	}
	fmt.Fprintf(log, "link: %s\n", c.Stats())
	raw := log.String()
	if *captureLog != "" {
		if err := os.WriteFile(*captureLog, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	st, got := c.Stats(), logtext.Count(raw)
	if st.Resends == 0 || st.Corrupt == 0 || st.BoardErrors == 0 || st.Gaps == 0 {
		t.Fatalf("the cable caused no trouble: %s", st)
	}
	if got.Resends != st.Resends || got.Damaged != st.Corrupt || got.BoardErrors != st.BoardErrors ||
		got.Again != st.Gaps+st.Duplicates || got.Repeats != st.Repeats || got.KeepAlives != st.KeepAlives {
		t.Errorf("logtext counted %+v in the log; the link counted %s", got, st)
	}

	human, framed := logtext.Human(raw)
	if !framed {
		t.Fatal("a board's log read as one without frames")
	}
	for _, l := range strings.Split(human, "\n") {
		if p := logtext.Parse(l); p.Kind == logtext.Frame || p.Kind == logtext.Damaged {
			t.Errorf("human reading keeps a raw line: %q", l)
		}
	}
	if !strings.Contains(human, "link, in the frames above: ") || !strings.Contains(human, "RESEND") || !strings.Contains(human, "damaged line") {
		t.Errorf("human reading lacks the counted trouble:\n%s", human)
	}
	var summaries []string
	for _, l := range strings.Split(raw, "\n") {
		if logtext.IsSummary(l) {
			summaries = append(summaries, l)
			if !strings.Contains(human, l) {
				t.Errorf("human reading lacks the summary line %q", l)
			}
		}
	}
	if len(summaries) < len(cells)+1 {
		t.Fatalf("%d summary lines for %d cells", len(summaries), len(cells))
	}
	bounded, omitted := logtext.Bound(raw, 1<<10, 64<<10, 1<<10)
	if omitted == 0 || len(bounded) > 2<<10+len(strings.Join(summaries, "\n"))+200 {
		t.Fatalf("bound of %d bytes: %d bytes, %d omitted", len(raw), len(bounded), omitted)
	}
	for _, l := range summaries {
		if !strings.Contains(bounded, l+"\n") {
			t.Errorf("the bounded log lost the summary line %q", l)
		}
	}
}

// FuzzLogTextFrameMatchesWire: the log's reading of a line from the board agrees with the
// link's own parser: a frame for logtext is exactly a line wire.Decode accepts (same sequence
// number and type), and a damaged line exactly one it calls corrupt.
func FuzzLogTextFrameMatchesWire(f *testing.F) {
	for _, name := range []string{"host-link-trouble.log", "qemu-mps2-an386-mlkem.log"} {
		b, err := os.ReadFile(filepath.Join("..", "artifacts", "logtext", "testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "< "); ok && i%7 == 0 {
				f.Add(rest)
			}
		}
	}
	f.Add("@1:X:*00000000")
	f.Add("noise@@7:SAMPLE:re=1 i=0*ffffffff")
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") || strings.HasPrefix(line, logtext.KeepAliveLine) {
			return
		}
		p := logtext.Parse("< " + line)
		fr, err := wire.Decode([]byte(line))
		switch {
		case err == nil:
			if p.Kind != logtext.Frame || p.Seq != fr.Seq || p.Type != fr.Type {
				t.Fatalf("wire decodes %q as %d:%s; logtext reads %+v", line, fr.Seq, fr.Type, p)
			}
		case errors.Is(err, wire.ErrChecksum):
			if p.Kind != logtext.Damaged {
				t.Fatalf("wire calls %q corrupt (%v); logtext reads %+v", line, err, p)
			}
		default:
			if p.Kind != logtext.BoardText {
				t.Fatalf("wire finds no frame in %q (%v); logtext reads %+v", line, err, p)
			}
		}
	})
}
