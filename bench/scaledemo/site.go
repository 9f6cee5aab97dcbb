package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"pqrepro/internal/lb"
)

// browser is a signed-in administrator's client: a cookie jar (the session and the CSRF
// cookie), redirects not followed, each request pinned to a replica through the balancer.
type browser struct {
	base string
	c    *http.Client
}

func newBrowser(base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request to replica pin (-1: round robin); a form is posted with the CSRF
// cookie's token in X-CSRF-Token, as a script does (the double-submit check compares them).
func (b *browser) do(ctx context.Context, method, path string, pin int, form url.Values) (int, http.Header, string, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		return 0, nil, "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		u, _ := url.Parse(b.base)
		for _, ck := range b.c.Jar.Cookies(u) {
			if ck.Name == "pqrepro_csrf" {
				req.Header.Set("X-CSRF-Token", ck.Value)
			}
		}
	}
	if pin >= 0 {
		req.Header.Set(lb.Pin, strconv.Itoa(pin))
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return 0, nil, "", fmt.Errorf("%s %s (replica %d): %w", method, path, pin, err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, nil, "", fmt.Errorf("%s %s (replica %d): read the answer: %w", method, path, pin, err)
	}
	return resp.StatusCode, resp.Header, string(text), nil
}

// post posts a form and wants a redirect (303); it returns the redirect's location.
func (b *browser) post(ctx context.Context, path string, pin int, form url.Values) (string, error) {
	code, h, body, err := b.do(ctx, http.MethodPost, path, pin, form)
	if err != nil {
		return "", err
	}
	if code != http.StatusSeeOther {
		return "", fmt.Errorf("POST %s (replica %d): %d %s", path, pin, code, snippet(body))
	}
	return h.Get("Location"), nil
}

// get wants 200 and returns the page.
func (b *browser) get(ctx context.Context, path string, pin int) (string, error) {
	code, _, body, err := b.do(ctx, http.MethodGet, path, pin, nil)
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("GET %s (replica %d): %d %s", path, pin, code, snippet(body))
	}
	return body, nil
}

// signIn signs in with the administrator's token: the sign-in page from one replica, the
// form posted to the next (its CSRF cookie is no replica's state).
func (b *browser) signIn(ctx context.Context, token string) error {
	if _, err := b.get(ctx, "/signin", 0); err != nil {
		return err
	}
	if _, err := b.post(ctx, "/signin", 1, url.Values{"token": {token}}); err != nil {
		return fmt.Errorf("sign in as administrator: %w", err)
	}
	if _, err := b.get(ctx, "/admin", 2); err != nil {
		return fmt.Errorf("the session from replica 1 on replica 2: %w", err)
	}
	return nil
}

var enrolTokenRE = regexp.MustCompile(`pqe_[0-9a-f]{48}`)

// enrolToken makes a single-use runner enrolment token through replica pin and reads it on
// the page the next replica shows (it travels in the flash cookie).
func (b *browser) enrolToken(ctx context.Context, label string, pin int) (string, error) {
	if _, err := b.post(ctx, "/admin/enrol-tokens", pin, url.Values{"label": {label}, "uses": {"1"}, "hours": {"2"}}); err != nil {
		return "", err
	}
	page, err := b.get(ctx, "/admin", (pin+1)%3)
	if err != nil {
		return "", err
	}
	tok := enrolTokenRE.FindString(page)
	if tok == "" {
		return "", fmt.Errorf("the admin page after creating enrolment token %q shows no token", label)
	}
	return tok, nil
}

// registerWitness registers a witness's keys with its proof of possession.
func (b *browser) registerWitness(ctx context.Context, ed, ml, proof string, pin int) error {
	code, _, body, err := b.do(ctx, http.MethodPost, "/admin/log/witnesses", pin, url.Values{"ed25519": {ed}, "mldsa44": {ml}, "proof": {proof}})
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("register the witness: %d %s", code, snippet(body))
	}
	return nil
}

var jobLocationRE = regexp.MustCompile(`^/jobs/(\d+)$`)

// queueJob queues the demo experiment on the host board through replica pin and returns
// the job's ID.
func (b *browser) queueJob(ctx context.Context, experiment string, iterations, pin int) (int64, error) {
	loc, err := b.post(ctx, "/experiments/"+experiment+"/jobs", pin, url.Values{"board": {"host"}, "iterations": {strconv.Itoa(iterations)}})
	if err != nil {
		return 0, err
	}
	m := jobLocationRE.FindStringSubmatch(loc)
	if m == nil {
		return 0, fmt.Errorf("queue %s: redirected to %q, not a job", experiment, loc)
	}
	return strconv.ParseInt(m[1], 10, 64)
}

// download fetches path through the balancer.
func download(ctx context.Context, base, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 128<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, snippet(string(b)))
	}
	return b, nil
}

func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
