package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts/protocol"
	"pqrepro/portal"
	"pqrepro/portal/database"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/runner/portalclient"
)

func TestMain(m *testing.M) { pgtest.Main(m) } // stops a PostgreSQL the tests started

// TestSeedPublishesThroughIngest seeds a small portal with several workers, first in batches
// of publications (one transaction each), then resumed with each run alone: every run goes
// through the real ingest (verification, re-derivation, the class check, the comparison,
// the rate limits it is exempt from), so a change there that the seeder does not follow
// fails here. Seeding the same directory again adds only the rest, and a target already
// reached adds nothing.
// With PQREPRO_TEST_DATABASE=postgres it seeds a fresh PostgreSQL database instead.
func TestSeedPublishesThroughIngest(t *testing.T) {
	dir := t.TempDir()
	var dsn string
	if os.Getenv("PQREPRO_TEST_DATABASE") == "postgres" {
		dsn = pgtest.DSN(t)
	}
	ctx := context.Background()
	var out bytes.Buffer
	first, err := seed(ctx, options{Dir: dir, Cells: 100, Workers: 6, Batch: 4, Samples: 5, Postgres: dsn}, &out)
	if err != nil {
		t.Fatalf("seed: %v\n%s", err, out.String())
	}
	// Each run has 9 cells (ML-KEM) or 9 (ML-DSA): the target is passed by less than a run.
	if first.Before != 0 || first.Cells < 100 || first.Cells >= 100+9 || first.Runs == 0 {
		t.Fatalf("first seed: %+v", first)
	}
	if first.DBBytes == 0 || first.BlobBytes == 0 {
		t.Errorf("first seed measured no disk: %+v", first)
	}
	// The resumed seed submits over HTTP, as a tool would; the first called the submission in
	// process.
	second, err := seed(ctx, options{Dir: dir, Cells: 200, Workers: 2, Batch: 1, Samples: 5, Postgres: dsn, HTTP: true}, &out)
	if err != nil {
		t.Fatalf("resumed seed: %v\n%s", err, out.String())
	}
	if second.Before != first.Cells || second.Cells < 200 || second.Cells >= 200+9 {
		t.Fatalf("resumed seed: %+v after %+v", second, first)
	}
	if second.Cells-second.Before != second.Runs*9 {
		t.Errorf("resumed seed published %d runs for %d cells, want 9 cells a run", second.Runs, second.Cells-second.Before)
	}
	again, err := seed(ctx, options{Dir: dir, Cells: 150, Workers: 2, Batch: 1, Samples: 5, Postgres: dsn}, &out)
	if err != nil || again.Runs != 0 || again.Cells != second.Cells {
		t.Fatalf("seed to a reached target: %+v, %v", again, err)
	}
	var sum bytes.Buffer
	second.print(&sum, dir)
	if !strings.Contains(sum.String(), "reached the target") || !strings.Contains(sum.String(), "per million cells") {
		t.Errorf("summary: %s", sum.String())
	}

	// What the seeder counted is what the portal serves: every run published and in the log.
	cfg := portal.DefaultConfig()
	cfg.DataDir, cfg.LocalRunner, cfg.Database = dir, false, dsn
	srv, err := database.OpenPortal(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	n, err := srv.Store().CountCells(ctx)
	if err != nil || n != second.Cells {
		t.Errorf("stored cells: %d, %v; the seeder counted %d", n, err, second.Cells)
	}
	if p, err := srv.Store().PendingLogEntries(ctx); err != nil || p != 0 {
		t.Errorf("log entries left to integrate: %d, %v", p, err)
	}
	if counts, err := srv.Store().RunCounts(ctx); err != nil || len(counts) == 0 {
		t.Errorf("run counts: %v, %v", counts, err)
	}
}

// cancelOnProgress cancels once a progress line reports a stored run.
type cancelOnProgress struct {
	cancel context.CancelFunc
	buf    bytes.Buffer
}

func (c *cancelOnProgress) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("cells stored (+")) && !bytes.Contains(p, []byte("(+0 ")) {
		c.cancel()
	}
	return c.buf.Write(p)
}

// TestSeedInterrupted: an interrupt stops handing out runs, the runs in flight are
// published, and the summary counts exactly what the store holds.
func TestSeedInterrupted(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelOnProgress{cancel: cancel}
	sum, err := seed(ctx, options{Dir: dir, Cells: 1_000_000, Workers: 4, Batch: 8, Samples: 5, Every: time.Millisecond}, w)
	if err != nil {
		t.Fatalf("interrupted seed: %v\n%s", err, w.buf.String())
	}
	if !sum.Interrupted || sum.Runs == 0 || sum.Cells != 9*sum.Runs {
		t.Fatalf("interrupted seed: %+v", sum)
	}
	cfg := portal.DefaultConfig()
	cfg.DataDir, cfg.LocalRunner = dir, false
	srv, err := database.OpenPortal(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if n, err := srv.Store().CountCells(context.Background()); err != nil || n != sum.Cells {
		t.Errorf("stored cells after the interrupt: %d, %v; the summary says %d", n, err, sum.Cells)
	}
}

// TestSubmitRetrying: a portal that cannot be reached is tried submitAttempts times and the
// error says so; a portal that answers with a refusal (here: a token it does not know) is not
// asked again.
func TestSubmitRetrying(t *testing.T) {
	retryPause = time.Millisecond
	t.Cleanup(func() { retryPause = time.Second })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	err = submitRetrying(context.Background(), portalclient.NewSubmitter("http://"+addr, "tok"), []byte("x"))
	if protocol.KindOf(err) != protocol.KindUnavailable || !strings.Contains(err.Error(), "after 6 attempts") {
		t.Fatalf("unreachable portal: %v", err)
	}
	p := portaltest.Start(t, nil)
	start := time.Now()
	err = submitRetrying(context.Background(), portalclient.NewSubmitter(p.URL, "not-a-token"), []byte("x"))
	if k := protocol.KindOf(err); k != protocol.KindUnauthorized || strings.Contains(err.Error(), "attempts") {
		t.Fatalf("refusal: kind %q: %v (after %v)", k, err, time.Since(start))
	}
}
