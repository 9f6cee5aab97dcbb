package portal

// The response cache: pages that summarise many runs, and the public JSON API, rendered once
// per change of what they read and then served from memory.
//
// A cached response is keyed by its route's request URI and by the version of what the route
// reads: the store's change counters (store.Generations: runs, and for the pages that show
// them work and log), read in one query per request from the database every replica shares,
// and this process's epoch, which a publication, a revocation or another replica's event
// (Server.listen) advances. A counter advances once its write is visible to every reader, so a
// response rendered before a publication or a revocation is never served after it, on any
// replica; the epoch only frees memory sooner. Pages that show a runner's liveness (connected
// within Config.ConnectedWithin, a time window) are also kept at most liveAge.
//
// Only anonymous GET requests are cached: a signed-in request (or one carrying a flash message
// or a bearer token) is rendered for itself and marked private, so one user's page never
// reaches another. A page's CSRF token is cut out of the cached copy and each response gets
// the requester's own, masked afresh (compress.go); such a response is private. Every cached
// response carries a weak ETag and `Cache-Control: no-cache` (browsers and proxies keep it but
// ask again; an If-None-Match that still matches is answered 304 without a body).

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/portal/store"
)

// cachePolicy is what a cached route's response depends on besides its request URI and the
// runs counter, which every cached route reads.
type cachePolicy struct {
	// work: the page shows jobs, runners or firmware (store.Generations.Work).
	work bool
	// log: the page shows a run's inclusion in the transparency log (store.Generations.Log).
	log bool
	// live: the page shows which runners are connected, which changes with time alone; it is
	// kept at most liveAge.
	live bool
}

// liveAge bounds the age of a cached page that shows runners' liveness (a runner counts as
// connected when heard from within Config.ConnectedWithin, 90 s by default).
const liveAge = 5 * time.Second

// cachedRoutes are the routes whose anonymous GET responses are cached, by route pattern.
// Jobs, the log's own files, downloads of bundles, forms and the runner protocol are not.
var cachedRoutes = map[string]cachePolicy{
	"/":                          {work: true, live: true},
	"/papers/:paper":             {},
	"/papers/:paper/reference":   {},
	"/papers/:paper/energy":      {},
	"/experiments/:paper/:name":  {work: true, live: true},
	"/runs":                      {},
	"/runs/:id":                  {log: true},
	"/runs/:id/log":              {},
	"/runs/:id/cells.csv":        {},
	"/runs/:id/result.json":      {},
	"/schemes":                   {},
	"/compare":                   {},
	"/leaderboards":              {},
	"/boards":                    {work: true, live: true},
	"/boards/:class":             {work: true, live: true},
	"/api/v1/papers":             {},
	"/api/v1/runs":               {},
	"/api/v1/runs/:id":           {},
	"/api/v1/runs/:id/cells.csv": {},
	"/api/v1/leaderboards":       {},
	"/api/v1/compare":            {},
}

// Limits of the cache.
const (
	// maxCacheKey: a longer request URI is served uncached.
	maxCacheKey = 2048
	// maxCacheEntry: a larger response is served uncached.
	maxCacheEntry = 8 << 20
)

// cacheVersion is what a cached response was rendered from.
type cacheVersion struct {
	gen   store.Generations
	epoch uint64
}

// cacheEntry is one cached response.
type cacheEntry struct {
	key     string
	version cacheVersion
	// status is the handler's (only 200s are kept).
	status int
	born   time.Time
	live   bool
	// header holds the handler's own headers (Content-Type, Link, X-Next-Cursor...).
	header http.Header
	// body is the response as rendered, uncompressed; in a page with a CSRF form the token is
	// replaced by the cache's slot (slot set).
	body []byte
	slot bool
	// gz is body gzip-compressed (nil when small or slotted); parts are a slotted body's
	// pieces between its slots, each deflated alone (see gzipSlotted).
	gz    []byte
	parts []deflated
	// etag is a digest of body (a slotted page's is combined with each requester's token).
	etag string
}

func (e *cacheEntry) size() int { return len(e.key) + len(e.body) + len(e.gz) + 256 }

// pageCache is the response cache of one process: at most limit bytes, least recently used
// first out. It is safe for concurrent use.
type pageCache struct {
	limit int
	// slot stands for the CSRF token in cached pages: random per process, so no text a user
	// put in a page can imitate it.
	slot []byte
	// epoch advances when this process learns of a change (drop).
	epoch atomic.Uint64

	mu      sync.Mutex
	entries map[string]*list.Element // of *cacheEntry
	lru     list.List                // front: most recently used
	bytes   int
	// flights are the renders under way, by key: a request that misses while the same
	// version is being rendered waits for it instead of rendering it again.
	flights map[string]*cacheFlight
}

// cacheFlight is one render under way.
type cacheFlight struct {
	version cacheVersion
	done    chan struct{}
	entry   *cacheEntry // set before done closes when the render was cacheable
}

func newPageCache(limit int) *pageCache {
	b := make([]byte, 16)
	rand.Read(b)
	return &pageCache{limit: limit, slot: []byte("pqrepro-csrf-" + hex.EncodeToString(b)), entries: map[string]*list.Element{},
		flights: map[string]*cacheFlight{}}
}

// drop forgets every cached response (a publication or revocation this process saw or heard
// of); what is being rendered meanwhile is not kept.
func (pc *pageCache) drop() {
	pc.epoch.Add(1)
	pc.mu.Lock()
	defer pc.mu.Unlock()
	clear(pc.entries)
	pc.lru.Init()
	pc.bytes = 0
}

// get returns the entry for key rendered from version v, or nil.
func (pc *pageCache) get(key string, v cacheVersion, now time.Time) *cacheEntry {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	el, ok := pc.entries[key]
	if !ok {
		return nil
	}
	e := el.Value.(*cacheEntry)
	if e.version != v || e.live && now.Sub(e.born) > liveAge {
		return nil
	}
	pc.lru.MoveToFront(el)
	return e
}

// put keeps e unless the epoch moved on since it was rendered or a newer render of its key is
// kept already, evicting the least recently used entries past the limit.
func (pc *pageCache) put(e *cacheEntry) {
	if e.size() > pc.limit {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if e.version.epoch != pc.epoch.Load() {
		return
	}
	if el, ok := pc.entries[e.key]; ok {
		old := el.Value.(*cacheEntry)
		if newer(old.version.gen, e.version.gen) {
			return
		}
		pc.lru.Remove(el)
		pc.bytes -= old.size()
	}
	pc.entries[e.key] = pc.lru.PushFront(e)
	pc.bytes += e.size()
	for pc.bytes > pc.limit {
		el := pc.lru.Back()
		old := el.Value.(*cacheEntry)
		pc.lru.Remove(el)
		delete(pc.entries, old.key)
		pc.bytes -= old.size()
	}
}

// newer reports whether a was read after b (no counter behind, one ahead).
func newer(a, b store.Generations) bool {
	return a.Runs >= b.Runs && a.Work >= b.Work && a.Log >= b.Log && a != b
}

// join returns the flight rendering key at v and whether this caller leads it (renders and
// must call land); a follower waits on the flight's done.
func (pc *pageCache) join(key string, v cacheVersion) (f *cacheFlight, lead bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if f, ok := pc.flights[key]; ok && f.version == v {
		return f, false
	}
	f = &cacheFlight{version: v, done: make(chan struct{})}
	pc.flights[key] = f
	return f, true
}

// land ends a flight with its entry (nil when the response was not cacheable).
func (pc *pageCache) land(key string, f *cacheFlight, e *cacheEntry) {
	f.entry = e
	pc.mu.Lock()
	if pc.flights[key] == f {
		delete(pc.flights, key)
	}
	pc.mu.Unlock()
	close(f.done)
}

// cacheCaptureKey marks a request whose handler renders for the cache: writePage then writes
// the page as rendered (the CSRF token unmasked, uncompressed), and cachePages finishes it.
const cacheCaptureKey = "cache-capture"

// cachePages serves the routes of cachedRoutes from the response cache (see the top of this
// file); other routes pass through.
func (s *Server) cachePages(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		pc := s.pages
		pol, ok := cachedRoutes[c.Path()]
		r := c.Request()
		if pc == nil || !ok || r.Method != http.MethodGet {
			return next(c)
		}
		key := r.URL.RequestURI()
		if !cacheable(c) || len(key) > maxCacheKey {
			h := c.Response().Header()
			h.Set("Cache-Control", "private, no-cache")
			h.Set("X-Cache", "bypass")
			return next(c)
		}
		// The epoch is read before the counters, so a change this process hears of while the
		// counters are read leaves the response unkept.
		v := cacheVersion{epoch: pc.epoch.Load()}
		gen, err := s.store.Generations(r.Context())
		if err != nil {
			s.log.Warn("read the change counters; serving uncached", "err", err)
			c.Response().Header().Set("X-Cache", "bypass")
			return next(c)
		}
		v.gen.Runs = gen.Runs
		if pol.work {
			v.gen.Work = gen.Work
		}
		if pol.log {
			v.gen.Log = gen.Log
		}
		now := time.Now()
		if e := pc.get(key, v, now); e != nil {
			return s.serveCached(c, e, "hit")
		}
		f, lead := pc.join(key, v)
		if !lead {
			select {
			case <-f.done:
			case <-r.Context().Done():
				return r.Context().Err()
			}
			if f.entry != nil {
				return s.serveCached(c, f.entry, "hit")
			}
			// The render was not cacheable (an error, another status): render this one.
		}
		landed := !lead
		if lead {
			// The waiters are released as soon as the render ends, and even when it panics.
			defer func() {
				if !landed {
					pc.land(key, f, nil)
				}
			}()
		}
		e, keep, err := s.render4cache(c, next, key, v, pol, now)
		if keep {
			pc.put(e)
		}
		if !landed {
			landed = true
			if keep {
				pc.land(key, f, e)
			} else {
				pc.land(key, f, nil)
			}
		}
		if err != nil {
			return err
		}
		return s.serveCached(c, e, "miss")
	}
}

// cacheable reports whether a request may be answered from the shared cache: it is anonymous,
// carries no flash message to show, and no bearer token.
func cacheable(c echo.Context) bool {
	if _, ok := currentUser(c); ok {
		return false
	}
	if ck, err := c.Cookie(flashCookie); err == nil && ck.Value != "" {
		return false
	}
	return c.Request().Header.Get("Authorization") == ""
}

// recorder is the response writer a handler renders into for the cache.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }
func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}
func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// render4cache runs the handler into a recorder and returns its response as an entry, and
// whether the entry may be kept (a 200 that set no cookie and showed no one-time secret). A
// handler error is returned as it is, for the error handler to answer on the real response.
func (s *Server) render4cache(c echo.Context, next echo.HandlerFunc, key string, v cacheVersion, pol cachePolicy, now time.Time) (*cacheEntry, bool, error) {
	orig := c.Response()
	rec := &recorder{header: http.Header{}}
	c.SetResponse(echo.NewResponse(rec, c.Echo()))
	c.Set(cacheCaptureKey, true)
	restore := func() {
		c.Set(cacheCaptureKey, false)
		c.SetResponse(orig)
	}
	defer restore() // also when the handler panics: the recovery answers on the real response
	err := next(c)
	restore()
	if err != nil {
		return nil, false, err
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	e := &cacheEntry{key: key, version: v, status: status, born: now, live: pol.live, header: rec.header, body: rec.body.Bytes()}
	if tok, _ := c.Get("csrf").(string); tok != "" && bytes.Contains(e.body, []byte(tok)) {
		e.body = bytes.ReplaceAll(e.body, []byte(tok), s.pages.slot)
		e.slot = true
	}
	secret, _ := c.Get(pageSecretKey).(bool)
	keep := status == http.StatusOK && !secret && len(rec.header.Values("Set-Cookie")) == 0 && len(e.body) <= maxCacheEntry
	sum := sha256.Sum256(e.body)
	e.etag = hex.EncodeToString(sum[:12])
	switch {
	case e.slot:
		for _, part := range bytes.Split(e.body, s.pages.slot) {
			e.parts = append(e.parts, deflatePart(part))
		}
	case len(e.body) >= 1024:
		e.gz = gzipBytes(e.body)
	}
	return e, keep, nil
}

// serveCached answers c with e: the handler's headers, a weak ETag (304 when the request's
// If-None-Match holds it) and Cache-Control no-cache on a 200, the requester's own CSRF token masked
// afresh in a slotted page, compressed when the client accepts gzip.
func (s *Server) serveCached(c echo.Context, e *cacheEntry, how string) error {
	status := e.status
	h := c.Response().Header()
	for k, vs := range e.header {
		if k == "Content-Length" || k == "Content-Encoding" || k == "Vary" {
			continue
		}
		h[k] = vs
	}
	h.Set("X-Cache", how)
	h.Add("Vary", "Accept-Encoding")
	tok, _ := c.Get("csrf").(string)
	etag := e.etag
	if e.slot {
		sum := sha256.Sum256([]byte(e.etag + "\x00" + tok))
		etag = hex.EncodeToString(sum[:12])
	}
	etag = `W/"` + etag + `"`
	private := e.slot || len(h.Values("Set-Cookie")) > 0
	if status == http.StatusOK {
		h.Set("ETag", etag)
		if private {
			h.Set("Cache-Control", "private, no-cache")
		} else {
			h.Set("Cache-Control", "public, no-cache")
		}
		if etagMatch(c.Request().Header.Get("If-None-Match"), etag) {
			return c.NoContent(http.StatusNotModified)
		}
	}
	ctype := h.Get(echo.HeaderContentType)
	if ctype == "" {
		ctype = http.DetectContentType(e.body)
	}
	body, gz := e.body, false
	switch {
	case e.slot && len(e.body) >= 1024 && acceptsGzip(c.Request()):
		body, gz = gzipSlotted(e.parts, []byte(maskToken(tok))), true
	case e.slot:
		body = bytes.ReplaceAll(e.body, s.pages.slot, []byte(maskToken(tok)))
	case e.gz != nil && acceptsGzip(c.Request()):
		body, gz = e.gz, true
	}
	if gz {
		h.Set(echo.HeaderContentEncoding, "gzip")
	}
	return c.Blob(status, ctype, body)
}

// etagMatch reports whether an If-None-Match header holds etag (weak comparison; "*" matches).
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

// A page with a CSRF form is compressed per response without compressing it again: its
// pieces between the token's places were deflated once, each by a fresh compressor ended with
// a sync flush (so each is whole, byte-aligned and refers to nothing before it), and each
// response joins them with the token as stored (uncompressed) blocks, ends the stream with an
// empty final block and wraps it as gzip (RFC 1951, 1952). The token is never compressed with
// the page's text, so the sizes of responses tell nothing about it (BREACH; compress.go).

// deflated is one piece of a page (raw) and its deflate blocks, ending in a sync flush.
type deflated struct {
	raw, blocks []byte
}

var flatePool = sync.Pool{New: func() any { w, _ := flate.NewWriter(nil, flate.BestSpeed); return w }}

func deflatePart(p []byte) deflated {
	var buf bytes.Buffer
	w := flatePool.Get().(*flate.Writer)
	w.Reset(&buf)
	w.Write(p)
	w.Flush()
	flatePool.Put(w)
	return deflated{raw: p, blocks: buf.Bytes()}
}

// gzipSlotted is the gzip member of parts joined by tok.
func gzipSlotted(parts []deflated, tok []byte) []byte {
	size := 10 + 8 + 5
	for _, p := range parts {
		size += len(p.blocks) + 5 + len(tok)
	}
	out := make([]byte, 0, size)
	out = append(out, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff) // gzip, deflate, no name, no time, unknown OS
	crc, n := uint32(0), 0
	for i, p := range parts {
		if i > 0 {
			// A stored block (BFINAL 0, BTYPE 00, padded to the byte), LEN, NLEN, the bytes.
			l := uint16(len(tok))
			out = append(out, 0, byte(l), byte(l>>8), ^byte(l), ^byte(l>>8))
			out = append(out, tok...)
			crc = crc32.Update(crc, crc32.IEEETable, tok)
			n += len(tok)
		}
		out = append(out, p.blocks...)
		crc = crc32.Update(crc, crc32.IEEETable, p.raw)
		n += len(p.raw)
	}
	out = append(out, 1, 0, 0, 0xff, 0xff) // the final block: stored, empty
	out = binary.LittleEndian.AppendUint32(out, crc)
	out = binary.LittleEndian.AppendUint32(out, uint32(n))
	return out
}

var gzipPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// gzipBytes is p gzip-compressed (fastest level), by a pooled compressor (each holds about
// 800 KB of state: making one per response cost more than compressing).
func gzipBytes(p []byte) []byte {
	var buf bytes.Buffer
	zw := gzipPool.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(p)
	zw.Close()
	gzipPool.Put(zw)
	return buf.Bytes()
}
