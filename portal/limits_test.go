package portal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// signinTries posts n sign-ins from this process (one TCP peer), the i-th claiming to come
// from forwarded(i), and counts the answers refused by the rate limit (429 with Retry-After).
func signinTries(t *testing.T, p *portaltest.Portal, n int, forwarded func(i int) string) (limited int) {
	t.Helper()
	for i := range n {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/signin", strings.NewReader(url.Values{"token": {"guess"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", forwarded(i))
		req.Header.Set("X-Real-IP", forwarded(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			limited++
		}
	}
	return limited
}

func spoofed(i int) string { return fmt.Sprintf("203.0.%d.%d", i/250, i%250+1) }

// TestSpoofedForwardedAddressesAreOneClient: 200 sign-ins from one peer, each with another
// forwarded address, are limited as one client; behind a configured trusted proxy the
// forwarded addresses are the clients, counted apart (and one of them alone is limited).
func TestSpoofedForwardedAddressesAreOneClient(t *testing.T) {
	p := portaltest.Start(t, nil)
	burst := p.Config.RateLimits.SignIn.Burst
	if got := signinTries(t, p, 200, spoofed); got < 200-burst-20 {
		t.Errorf("%d of 200 spoofed sign-ins limited; the peer's budget is %d", got, burst)
	}

	trusted := portaltest.Start(t, func(c *portal.Config) { c.TrustedProxies = []string{"127.0.0.1/32"} })
	if got := signinTries(t, trusted, 200, spoofed); got != 0 {
		t.Errorf("%d of 200 sign-ins from distinct clients behind a trusted proxy were limited", got)
	}
	if got := signinTries(t, trusted, 60, func(int) string { return "198.51.100.7" }); got == 0 {
		t.Error("one client behind the trusted proxy was never limited")
	}
	// A client cannot prepend addresses: the right-most untrusted hop counts.
	if got := signinTries(t, trusted, 60, func(i int) string { return spoofed(i) + ", 198.51.100.8" }); got == 0 {
		t.Error("a client escaped its budget by prepending forwarded addresses")
	}
}

// TestEveryBudgetIsItsOwn: enrolment, submission and the runner's bearer routes are limited,
// each apart; the runner's client sees the kind "rate limited" and the Retry-After.
func TestEveryBudgetIsItsOwn(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) {
		c.RateLimits.Enrol = portal.Budget{PerSecond: 0.01, Burst: 4} // two enrolments: a challenge and an enrol each
		c.RateLimits.Runner = portal.Budget{PerSecond: 0.01, Burst: 3}
		c.RateLimits.Submit = portal.Budget{PerSecond: 0.01, Burst: 2}
	})
	ctx := context.Background()
	r := enrol(t, p, "one")
	enrol(t, p, "two")
	id, _ := identity.GenerateIdentity()
	_, err := r.client.Enrol(ctx, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: "three", PublicKeys: id.Public()})
	if protocol.KindOf(err) != protocol.KindRateLimited {
		t.Fatalf("third enrolment: %v", err)
	}
	var re *protocol.RemoteError
	if !errors.As(err, &re) || re.RetryAfter < time.Second {
		t.Errorf("no Retry-After on %v", err)
	}
	// The runner's budget is untouched by enrolments: three requests pass, the fourth is limited.
	for i := range 4 {
		_, err := r.client.Lease(ctx, 0)
		if want := i == 3; (protocol.KindOf(err) == protocol.KindRateLimited) != want {
			t.Errorf("lease %d: %v", i, err)
		}
	}
	sub := func() int {
		req, _ := http.NewRequest(http.MethodPost, p.URL+protocol.RouteSubmissions, strings.NewReader("x"))
		req.Header.Set("Authorization", "Bearer nobody")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b, c := sub(), sub(), sub(); a != http.StatusUnauthorized || b != http.StatusUnauthorized || c != http.StatusTooManyRequests {
		t.Errorf("submissions: %d %d %d, want 401 401 429", a, b, c)
	}
}

// TestSlowBodyClientsAreCutOff: 100 connections that send headers and then trickle a body
// are closed by the read timeout; a normal request meanwhile succeeds.
func TestSlowBodyClientsAreCutOff(t *testing.T) {
	const timeout = time.Second
	p := portaltest.Start(t, func(c *portal.Config) { c.ReadTimeout = timeout })
	addr := strings.TrimPrefix(p.URL, "http://")
	var conns []net.Conn
	for range 100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nobody\r\nContent-Length: 1000000\r\n\r\nx", protocol.RouteSubmissions)
		conns = append(conns, c)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a byte a while on every connection, as a slow-body client does
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			for _, c := range conns {
				c.Write([]byte("x"))
			}
		}
	}()
	resp, err := http.Get(p.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a normal request beside 100 slow ones: %v %v", resp, err)
	}
	resp.Body.Close()
	closed := 0
	for _, c := range conns {
		// Wait well past the read timeout: the server must have answered or closed by then.
		c.SetReadDeadline(time.Now().Add(timeout + 5*time.Second))
		_, err := io.ReadAll(bufio.NewReader(c))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue // still open past the read timeout
		}
		closed++
	}
	close(stop)
	wg.Wait()
	if closed != len(conns) {
		t.Errorf("%d of %d slow-body connections were still open %v after the read timeout", len(conns)-closed, len(conns), 5*time.Second)
	}
}

// TestNegativeProgressIsRefused: a heartbeat reporting −5 of −1 cells is invalid input and
// nothing of it is stored; a valid one is.
func TestNegativeProgressIsRefused(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	jobID := queueJob(t, p, smallManifest(t, 2))
	r := enrol(t, p, "lab")
	l, err := r.client.Lease(ctx, 0)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	for _, bad := range []protocol.Progress{
		{CellsDone: -5, CellsTotal: -1},
		{CellsDone: 10, CellsTotal: 9},
		{CellsDone: 1, CellsTotal: 9, Iteration: 101, Requested: 100},
		{CellsDone: 1, CellsTotal: 9, Current: strings.Repeat("x", 10000)},
	} {
		err := r.client.Heartbeat(ctx, jobID, protocol.HeartbeatRequest{LeaseID: l.LeaseID, Progress: bad})
		if protocol.KindOf(err) != protocol.KindInvalid || !strings.Contains(err.Error(), "progress") {
			t.Errorf("progress %+v: %v", bad, err)
		}
		j, err := p.Server.Store().Job(ctx, jobID)
		if err != nil {
			t.Fatal(err)
		}
		if j.Progress != (protocol.Progress{}) {
			t.Fatalf("invalid progress stored: %+v", j.Progress)
		}
	}
	good := protocol.Progress{CellsDone: 3, CellsTotal: 9, Iteration: 5, Requested: 10, Current: "ML-KEM-768 encaps"}
	if err := r.client.Heartbeat(ctx, jobID, protocol.HeartbeatRequest{LeaseID: l.LeaseID, Progress: good}); err != nil {
		t.Fatal(err)
	}
	if j, _ := p.Server.Store().Job(ctx, jobID); j.Progress != good {
		t.Errorf("valid progress not stored: %+v", j.Progress)
	}
}

// TestLogIsBounded: a runner sending far more log than the limits keeps the run header and
// the most recent output, the middle dropped with a marker; the page and its JSON serve a
// bounded head and tail; a poll with the last position gets only what is new; an index out of
// range and a retried dropped chunk are not stored.
func TestLogIsBounded(t *testing.T) {
	lim := store.LogLimits{AttemptBytes: 64 << 10, JobBytes: 96 << 10, HeadBytes: 4 << 10, MaxChunks: 50, MaxIndex: 1000}
	p := portaltest.Start(t, func(c *portal.Config) {
		c.Logs = lim
		c.RateLimits.Runner = portal.Budget{PerSecond: 1000, Burst: 1000} // 200 chunks at once; the log limits are under test
	})
	ctx := context.Background()
	jobID := queueJob(t, p, smallManifest(t, 2))
	r := enrol(t, p, "lab")
	l, err := r.client.Lease(ctx, 0)
	if err != nil || l == nil {
		t.Fatal(err)
	}
	chunk := func(i int) []byte {
		if i == 0 {
			return []byte("RUN HEADER: pqrepro test\n")
		}
		return []byte(fmt.Sprintf("line %04d %s\n", i, strings.Repeat("x", 2000)))
	}
	sent := 0
	for i := range 200 {
		if err := r.client.AppendLog(ctx, jobID, l.LeaseID, i, chunk(i)); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		sent += len(chunk(i))
	}
	v, err := p.Server.Store().JobLogView(ctx, jobID, 0, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(v.Text)) > lim.AttemptBytes+100 || v.Omitted < int64(sent)-lim.AttemptBytes-100 || v.End != int64(sent) {
		t.Fatalf("stored %d bytes (omitted %d, end %d) of %d sent; the limit is %d", len(v.Text), v.Omitted, v.End, sent, lim.AttemptBytes)
	}
	for _, want := range []string{"RUN HEADER", "line 0199", "bytes dropped"} {
		if !strings.Contains(v.Text, want) {
			t.Errorf("stored log lacks %q", want)
		}
	}
	// A retried chunk that was dropped is not stored again; an index beyond the limit is invalid.
	if err := r.client.AppendLog(ctx, jobID, l.LeaseID, 5, chunk(5)); err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Server.Store().JobLogView(ctx, jobID, 0, 1<<30, 1<<30); strings.Contains(again.Text, "line 0005") {
		t.Error("a dropped chunk came back when retried")
	}
	if err := r.client.AppendLog(ctx, jobID, l.LeaseID, 1000, []byte("x")); protocol.KindOf(err) != protocol.KindInvalid {
		t.Errorf("index 1000 of 1000: %v", err)
	}

	// The page and its JSON: head and tail, bounded by bytes.
	getJSON := func(q string) map[string]any {
		resp, err := http.Get(fmt.Sprintf("%s/jobs/%d.json%s", p.URL, jobID, q))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	full := getJSON("")
	text, _ := full["log"].(string)
	if !strings.HasPrefix(text, "RUN HEADER") || !strings.Contains(text, "line 0199") || len(text) > 81<<10 {
		t.Errorf("job JSON log: %d bytes, header %v", len(text), strings.HasPrefix(text, "RUN HEADER"))
	}
	end := int64(full["logEnd"].(float64))
	if err := r.client.AppendLog(ctx, jobID, l.LeaseID, 200, []byte("the newest line\n")); err != nil {
		t.Fatal(err)
	}
	poll := getJSON(fmt.Sprintf("?after=%d&attempt=%v", end, full["logAttempt"]))
	if poll["logAppend"] != "the newest line\n" || poll["log"] != nil {
		t.Errorf("poll after %d: %v", end, poll)
	}
	if stale := getJSON(fmt.Sprintf("?after=%d&attempt=7", end)); stale["logReset"] != true || stale["log"] == nil {
		t.Errorf("poll of another attempt did not reset: %v", stale["logReset"])
	}
	resp, err := http.Get(fmt.Sprintf("%s/jobs/%d", p.URL, jobID))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "RUN HEADER") || !strings.Contains(string(page), "the newest line") || len(page) > 120<<10 {
		t.Errorf("job page: %d bytes", len(page))
	}
}
