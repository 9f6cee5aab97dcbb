package lockedio

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestBufferConcurrent: concurrent writers lose no write and never interleave within one.
func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := strings.Repeat(string(rune('a'+g)), 31) + "\n"
			for range 200 {
				b.Write([]byte(line))
				_ = b.Len()
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for _, l := range lines {
		if len(l) != 31 || strings.Count(l, l[:1]) != 31 {
			t.Fatalf("interleaved line %q", l)
		}
	}
}

// TestBufferLimitAndTee: past Limit writes are dropped but still succeed; the tee sees them all.
func TestBufferLimitAndTee(t *testing.T) {
	var tee bytes.Buffer
	b := Buffer{Limit: 10, Tee: &tee}
	for range 5 {
		if n, err := b.Write([]byte("0123456")); n != 7 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if b.Len() != 14 || tee.Len() != 35 {
		t.Fatalf("kept %d bytes (want 14: the write that crossed the limit is kept), tee %d (want 35)", b.Len(), tee.Len())
	}
	got := b.Bytes()
	got[0] = 'x'
	if b.String()[0] != '0' {
		t.Fatal("Bytes returned the buffer itself, not a copy")
	}
}

// TestWriterSerialises: writes through Writer reach W whole.
func TestWriterSerialises(t *testing.T) {
	var out bytes.Buffer
	w := &Writer{W: &out}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				w.Write([]byte("abcdefgh\n"))
			}
		}()
	}
	wg.Wait()
	if out.Len() != 4*100*9 || strings.Count(out.String(), "abcdefgh\n") != 400 {
		t.Fatalf("writes interleaved or lost: %d bytes", out.Len())
	}
}
