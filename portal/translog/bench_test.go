package translog_test

import (
	"context"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/tlog"
)

// BenchmarkSequence measures sequencing throughput: integrating 1,000 published runs (hashes
// stored in SQLite, tiles, entry bundles and the signed checkpoint written to the blob
// folder) per iteration, onto a log that grows across iterations. The checkpoint's size is
// checked before the iteration counts.
func BenchmarkSequence(b *testing.B) {
	const batch = 1000
	ctx := context.Background()
	tl := newTestLog(b)
	var leaves, elapsed float64
	for b.Loop() {
		b.StopTimer()
		tl.publish(batch)
		start := time.Now()
		b.StartTimer()
		n, err := tl.log.Sequence(ctx)
		b.StopTimer()
		elapsed += time.Since(start).Seconds()
		if err != nil || n != int64(len(tl.runs)) {
			b.Fatalf("Sequence = %d, %v; want %d", n, err, len(tl.runs))
		}
		leaves += batch
		b.StartTimer()
	}
	b.ReportMetric(leaves/elapsed, "appends/s")
}

// BenchmarkInclusionProof100k builds a log of 100,000 published runs, then measures proving
// one run's inclusion from the store (and the time to sequence all 100,000 from empty), checks every proof against the checkpoint, and
// reports the proof's size.
func BenchmarkInclusionProof100k(b *testing.B) {
	const size = 100_000
	ctx := context.Background()
	tl := newTestLog(b)
	tl.publish(size)
	start := time.Now()
	if n, err := tl.log.Sequence(ctx); err != nil || n != size {
		b.Fatalf("Sequence = %d, %v", n, err)
	}
	seq := time.Since(start)
	cp := readCheckpoint(b, tl)
	var hashes int
	i := int64(0)
	for b.Loop() {
		id := 1 + (i*7919)%size
		i++
		inc, err := tl.log.Inclusion(ctx, id)
		if err != nil || inc.Pending {
			b.Fatal(err)
		}
		if err := tlog.CheckRecord(inc.Proof, cp.Size, cp.Hash, inc.Index, tlog.RecordHash([]byte(inc.Leaf))); err != nil {
			b.Fatal(err)
		}
		hashes = len(inc.Proof)
	}
	b.ReportMetric(size/seq.Seconds(), "appends/s-0-to-100k")
	b.ReportMetric(float64(hashes), "proof-hashes")
	b.ReportMetric(float64(hashes*tlog.HashSize), "proof-bytes")
}
