// Package lb is a small round-robin HTTP load balancer for portal replicas, as the tests and
// the scale demonstration put in front of several `pqrepro serve` processes. Each request
// goes to the next replica; a replica that refuses the connection (it is down) is skipped
// and the request goes to the next one, which is safe for any method because nothing reached
// the dead replica. An answer that was cut off mid-way is not retried: the client sees the
// error, as it would behind any load balancer.
package lb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"syscall"
)

// MaxBody is the largest request body the balancer forwards (above the portal's bundle limit).
const MaxBody = 80 << 20

// Pin is a request header naming the replica (by index) that must answer, for tests.
const Pin = "X-Pqrepro-Replica"

// Balancer spreads requests over replicas. It is safe for concurrent use.
type Balancer struct {
	backends []*url.URL
	next     atomic.Uint64
	proxy    *httputil.ReverseProxy
	// Served counts the answers of each replica.
	served []atomic.Int64
}

type ctxKey struct{}

// New returns a balancer over the replicas' base URLs.
func New(replicas ...string) (*Balancer, error) {
	b := &Balancer{served: make([]atomic.Int64, len(replicas))}
	for _, r := range replicas {
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("replica %q: not a URL", r)
		}
		b.backends = append(b.backends, u)
	}
	if len(b.backends) == 0 {
		return nil, errors.New("no replicas")
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{}).DialContext,
		MaxIdleConnsPerHost: 64,
	}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := pr.In.Context().Value(ctxKey{}).(*url.URL)
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // the portal sees the address the client used
			pr.SetXForwarded()
		},
		Transport:     tr,
		FlushInterval: -1,
	}
	return b, nil
}

// ServeHTTP sends the request to the next replica that accepts the connection.
func (b *Balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := len(b.backends)
	start := int(b.next.Add(1) % uint64(n))
	if p := r.Header.Get(Pin); p != "" {
		i, err := strconv.Atoi(p)
		if err != nil || i < 0 || i >= n {
			http.Error(w, "no such replica", http.StatusBadRequest)
			return
		}
		start, n = i, 1
	}
	// The body is kept, so a request a dead replica refused can go to the next one (a
	// transport closes the body it was given, sent or not).
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(io.LimitReader(r.Body, MaxBody+1)); err != nil {
			http.Error(w, "read the request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > MaxBody {
			http.Error(w, "request body too large for the balancer", http.StatusRequestEntityTooLarge)
			return
		}
	}
	for k := 0; k < n; k++ {
		i := (start + k) % len(b.backends)
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		refused := false
		rw := &refusalCatcher{ResponseWriter: w}
		proxy := *b.proxy
		proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, syscall.ECONNREFUSED) && k < n-1 {
				refused = true
				return
			}
			w.WriteHeader(http.StatusBadGateway)
		}
		proxy.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), ctxKey{}, b.backends[i])))
		if !refused {
			b.served[i].Add(1)
			return
		}
	}
}

// Served returns how many answers each replica gave.
func (b *Balancer) Served() []int64 {
	out := make([]int64, len(b.served))
	for i := range b.served {
		out[i] = b.served[i].Load()
	}
	return out
}

// refusalCatcher is the ResponseWriter of one attempt (its type keeps Flush working).
type refusalCatcher struct{ http.ResponseWriter }

func (r *refusalCatcher) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
