// Package lockedio holds the two concurrency-safe writers pqrepro needs where a child process,
// a line reader and a driver write to one log at once: a Buffer that can be read while it is
// written, and a Writer that serialises writes to another writer.
package lockedio

import (
	"bytes"
	"io"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers. The zero value is an empty
// buffer. Limit and Tee are set before the first write and not changed after.
type Buffer struct {
	// Limit, when above zero, caps what is kept: once the buffer holds more than Limit bytes,
	// writes are accepted and dropped (a child's chatter kept for an error message must not
	// grow without bound).
	Limit int
	// Tee, when set, is given every write too (before any Limit applies); its errors are
	// ignored, as a log's copy must never fail the write.
	Tee io.Writer

	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Tee != nil {
		b.Tee.Write(p)
	}
	if b.Limit > 0 && b.b.Len() > b.Limit {
		return len(p), nil
	}
	return b.b.Write(p)
}

// WriteString appends s, like Write.
func (b *Buffer) WriteString(s string) (int, error) { return b.Write([]byte(s)) }

// String returns what the buffer holds.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Bytes returns a copy of what the buffer holds.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// Len returns how many bytes the buffer holds.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Len()
}

// Reader serialises reads of R: one stream shared by goroutines (a seeded random stream a
// server's connections draw from) hands each read a run of its own.
type Reader struct {
	R  io.Reader
	mu sync.Mutex
}

// Read reads from R under the lock.
func (r *Reader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.R.Read(p)
}

// Writer serialises writes to W, so lines written from several goroutines never interleave
// within a write.
type Writer struct {
	W  io.Writer
	mu sync.Mutex
}

// Write writes p to W under the lock.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.W.Write(p)
}

// Redirect points the writes from now on at to (a log that moves from an identity's buffer
// to a run's log).
func (w *Writer) Redirect(to io.Writer) {
	w.mu.Lock()
	w.W = to
	w.mu.Unlock()
}
