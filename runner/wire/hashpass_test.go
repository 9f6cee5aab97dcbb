package wire

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hashPassBoards are the boards whose firmware runs the hashing pass (FW_HASH_PATCH).
var hashPassBoards = []string{"qemu-mps2-an386", "qemu-mps2-an505", "qemu-riscv32-virt"}

// hashCell is one operation the hashing-pass test measures.
type hashCell struct{ alg, op string }

var hashCells = []hashCell{{"ML-KEM-768", "keygen"}, {"ML-KEM-768", "decaps"}, {"ML-DSA-65", "sign"}, {"ML-DSA-65", "verify"}}

func (hc hashCell) request(n int, hash bool) BenchRequest {
	r := BenchRequest{Algorithm: hc.alg, Operation: hc.op, Iterations: n, Hash: hash}
	if strings.HasPrefix(hc.alg, "ML-DSA") {
		r.MessageLen = 33
	}
	return r
}

// seededCounts seeds the DRBG and returns the counts and stack marks of n samples.
func seededCounts(ctx context.Context, t *testing.T, c *Conn, hc hashCell, n int) []uint64 {
	t.Helper()
	if err := c.Seed(ctx, []byte("hash-pass")); err != nil {
		t.Fatal(err)
	}
	var out []uint64
	if _, err := c.Bench(ctx, hc.request(n, false), func(s Sample) {
		if !s.OK || s.HasHash {
			t.Errorf("%s %s timed sample %d: %+v", hc.alg, hc.op, s.Index, s)
		}
		out = append(out, s.Count, uint64(s.StackBytes))
	}); err != nil {
		t.Fatalf("Bench %s %s: %v", hc.alg, hc.op, err)
	}
	return out
}

// TestQEMUHashPass runs the hashing pass (BENCH hash=1) between two seeded timed runs of the
// same samples on each board that has it: the timed counts and stack marks must be identical
// before and after (the pass restores the code it patched), every pass sample must carry a
// hashed part that is most but not all of the call, and a request the firmware refuses
// (hash=1 for an algorithm it does not know) must still leave the timed counts alone. It logs
// the shares for docs/BOARDS.md.
func TestQEMUHashPass(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU")
	}
	for _, b := range qemuBoards {
		if !slices.Contains(hashPassBoards, b.target) {
			continue
		}
		t.Run(b.target, func(t *testing.T) {
			qemuTools(t, b)
			dir := buildFirmware(t, b.target, b.cc)
			s := startQEMU(t, b, filepath.Join(dir, "pqrepro-fw.elf"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			h, err := s.conn.Hello(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, hc := range hashCells {
				before := seededCounts(ctx, t, s.conn, hc, 2)
				var hashed, total, calls uint64
				sum, err := s.conn.Bench(ctx, hc.request(2, true), func(sm Sample) {
					if !sm.OK || !sm.HasHash || sm.Hash == 0 || sm.HashCalls == 0 || sm.Hash >= sm.Count {
						t.Errorf("%s %s hash sample %d: %+v", hc.alg, hc.op, sm.Index, sm)
					}
					hashed, total, calls = hashed+sm.Hash, total+sm.Count, calls+sm.HashCalls
				})
				if err != nil || sum.OK != 2 {
					t.Fatalf("hash pass %s %s: %v %+v", hc.alg, hc.op, err, sum)
				}
				after := seededCounts(ctx, t, s.conn, hc, 2)
				if !slices.Equal(before, after) {
					t.Errorf("%s %s: timed counts and stacks %v before the hashing pass, %v after", hc.alg, hc.op, before, after)
				}
				bound := float64(calls*uint64(h.Resolution)) / float64(total)
				t.Logf("%s %s %s: hashing share of instructions %.4f (±%.4f: %d outermost calls × resolution %d; %d of %d counted in 2 samples); timed count %d",
					b.target, hc.alg, hc.op, float64(hashed)/float64(total), bound, calls, h.Resolution, hashed, total, before[0])
			}
			var de *DeviceError
			_, err = s.conn.Bench(ctx, BenchRequest{Algorithm: "ML-KEM-768", Operation: "keygen", Iterations: 1, Hash: true, Warmup: 0}, nil)
			if err != nil {
				t.Fatalf("hash pass keygen: %v", err)
			}
			if _, err := s.conn.Bench(ctx, BenchRequest{Algorithm: "NO-SUCH", Operation: "keygen", Iterations: 1, Hash: true}, nil); !errors.As(err, &de) || de.Code != "unsupported" {
				t.Fatalf("hash pass of an unknown algorithm: %v, want ERROR unsupported", err)
			}
		})
	}
}

// TestHashPassPatchable checks, from the built ELF's symbol table, what the firmware's code
// patching assumes: every hashed entry point it redirects is at least 4 bytes long (the branch
// it writes), so no other function is overwritten.
func TestHashPassPatchable(t *testing.T) {
	for _, b := range qemuBoards {
		if !slices.Contains(hashPassBoards, b.target) {
			continue
		}
		t.Run(b.target, func(t *testing.T) {
			qemuTools(t, b)
			nm := strings.TrimSuffix(b.cc, "gcc") + "nm"
			dir := buildFirmware(t, b.target, b.cc)
			out, err := exec.Command(nm, "-S", "--defined-only", filepath.Join(dir, "pqrepro-fw.elf")).Output()
			if err != nil {
				t.Skipf("%s: %v", nm, err)
			}
			sizes := map[string]uint64{}
			for _, line := range strings.Split(string(out), "\n") {
				f := strings.Fields(line)
				if len(f) == 4 && (f[2] == "T" || f[2] == "t") {
					n, _ := strconv.ParseUint(f[1], 16, 64)
					sizes[f[3]] = n
				}
			}
			twins := 0
			for name, n := range sizes {
				plain, ok := strings.CutPrefix(name, "fwh_w_")
				if !ok {
					continue
				}
				twins++
				if got, ok := sizes[plain]; !ok || got < 4 {
					t.Errorf("%s: %d bytes (present %v), the patch writes 4", plain, got, ok)
				}
				_ = n
			}
			if twins != 20 {
				t.Errorf("%d wrapped hash functions in the ELF, want 20", twins)
			}
		})
	}
}

// TestQEMUTimedCountsMatchBaseline compares the timed counts and stack marks of this tree's
// firmware with those of a firmware built from an earlier tree (PQREPRO_BASELINE_FW: its
// firmware/build folder, e.g. of the commit before the hashing pass): the pass's twin code and
// the patching must leave every timed count as it was.
func TestQEMUTimedCountsMatchBaseline(t *testing.T) {
	base := os.Getenv("PQREPRO_BASELINE_FW")
	if base == "" {
		t.Skip("set PQREPRO_BASELINE_FW to an earlier tree's firmware/build folder")
	}
	for _, b := range qemuBoards {
		if !slices.Contains(hashPassBoards, b.target) {
			continue
		}
		t.Run(b.target, func(t *testing.T) {
			qemuTools(t, b)
			dir := buildFirmware(t, b.target, b.cc)
			var runs [2][]uint64
			for i, elf := range []string{filepath.Join(base, b.target, "pqrepro-fw.elf"), filepath.Join(dir, "pqrepro-fw.elf")} {
				s := startQEMU(t, b, elf)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
				if _, err := s.conn.Hello(ctx); err != nil {
					cancel()
					t.Fatalf("%s: %v", elf, err)
				}
				for _, hc := range hashCells {
					runs[i] = append(runs[i], seededCounts(ctx, t, s.conn, hc, 3)...)
				}
				cancel()
			}
			if !slices.Equal(runs[0], runs[1]) {
				t.Errorf("timed counts and stacks differ:\nbaseline %v\nthis     %v", runs[0], runs[1])
			}
			t.Logf("%d counts and stack marks identical: %v", len(runs[0]), runs[1])
		})
	}
}
