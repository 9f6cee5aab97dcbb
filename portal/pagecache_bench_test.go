package portal_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"pqrepro/portal"
	"pqrepro/portal/portaltest"
)

// BenchmarkPages renders pages in process (the handler alone, no network) for an anonymous
// browser that holds a CSRF cookie and accepts gzip, with the response cache off and on, over
// a portal with three published runs: the handler's CPU per request.
//
//	go test -run '^$' -bench Pages -benchtime 2000x ./portal/
func BenchmarkPages(b *testing.B) {
	for _, cache := range []struct {
		name  string
		bytes int
	}{{"uncached", 0}, {"cached", 64 << 20}} {
		p := portaltest.Start(b, func(c *portal.Config) { c.PageCacheBytes = cache.bytes })
		r := enrol(b, p, "bench runner")
		var run int64
		for range 3 {
			run = publishAs(b, p, r)
		}
		h := p.Server.Handler()
		for _, path := range []string{"/", "/papers/paper001", "/papers/paper002", "/experiments/paper001/mlkem", "/runs", "/runs/" + strconv.FormatInt(run, 10),
			"/api/v1/runs", "/api/v1/runs/" + strconv.FormatInt(run, 10)} {
			b.Run(cache.name+path, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Accept-Encoding", "gzip")
				req.AddCookie(&http.Cookie{Name: "pqrepro_csrf", Value: "bench-csrf-token-0123456789abcdef"})
				for b.Loop() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatalf("GET %s: %d", path, w.Code)
					}
				}
			})
		}
	}
}
