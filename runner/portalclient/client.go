// Package portalclient is the runner protocol over HTTP: Client implements protocol.Portal
// against a portal's /api/v1 routes, and serves a community member's tools (NewSubmitter,
// RegisterKeys, Submit). Every error it returns is an *protocol.RemoteError whose kind the
// portal's answer names.
package portalclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"pqrepro/artifacts/protocol"
	"pqrepro/internal/webclient"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FetchFirmware implements FirmwareSource: GET url (relative to BaseURL), at most max bytes.
func (p *Client) FetchFirmware(ctx context.Context, url string, max int64) ([]byte, error) {
	ctx, cancel := p.bound(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(p.BaseURL, "/")+url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch firmware: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch firmware %s: status %d", url, resp.StatusCode)
	}
	data, err := webclient.ReadBody(resp, max)
	if err != nil {
		return nil, fmt.Errorf("fetch firmware %s: %w", url, err)
	}
	return data, nil
}

// Client is the runner protocol over HTTP. It is safe for concurrent use.
type Client struct {
	// BaseURL is the portal's address, e.g. "http://127.0.0.1:8080".
	BaseURL string
	// Client defaults to portalClient: 10 s to connect, 60 s at most without a byte while a
	// body moves, and no overall bound of its own (each call bounds itself; see do).
	Client *http.Client
	// Timeout bounds a call whose context has no deadline of its own (default 5 min: a
	// bundle upload over a slow link; a call that stalls ends sooner, at the stall bound).
	Timeout time.Duration

	mu    sync.Mutex
	token string
}

var _ protocol.Portal = (*Client)(nil)

// portalClient is the runner's default HTTP client (shared: one connection pool).
var portalClient = webclient.New(webclient.Config{Stall: time.Minute})

func (p *Client) client() *http.Client {
	if p.Client != nil {
		return p.Client
	}
	return portalClient
}

// bound gives ctx the call deadline p.Timeout (default 5 minutes) unless it has one.
func (p *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	d := p.Timeout
	if d <= 0 {
		d = 5 * time.Minute
	}
	return context.WithTimeout(ctx, d)
}

// do sends a request and decodes a JSON answer into out (when not nil). Status 204 returns
// (false, nil). Every error is an *protocol.RemoteError: its kind is the one the portal's
// answer names (ProtocolError.Kind), KindUnavailable when the portal could not be reached or
// its answer names none; the status code is not interpreted.
func (p *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string, header map[string]string, out any) (bool, error) {
	op := method + " " + strings.SplitN(path, "?", 2)[0]
	ctx, cancel := p.bound(ctx)
	defer cancel()
	unavailable := func(msg string, err error) error {
		return &protocol.RemoteError{Op: op, Kind: protocol.KindUnavailable, Message: msg, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(p.BaseURL, "/")+path, body)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	p.mu.Lock()
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	p.mu.Unlock()
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := p.client().Do(req)
	if err != nil {
		return false, unavailable(err.Error(), err)
	}
	defer resp.Body.Close()
	data, err := webclient.ReadBody(resp, 4<<20)
	if err != nil {
		return false, unavailable("read answer: "+err.Error(), err)
	}
	if resp.StatusCode == http.StatusNoContent {
		return false, nil
	}
	if resp.StatusCode >= 300 {
		var pe protocol.ProtocolError
		if json.Unmarshal(data, &pe) != nil || pe.Kind == "" {
			msg := strings.TrimSpace(string(data))
			if len(msg) > 200 {
				msg = msg[:200] + "…"
			}
			return false, unavailable(fmt.Sprintf("the answer (status %d) names no error kind: %s", resp.StatusCode, msg), nil)
		}
		re := &protocol.RemoteError{Op: op, Kind: protocol.ErrorKind(pe.Kind), Message: pe.Error}
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			re.RetryAfter = time.Duration(secs) * time.Second
		}
		return false, re
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return false, unavailable("decode answer: "+err.Error(), err)
		}
	}
	return true, nil
}

func (p *Client) doJSON(ctx context.Context, method, path string, in, out any) (bool, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return false, err
	}
	return p.do(ctx, method, path, bytes.NewReader(b), "application/json", nil, out)
}

// Challenge implements Portal.
func (p *Client) Challenge(ctx context.Context, purpose string) (protocol.ChallengeResponse, error) {
	var resp protocol.ChallengeResponse
	_, err := p.doJSON(ctx, http.MethodPost, protocol.RouteChallenge, protocol.ChallengeRequest{Purpose: purpose}, &resp)
	return resp, err
}

// Enrol implements Portal and keeps the runner token for later calls.
func (p *Client) Enrol(ctx context.Context, req protocol.EnrolRequest) (protocol.EnrolResponse, error) {
	var resp protocol.EnrolResponse
	if _, err := p.doJSON(ctx, http.MethodPost, protocol.RouteEnrol, req, &resp); err != nil {
		return resp, err
	}
	p.mu.Lock()
	p.token = resp.RunnerToken
	p.mu.Unlock()
	return resp, nil
}

// Lease implements Portal.
func (p *Client) Lease(ctx context.Context, wait time.Duration) (*protocol.Lease, error) {
	rctx, cancel := context.WithTimeout(ctx, wait+30*time.Second)
	defer cancel()
	var l protocol.Lease
	got, err := p.do(rctx, http.MethodPost, protocol.RouteLease+"?wait="+url.QueryEscape(strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)), nil, "", nil, &l)
	if err != nil || !got {
		return nil, err
	}
	return &l, nil
}

// Heartbeat implements Portal.
func (p *Client) Heartbeat(ctx context.Context, jobID int64, req protocol.HeartbeatRequest) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := p.doJSON(rctx, http.MethodPost, protocol.ProtocolPath(protocol.RouteHeartbeat, jobID), req, nil)
	return err
}

// AppendLog implements Portal.
func (p *Client) AppendLog(ctx context.Context, jobID int64, leaseID string, index int, chunk []byte) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := p.do(rctx, http.MethodPut, protocol.ProtocolPath(protocol.RouteLog, jobID, index), bytes.NewReader(chunk), "text/plain; charset=utf-8",
		map[string]string{protocol.ProtocolHeaderLease: leaseID}, nil)
	return err
}

// Complete implements Portal.
func (p *Client) Complete(ctx context.Context, jobID int64, leaseID string, bundle []byte) (protocol.CompleteResponse, error) {
	var resp protocol.CompleteResponse
	_, err := p.do(ctx, http.MethodPost, protocol.ProtocolPath(protocol.RouteComplete, jobID), bytes.NewReader(bundle), "application/gzip",
		map[string]string{protocol.ProtocolHeaderLease: leaseID}, &resp)
	return resp, err
}

// Fail implements Portal.
func (p *Client) Fail(ctx context.Context, jobID int64, req protocol.FailRequest) error {
	_, err := p.doJSON(ctx, http.MethodPost, protocol.ProtocolPath(protocol.RouteFail, jobID), req, nil)
	return err
}

// Token is the runner token the last enrolment returned ("" before one).
func (p *Client) Token() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.token
}

// SetToken makes the client use a runner token obtained elsewhere (another client's
// enrolment, a saved token).
func (p *Client) SetToken(tok string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token = tok
}
