package firmware

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden frame files in testdata/frames")

// framesScript reads a request script: one request a line, "TYPE key=value ...", with
// blank lines and # comments skipped.
func framesScript(t *testing.T, path string) [][2]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var reqs [][2]string
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		typ, payload, _ := strings.Cut(line, " ")
		if typ == "" || strings.ContainsAny(line, ":*@") {
			t.Fatalf("%s:%d: a request is TYPE key=value ..., without ':', '*' or '@'", path, n+1)
		}
		reqs = append(reqs, [2]string{typ, payload})
	}
	return reqs
}

// requestLine is one framed request (PROTOCOL.md, Frames).
func requestLine(seq int, typ, payload string) []byte {
	body := fmt.Sprintf("%d:%s:%s", seq, typ, payload)
	return fmt.Appendf(nil, "@%s*%08x\n", body, crc32.ChecksumIEEE([]byte(body)))
}

// The firmware's answer to request seq ends with a frame of these types.
func lastFrame(typ string) string {
	switch typ {
	case "BENCH", "AEADBENCH":
		return "SUMMARY|ERROR"
	default:
		return typ + "|ERROR"
	}
}

var (
	buildIDField = regexp.MustCompile(`build_id=[0-9a-f]+`)
	frameCRC     = regexp.MustCompile(`\*[0-9a-f]{8}$`)
)

// boardFrames boots the board's ELF under its emulator (board.mk's BOARD_QEMU, with
// -icount shift=0: counts are emulated instructions, the same on every run), sends the
// requests one at a time and returns every line the firmware wrote, build_id= and the
// CRCs masked (they change with any rebuild).
func boardFrames(t *testing.T, qemu []string, elf string, reqs [][2]string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := append(append([]string{}, qemu[1:]...), "-display", "none", "-monitor", "none",
		"-serial", "stdio", "-icount", "shift=0", "-kernel", elf)
	cmd := exec.CommandContext(ctx, qemu[0], args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var got bytes.Buffer
	// wait reads lines until one matches end.
	wait := func(end *regexp.Regexp, what string) {
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the emulator stopped waiting for %s; so far:\n%s", what, got.String())
				}
				l = frameCRC.ReplaceAllString(buildIDField.ReplaceAllString(l, "build_id=X"), "")
				got.WriteString(l + "\n")
				if end.MatchString(l) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no %s in time; so far:\n%s", what, got.String())
			}
		}
	}
	wait(regexp.MustCompile(`^@\d+:HELLO:re=0 `), "boot HELLO")
	for i, r := range reqs {
		seq := i + 1
		line := requestLine(seq, r[0], r[1])
		// A few bytes at a time: the emulated UARTs hold little.
		for off := 0; off < len(line); off += 8 {
			if _, err := in.Write(line[off:min(off+8, len(line))]); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		wait(regexp.MustCompile(fmt.Sprintf(`^@\d+:(%s):re=%d( |$)`, lastFrame(r[0]), seq)), r[0]+" "+r[1])
	}
	in.Close()
	return got.Bytes()
}

// TestBoardFrames runs a fixed request script (testdata/frames/*.txt: every request type the
// board answers, good and bad fields, BENCH and AEADBENCH cells, SELFTEST) on each emulated
// board and compares every frame, instruction counts and stack marks included, with the
// golden file testdata/frames/<board>.golden: a change of the firmware that is meant to
// preserve behaviour leaves it byte for byte, one that changes a count shows which. After a
// deliberate change: go test ./firmware -run TestBoardFrames -update.
func TestBoardFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("boots every emulated board")
	}
	ports, err := filepath.Glob("boards/*/board.mk")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, mk := range ports {
		board := filepath.Base(filepath.Dir(mk))
		vars, err := boardMK(mk)
		if err != nil {
			t.Fatal(err)
		}
		qemu := strings.Fields(vars["BOARD_QEMU"])
		if len(qemu) == 0 {
			continue // a real board
		}
		t.Run(board, func(t *testing.T) {
			elf := filepath.Join("build", board, "pqrepro-fw.elf")
			if _, err := os.Stat(elf); err != nil {
				t.Skipf("%s not built (make firmware)", elf)
			}
			if _, err := exec.LookPath(qemu[0]); err != nil {
				t.Skipf("%s not installed (make firmware-qemu)", qemu[0])
			}
			script := "testdata/frames/all.txt"
			if strings.Contains(vars["BOARD_CFLAGS"], "-DFW_ALGSET_MLKEM512") {
				script = "testdata/frames/mlkem512.txt"
			}
			got := boardFrames(t, qemu, elf, framesScript(t, script))
			golden := filepath.Join("testdata", "frames", board+".golden")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./firmware -run TestBoardFrames -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("frames differ from %s:\n%s", golden, lineDiff(want, got))
			}
		})
		ran++
	}
	if ran == 0 {
		t.Fatal("no emulated board under boards/")
	}
}

// lineDiff lists the lines that differ, by line number.
func lineDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %s\n  got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
