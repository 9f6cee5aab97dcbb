package portal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/portal/fault"
)

// Budget is one rate limit: a token bucket per client address that refills at PerSecond and
// holds at most Burst requests. A zero Burst disables the limit.
type Budget struct {
	PerSecond float64
	Burst     int
}

// RateLimits are the budgets per kind of route, each counted apart per client address.
type RateLimits struct {
	// SignIn counts POST /signin.
	SignIn Budget
	// Enrol counts runner enrolments and proof-of-possession challenges, per client.
	Enrol Budget
	// EnrolNetwork counts the same per network (an IPv4 /24, an IPv6 /48), so that the
	// outstanding challenges the store holds cannot be exhausted from the many addresses one
	// network has.
	EnrolNetwork Budget
	// Submit counts community submissions and key registrations (API and forms).
	Submit Budget
	// Runner counts every bearer-authenticated runner route (lease, heartbeat, log,
	// complete, fail).
	Runner Budget
}

// DefaultRateLimits are far above what a person or a runner needs (a runner sends a heartbeat
// every two seconds and a log chunk every second; several runners may share one address) and
// low enough that guessing tokens or flooding the store from one address goes nowhere.
func DefaultRateLimits() RateLimits {
	return RateLimits{
		SignIn: Budget{PerSecond: 2, Burst: 20},
		Enrol:  Budget{PerSecond: 0.5, Burst: 20},
		// 8 clients' worth: a lab's runners behind one network still enrol.
		EnrolNetwork: Budget{PerSecond: 4, Burst: 160},
		Submit:       Budget{PerSecond: 2, Burst: 30},
		Runner:       Budget{PerSecond: 50, Burst: 200},
	}
}

func (b Budget) validate(name string) error {
	if b.Burst < 0 || b.PerSecond < 0 || math.IsNaN(b.PerSecond) || math.IsInf(b.PerSecond, 0) || (b.Burst > 0 && b.PerSecond == 0) {
		return fmt.Errorf("rate limit %s: burst and rate must be positive (a zero burst disables it)", name)
	}
	return nil
}

// limiter is a set of token buckets by key, safe for concurrent use. At most maxKeys buckets
// are held; full buckets (clients idle long enough) are dropped first.
type limiter struct {
	budget Budget
	now    func() time.Time
	// take, when set, spends the budget in buckets the store keeps (shared by every portal
	// process on the database); the local buckets stand in only while the store fails.
	take func(ctx context.Context, key string) (bool, time.Duration, error)
	log  *slog.Logger

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

const maxLimiterKeys = 100_000

func newLimiter(b Budget) *limiter {
	return &limiter{budget: b, now: time.Now, buckets: map[string]*bucket{}}
}

// allow takes one token for key; when none is left it returns false and how long until one is.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l.budget.Burst == 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxLimiterKeys {
			l.prune(now)
		}
		b = &bucket{tokens: float64(l.budget.Burst), at: now}
		l.buckets[key] = b
	}
	b.tokens = min(float64(l.budget.Burst), b.tokens+now.Sub(b.at).Seconds()*l.budget.PerSecond)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.budget.PerSecond * float64(time.Second))
}

// tokenBuckets are rate-limit buckets kept in the store, shared by the processes on it.
type tokenBuckets interface {
	TakeToken(ctx context.Context, key string, perSecond float64, burst int, now time.Time) (ok bool, wait time.Duration, err error)
}

// shareIn makes the limiter spend its budget in the store's buckets, named class|address.
func (l *limiter) shareIn(st tokenBuckets, class string, log *slog.Logger) {
	l.log = log
	l.take = func(ctx context.Context, key string) (bool, time.Duration, error) {
		return st.TakeToken(ctx, class+"|"+key, l.budget.PerSecond, l.budget.Burst, l.now())
	}
}

// allowCtx is allow through the store's buckets when the limiter shares them.
func (l *limiter) allowCtx(ctx context.Context, key string) (bool, time.Duration) {
	if l.take != nil && l.budget.Burst > 0 {
		ok, wait, err := l.take(ctx, key)
		if err == nil {
			return ok, wait
		}
		l.log.Warn("shared rate limit failed; counting in this process", "err", err)
	}
	return l.allow(key)
}

// prune drops buckets that have refilled completely; if none has, it drops half of them.
func (l *limiter) prune(now time.Time) {
	full := time.Duration(float64(l.budget.Burst) / l.budget.PerSecond * float64(time.Second))
	for k, b := range l.buckets {
		if now.Sub(b.at) >= full {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxLimiterKeys {
		i := 0
		for k := range l.buckets {
			if i%2 == 0 {
				delete(l.buckets, k)
			}
			i++
		}
	}
}

// rateLimit refuses a request with 429 and Retry-After once its client has spent the budget
// of its kind of route (class gives the kind by method and route pattern, "" for routes
// without a limit), and, for a kind with a network budget (networks: class → the class of its
// network limiter), once its network has. A client is its address, an IPv6 one its /64 (one
// host or one LAN: a host picks addresses in its /64 freely); a network is an IPv4 /24 or an
// IPv6 /48. It runs before anything reads the body or the database.
func rateLimit(class func(method, route string) string, limiters map[string]*limiter, networks map[string]string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			k := class(c.Request().Method, c.Path())
			l := limiters[k]
			if l == nil {
				return next(c)
			}
			ip := c.RealIP()
			ok, wait := l.allowCtx(c.Request().Context(), addrKey(ip, 32, 64))
			if nl := limiters[networks[k]]; ok && nl != nil {
				ok, wait = nl.allowCtx(c.Request().Context(), addrKey(ip, 24, 48))
			}
			if !ok {
				secs := max(int(math.Ceil(wait.Seconds())), 1)
				c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
				return fault.New(fault.RateLimited, "too many requests from this address: try again in %d s", secs)
			}
			return next(c)
		}
	}
}

// addrKey is the rate-limit key of a client address: its prefix of v4 bits (IPv4) or v6 bits
// (IPv6), in canonical form; a string that is no address is its own key.
func addrKey(ip string, v4, v6 int) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap().WithZone("")
	bits := v6
	if a.Is4() {
		bits = v4
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// ParseTrustedProxies parses CIDRs (or single addresses) of reverse proxies whose forwarded
// headers are believed.
func ParseTrustedProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("trusted proxy %q: not an address or CIDR", s))
				continue
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("trusted proxy %q: %w", s, err))
			continue
		}
		out = append(out, p.Masked())
	}
	return out, errors.Join(errs...)
}

// clientIP returns echo's IP extractor for the portal: the TCP peer's address, unless the peer
// is a trusted proxy; then the right-most address in X-Forwarded-For that is not itself a
// trusted proxy (what the nearest trusted proxy saw), else X-Real-IP, else the peer. A
// forwarded header from anyone else is ignored, so a client cannot choose its own address.
func clientIP(trusted []netip.Prefix) echo.IPExtractor {
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a.Unmap()) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) string {
		var peer netip.Addr
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			peer = ap.Addr()
		} else {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if err != nil {
				host = r.RemoteAddr
			}
			if peer, err = netip.ParseAddr(host); err != nil {
				return host
			}
		}
		if !isTrusted(peer) {
			return peer.Unmap().String() // canonical, so one client is one key however written
		}
		if xff := r.Header.Values(echo.HeaderXForwardedFor); len(xff) > 0 {
			hops := strings.Split(strings.Join(xff, ","), ",")
			for i := len(hops) - 1; i >= 0; i-- {
				a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
				if err != nil {
					break // a malformed hop: what lies left of it cannot be told apart from forgery
				}
				if !isTrusted(a) {
					return a.Unmap().String()
				}
			}
		}
		if a, err := netip.ParseAddr(strings.TrimSpace(r.Header.Get(echo.HeaderXRealIP))); err == nil {
			return a.Unmap().String()
		}
		return peer.Unmap().String()
	}
}

// bodyLimit refuses request bodies larger than the route's limit (limits by method and route
// pattern; fallback for every other route) with 413 before anything reads them, and bounds
// what a handler can read to the same. It runs before the CSRF check, which parses forms.
func bodyLimit(limits map[string]int64, fallback int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			n, ok := limits[c.Request().Method+" "+c.Path()]
			if !ok {
				n = fallback
			}
			req := c.Request()
			if req.ContentLength > n {
				return fault.New(fault.TooLarge, "the request body is larger than this route accepts (%s)", bytesHuman(n))
			}
			req.Body = http.MaxBytesReader(c.Response(), req.Body, n)
			return next(c)
		}
	}
}
