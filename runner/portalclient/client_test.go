package portalclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
	p := &Client{BaseURL: "http://" + ln.Addr().String(), Timeout: 300 * time.Millisecond}
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
	sp := &Client{BaseURL: srv.URL, Client: webclient.New(webclient.Config{Stall: 200 * time.Millisecond})}
	if _, err := sp.FetchFirmware(context.Background(), "/firmware/x", 1<<20); !errors.Is(err, webclient.ErrStalled) {
		t.Errorf("firmware from a stalling portal: %v, want a stall", err)
	}
}

// TestClientMapsKinds: the client decides by the kind the answer names, never by its
// status code; an answer naming no kind (a proxy's error page) is "unavailable", retryable.
func TestClientMapsKinds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/lease"):
			w.WriteHeader(http.StatusNoContent)
		case strings.HasSuffix(r.URL.Path, "/heartbeat"):
			w.WriteHeader(http.StatusTeapot) // the status is not what decides
			io.WriteString(w, `{"kind":"lease lost","error":"the lease on job 1 expired"}`)
		case strings.HasSuffix(r.URL.Path, "/complete"):
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"kind":"bundle refused","error":"digest mismatch: result.json"}`)
		case strings.HasSuffix(r.URL.Path, "/fail"):
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"kind":"rate limited","error":"slow down"}`)
		case strings.Contains(r.URL.Path, "/log/"):
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `<html>proxy error</html>`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"kind":"unknown runner","error":"enrol again"}`)
		}
	}))
	defer srv.Close()
	p := &Client{BaseURL: srv.URL}
	ctx := context.Background()
	if l, err := p.Lease(ctx, 0); l != nil || err != nil {
		t.Errorf("204 lease: %v %v", l, err)
	}
	if err := p.Heartbeat(ctx, 1, protocol.HeartbeatRequest{}); protocol.KindOf(err) != protocol.KindLeaseLost || !errors.Is(err, protocol.ErrLeaseLost) ||
		!errors.Is(err, protocol.ErrProtocolConflict) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("lease lost: %v", err)
	}
	if _, err := p.Complete(ctx, 1, "L", nil); protocol.KindOf(err) != protocol.KindBundleRefused || !errors.Is(err, protocol.ErrRefused) || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("bundle refused: %v", err)
	}
	if _, err := p.Enrol(ctx, protocol.EnrolRequest{}); protocol.KindOf(err) != protocol.KindUnknownRunner || !errors.Is(err, protocol.ErrProtocolUnauthorized) {
		t.Errorf("unknown runner: %v", err)
	}
	err := p.Fail(ctx, 1, protocol.FailRequest{})
	var re *protocol.RemoteError
	if protocol.KindOf(err) != protocol.KindRateLimited || !errors.As(err, &re) || re.RetryAfter != 7*time.Second || protocol.KindOf(err).Permanent() {
		t.Errorf("rate limited: %v (retry after %v)", err, re)
	}
	if err := p.AppendLog(ctx, 1, "L", 0, []byte("x")); protocol.KindOf(err) != protocol.KindUnavailable || errors.Is(err, protocol.ErrLeaseLost) || protocol.KindOf(err).Permanent() {
		t.Errorf("no kind: %v", err)
	}
}
