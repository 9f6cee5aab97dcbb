package runner

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/internal/webclient"
)

// TestPortalClientDeadlines points the runner's portal client at a portal that accepts
// connections and never answers, and at one that stalls halfway through a firmware image:
// every call ends with an unavailable (retryable) error instead of waiting forever.
func TestPortalClientDeadlines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	p := &HTTPPortal{BaseURL: "http://" + ln.Addr().String(), Timeout: 300 * time.Millisecond}
	if _, err := p.Challenge(context.Background(), identity.PurposeSubmitterKeys); protocol.KindOf(err) != protocol.KindUnavailable {
		t.Errorf("challenge to a silent portal: %v, want unavailable", err)
	}
	if _, err := p.Submit(context.Background(), []byte("bundle")); protocol.KindOf(err) != protocol.KindUnavailable {
		t.Errorf("submit to a silent portal: %v, want unavailable", err)
	}
	if _, err := p.FetchFirmware(context.Background(), "/firmware/x", 1<<20); err == nil {
		t.Error("firmware from a silent portal: no error")
	}

	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4096")
		w.Write(make([]byte, 100))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	sp := &HTTPPortal{BaseURL: srv.URL, Client: webclient.New(webclient.Config{Stall: 200 * time.Millisecond})}
	if _, err := sp.FetchFirmware(context.Background(), "/firmware/x", 1<<20); !errors.Is(err, webclient.ErrStalled) {
		t.Errorf("firmware from a stalling portal: %v, want a stall", err)
	}
}
