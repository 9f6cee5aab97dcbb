package main

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// silentLog accepts connections and never answers; it returns its URL as `serve` prints a
// log's ("http://HOST:PORT/log").
func silentLog(t *testing.T) string {
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
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/log"
}

// stallingLog answers every request with headers and a few bytes, then nothing.
func stallingLog(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "500")
		w.Write([]byte("pqrepro.example/log\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL + "/log"
}

// TestVerifyLogNeverHangs runs `verify --log` against a log that never answers and one that
// stalls mid-answer: each ends with a transport error (never a verdict on the log), at the
// request bound or the whole check's bound, and an interrupted check exits 130.
func TestVerifyLogNeverHangs(t *testing.T) {
	bundle, _ := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	// Any well-formed log key: nothing is verified before the first answer.
	_, logKey, err := note.GenerateKey(rand.Reader, "pqrepro.example/log")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "seen.json")
	for _, tc := range []struct {
		name, url string
		args      []string
		want      string
	}{
		{"silent, request bound", silentLog(t), []string{"--request-timeout", "300ms"}, "transport error"},
		{"silent, whole bound", silentLog(t), []string{"--request-timeout", "1h", "--log-timeout", "300ms"}, "--log-timeout 300ms"},
		{"stalled", stallingLog(t), []string{"--request-timeout", "300ms"}, "transport error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"verify", bundle, "--log", tc.url, "--log-key", logKey, "--log-state", state}, tc.args...)
			code, out, errOut := pq(t, args...)
			low := strings.ToLower(errOut)
			timedOut := strings.Contains(low, "timeout") || strings.Contains(low, "deadline exceeded") || strings.Contains(low, "stalled")
			if code != 1 || !strings.Contains(errOut, tc.want) || !timedOut || strings.Contains(errOut, "FAILED") || strings.Contains(out, "VERIFIED") {
				t.Fatalf("exit %d, want 1 with %q and no verdict on the log:\n%s%s", code, tc.want, out, errOut)
			}
			t.Logf("%s", errOut)
		})
	}
	t.Run("interrupted", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(200 * time.Millisecond); cancel() }()
		var out, errOut strings.Builder
		code := run(ctx, []string{"verify", bundle, "--log", silentLog(t), "--log-key", logKey, "--log-state", state}, &out, &errOut)
		if code != 130 || !strings.Contains(errOut.String(), "interrupted") {
			t.Fatalf("exit %d, want 130:\n%s%s", code, out.String(), errOut.String())
		}
	})
}
