package wire

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// repoFirmware is the firmware directory, relative to this package.
const repoFirmware = "../../firmware"

var (
	buildMu  sync.Mutex
	buildErr = map[string]error{}
	buildOut = map[string]string{}
)

// buildFirmware runs `make <goals>` (default: the target) in firmware/ once
// per test binary and returns the directory holding the target's outputs. It
// skips the test when the tools the target needs are not installed.
func buildFirmware(t testing.TB, target string, tools ...string) string {
	return buildFirmwareGoals(t, target, []string{target}, tools...)
}

func buildFirmwareGoals(t testing.TB, target string, goals []string, tools ...string) string {
	t.Helper()
	for _, tool := range append([]string{"make", "go"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: cannot build firmware target %s", tool, target)
		}
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, done := buildErr[target]; !done {
		// Other packages' tests (runner/qemu, runner/serialport, cmd/pqrepro) build the same
		// targets, possibly at the same time: every one takes this lock around make.
		os.MkdirAll(filepath.Join(repoFirmware, "build"), 0o755)
		if lock, err := os.OpenFile(filepath.Join(repoFirmware, "build", ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644); err == nil {
			syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
			defer lock.Close()
		}
		var out bytes.Buffer
		cmd := exec.Command("make", append([]string{"-C", repoFirmware}, goals...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		buildErr[target] = cmd.Run()
		buildOut[target] = out.String()
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

// hostFirmware builds the host port and returns its executable.
func hostFirmware(t *testing.T) string {
	t.Helper()
	// Not `make host`: that also links test/katcli, which the firmware
	// package's tests build, possibly at the same time.
	goals := []string{"build/host/pqrepro-fw", "build/host/metadata.json"}
	return filepath.Join(buildFirmwareGoals(t, "host", goals, "cc"), "pqrepro-fw")
}
