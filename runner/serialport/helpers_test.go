package serialport

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"pqrepro/internal/pty"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

const repoFirmware = "../../firmware"

var (
	buildMu  sync.Mutex
	buildErr = map[string]error{}
	buildOut = map[string]string{}
)

// buildFirmware runs make on goals in firmware/ once per test binary, under the lock file
// every package's firmware tests take, and returns firmware/build/<target>.
func buildFirmware(t *testing.T, target string, goals []string, tools ...string) string {
	t.Helper()
	for _, tool := range append([]string{"make", "go"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: cannot build firmware target %s", tool, target)
		}
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, done := buildErr[target]; !done {
		dir := filepath.Join(repoFirmware, "build")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		lock, err := os.OpenFile(filepath.Join(dir, ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		var out bytes.Buffer
		cmd := exec.Command("make", append([]string{"-C", repoFirmware}, goals...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		buildErr[target] = cmd.Run()
		buildOut[target] = out.String()
		lock.Close()
	}
	if err := buildErr[target]; err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, buildOut[target])
	}
	dir, err := filepath.Abs(filepath.Join(repoFirmware, "build", target))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostFirmware builds the host port of the firmware (the core on stdin/stdout).
func hostFirmware(t *testing.T) string {
	t.Helper()
	goals := []string{"build/host/pqrepro-fw", "build/host/metadata.json"}
	return filepath.Join(buildFirmware(t, "host", goals, "cc"), "pqrepro-fw")
}

// openPty allocates a pty pair: the master, and the slave's path. The slave is put in raw
// mode and one descriptor of it stays open (unread) for the test, so that the line does not
// hang up while the driver closes and reopens the port.
func openPty(t *testing.T) (*os.File, string) {
	t.Helper()
	m, path, err := pty.Open()
	if err != nil {
		t.Skipf("no pty support: %v", err)
	}
	s, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, path
}

// startHostBoard runs the host firmware with its stdin and stdout on a pty master, and
// returns the slave's path: a stand-in for a board on a USB serial port.
func startHostBoard(t *testing.T) (port, elf string) {
	t.Helper()
	elf = hostFirmware(t)
	m, path := openPty(t)
	cmd := exec.Command(elf)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = m, m, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return path, elf
}

var ptyRE = regexp.MustCompile(`char device redirected to (/dev/pts/[0-9]+)`)

// startQEMUBoard boots a QEMU machine running (not paused) with its UART on a pty and
// returns the pty: a board whose boot output nobody heard, as after plugging in a board.
func startQEMUBoard(t *testing.T, binary string, machine []string, elf string) string {
	t.Helper()
	args := append(append([]string{}, machine...), "-display", "none", "-monitor", "none", "-serial", "pty", "-icount", "shift=0", "-kernel", elf)
	cmd := exec.Command(binary, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := ptyRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case p := <-found:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("QEMU did not report its pty")
	}
	return ""
}
