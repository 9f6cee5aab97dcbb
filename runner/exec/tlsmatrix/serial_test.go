package tlsmatrix

import (
	"context"
	"fmt"
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
	"pqrepro/tls13/interop"
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

// TestTLSMatrixServerOnQEMU runs two cells of a tls-matrix in the server role on
// qemu-mps2-an386 through the device executor: the board's HELLO says tls_roles=client,server,
// so the runner provisions the seeded leaf and key over the line and relays its engine client
// to the board per handshake. The cells are the board's instruction counts, name the board's
// C server, carry its server split and each handshake's signature rounds (ML-DSA's rejection
// rounds: at least 1; Ed25519's exactly 1); a second run with the same seed gives the same
// counts and rounds.
func TestTLSMatrixServerOnQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	y := `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: serial-server-test}
spec:
  tls:
    role: server
    groups: [X25519MLKEM768]
    signatures: [ML-DSA-65, Ed25519]
    batch: 2
    echo: 16
  warmup: 1
  iterations: 3
  seed: serial-server-test
  boards: [qemu-mps2-an386]
`
	m, err := artifacts.ParseManifest([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	var runs [2][]runner.CellResult
	for k := range runs {
		c := qemuLine(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		h, err := c.Hello(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		runs[k], err = device.Run(ctx, c, h, m, runner.NopObserver{}, &log, device.RunOptions{Executors: boardKinds})
		cancel()
		if err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		for _, cl := range runs[k] {
			checkServerCell(t, cl, 3, log.String())
		}
	}
	for i := range runs[0] {
		a, b := runs[0][i], runs[1][i]
		if fmt.Sprint(a.Samples, a.TLSRounds) != fmt.Sprint(b.Samples, b.TLSRounds) {
			t.Fatalf("%s: run 1 %v rounds %v, run 2 %v rounds %v", a.Cell.Algorithm, a.Samples, a.TLSRounds, b.Samples, b.TLSRounds)
		}
	}
}

// checkServerCell checks one server-role cell of TestTLSMatrixServerOnQEMU.
func checkServerCell(t *testing.T, cl runner.CellResult, n int, log string) {
	t.Helper()
	tc := cl.Cell.TLS
	if cl.Cell.Status != artifacts.StatusOK || tc == nil {
		t.Fatalf("cell %s: %s %s\n%s", cl.Cell.Algorithm, cl.Cell.Status, cl.Cell.Error, log)
	}
	if cl.Cell.Unit != artifacts.UnitInstructions || len(cl.Samples) != n || tc.Role != artifacts.TLSRoleServer ||
		!strings.HasPrefix(tc.BoardServer, artifacts.SerialTLSServer) || tc.Client != "" || len(cl.TLSRounds) != len(cl.Samples) || tc.Rounds == nil ||
		len(tc.Phases) != len(artifacts.BoardServerPhaseNames()) {
		t.Fatalf("cell %+v %+v rounds %v", cl.Cell, tc, cl.TLSRounds)
	}
	for i, r := range cl.TLSRounds {
		if r < 1 || (tc.Signature == "Ed25519" && r != 1) || cl.Samples[i] < 1e6 {
			t.Fatalf("%s handshake %d: %v instructions, %d rounds", cl.Cell.Algorithm, i, cl.Samples[i], r)
		}
	}
	t.Logf("%s: %v instructions, rounds %v; %s", cl.Cell.Algorithm, cl.Samples, cl.TLSRounds, tc.BoardServer)
}

// TestTLSMatrixServerOpenSSLOnQEMU runs a server-role cell on qemu-mps2-an386 with OpenSSL's
// s_client as the client (device.RunOptions.TLSClient, run's --tls-client openssl):
// each handshake's s_client verifies the board's chain, reports the cell's group and scheme and
// receives the echo; the cell names it in its counter.
func TestTLSMatrixServerOpenSSLOnQEMU(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	ossl, err := interop.FindOpenSSL(t.Context())
	if err != nil {
		t.Skip(err)
	}
	y := `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: serial-server-openssl-test}
spec:
  tls:
    role: server
    groups: [ML-KEM-768]
    signatures: [ML-DSA-44]
    batch: 2
    echo: 16
  warmup: 0
  iterations: 2
  seed: serial-server-openssl-test
  boards: [qemu-mps2-an386]
`
	m, err := artifacts.ParseManifest([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	c := qemuLine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cells, err := device.Run(ctx, c, h, m, runner.NopObserver{}, &log, device.RunOptions{Executors: boardKinds, TLSClient: &OpenSSLClient{OpenSSL: ossl}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if len(cells) != 1 {
		t.Fatalf("%d cells", len(cells))
	}
	checkServerCell(t, cells[0], 2, log.String())
	if !strings.Contains(cells[0].Cell.Counter, "s_client") {
		t.Fatalf("counter %q does not name s_client", cells[0].Cell.Counter)
	}
}
