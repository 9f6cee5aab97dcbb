package qemu

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

// firmwareELF builds the machine's firmware once per test binary (make -C firmware <class>,
// under a lock file shared with other packages' tests, so parallel test binaries never run
// make on the same outputs at once) and returns the ELF. It skips the test when QEMU or the
// cross compiler is missing.
func firmwareELF(t *testing.T, m Machine) string {
	t.Helper()
	for _, tool := range []string{"make", "go", m.Binary, m.Toolchain} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: cannot boot %s (make firmware firmware-qemu installs it)", tool, m.Class)
		}
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, done := buildErr[m.Class]; !done {
		unlock := lockBuild(t)
		var out bytes.Buffer
		cmd := exec.Command("make", "-C", repoFirmware, m.Class)
		cmd.Stdout, cmd.Stderr = &out, &out
		buildErr[m.Class] = cmd.Run()
		buildOut[m.Class] = out.String()
		unlock()
	}
	if err := buildErr[m.Class]; err != nil {
		t.Fatalf("make %s: %v\n%s", m.Class, err, buildOut[m.Class])
	}
	elf, err := filepath.Abs(filepath.Join(repoFirmware, "build", m.Class, "pqrepro-fw.elf"))
	if err != nil {
		t.Fatal(err)
	}
	return elf
}

// lockBuild takes firmware/build/.make.lock (flock), which every test that runs make on the
// firmware takes first.
func lockBuild(t *testing.T) func() {
	t.Helper()
	dir := filepath.Join(repoFirmware, "build")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
