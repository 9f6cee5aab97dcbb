// Command seed fills a portal data directory with published runs for load tests, through the
// portal's real ingest: it measures paper001's ML-KEM and ML-DSA experiments once on the
// host, then for every further run scales those samples with jitter onto a board class
// (host, two declared lab classes, two emulated and one hardware class), recomputes the
// statistics from the scaled samples, signs a fresh bundle and submits it as a community
// result of a "seed" submitter: through the portal's Server.SubmitCommunity in process, the
// call POST /api/v1/submit makes once it has read the token and the body (-http: over
// loopback HTTP, as a tool would). Every seeded bundle is distinct and
// self-consistent, so it passes verification, re-derivation, the board-class check, the
// comparison with the paper and the bundle-digest uniqueness like any upload; the numbers
// are synthetic (scaled copies of one real run), which the submitter name, the board names
// ("<class>-seeded") and the run log say. A seeded data directory is for load tests only,
// never for a public portal.
//
//	go run ./bench/seed -data /tmp/pq-load -cells 100000
//	pqrepro serve --data /tmp/pq-load --no-local-runner
//
// With -postgres DSN the runs go into that PostgreSQL database (the portal's Config.Database)
// and the data directory holds only the blobs; serve it with --db DSN.
//
// Speed: -workers goroutines build, sign and submit bundles at once against the in-process
// portal (its ingest verifies, re-derives and compares each in parallel), and the portal
// publishes the runs its concurrent ingests verified in batches of at most -batch, one
// transaction per batch (portal.Config.PublishBatch; -batch 1 publishes each alone, as a
// serving portal does), a batch that is not full waiting up to -linger for more (fewer and
// fuller transactions: a serving portal waits for nothing). The defaults (16 workers on two
// cores, batches of 8) keep two batches going: the ingests of one while the other commits,
// so the cores are not left waiting on a commit. The bundles are not synced one by one
// (portal.Config.BlobsUnsynced): the seed syncs the filesystem once when it ends.
// -samples sets the samples per cell (default 5, the fewest the
// comparison draws an interval from: the portal's bootstrap costs in proportion to them), and
// -gogc the garbage collector's target (a seed trades memory for less collecting). Nothing is
// written to the database except by the portal's own publication.
//
// Resuming: the target is the number of cells stored, counted through the portal's store
// when seed starts, so running it again on the same directory adds only the rest (each
// start registers a fresh seed submitter, "seed (synthetic load-test data) #2" and on, with a
// fresh key: the token of the last one is not kept).
// A run is published in one transaction after its bundle verified, so a seed killed
// mid-way loses at most the bundles in flight and leaves no half-published run; at worst a
// bundle file whose run was never committed stays in blobs/, which nothing lists. An
// interrupt (SIGINT, SIGTERM) stops handing out work, lets the bundles in flight finish and
// prints the summary. The transparency log is sequenced while seeding, as a serving portal
// does (in rounds at least -log-gap apart), so a finished directory has no entries left to
// integrate; a new portal's administrator is set up as serve's first start does, its token
// printed once.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/portal"
	"pqrepro/portal/database"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/portalclient"
)

type board struct {
	class  string
	level  artifacts.Level
	driver artifacts.Driver
	unit   artifacts.Unit
	scale  float64
}

// boards are the classes seeded runs are filed under. The two lab classes are not in the
// board catalogue, so the portal files them as declared, as it would any operator's class.
var boards = []board{
	{"host", artifacts.AssuranceHost, "host", artifacts.UnitNanoseconds, 1},
	{"seed-lab-a", artifacts.AssuranceHost, "host", artifacts.UnitNanoseconds, 4.5},
	{"seed-lab-b", artifacts.AssuranceHost, "host", artifacts.UnitNanoseconds, 2.2},
	{"qemu-mps2-an386", artifacts.AssuranceEmulated, "qemu", artifacts.UnitInstructions, 25},
	{"qemu-riscv32-virt", artifacts.AssuranceEmulated, "qemu", artifacts.UnitInstructions, 30},
	{"esp32c6", artifacts.AssuranceHardware, "serial", artifacts.UnitCycles, 60},
}

// seedUser is the name of the submitter seeded runs are published by; a resumed seed adds
// " #2", " #3"...
const seedUser = "seed (synthetic load-test data)"

// options are the seed's flags.
type options struct {
	// Dir is the portal data directory (created if missing).
	Dir string
	// Cells is the number of cells the directory should hold when seed ends.
	Cells int
	// Workers is how many bundles are built and submitted at once.
	Workers int
	// Batch is the most runs the portal publishes in one transaction (1: each alone).
	Batch int
	// Linger is how long a batch that is not full waits for more runs after its first
	// (portal.Config.PublishLinger).
	Linger time.Duration
	// Commits is how many batches commit at once (portal.Config.PublishCommits).
	Commits int
	// LogGap is the least time between two rounds of the log's sequencer
	// (portal.Config.LogSequenceGap).
	LogGap time.Duration
	// Samples is the number of samples per cell (at least compare.MinSamples for the
	// comparison to draw intervals; the catalogue's manifests ask for more).
	Samples int
	// Every is the interval between progress lines (0: none).
	Every time.Duration
	// Postgres is a PostgreSQL URL to seed instead of the SQLite file in Dir (Dir still
	// holds the blobs).
	Postgres string
	// HTTP submits every bundle over loopback HTTP (POST /api/v1/submit) instead of calling
	// the portal's Server.SubmitCommunity in process.
	HTTP bool
}

// summary is what a seed did.
type summary struct {
	// Before and Cells are the cells stored when seed started and when it ended.
	Before, Cells int
	// Runs is the number of runs seed published.
	Runs int
	// Elapsed is the time from the first submission to the last answer.
	Elapsed time.Duration
	// DBBytes (portal.db with its WAL, or PostgreSQL's pg_database_size) and BlobBytes
	// (blobs/) are measured after the portal closed.
	DBBytes, BlobBytes int64
	// Postgres is set when the database is PostgreSQL's.
	Postgres bool
	// Interrupted is set when ctx ended before the target was reached.
	Interrupted bool
}

func main() {
	var o options
	flag.StringVar(&o.Dir, "data", "", "portal data directory to fill (created if missing)")
	flag.IntVar(&o.Cells, "cells", 100000, "number of cells the directory should hold (what is already stored counts)")
	flag.IntVar(&o.Workers, "workers", max(16, 8*runtime.NumCPU()), "bundles built and submitted at once")
	flag.IntVar(&o.Batch, "batch", 8, "most runs published in one transaction (1: each in its own, as a serving portal); half of -workers lets one batch fill while the other commits")
	flag.IntVar(&o.Commits, "commits", 0, "batches committed at once, each in its own transaction (0: 3 with -postgres, which runs them side by side; 1 on SQLite, whose one writer takes them in turn)")
	flag.DurationVar(&o.Linger, "linger", 20*time.Millisecond, "how long a batch that is not full waits for more runs (0: it takes what waits)")
	flag.DurationVar(&o.LogGap, "log-gap", time.Second, "least time between two rounds of the transparency log's sequencer (0: a round after every batch)")
	gogc := flag.Int("gogc", 400, "the garbage collector's target percentage (GOGC) while seeding")
	flag.IntVar(&o.Samples, "samples", 5, "samples per cell (at least 5 for the comparison's intervals)")
	flag.DurationVar(&o.Every, "progress", 5*time.Second, "interval between progress lines (0: none)")
	flag.StringVar(&o.Postgres, "postgres", "", "PostgreSQL URL (postgres://…) of the database to seed instead of DIR/portal.db; DIR holds the blobs")
	flag.BoolVar(&o.HTTP, "http", false, "submit over loopback HTTP as a tool would (default: the same submission called in process)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole seed to this file")
	pprofAddr := flag.String("pprof", "", "serve net/http/pprof on this loopback address (127.0.0.1:PORT) while seeding, to profile a long seed where it stands")
	flag.Parse()
	if *pprofAddr != "" {
		if err := servePprof(*pprofAddr); err != nil {
			fmt.Fprintln(os.Stderr, "seed:", err)
			os.Exit(2)
		}
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(*gogc)
	}
	if err := run(o, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

func run(o options, cpuprofile string) error {
	if o.Dir == "" {
		return errors.New("-data DIR is required")
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return fmt.Errorf("create the CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := seed(ctx, o, os.Stdout)
	if err != nil {
		return err
	}
	where := o.Dir
	if o.Postgres != "" {
		where = "the PostgreSQL database (blobs in " + o.Dir + ")"
	}
	sum.print(os.Stdout, where)
	return nil
}

// template is one real host run that seeded runs are scaled from.
type template struct {
	m       *artifacts.Manifest
	yaml    []byte // m.YAML(), marshalled once
	res     *artifacts.Result
	env     artifacts.Environment
	samples artifacts.Samples
}

// seed publishes runs into o.Dir until it holds o.Cells cells or ctx ends, printing
// progress to out every o.Every. It returns what it did; an error means a submission was
// refused or the portal failed (what was published before stays published).
func seed(ctx context.Context, o options, out io.Writer) (summary, error) {
	sum := summary{Postgres: o.Postgres != ""}
	if o.Workers < 1 {
		return sum, fmt.Errorf("workers: %d, want at least 1", o.Workers)
	}
	if o.Batch < 1 || o.Batch > 10000 {
		return sum, fmt.Errorf("batch: %d, want 1 to 10000", o.Batch)
	}
	if o.Samples < 1 {
		return sum, fmt.Errorf("samples: %d, want at least 1", o.Samples)
	}
	cfg := portal.DefaultConfig()
	cfg.DataDir = o.Dir
	cfg.Database = o.Postgres
	cfg.LocalRunner = false
	// A worker has one run in flight at a time, so a batch never holds more than -workers:
	// that is when a lingering batch is full and need not wait.
	cfg.PublishBatch = min(o.Batch, o.Workers)
	cfg.PublishLinger = o.Linger
	cfg.PublishCommits = o.Commits
	if o.Commits == 0 && o.Postgres != "" {
		// At 10 M cells one commit line left most workers waiting on its transaction:
		// three made PostgreSQL publish 25–33% more (docs/BENCHMARKS.md).
		cfg.PublishCommits = 3
	}
	cfg.LogSequenceGap = o.LogGap
	// Bundles are not synced one by one: finish syncs the filesystem once. An interrupt loses
	// nothing (the kernel keeps what was written); only a crash of the machine could leave
	// runs whose bundles were not yet on disk, in a directory that is for load tests only.
	cfg.BlobsUnsynced = true
	// The seeder is the portal's only client, on loopback, submitting as fast as ingest goes:
	// the per-address submission budget would only slow it down.
	cfg.RateLimits.Submit = portal.Budget{}
	// Opening and closing happen on a context of their own: an interrupt stops the seeding,
	// not the portal's shutdown.
	srv, err := database.OpenPortal(context.WithoutCancel(ctx), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return sum, err
	}
	closed := false
	closePortal := func() error {
		if closed {
			return nil
		}
		closed = true
		return srv.Close()
	}
	defer closePortal()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	seqCtx, stopSeq := context.WithCancel(context.WithoutCancel(ctx))
	seqDone := make(chan struct{})
	go func() { srv.SequenceLog(seqCtx); close(seqDone) }()
	defer func() { stopSeq(); <-seqDone }()

	// The administrator is set up as serve's first start would, so a database seeded anew
	// is a portal's (a PostgreSQL database without one beside stored blobs is refused on the
	// next start).
	if tok, err := srv.SetupAdmin(ctx); err != nil {
		return sum, fmt.Errorf("set up the administrator: %w", err)
	} else if tok != "" {
		fmt.Fprintf(out, "seed: a new portal: its administrator token (shown once; only its hash is stored): %s\n", tok)
	}
	where := o.Dir
	if o.Postgres != "" {
		where = "the PostgreSQL database (blobs in " + o.Dir + ")"
	}
	st := srv.Store()
	if sum.Before, err = st.CountCells(ctx); err != nil {
		return sum, fmt.Errorf("count the stored cells: %w", err)
	}
	sum.Cells = sum.Before
	if sum.Before >= o.Cells {
		fmt.Fprintf(out, "seed: %s already holds %d cells (target %d); nothing to add\n", where, sum.Before, o.Cells)
		return sum, finish(srv, hs, &sum, o.Dir, o.Postgres, stopSeq, seqDone, closePortal)
	}
	cat, err := experiments.Load()
	if err != nil {
		return sum, err
	}
	id, err := identity.GenerateIdentity()
	if err != nil {
		return sum, err
	}
	token := "seed_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_load-test-only"
	users, err := st.Users(ctx)
	if err != nil {
		return sum, fmt.Errorf("list the accounts: %w", err)
	}
	name := seedUser
	for k := 2; slices.ContainsFunc(users, func(u store.User) bool { return strings.EqualFold(u.Name, name) }); k++ {
		name = fmt.Sprintf("%s #%d", seedUser, k) // a resumed seed's own submitter
	}
	u, err := st.CreateUser(ctx, name, "submitter", portal.HashToken(token))
	if err != nil {
		return sum, fmt.Errorf("create the seed submitter: %w", err)
	}
	if _, err := st.AddSubmitterKey(ctx, u.ID, "seed", id.Public()); err != nil {
		return sum, fmt.Errorf("register the seed keys: %w", err)
	}
	submit := func(ctx context.Context, data []byte) error {
		_, _, err := srv.SubmitCommunity(ctx, u, data)
		return err
	}
	if o.HTTP {
		client := portalclient.NewSubmitter(hs.URL, token)
		submit = func(ctx context.Context, data []byte) error { return submitRetrying(ctx, client, data) }
	}

	var tpls []template
	for _, ref := range []string{"paper001/mlkem", "paper001/mldsa"} {
		m, err := cat.Manifest(ref)
		if err != nil {
			return sum, err
		}
		c, err := artifacts.ParseManifest(m.YAML(), ref)
		if err != nil {
			return sum, err
		}
		c.Spec.Iterations, c.Spec.Warmup = o.Samples, 2
		b, res, err := runner.Execute(ctx, &host.Host{}, c, runner.Options{Identity: id, Version: "seed", Origin: attest.OriginLocal})
		if err != nil {
			return sum, fmt.Errorf("measure %s on the host: %w", ref, err)
		}
		samples, err := artifacts.ParseSamples(b.Files[artifacts.FileSamples])
		if err != nil {
			return sum, err
		}
		var env artifacts.Environment
		if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
			return sum, err
		}
		tpls = append(tpls, template{m: c, yaml: c.YAML(), res: res, env: env, samples: samples})
	}
	fmt.Fprintf(out, "seed: %s holds %d cells; adding %d with %d workers, %d samples per cell, at most %d runs per transaction\n",
		where, sum.Before, o.Cells-sum.Before, o.Workers, o.Samples, min(o.Batch, o.Workers))

	// The dispenser hands out runs until the cells given out reach the target; a worker
	// builds, signs and submits the run it was handed and reports its cells back.
	var (
		mu        sync.Mutex
		handed    = sum.Before // cells stored or in flight
		stored    = sum.Before
		runs      int
		firstErr  error
		nextIndex int
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if handed >= o.Cells || firstErr != nil || ctx.Err() != nil {
			return 0, false
		}
		i := nextIndex
		nextIndex++
		handed += len(tpls[i%len(tpls)].res.Cells)
		return i, true
	}
	// Submissions run on a context an interrupt does not cancel, so the bundles in flight
	// are published or refused, never cut off.
	subCtx := context.WithoutCancel(ctx)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for {
				i, ok := take()
				if !ok {
					return
				}
				tp := tpls[i%len(tpls)]
				bd := boards[rng.IntN(len(boards))]
				data, err := replica(tp, bd, id, rng)
				if err == nil {
					err = submit(subCtx, data)
					if err != nil {
						err = fmt.Errorf("submit seeded run %d (%s on %s): %w", i, tp.m.Ref(), bd.class, err)
					}
				}
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
				} else {
					stored += len(tp.res.Cells)
					runs++
				}
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var tick <-chan time.Time
	if o.Every > 0 {
		t := time.NewTicker(o.Every)
		defer t.Stop()
		tick = t.C
	}
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick:
			mu.Lock()
			c, r := stored, runs
			mu.Unlock()
			el := time.Since(start)
			rate := float64(c-sum.Before) / el.Seconds()
			eta := "?"
			if rate > 0 {
				eta = (time.Duration(float64(o.Cells-c)/rate) * time.Second).Round(time.Second).String()
			}
			fmt.Fprintf(out, "seed: %d cells stored (+%d in %d runs) after %s: %.1f runs/s, %.0f cells/s; ETA %s\n",
				c, c-sum.Before, r, el.Round(time.Second), float64(r)/el.Seconds(), rate, eta)
		}
	}
	sum.Elapsed = time.Since(start)
	sum.Runs, sum.Cells = runs, stored
	sum.Interrupted = ctx.Err() != nil && stored < o.Cells
	if firstErr != nil {
		return sum, firstErr
	}
	if sum.Cells, err = st.CountCells(subCtx); err != nil {
		return sum, fmt.Errorf("count the stored cells: %w", err)
	}
	return sum, finish(srv, hs, &sum, o.Dir, o.Postgres, stopSeq, seqDone, closePortal)
}

// finish waits (at most a minute) for the transparency log to integrate what was
// published, closes the portal and measures the directory and the database (the SQLite
// files, or PostgreSQL's pg_database_size of dsn).
func finish(srv *portal.Server, hs *httptest.Server, sum *summary, dir, dsn string, stopSeq func(), seqDone <-chan struct{}, closePortal func() error) error {
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); !sum.Interrupted && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		n, err := srv.Store().PendingLogEntries(ctx)
		if err != nil {
			return fmt.Errorf("count the log entries to integrate: %w", err)
		}
		if n == 0 {
			break
		}
	}
	stopSeq()
	<-seqDone
	hs.Close()
	if err := closePortal(); err != nil {
		return fmt.Errorf("close the portal: %w", err)
	}
	syscall.Sync() // the bundles, written unsynced (portal.Config.BlobsUnsynced)
	if sum.Postgres {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return fmt.Errorf("connect to PostgreSQL to measure the database: %w", err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&sum.DBBytes); err != nil {
			return fmt.Errorf("measure the PostgreSQL database: %w", err)
		}
	} else {
		sum.DBBytes = fileSize(filepath.Join(dir, "portal.db")) + fileSize(filepath.Join(dir, "portal.db-wal")) + fileSize(filepath.Join(dir, "portal.db-shm"))
	}
	sum.BlobBytes = dirSize(filepath.Join(dir, "blobs"))
	return nil
}

// print writes the summary: what was added, how fast, and the directory's size, per
// million cells.
func (s summary) print(w io.Writer, dir string) {
	added := s.Cells - s.Before
	state := "reached the target"
	if s.Interrupted {
		state = "interrupted"
	}
	fmt.Fprintf(w, "seed: %s: %s holds %d cells; this seed published %d runs (%d cells) in %s",
		state, dir, s.Cells, s.Runs, added, s.Elapsed.Round(time.Millisecond))
	if s.Runs > 0 && s.Elapsed > 0 {
		sec := s.Elapsed.Seconds()
		fmt.Fprintf(w, ": %.1f runs/s, %.0f cells/s, %s per million cells", float64(s.Runs)/sec, float64(added)/sec,
			(time.Duration(sec/float64(added)*1e6) * time.Second).Round(time.Second))
	}
	fmt.Fprintln(w)
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	db := "database"
	if s.Postgres {
		db = "PostgreSQL database"
	}
	fmt.Fprintf(w, "seed: disk: %.1f MiB (%s %.1f MiB, blobs %.1f MiB)", mib(s.DBBytes+s.BlobBytes), db, mib(s.DBBytes), mib(s.BlobBytes))
	if s.Cells > 0 {
		per := 1e6 / float64(s.Cells)
		fmt.Fprintf(w, ", %.0f MiB per million cells (database %.0f, blobs %.0f)", mib(s.DBBytes+s.BlobBytes)*per, mib(s.DBBytes)*per, mib(s.BlobBytes)*per)
	}
	fmt.Fprintln(w)
}

// replica is a signed bundle of tp scaled onto bd: every sample of every ok cell multiplied
// by one jittered factor per cell (rounded for counted units), the statistics recomputed,
// the board identity that of a seeded bd.
func replica(tp template, bd board, id *identity.Identity, rng *rand.Rand) ([]byte, error) {
	res := *tp.res
	res.Board, res.Assurance = bd.class, bd.level
	// A replica's samples.csv has no round columns: its cells were not run in rounds.
	res.Schedule = nil
	res.StartedAt = time.Now().UTC()
	res.FinishedAt = res.StartedAt
	res.Cells = nil
	var samples bytes.Buffer
	w := csv.NewWriter(&samples)
	w.Write(artifacts.SamplesHeader)
	for _, c := range tp.res.Cells {
		if c.Status != artifacts.StatusOK {
			res.Cells = append(res.Cells, c)
			continue
		}
		f := bd.scale * (0.9 + 0.2*rng.Float64())
		var vals []float64
		for _, x := range tp.samples.Values[artifacts.KeyOf(c)] {
			v := x * f
			if artifacts.IntegerUnit(bd.unit) {
				v = math.Round(v)
			}
			vals = append(vals, v)
		}
		c.Stats, c.Unit = artifacts.Summarize(vals), bd.unit
		if bd.level != artifacts.AssuranceHost {
			c.Memory, c.Energy = nil, nil
			c.Counter = "seeded: host samples scaled for a load test"
		}
		res.Cells = append(res.Cells, c)
		for i, v := range vals {
			w.Write([]string{c.Algorithm, c.Operation, strconv.Itoa(i), strconv.FormatFloat(v, 'f', -1, 64), string(c.Unit), c.Variant})
		}
	}
	w.Flush()
	env := tp.env
	env.Board = artifacts.BoardIdentity{Name: bd.class + "-seeded", Class: bd.class, Driver: bd.driver, Assurance: bd.level}
	if bd.driver == "qemu" {
		env.Board.Emulator = "seeded (no emulator ran)"
	}
	env.Timing = nil
	resJSON, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	envJSON, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	b := &artifacts.Bundle{Files: map[string][]byte{
		artifacts.FileManifest:    tp.yaml,
		artifacts.FileResult:      append(resJSON, '\n'),
		artifacts.FileSamples:     samples.Bytes(),
		artifacts.FileEnvironment: append(envJSON, '\n'),
		artifacts.FileLog:         []byte("seeded for a load test: the samples of one real host run of " + tp.m.Ref() + ", scaled onto " + bd.class + "; nothing ran on that board\n"),
	}}
	pred := attest.Predicate{
		Runner:    attest.RunnerRef{Name: "pqrepro-seed", Version: "seed"},
		Assurance: attest.Assurance{Level: bd.level, Origin: attest.OriginCommunity},
	}
	if err := attest.Sign(b, id, pred); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dirSize is the bytes of every file under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// fileSize is a file's size, 0 when it does not exist.
func fileSize(name string) int64 {
	fi, err := os.Stat(name)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// submitRetrying submits one bundle, again after a pause when the portal could not be reached
// or answer in time (protocol.KindUnavailable: a stalled or overloaded machine) or asked to
// slow down, at most submitAttempts times. Submitting the same bytes again is safe: a bundle
// its submitter already published answers with its run, and is stored once.
func submitRetrying(ctx context.Context, client *portalclient.Client, data []byte) error {
	var err error
	for attempt := range submitAttempts {
		if _, err = client.Submit(ctx, data); err == nil {
			return nil
		}
		if k := protocol.KindOf(err); (k != protocol.KindUnavailable && k != protocol.KindRateLimited) || attempt == submitAttempts-1 {
			break
		}
		time.Sleep(retryPause << attempt)
	}
	if k := protocol.KindOf(err); k == protocol.KindUnavailable || k == protocol.KindRateLimited {
		return fmt.Errorf("%w (after %d attempts)", err, submitAttempts)
	}
	return err
}

// submitAttempts bounds submitRetrying; retryPause is its first pause, doubled each time (six
// attempts wait 1 + 2 + 4 + 8 + 16 s at most).
const submitAttempts = 6

var retryPause = time.Second

// servePprof serves the runtime's profiles on addr, which must be a loopback address: they
// say what the process is doing, and a seed is nobody else's business.
func servePprof(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-pprof %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-pprof %q: not a loopback address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	return nil
}
