package blob

import (
	"bytes"
	"context"
	"io"
	"testing"

	"pqrepro/portal/blob/s3test"
)

// benchStores runs fn on the folder and on versitygw; every operation's result is checked
// before its time counts.
func benchStores(b *testing.B, fn func(b *testing.B, s Store)) {
	b.Run("folder", func(b *testing.B) {
		s, err := OpenFS(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		fn(b, s)
	})
	b.Run("versitygw", func(b *testing.B) {
		fn(b, openS3Bucket(b, s3test.Start(b)))
	})
}

// BenchmarkPut1MB stores distinct 1 MB blobs.
func BenchmarkPut1MB(b *testing.B) {
	benchStores(b, func(b *testing.B, s Store) {
		data := pattern(1 << 20)
		b.SetBytes(int64(len(data)))
		ctx := context.Background()
		i := 0
		for b.Loop() {
			i++
			data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16) // a new blob each time
			d, n, err := s.Put(ctx, bytes.NewReader(data), 2<<20)
			if err != nil || n != int64(len(data)) || d != digestOf(data) {
				b.Fatalf("put: %s %d %v", d, n, err)
			}
		}
	})
}

// BenchmarkOpen1MB reads one 1 MB blob back whole.
func BenchmarkOpen1MB(b *testing.B) {
	benchStores(b, func(b *testing.B, s Store) {
		data := pattern(1 << 20)
		ctx := context.Background()
		d, _, err := s.Put(ctx, bytes.NewReader(data), 2<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			rc, err := s.Open(ctx, d)
			if err != nil {
				b.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, data) {
				b.Fatalf("read %d bytes: %v", len(got), err)
			}
		}
	})
}
