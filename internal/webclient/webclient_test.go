package webclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentServer accepts connections and reads what is sent, but never answers; it returns its
// URL. Connections are closed when the test ends.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String()
}

// stallingServer answers with headers and the first bytes of a body it never finishes.
func stallingServer(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("the first bytes"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL
}

func get(ctx context.Context, c *http.Client, url string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, Transport(err)
	}
	defer resp.Body.Close()
	return ReadBody(resp, max)
}

func TestServerThatNeverAnswers(t *testing.T) {
	url := silentServer(t)
	c := New(Config{Header: 200 * time.Millisecond, Stall: time.Hour, Request: time.Hour})
	_, err := get(context.Background(), c, url, 1<<10)
	var ne net.Error
	if !errors.Is(err, ErrTransport) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a server that never answers: %v, want a transport timeout", err)
	}
	// The whole-request bound holds too when no header bound is set.
	c = New(Config{Stall: -1, Request: 200 * time.Millisecond})
	if _, err := get(context.Background(), c, url, 1<<10); !errors.Is(err, ErrTransport) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("request bound: %v", err)
	}
}

func TestServerThatStalls(t *testing.T) {
	url := stallingServer(t)
	c := New(Config{Header: time.Hour, Stall: 200 * time.Millisecond})
	b, err := get(context.Background(), c, url, 1<<20)
	if !errors.Is(err, ErrStalled) || !errors.Is(err, ErrTransport) || b != nil {
		t.Fatalf("a server that stalls mid-body: %q, %v; want a stall", b, err)
	}
	if !strings.Contains(err.Error(), "no byte for 200ms") {
		t.Errorf("the stall is not named: %v", err)
	}
}

// TestCancelledAtOnce cancels a request waiting on a stalled server: the caller's
// cancellation ends it with context.Canceled, not after the stall bound.
func TestCancelledAtOnce(t *testing.T) {
	url := stallingServer(t)
	c := New(Config{Header: time.Hour, Stall: time.Hour, Request: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if _, err := get(ctx, c, url, 1<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
}

func TestTruncatedAndOversized(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cut":
			// Promise 100 bytes, send 10, drop the connection.
			hj, _ := w.(http.Hijacker)
			conn, buf, _ := hj.Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
			buf.Flush()
			conn.Close()
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 2048))
		case "/big-chunked":
			for range 4 {
				w.Write(bytes.Repeat([]byte("x"), 600))
				w.(http.Flusher).Flush()
			}
		default:
			w.Write([]byte("whole"))
		}
	}))
	defer srv.Close()
	c := New(Default)
	ctx := context.Background()
	if b, err := get(ctx, c, srv.URL+"/cut", 1<<10); err == nil || !errors.Is(err, ErrTransport) {
		t.Errorf("a truncated answer was read as %q, %v", b, err)
	}
	for _, p := range []string{"/big", "/big-chunked"} {
		if b, err := get(ctx, c, srv.URL+p, 1<<10); !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrTransport) {
			t.Errorf("%s: an answer over the bound was read as %d bytes, %v", p, len(b), err)
		}
	}
	if b, err := get(ctx, c, srv.URL+"/ok", 1<<10); err != nil || string(b) != "whole" {
		t.Errorf("a whole answer: %q, %v", b, err)
	}
}

// TestUploadStall sends a large body to a server that stops reading it: once the socket's
// buffers are full nothing moves, and the stall bound ends the request.
func TestUploadStall(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c := New(Config{Header: time.Hour, Stall: 300 * time.Millisecond})
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(make([]byte, 256<<20)))
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("a stalled upload: %v, want a stall", err)
	}
}

// TestLongAnswerWithinStall reads a slow but steady answer whose total time exceeds the
// stall bound: progress keeps it alive.
func TestLongAnswerWithinStall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for range 6 {
			w.Write([]byte("tick\n"))
			w.(http.Flusher).Flush()
			time.Sleep(60 * time.Millisecond)
		}
	}))
	defer srv.Close()
	c := New(Config{Header: time.Hour, Stall: 150 * time.Millisecond})
	b, err := get(context.Background(), c, srv.URL, 1<<10)
	if err != nil || strings.Count(string(b), "tick") != 6 {
		t.Fatalf("a steady answer: %q, %v", b, err)
	}
}
