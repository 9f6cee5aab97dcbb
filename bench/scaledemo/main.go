// Command scaledemo is the scale demonstration (run it with scripts/scale-demo): one command
// that shows a portal past one machine. It starts, all on loopback ports:
//
//   - PostgreSQL (scripts/postgres in a temporary folder) and versitygw serving one bucket;
//   - three `pqrepro serve` replicas on that database and bucket (separate data folders, one
//     shared log key, one public URL: the balancer's) behind an in-process round-robin
//     balancer (internal/lb);
//   - five `pqrepro runner` processes pulling through the balancer, each enrolled with its own
//     single-use token, and one `pqrepro witness` cosigning the transparency log.
//
// It then queues -jobs jobs of a tiny manifest (paper001/mlkem on the host board with its
// iterations cut to -iterations) through the three replicas in turn, SIGKILLs one replica and
// the runner holding a lease once a third of them are published, waits until every job is
// terminal, and prints what the shared database holds: jobs queued, published exactly once,
// re-queued, duplicates and lost (both must be 0), the log's size and the witness's
// cosignatures, the balancer's answers per replica, and the verdict of `pqrepro verify
// --log` on a random run's bundle (inclusion, the pinned log key and the pinned witness).
// It exits 1 when duplicates or lost are not 0, a log entry is of no published run, or the
// verification fails (2 for bad flags). The pqrepro binary is built once, into the
// temporary folder; `pqrepro witness`, which tries again after a failed fetch or a refused
// cosignature and exits only on a fork, runs under a supervisor that would restart it, as a
// service manager would. Every process and
// folder is removed on exit, also on Ctrl-C (-keep keeps the folder: data, logs, bundle).
//
// What one site needs across replicas, and where it lives:
//
//   - Sessions: the session cookie carries a random token whose hash is a row of the sessions
//     table in the shared database, so a sign-in on one replica holds on every other.
//   - CSRF: Echo's double-submit cookie: the form's token must equal the pqrepro_csrf cookie's,
//     and no replica keeps any state for it, so a form from one replica posts to another.
//   - Enrolment challenges: rows of pop_challenges in the shared database, issued by one
//     replica and spent by whichever the enrolment reaches, with one conditional UPDATE
//     (used_at IS NULL and not expired) that commits before the enrolment is looked at: of
//     two replicas racing with one challenge exactly one changes the row.
//   - Rate limits: when the store is shared, each budget's token bucket is a row of
//     rate_buckets, refilled and taken in one transaction holding the row, so a client has
//     one budget however the balancer spreads its requests (a replica whose database
//     fails counts in its own memory meanwhile).
//   - The flash message after a form (and a token shown once) travels in a cookie: no
//     replica state either.
//   - Long polls: queuing a job raises pg_notify in the queuing transaction; every replica
//     LISTENs and wakes its own waiting lease requests, so a runner waiting on one replica
//     gets a job queued through another at once.
//
// Leases are taken with FOR UPDATE SKIP LOCKED, so two replicas never hand out one job, and
// an expired lease is re-queued by whichever replica's sweeper sees it first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses the flags, runs the demonstration and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "scale-demo:", err)
		return 2
	}
	rep, err := Demo(ctx, cfg, stdout)
	if rep != nil {
		rep.Print(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "scale-demo:", err)
		return 1
	}
	if why := rep.Problems(); why != "" {
		fmt.Fprintln(stderr, "scale-demo: FAILED:", why)
		return 1
	}
	return 0
}

// Config is what one demonstration does.
type Config struct {
	// Jobs is how many jobs are queued.
	Jobs int
	// Iterations replaces the manifest's measured iterations (warm-up and the minimum follow).
	Iterations int
	// Timeout bounds the whole demonstration.
	Timeout time.Duration
	// Keep leaves the temporary folder (data folders, the stopped PostgreSQL cluster, every
	// process's log, the verified bundle) for inspection; the processes are stopped anyway.
	Keep bool
	// Root is the module root (scripts/ and cmd/pqrepro are found there).
	Root string
	// Versitygw is the S3 server's binary; "" runs scripts/versitygw to install it.
	Versitygw string
	// Lease is the replicas' lease duration: a killed runner's job is re-queued after it.
	Lease time.Duration
}

func parseFlags(args []string, stderr io.Writer) (Config, error) {
	c := Config{}
	fs := flag.NewFlagSet("scale-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Jobs, "jobs", 300, "jobs to queue")
	fs.IntVar(&c.Iterations, "iterations", 3, "measured iterations per cell of the demo manifest (paper001/mlkem on host)")
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Minute, "give up after this long")
	fs.BoolVar(&c.Keep, "keep", false, "keep the temporary folder (databases, logs, bundles) after the demonstration")
	fs.StringVar(&c.Root, "root", "", "the repository's root (default: found from the working directory)")
	fs.DurationVar(&c.Lease, "lease", 3*time.Second, "the replicas' lease duration (a killed runner's job is re-queued after it)")
	c.Versitygw = os.Getenv("PQREPRO_VERSITYGW")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.Jobs < 3 || c.Jobs > 100_000 {
		return c, fmt.Errorf("-jobs: between 3 and 100000, got %d", c.Jobs)
	}
	if c.Iterations < 1 || c.Iterations > 100 {
		return c, fmt.Errorf("-iterations: between 1 and 100 (the manifest's own), got %d", c.Iterations)
	}
	if c.Lease < 500*time.Millisecond {
		return c, fmt.Errorf("-lease: at least 500ms, got %v", c.Lease)
	}
	if c.Root == "" {
		root, err := moduleRoot()
		if err != nil {
			return c, err
		}
		c.Root = root
	}
	return c, nil
}
