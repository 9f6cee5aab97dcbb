package portal

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"pqrepro/artifacts"
	"pqrepro/static"
)

// routes lists every route of the portal.
func (s *Server) routes() {
	e := s.echo
	e.Use(middleware.Recover())
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{XSSProtection: "0", ContentTypeNosniff: "nosniff", XFrameOptions: "DENY",
		ReferrerPolicy: "same-origin", ContentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'"}))
	// Sign-in tries are limited per client address, before anything else looks at them:
	// tokens are long and random, but nobody needs more than a few tries a second.
	e.Use(middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Skipper: func(c echo.Context) bool {
			return c.Request().Method != http.MethodPost || c.Request().URL.Path != "/signin"
		},
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{Rate: 2, Burst: 20, ExpiresIn: 10 * time.Minute}),
	}))
	// Forms carry CSRF tokens; the API authenticates with bearer tokens instead.
	e.Use(middleware.CSRFWithConfig(middleware.CSRFConfig{
		Skipper:        func(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") },
		TokenLookup:    "form:_csrf,header:X-CSRF-Token",
		CookieName:     "pqrepro_csrf",
		CookiePath:     "/",
		CookieHTTPOnly: true,
		CookieSameSite: http.SameSiteLaxMode,
	}))
	e.Use(s.loadUser)

	small := limit(1 << 20)
	bundle := limit(s.cfg.MaxBundleBytes + 1<<20)
	firmware := limit(s.cfg.MaxFirmwareBytes + 1<<20)

	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(static.Files)))))
	e.GET("/healthz", s.healthz)

	// Pages.
	e.GET("/", s.home)
	e.GET("/papers/:paper", s.paperPage)
	e.GET("/experiments/:paper/:name", s.experimentPage)
	e.POST("/experiments/:paper/:name/jobs", s.startJob, small, s.requireUser)
	e.GET("/jobs/:id", s.jobPage)
	e.GET("/runs/:id", s.runPage)
	e.GET("/runs/:id/bundle.tar.gz", s.runBundle)
	e.GET("/runs/:id/cells.csv", s.runCSV)
	e.GET("/runs/:id/result.json", s.runResultJSON)
	e.GET("/leaderboards", s.leaderboardPage)
	e.GET("/boards", s.boardsPage)
	e.GET("/boards/:class", s.boardPage)
	e.GET("/firmware", s.firmwarePage)
	e.POST("/firmware", s.uploadFirmware, firmware, s.requireUser)
	e.GET("/firmware/:digest", s.firmwareDownload)
	e.GET("/submit", s.submitPage)
	e.POST("/submit", s.submitBundle, bundle, s.requireUser)
	e.POST("/submit/keys", s.registerKeys, small, s.requireUser)
	e.GET("/signin", s.signinPage)
	e.POST("/signin", s.signin, small)
	e.POST("/signout", s.signout, small)
	e.GET("/admin", s.adminPage, s.requireAdmin)
	e.POST("/admin/enrol-tokens", s.createEnrolToken, small, s.requireAdmin)
	e.POST("/admin/users", s.createUser, small, s.requireAdmin)
	e.POST("/admin/enrol-tokens/:id/revoke", s.adminRevoke(revokeEnrolToken), small, s.requireAdmin)
	e.POST("/admin/runners/:id/revoke", s.adminRevoke(revokeRunner), small, s.requireAdmin)
	e.POST("/admin/runners/:id/release", s.adminRevoke(releaseRunner), small, s.requireAdmin)
	e.POST("/admin/keys/:id/revoke", s.adminRevoke(revokeKey), small, s.requireAdmin)
	e.POST("/admin/users/:id/revoke", s.adminRevoke(revokeUser), small, s.requireAdmin)

	// Runner protocol.
	e.POST(artifacts.RouteChallenge, s.apiChallenge, small)
	e.POST("/api/v1/runners/enrol", s.apiEnrol, small)
	e.POST("/api/v1/jobs/lease", s.apiLease, small, s.requireRunner)
	e.POST("/api/v1/jobs/:id/heartbeat", s.apiHeartbeat, small, s.requireRunner)
	e.PUT("/api/v1/jobs/:id/log/:index", s.apiLog, small, s.requireRunner)
	e.POST("/api/v1/jobs/:id/complete", s.apiComplete, bundle, s.requireRunner)
	e.POST("/api/v1/jobs/:id/fail", s.apiFail, limit(17<<20), s.requireRunner)

	// Public read API and community submissions by bearer token.
	e.GET("/api/v1/papers", s.apiPapers)
	e.GET("/api/v1/runs", s.apiRuns)
	e.GET("/api/v1/runs/:id", s.apiRun)
	e.GET("/api/v1/runs/:id/cells.csv", s.runCSV)
	e.GET("/api/v1/leaderboards", s.apiLeaderboard)
	e.GET("/api/v1/jobs/:id", s.jobJSON)
	e.POST("/api/v1/submissions", s.apiSubmit, bundle)
	e.POST("/api/v1/submitters/keys", s.apiRegisterKeys, small)
}

// limit refuses request bodies larger than n bytes with 413.
func limit(n int64) echo.MiddlewareFunc {
	return middleware.BodyLimit(strconv.FormatInt(n, 10) + "B")
}
