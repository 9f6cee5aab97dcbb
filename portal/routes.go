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

// routes lists every route of the portal, each with its request body limit and, where it has
// one, its rate-limit class.
func (s *Server) routes() {
	e := s.echo
	bodies := map[string]int64{}
	classes := map[string]string{}
	// add registers a route whose body may be at most body bytes (0: none expected; such
	// routes get noBody) and whose requests count against the rate-limit class ("" for none).
	add := func(method, path string, h echo.HandlerFunc, body int64, class string, mw ...echo.MiddlewareFunc) {
		if body > 0 {
			bodies[method+" "+path] = body
		}
		if class != "" {
			classes[method+" "+path] = class
		}
		e.Add(method, path, h, mw...)
	}
	const noBody = 64 << 10 // GET and other routes that read no body
	small := int64(1 << 20)
	bundle := s.cfg.MaxBundleBytes + 1<<20
	firmware := s.cfg.MaxFirmwareBytes + 1<<20
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
	e.Use(rateLimit(func(method, route string) string { return classes[method+" "+route] }, limiters,
		map[string]string{limitEnrol: limitEnrolNetwork}))
	e.Use(bodyLimit(bodies, noBody))
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

	GET, POST, PUT := http.MethodGet, http.MethodPost, http.MethodPut
	add(GET, "/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(static.Files)))), 0, "", staticCache, middleware.Gzip())
	add(GET, "/favicon.ico", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/static/favicon.svg") }, 0, "")
	add(GET, "/healthz", s.healthz, 0, "")

	// Pages.
	add(GET, "/", s.home, 0, "")
	add(GET, "/papers/:paper", s.paperPage, 0, "")
	add(GET, "/papers/:paper/reference", s.paperReference, 0, "")
	add(GET, "/papers/:paper/energy", s.paperEnergy, 0, "")
	add(GET, "/experiments/:paper/:name", s.experimentPage, 0, "")
	add(POST, "/experiments/:paper/:name/jobs", s.startJob, small, "", s.requireUser)
	add(GET, "/jobs", s.jobsPage, 0, "")
	add(GET, "/jobs/:id", s.jobPage, 0, "")
	add(GET, "/runs", s.runsPage, 0, "")
	add(GET, "/schemes", s.schemesPage, 0, "")
	add(GET, "/compare", s.comparePage, 0, "")
	add(GET, "/runs/:id", s.runPage, 0, "")
	add(GET, "/runs/:id/bundle.tar.gz", s.runBundle, 0, "")
	add(GET, "/runs/:id/cells.csv", s.runCSV, 0, "")
	add(GET, "/runs/:id/result.json", s.runResultJSON, 0, "")
	add(GET, "/runs/:id/manifest.yaml", s.runManifest, 0, "")
	add(GET, "/runs/:id/log", s.runLogPage, 0, "")
	add(GET, "/runs/:id/log.txt", s.runLogText, 0, "")
	add(GET, "/leaderboards", s.leaderboardPage, 0, "")
	add(GET, "/boards", s.boardsPage, 0, "")
	add(GET, "/boards/:class", s.boardPage, 0, "")
	add(GET, "/firmware", s.firmwarePage, 0, "")
	add(POST, "/firmware", s.uploadFirmware, firmware, limitSubmit, s.requireUser)
	add(GET, "/firmware/:digest", s.firmwareDownload, 0, "")
	add(GET, "/submit", s.submitPage, 0, "")
	add(POST, "/submit", s.submitBundle, bundle, limitSubmit, s.requireUser)
	add(POST, "/submit/keys", s.registerKeys, small, limitSubmit, s.requireUser)
	add(GET, "/signin", s.signinPage, 0, "")
	// Sign-in tries are limited per client address: tokens are long and random, but nobody
	// needs more than a few tries a second.
	add(POST, "/signin", s.signin, small, limitSignIn)
	add(POST, "/signout", s.signout, small, "")
	add(GET, "/admin", s.adminPage, 0, "", s.requireAdmin)
	add(POST, "/admin/enrol-tokens", s.createEnrolToken, small, "", s.requireAdmin)
	add(POST, "/admin/users", s.createUser, small, "", s.requireAdmin)
	add(POST, "/admin/enrol-tokens/:id/revoke", s.adminRevoke(revokeEnrolToken), small, "", s.requireAdmin)
	add(POST, "/admin/runners/:id/revoke", s.adminRevoke(revokeRunner), small, "", s.requireAdmin)
	add(POST, "/admin/runners/:id/release", s.adminRevoke(releaseRunner), small, "", s.requireAdmin)
	add(POST, "/admin/keys/:id/revoke", s.adminRevoke(revokeKey), small, "", s.requireAdmin)
	add(POST, "/admin/users/:id/revoke", s.adminRevoke(revokeUser), small, "", s.requireAdmin)

	// Runner protocol (paths from the contract in artifacts).
	add(POST, protocol.RouteChallenge, s.apiChallenge, small, limitEnrol)
	add(POST, protocol.RouteEnrol, s.apiEnrol, small, limitEnrol)
	add(POST, protocol.RouteLease, s.apiLease, small, limitRunner, s.requireRunner)
	add(POST, protocol.RouteHeartbeat, s.apiHeartbeat, small, limitRunner, s.requireRunner)
	add(PUT, protocol.RouteLog, s.apiLog, small, limitRunner, s.requireRunner)
	add(POST, protocol.RouteComplete, s.apiComplete, bundle, limitRunner, s.requireRunner)
	add(POST, protocol.RouteFail, s.apiFail, 17<<20, limitRunner, s.requireRunner)

	// Public read API and community submissions by bearer token.
	add(GET, "/api/v1/papers", s.apiPapers, 0, "")
	add(GET, "/api/v1/runs", s.apiRuns, 0, "")
	add(GET, "/api/v1/runs/:id", s.apiRun, 0, "")
	add(GET, "/api/v1/runs/:id/cells.csv", s.runCSV, 0, "")
	add(GET, "/api/v1/leaderboards", s.apiLeaderboard, 0, "")
	add(GET, "/api/v1/jobs", s.apiJobs, 0, "")
	add(GET, "/api/v1/compare", s.apiCompare, 0, "")
	add(GET, "/api/v1/jobs/:id", s.jobJSON, 0, "")
	add(POST, protocol.RouteSubmissions, s.apiSubmit, bundle, limitSubmit)
	add(POST, protocol.RouteSubmitKeys, s.apiRegisterKeys, small, limitSubmit)

	// Transparency log (C2SP tlog-tiles paths), inclusion proofs and witnesses.
	add(GET, "/log/checkpoint", s.logCheckpoint, 0, "")
	add(GET, "/log/tile/*", s.logTile, 0, "")
	add(GET, "/log/policy", s.logPolicy, 0, "")
	add(GET, "/log/policy/:name", s.logPolicy, 0, "")
	add(GET, "/api/v1/runs/:id/inclusion", s.apiRunInclusion, 0, "")
	add(GET, "/api/v1/log", s.apiTransparencyLog, 0, "")
	add(POST, "/api/v1/log/cosignature", s.apiLogCosignature, 64<<10, limitSubmit)
	add(POST, "/admin/log/witnesses", s.adminLogWitness, small, "", s.requireAdmin)
}
