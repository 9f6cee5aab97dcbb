package wire

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRP2040JSKeepAliveCost measures, in rp2040js's cycles, what the Pico firmware's keep-alive
// (boards/rp/rp.c) adds to a count: it runs the same seeded ML-DSA-44 signatures (tens of
// millions of cycles each: a few SysTick wraps of 2^24 cycles) on builds with the keep-alive
// off, on every wrap, and on every eighth (the default), and prints the counts side by side.
// It runs only with PQREPRO_KEEPALIVE_IMAGES=off=A.uf2,every=B.uf2,default=C.uf2 (builds of
// `make pico-w-rp2040js` with OPT="-O2 -DKEEPALIVE_WRAPS=0|1|8"); it is a measurement, not a
// test of the suite.
func TestRP2040JSKeepAliveCost(t *testing.T) {
	spec := os.Getenv("PQREPRO_KEEPALIVE_IMAGES")
	if spec == "" {
		t.Skip("set PQREPRO_KEEPALIVE_IMAGES=off=A.uf2,every=B.uf2,default=C.uf2")
	}
	node, err := exec.LookPath("node")
	if err != nil || rp2040jsDir == "" {
		t.Skip("node or rp2040js missing")
	}
	for _, kv := range strings.Split(spec, ",") {
		name, uf2, _ := strings.Cut(kv, "=")
		cmd := exec.Command(node, "../../firmware/tools/rp2040js/run.mjs", rp2040jsDir, uf2)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		log := &logBuffer{}
		conn := NewConn(struct {
			io.Reader
			io.Writer
		}{stdout, stdin}, Options{Log: log, RetryInterval: 2 * time.Second, Activity: ProcessActivity(cmd.Process.Pid), WorkLimit: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		if _, err := conn.Hello(ctx); err != nil {
			t.Fatal(err)
		}
		if err := conn.Seed(ctx, []byte("keep-alive cost")); err != nil {
			t.Fatal(err)
		}
		var counts []uint64
		t0 := time.Now()
		if _, err := conn.Bench(ctx, BenchRequest{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 4, MessageLen: 33},
			func(s Sample) { counts = append(counts, s.Count) }); err != nil {
			t.Fatal(err)
		}
		cancel()
		t.Logf("%-8s ML-DSA-44 sign cycles %v, keep-alive lines %d (%v)", name, counts, conn.Stats().KeepAlives, time.Since(t0).Round(time.Second))
		conn.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}
}
