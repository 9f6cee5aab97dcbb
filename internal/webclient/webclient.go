// Package webclient makes the HTTP clients pqrepro dials out with (the transparency log's
// readers and witness, bundle submission, the runner's portal client and its firmware
// downloads), so that no request can hang: every connection has a dial and TLS deadline, a
// request may go at most Stall without a byte sent or received once its answer has begun (or
// while its body is sent), answer headers are awaited at most Header, and a whole request at
// most Request. The caller's context still cancels everything at once (Ctrl-C).
//
// Errors keep their cause: a stall wraps ErrStalled, an answer larger than the caller's bound
// wraps ErrTooLarge, and every failure of the exchange itself wraps ErrTransport, so a caller
// can tell "could not read" from "read something wrong".
package webclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrTransport is wrapped by every error of the exchange itself (dial, timeout, stall,
// truncated or oversized answer), as opposed to an answer that was read whole.
var ErrTransport = errors.New("transport error")

// ErrStalled is wrapped when a request went longer than its Stall without a byte.
var ErrStalled = errors.New("the peer stalled")

// ErrTooLarge is wrapped by ReadBody when an answer is larger than its bound.
var ErrTooLarge = errors.New("answer larger than allowed")

// Config bounds a client's requests. Zero fields take the defaults of Default.
type Config struct {
	// Dial bounds connecting (TCP and TLS handshake each).
	Dial time.Duration
	// Header bounds the wait for an answer's headers after the request was sent; 0 leaves it
	// to Request or the caller's context (a long poll sets its own deadline).
	Header time.Duration
	// Stall bounds how long sending the request body or reading the answer may go without a
	// single byte; negative turns it off.
	Stall time.Duration
	// Request bounds a whole request, dial to the answer's last byte; 0 leaves it to the
	// caller's context.
	Request time.Duration
}

// Default is 10 s to connect, 30 s without progress and 30 s for a whole request: what a
// command such as `pqrepro verify --log` uses per request.
var Default = Config{Dial: 10 * time.Second, Header: 30 * time.Second, Stall: 30 * time.Second, Request: 30 * time.Second}

func (c Config) withDefaults() Config {
	if c.Dial <= 0 {
		c.Dial = Default.Dial
	}
	if c.Stall == 0 {
		c.Stall = Default.Stall
	}
	return c
}

// New returns a client bounded by cfg. It is safe for concurrent use and keeps its own
// connection pool.
func New(cfg Config) *http.Client {
	cfg = cfg.withDefaults()
	d := &net.Dialer{Timeout: cfg.Dial, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    cfg.Dial,
		ResponseHeaderTimeout:  cfg.Header,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           16,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
	}
	var rt http.RoundTripper = tr
	if cfg.Stall > 0 {
		rt = &watchdog{base: tr, stall: cfg.Stall}
	}
	return &http.Client{Transport: rt, Timeout: cfg.Request}
}

// Transport marks err (from an http.Client's Do) as a transport error, unless it already is one.
func Transport(err error) error {
	if errors.Is(err, ErrTransport) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTransport, err)
}

// ReadBody reads resp's body whole, at most max bytes. An answer larger than max wraps
// ErrTooLarge, and one cut short (fewer bytes than its Content-Length, a broken chunk, a
// stall) wraps ErrTransport: neither is returned as if it were the whole answer.
func ReadBody(resp *http.Response, max int64) ([]byte, error) {
	if resp.ContentLength > max {
		return nil, fmt.Errorf("%w: %w: %d bytes, at most %d", ErrTransport, ErrTooLarge, resp.ContentLength, max)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read the answer after %d bytes: %w", ErrTransport, len(b), err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: %w: more than %d bytes", ErrTransport, ErrTooLarge, max)
	}
	return b, nil
}

// watchdog is a RoundTripper that cancels a request once it has gone stall without progress:
// while its body is sent, and from its answer's headers until the body is closed.
type watchdog struct {
	base  http.RoundTripper
	stall time.Duration
}

func (w *watchdog) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	g := &guard{stall: w.stall, cancel: cancel}
	g.start()
	r := req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		r.Body = &progressReader{rc: req.Body, g: g, ctx: ctx, sending: true}
	} else {
		g.pause() // nothing to send: the wait for headers is Header's
	}
	resp, err := w.base.RoundTrip(r)
	if err != nil {
		g.stop()
		cause := context.Cause(ctx)
		cancel(nil)
		if errors.Is(cause, ErrStalled) {
			return nil, fmt.Errorf("%w: %w", cause, err)
		}
		return nil, err
	}
	g.kick()
	resp.Body = &progressReader{rc: resp.Body, g: g, ctx: ctx, done: func() { g.stop(); cancel(nil) }}
	return resp, nil
}

// guard is one request's stall timer. While the request body is being sent it runs; once the
// body is sent it pauses (the wait for headers is Header's, or the caller's); from the
// answer's headers it runs again until the body is closed.
type guard struct {
	stall  time.Duration
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (g *guard) start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t = time.AfterFunc(g.stall, func() {
		g.cancel(fmt.Errorf("%w: no byte for %v", ErrStalled, g.stall))
	})
}

func (g *guard) kick() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.t.Reset(g.stall)
	}
}

// pause stops the timer until the next kick (the request body is sent).
func (g *guard) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.t.Stop()
}

func (g *guard) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	g.t.Stop()
}

// progressReader kicks its guard on every byte; a read that fails because the guard fired
// returns the stall as its error.
type progressReader struct {
	rc      io.ReadCloser
	g       *guard
	ctx     context.Context
	sending bool
	done    func()
	once    sync.Once
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.rc.Read(b)
	if n > 0 {
		p.g.kick()
	}
	if err != nil {
		if p.sending && err == io.EOF {
			p.g.pause()
		}
		if cause := context.Cause(p.ctx); errors.Is(cause, ErrStalled) && !errors.Is(err, ErrStalled) {
			// net/http names the cause in its text but does not wrap it.
			err = cause
		}
	}
	return n, err
}

func (p *progressReader) Close() error {
	err := p.rc.Close()
	if p.done != nil {
		p.once.Do(p.done)
	}
	return err
}
