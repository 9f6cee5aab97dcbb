// Package portaltest starts a real portal on a loopback port over a fresh data directory,
// for the portal's own tests, the runner agent's tests and the benchmarks.
package portaltest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"pqrepro/portal"
	"pqrepro/portal/database"
	"pqrepro/portal/postgres/pgtest"
)

// Portal is a running portal.
type Portal struct {
	Server *portal.Server
	HTTP   *httptest.Server
	URL    string
	// AdminToken signs in as the administrator.
	AdminToken string
	Config     portal.Config
}

// Start opens a portal in t.TempDir() (on PostgreSQL instead of SQLite when
// PQREPRO_TEST_DATABASE=postgres) with cfg adjusted by mod (may be nil), serves it on a
// free loopback port and stops it when the test ends.
func Start(tb testing.TB, mod func(*portal.Config)) *Portal {
	tb.Helper()
	cfg := portal.DefaultConfig()
	cfg.DataDir = tb.TempDir()
	cfg.LocalRunner = false
	cfg.AdminToken = "admin-token-for-tests-0123456789"
	cfg.LongPoll = 5 * time.Second
	if os.Getenv("PQREPRO_TEST_DATABASE") == "postgres" {
		// The same tests on a fresh PostgreSQL database (scripts/test runs the portal's tests
		// both ways); the package's TestMain must call pgtest.Main.
		cfg.Database = pgtest.DSN(tb)
	}
	if mod != nil {
		mod(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{tb}, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := database.OpenPortal(ctx, cfg, log)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := srv.SetupAdmin(ctx); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Config = srv.HTTPServer() // the configured timeouts, as Serve has them
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	sweepDone := make(chan struct{})
	go func() {
		// Serve's sweeper runs on the context; the HTTP side is httptest's.
		srv.Sweep(ctx)
		close(sweepDone)
	}()
	tb.Cleanup(func() {
		cancel()
		hs.CloseClientConnections()
		hs.Close()
		<-sweepDone
		srv.Close()
	})
	return &Portal{Server: srv, HTTP: hs, URL: hs.URL, AdminToken: cfg.AdminToken, Config: cfg}
}

// EnrolToken creates a single-use runner enrolment token, valid for an hour.
func (p *Portal) EnrolToken(tb testing.TB) string {
	tb.Helper()
	tok, err := p.Server.CreateEnrolToken(context.Background(), "test", time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Log(string(p))
	return len(p), nil
}
