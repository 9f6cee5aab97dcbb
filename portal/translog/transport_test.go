package translog_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pqrepro/internal/webclient"
	"pqrepro/portal/translog"
)

// TestTransportErrorIsNotAFork serves a real log's files over HTTP with a hash tile broken in
// transit in three ways (cut short, padded past the reader's bound, answered 503) and one
// tampered with: only the tampered tile is reported as an inconsistency; the others are
// errors reading the log (ErrFetch), never a fork.
func TestTransportErrorIsNotAFork(t *testing.T) {
	ctx := context.Background()
	tl := newTestLog(t)
	tl.publish(3)
	if _, err := tl.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	first := readCheckpoint(t, tl)
	tl.publish(300)
	if _, err := tl.log.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	second := readCheckpoint(t, tl)
	seen := &translog.SeenState{Origin: origin, Size: first.Size, Hash: first.Hash}

	mode := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/log/")
		b, err := os.ReadFile(filepath.Join(tl.logDir(), filepath.FromSlash(name)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if !strings.HasPrefix(name, "tile/0/") {
			w.Write(b)
			return
		}
		switch mode {
		case "cut":
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(b)) + "\r\n\r\n")
			buf.Write(b[:len(b)/2])
			buf.Flush()
			conn.Close()
		case "huge":
			w.Write(b)
			w.Write(bytes.Repeat([]byte{0}, translog.MaxFileBytes))
		case "503":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case "tampered":
			b[5] ^= 1
			w.Write(b)
		default:
			w.Write(b)
		}
	}))
	defer srv.Close()
	src := translog.OpenSource(srv.URL + "/log")
	if err := translog.CheckConsistent(ctx, src, seen, second.Checkpoint); err != nil {
		t.Fatalf("served whole: %v", err)
	}
	for _, m := range []string{"cut", "huge", "503"} {
		mode = m
		err := translog.CheckConsistent(ctx, src, seen, second.Checkpoint)
		if err == nil || errors.Is(err, translog.ErrInconsistent) || !errors.Is(err, translog.ErrFetch) {
			t.Errorf("%s: %v; want an error reading the log, not an inconsistency", m, err)
		}
		if m != "503" && !errors.Is(err, webclient.ErrTransport) {
			t.Errorf("%s: %v is not a transport error", m, err)
		}
	}
	mode = "tampered"
	if err := translog.CheckConsistent(ctx, src, seen, second.Checkpoint); !errors.Is(err, translog.ErrInconsistent) {
		t.Errorf("tampered tile: %v, want an inconsistency", err)
	}
}
