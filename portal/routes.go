package portal

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"pqrepro/artifacts/protocol"
	"pqrepro/static"
)

// Rate-limit classes of routes (see RateLimits).
const (
	limitSignIn = "signin"
	limitEnrol  = "enrol"
	// limitEnrolNetwork counts enrolments and challenges per network (RateLimits.EnrolNetwork).
	limitEnrolNetwork = "enrol-network"
	limitSubmit       = "submit"
	limitRunner       = "runner"
)

// router registers routes with their request body limits and rate-limit classes, which the
// middleware reads by method and route path.
type router struct {
	e       *echo.Echo
	bodies  map[string]int64
	classes map[string]string
	// small, bundle and firmware are the body limits of forms, bundle uploads and firmware
	// uploads.
	small, bundle, firmware int64
}

// add registers a route whose body may be at most body bytes (0: none expected; such routes
// get noBody) and whose requests count against the rate-limit class ("" for none).
func (r *router) add(method, path string, h echo.HandlerFunc, body int64, class string, mw ...echo.MiddlewareFunc) {
	if body > 0 {
		r.bodies[method+" "+path] = body
	}
	if class != "" {
		r.classes[method+" "+path] = class
	}
	r.e.Add(method, path, h, mw...)
}

// noBody is the body limit of GET and other routes that read no body.
const noBody = 64 << 10

// get, post and put shorten the route lists.
const get, post, put = http.MethodGet, http.MethodPost, http.MethodPut

// routes lists every route of the portal, by area, each with its request body limit and,
// where it has one, its rate-limit class; the middleware comes first.
func (s *Server) routes() {
	r := &router{e: s.echo, bodies: map[string]int64{}, classes: map[string]string{}, small: 1 << 20,
		bundle: s.cfg.MaxBundleBytes + 1<<20, firmware: s.cfg.MaxFirmwareBytes + 1<<20}
	s.middleware(r)
	s.pageRoutes(r)
	s.adminRoutes(r)
	s.protocolRoutes(r)
	s.apiRoutes(r)
	s.logRoutes(r)
}

// middleware installs, in order: panic recovery, rate limits, body limits, security headers,
// CSRF, the signed-in user and the page cache.
func (s *Server) middleware(r *router) {
	e := r.e
	rl := s.cfg.RateLimits
	limiters := map[string]*limiter{limitSignIn: newLimiter(rl.SignIn), limitEnrol: newLimiter(rl.Enrol), limitEnrolNetwork: newLimiter(rl.EnrolNetwork),
		limitSubmit: newLimiter(rl.Submit), limitRunner: newLimiter(rl.Runner)}
	if s.shared() {
		// Many portal processes share the database: each budget is spent in its buckets
		// there, so a client gets one budget however a load balancer spreads its requests.
		for class, l := range limiters {
			l.shareIn(s.store, class, s.log)
		}
	}

	e.Use(middleware.Recover())
	// Rate limits per client address (see clientIP), then body limits, before anything reads
	// the body (the CSRF check parses forms) or the database.
	e.Use(rateLimit(func(method, route string) string { return r.classes[method+" "+route] }, limiters,
		map[string]string{limitEnrol: limitEnrolNetwork}))
	e.Use(bodyLimit(r.bodies, noBody))
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
		ReferrerPolicy: "same-origin", ContentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'"}))
	// Forms carry CSRF tokens; the API authenticates with bearer tokens instead.
	e.Use(unmaskCSRF) // pages carry the CSRF token masked (see compress.go)
	e.Use(middleware.CSRFWithConfig(middleware.CSRFConfig{
		Skipper:        func(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") },
		TokenLookup:    "form:_csrf,header:X-CSRF-Token",
		CookieName:     "pqrepro_csrf",
		CookiePath:     "/",
		CookieHTTPOnly: true,
		CookieSameSite: http.SameSiteLaxMode,
	}))
	e.Use(s.loadUser)
	e.Use(s.cachePages) // anonymous pages and the public API, from memory while nothing changed
}

// pageRoutes are the pages people read and the forms they post.
func (s *Server) pageRoutes(r *router) {
	add, small := r.add, r.small
	add(get, "/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(static.Files)))), 0, "", staticCache, middleware.Gzip())
	add(get, "/favicon.ico", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/static/favicon.svg") }, 0, "")
	add(get, "/healthz", s.healthz, 0, "")

	add(get, "/", s.home, 0, "")
	add(get, "/papers/:paper", s.paperPage, 0, "")
	add(get, "/papers/:paper/reference", s.paperReference, 0, "")
	add(get, "/papers/:paper/energy", s.paperEnergy, 0, "")
	add(get, "/experiments/:paper/:name", s.experimentPage, 0, "")
	add(post, "/experiments/:paper/:name/jobs", s.startJob, small, "", s.requireUser)
	add(get, "/jobs", s.jobsPage, 0, "")
	add(get, "/jobs/:id", s.jobPage, 0, "")
	add(get, "/runs", s.runsPage, 0, "")
	add(get, "/schemes", s.schemesPage, 0, "")
	add(get, "/datasets/pqm4", s.pqm4Page, 0, "")
	add(get, "/compare", s.comparePage, 0, "")
	add(get, "/runs/:id", s.runPage, 0, "")
	add(get, "/runs/:id/bundle.tar.gz", s.runBundle, 0, "")
	add(get, "/runs/:id/cells.csv", s.runCSV, 0, "")
	add(get, "/runs/:id/result.json", s.runResultJSON, 0, "")
	add(get, "/runs/:id/manifest.yaml", s.runManifest, 0, "")
	add(get, "/runs/:id/log", s.runLogPage, 0, "")
	add(get, "/runs/:id/log.txt", s.runLogText, 0, "")
	add(get, "/leaderboards", s.leaderboardPage, 0, "")
	add(get, "/boards", s.boardsPage, 0, "")
	add(get, "/boards/:class", s.boardPage, 0, "")
	add(get, "/firmware", s.firmwarePage, 0, "")
	add(post, "/firmware", s.uploadFirmware, r.firmware, limitSubmit, s.requireFirmwareRole)
	add(get, "/firmware/:digest", s.firmwareDownload, 0, "")
	add(get, "/firmware/:digest/build", s.firmwareBuildPage, 0, "")
	add(get, "/firmware/:digest/metadata.json", s.firmwareMetadata, 0, "")
	add(post, "/firmware/:digest/withdraw", s.withdrawFirmware, small, "", s.requireUser)
	add(get, "/submit", s.submitPage, 0, "")
	add(post, "/submit", s.submitBundle, r.bundle, limitSubmit, s.requireUser)
	add(post, "/submit/keys", s.registerKeys, small, limitSubmit, s.requireUser)
	add(get, "/signin", s.signinPage, 0, "")
	// Sign-in tries are limited per client address: tokens are long and random, but nobody
	// needs more than a few tries a second.
	add(post, "/signin", s.signin, small, limitSignIn)
	add(post, "/signout", s.signout, small, "")
}

// adminRoutes are the administrator's page and forms.
func (s *Server) adminRoutes(r *router) {
	add, small := r.add, r.small
	add(get, "/admin", s.adminPage, 0, "", s.requireAdmin)
	add(post, "/admin/enrol-tokens", s.createEnrolToken, small, "", s.requireAdmin)
	add(post, "/admin/users", s.createUser, small, "", s.requireAdmin)
	add(post, "/admin/enrol-tokens/:id/revoke", s.adminRevoke(revokeEnrolToken), small, "", s.requireAdmin)
	add(post, "/admin/runners/:id/revoke", s.adminRevoke(revokeRunner), small, "", s.requireAdmin)
	add(post, "/admin/runners/:id/release", s.adminRevoke(releaseRunner), small, "", s.requireAdmin)
	add(post, "/admin/keys/:id/revoke", s.adminRevoke(revokeKey), small, "", s.requireAdmin)
	add(post, "/admin/users/:id/revoke", s.adminRevoke(revokeUser), small, "", s.requireAdmin)
	add(post, "/admin/log/witnesses", s.adminLogWitness, small, "", s.requireAdmin)
}

// protocolRoutes are the runner protocol (paths from the contract in artifacts).
func (s *Server) protocolRoutes(r *router) {
	add, small := r.add, r.small
	add(post, protocol.RouteChallenge, s.apiChallenge, small, limitEnrol)
	add(post, protocol.RouteEnrol, s.apiEnrol, small, limitEnrol)
	add(post, protocol.RouteLease, s.apiLease, small, limitRunner, s.requireRunner)
	add(post, protocol.RouteHeartbeat, s.apiHeartbeat, small, limitRunner, s.requireRunner)
	add(put, protocol.RouteLog, s.apiLog, small, limitRunner, s.requireRunner)
	add(post, protocol.RouteComplete, s.apiComplete, r.bundle, limitRunner, s.requireRunner)
	add(post, protocol.RouteFail, s.apiFail, 17<<20, limitRunner, s.requireRunner)
}

// apiRoutes are the public read API and community submissions by bearer token.
func (s *Server) apiRoutes(r *router) {
	add := r.add
	add(get, "/api/v1/papers", s.apiPapers, 0, "")
	add(get, "/api/v1/runs", s.apiRuns, 0, "")
	add(get, "/api/v1/runs/:id", s.apiRun, 0, "")
	add(get, "/api/v1/runs/:id/cells.csv", s.runCSV, 0, "")
	add(get, "/api/v1/leaderboards", s.apiLeaderboard, 0, "")
	add(get, "/api/v1/jobs", s.apiJobs, 0, "")
	add(get, "/api/v1/compare", s.apiCompare, 0, "")
	add(get, "/api/v1/jobs/:id", s.jobJSON, 0, "")
	add(post, protocol.RouteSubmissions, s.apiSubmit, r.bundle, limitSubmit)
	add(post, protocol.RouteSubmitKeys, s.apiRegisterKeys, r.small, limitSubmit)
}

// logRoutes are the transparency log (C2SP tlog-tiles paths), inclusion proofs and witnesses.
func (s *Server) logRoutes(r *router) {
	add := r.add
	add(get, "/log", s.logHome, 0, "")
	add(get, "/log/checkpoint", s.logCheckpoint, 0, "")
	add(get, "/log/tile/*", s.logTile, 0, "")
	add(get, "/log/policy", s.logPolicy, 0, "")
	add(get, "/log/policy/:name", s.logPolicy, 0, "")
	add(get, "/api/v1/runs/:id/inclusion", s.apiRunInclusion, 0, "")
	add(get, "/api/v1/log", s.apiTransparencyLog, 0, "")
	add(post, "/api/v1/log/cosignature", s.apiLogCosignature, 64<<10, limitSubmit)
}
