package firmware

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// What the tests of the count images share (test/c25519bench.c, p256bench.c, rsabench.c,
// tlsreplay.c and aesgcm_board_test.go's image: board images, not the firmware, built by the
// Makefile and booted under QEMU) and the valgrind constant-time checks of the host harnesses.

// countBoard is an emulated board the count images run on: its QEMU command line, its C compiler
// and its size(1).
type countBoard struct{ name, qemu, cc, size string }

var countBoards = []countBoard{
	{"qemu-mps2-an386", "qemu-system-arm -M mps2-an386", "arm-none-eabi-gcc", "arm-none-eabi-size"},
	{"qemu-mps2-an505", "qemu-system-arm -M mps2-an505", "arm-none-eabi-gcc", "arm-none-eabi-size"},
	{"qemu-riscv32-virt", "qemu-system-riscv32 -M virt -bios none", "riscv64-unknown-elf-gcc", "riscv64-unknown-elf-size"},
}

// makeCountImages runs make with args (a target such as p256-bench) in the firmware folder. It
// skips the test when make is not installed, or when make fails and the ARM cross compiler is
// not installed.
func makeCountImages(t *testing.T, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	var out bytes.Buffer
	mk := exec.Command("make", args...)
	mk.Stdout, mk.Stderr = &out, &out
	if err := mk.Run(); err != nil {
		if _, lerr := exec.LookPath("arm-none-eabi-gcc"); lerr != nil {
			t.Skipf("no cross compiler: %v", lerr)
		}
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

// bootCountImage boots the count image elf on board b (bootReplay) and returns the lines it
// prints before DONE; it skips the test when b's emulator is not installed.
func bootCountImage(t *testing.T, b countBoard, elf string) []string {
	t.Helper()
	q := strings.Fields(b.qemu)
	if _, err := exec.LookPath(q[0]); err != nil {
		t.Skipf("%s not installed", q[0])
	}
	return bootReplay(t, q, elf)
}

// countFields splits a count image's line "tag key=value ..." into its tag and its fields.
func countFields(line string) (string, map[string]string) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "", nil
	}
	m := map[string]string{}
	for _, kv := range f[1:] {
		n, v, _ := strings.Cut(kv, "=")
		m[n] = v
	}
	return f[0], m
}

// countRecords returns the fields of the lines tagged tag, in order.
func countRecords(lines []string, tag string) []map[string]string {
	var runs []map[string]string
	for _, l := range lines {
		if tg, m := countFields(l); tg == tag {
			runs = append(runs, m)
		}
	}
	return runs
}

// goRecordTag is Go's AES-128-GCM tag of the record the count images seal: 2^14 zero bytes under
// the key 01 00.. and the IV 02 00.., with a 5-byte zero AAD (a record header).
func goRecordTag() string {
	key, iv := make([]byte, 16), make([]byte, 12)
	key[0], iv[0] = 1, 2
	blk, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCM(blk)
	sealed := g.Seal(nil, iv, make([]byte, 16384), make([]byte, 5))
	return hex.EncodeToString(sealed[16384:])
}

// bootReplay boots elf in QEMU (-icount shift=0, serial on stdio) and returns the lines it
// prints before DONE.
func bootReplay(t *testing.T, qemu []string, elf string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	args := append(append([]string{}, qemu[1:]...), "-display", "none", "-monitor", "none",
		"-serial", "stdio", "-icount", "shift=0", "-kernel", elf)
	cmd := exec.CommandContext(ctx, qemu[0], args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "DONE" {
			return lines
		}
		lines = append(lines, l)
	}
	t.Fatalf("the board stopped before DONE: %q", lines)
	return nil
}

// valgrindErrExit is the exit code valgrindConstantTime's runs end with on a memcheck error.
const valgrindErrExit = 9

// valgrindConstantTime builds a constant-time harness with the host compiler (-std=c11 -O2 -g
// -Wall -Wextra, then flags and srcs, the harness first) and returns a function that runs it
// with args under valgrind's memcheck (-q) and returns its output and exit code, valgrindErrExit
// on any memcheck error: a branch or a memory index that depends on what the harness marked
// undefined. It skips the test when cc, valgrind or valgrind's memcheck.h is not installed.
func valgrindConstantTime(t *testing.T, flags []string, srcs ...string) func(args ...string) (string, int) {
	t.Helper()
	for _, tool := range []string{"cc", "valgrind"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if _, err := os.Stat("/usr/include/valgrind/memcheck.h"); err != nil {
		t.Skipf("valgrind's memcheck.h not installed: %v", err)
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(srcs[0]), ".c"))
	args := append(append([]string{"-std=c11", "-O2", "-g", "-Wall", "-Wextra"}, flags...), "-o", bin)
	cc := exec.Command("cc", append(args, srcs...)...)
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("valgrind", append([]string{"-q", "--error-exitcode=" + strconv.Itoa(valgrindErrExit), bin}, args...)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("valgrind: %v", err)
		}
		return string(out), code
	}
}
