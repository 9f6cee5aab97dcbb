package logtext

import (
	"strings"
	"testing"
)

// bigLog is the runner's log over a damaging line repeated to about 4 MiB, a job log at the
// portal's attempt limit.
func bigLog(b *testing.B) string {
	one := readLog(b, "host-link-trouble.log")
	return strings.Repeat(one, (4<<20)/len(one)+1)
}

// BenchmarkHuman reads a 4 MiB log as human lines (the job page reads its 80 KiB view so).
func BenchmarkHuman(b *testing.B) {
	raw := bigLog(b)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		Human(raw)
	}
}

// BenchmarkBound cuts a 4 MiB log to 16 KiB of head, its summary lines and 64 KiB of tail.
func BenchmarkBound(b *testing.B) {
	raw := bigLog(b)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		Bound(raw, 16<<10, 1<<20, 64<<10)
	}
}
