package tlsmatrix

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
)

// qemuLine boots the firmware of qemu-mps2-an386 (built by `make firmware`; skipped when it is
// not) with -icount shift=0 and its UART on stdio, and returns the line to it.
func qemuLine(t *testing.T) *wire.Conn {
	t.Helper()
	elf := filepath.Join("..", "..", "..", "firmware", "build", "qemu-mps2-an386", "pqrepro-fw.elf")
	if _, err := os.Stat(elf); err != nil {
		t.Skipf("%s not built (make firmware)", elf)
	}
	if _, err := exec.LookPath("qemu-system-arm"); err != nil {
		t.Skip("qemu-system-arm not installed")
	}
	cmd := exec.Command("qemu-system-arm", "-M", "mps2-an386", "-display", "none", "-monitor", "none",
		"-serial", "stdio", "-icount", "shift=0", "-kernel", elf)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := wire.NewConn(struct {
		io.Reader
		io.Writer
	}{out, in}, wire.Options{SilenceTimeout: 60 * time.Second, RetryInterval: time.Second})
	t.Cleanup(func() { c.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return c
}

// TestTLSMatrixSerialOnQEMU runs the ML-KEM-512 × ML-DSA-44 cell of a tls-matrix on
// qemu-mps2-an386 through the device executor: the board's HELLO says tls_io=serial, so the
// runner pins the CA over the line and relays the board's records to the cell's engine server.
// The cell is in instructions and names the project's C client; SecP256r1MLKEM768, which the
// engine speaks and the board's client does not offer, is skipped.
func TestTLSMatrixSerialOnQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	c := qemuLine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	y := `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: serial-test}
spec:
  tls:
    groups: [ML-KEM-512, SecP256r1MLKEM768]
    signatures: [ML-DSA-44]
    batch: 2
    echo: 16
  warmup: 1
  iterations: 3
  seed: serial-test
  boards: [qemu-mps2-an386]
`
	m, err := artifacts.ParseManifest([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cells, err := device.Run(ctx, c, h, m, runner.NopObserver{}, &log, device.RunOptions{TLSCADir: t.TempDir(), Executors: boardKinds})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var ok, skipped int
	for _, cl := range cells {
		switch cl.Cell.Status {
		case artifacts.StatusOK:
			ok++
			tc := cl.Cell.TLS
			if cl.Cell.Unit != artifacts.UnitInstructions || len(cl.Samples) != 3 || tc == nil ||
				!strings.HasPrefix(tc.Client, SerialClient) || strings.Contains(strings.ToLower(tc.Client), "wolfssl") {
				t.Fatalf("cell %+v %+v", cl.Cell, tc)
			}
			for _, s := range cl.Samples {
				if s < 1e6 {
					t.Fatalf("sample %v instructions", s)
				}
			}
			t.Logf("%s: %v instructions; client %q", cl.Cell.Algorithm, cl.Samples, tc.Client)
		case artifacts.StatusSkipped:
			skipped++
		default:
			t.Fatalf("cell %s: %s %s\n%s", cl.Cell.Algorithm, cl.Cell.Status, cl.Cell.Error, log.String())
		}
	}
	if ok != 1 || skipped != 1 {
		t.Fatalf("%d ok, %d skipped, want 1 and 1", ok, skipped)
	}
}
