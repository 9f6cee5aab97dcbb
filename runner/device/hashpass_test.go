package device

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
)

// TestHashPassRefusedByHost runs a KEM cell with the hashing pass asked for on the host build,
// which cannot patch its code: the cell keeps its timed samples, and its hashing share is
// absent with the firmware's refusal.
func TestHashPassRefusedByHost(t *testing.T) {
	c, _ := hostConn(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cells, err := Run(ctx, c, h, manifest(t, artifacts.KindKEMBench, "ML-KEM-768", "keygen"), runner.NopObserver{}, &log, RunOptions{HashPass: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 || cells[0].Cell.Status != artifacts.StatusOK || len(cells[0].Samples) != 4 {
		t.Fatalf("cells %+v", cells)
	}
	hs := cells[0].Cell.Hashing
	if hs == nil || !strings.HasPrefix(hs.Absent, HashingNoPass) || !strings.Contains(hs.Absent, "msg=hash") && !strings.Contains(hs.Absent, "(hash)") {
		t.Fatalf("hashing %+v, want absent: the firmware refuses the pass", hs)
	}
}

// TestHashPassN checks how many operations a cell's hashing pass asks for: at most three and
// at most the cell's samples, one when the median operation is over 5×10^8 counter units (a
// long tail of slow signatures alone does not cut it).
func TestHashPassN(t *testing.T) {
	for _, tt := range []struct {
		samples []float64
		want    int
	}{
		{[]float64{1e6, 1e6, 1e6, 1e6}, 3},
		{[]float64{1e6, 1e6}, 2},
		{[]float64{1e6, 2e6, 3e9}, 3},
		{[]float64{6e8, 7e8}, 1},
	} {
		if got := hashPassN(tt.samples); got != tt.want {
			t.Errorf("hashPassN(%v) = %d, want %d", tt.samples, got, tt.want)
		}
	}
}
