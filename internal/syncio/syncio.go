// Package syncio provides the one writer that several goroutines may write to at once (a
// board's line reader, an emulator's output and a driver all writing one log): each Write goes
// whole to the writer's buffer, its copy target, or both.
package syncio

import (
	"bytes"
	"io"
	"sync"
)

// Writer serialises writes. A Writer from NewBuffer keeps what is written (at most max bytes;
// later writes are dropped) for Bytes and String; one from NewWriter keeps nothing. Either
// copies every write to its target (SetTo), when it has one; a target's error is the Write's
// only when nothing is buffered. Safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	buffer bool
	max    int
	to     io.Writer
}

// NewBuffer returns a Writer that keeps at most max bytes (0: no bound) and copies every write
// to tee when tee is not nil.
func NewBuffer(max int, tee io.Writer) *Writer { return &Writer{buffer: true, max: max, to: tee} }

// NewWriter returns a Writer that passes every write to to.
func NewWriter(to io.Writer) *Writer { return &Writer{to: to} }

// SetTo points the writes from now on at to.
func (w *Writer) SetTo(to io.Writer) {
	w.mu.Lock()
	w.to = to
	w.mu.Unlock()
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.buffer {
		return w.to.Write(p)
	}
	if w.to != nil {
		w.to.Write(p)
	}
	if w.max > 0 && w.buf.Len() > w.max {
		return len(p), nil
	}
	return w.buf.Write(p)
}

// Bytes is a copy of what the buffer holds.
func (w *Writer) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

// String is what the buffer holds.
func (w *Writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
