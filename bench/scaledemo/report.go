package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Report is what the demonstration measured; every count comes from the shared database at
// the end, not from what the demonstration believes it did.
type Report struct {
	// Setup is the time to start everything; Wall from the first job queued to the last
	// one terminal.
	Setup, Wall time.Duration
	// Queued counts the jobs queued through each replica (as the queueing client saw them).
	Queued []int
	// Jobs is the jobs table's row count.
	Jobs int
	// PublishedOnce is the published jobs with exactly one run, which is the job's run.
	PublishedOnce int
	// Requeued is the jobs leased more than once (attempt > 1).
	Requeued int
	// Failed lists the failed jobs with their reasons.
	Failed []string
	// Duplicates counts runs beyond the first of a job, and runs of no queued job.
	Duplicates int
	// Lost counts jobs queued but absent, not terminal, or published without their run.
	Lost int
	// Runs and LogEntries are the runs and log_entries row counts; LogSize the published
	// checkpoint's size once the witness cosigned it.
	Runs, LogEntries int
	LogSize          int64
	// LogOrphans counts log entries whose run is not a published job's run.
	LogOrphans int
	// CosignedSizes and Cosignatures are the checkpoint sizes the witness cosigned and its
	// signature lines kept (two per size: Ed25519 and ML-DSA-44); CheckpointWitnessSigs the
	// witness's lines on the final checkpoint.
	CosignedSizes, Cosignatures, CheckpointWitnessSigs int
	// WitnessRestarts counts the witness's restarts by the demonstration's supervisor.
	WitnessRestarts int
	// Killed says what was SIGKILLed, and KilledAt after how many publications.
	Killed   string
	KilledAt int
	// PerRunner is the runs each runner published, by runner name.
	PerRunner []string
	// Served is the balancer's answers per replica.
	Served []int64
	// VerifyRun is the run whose bundle was verified; VerifyOutput what `pqrepro verify` said.
	VerifyRun    int64
	VerifyOutput string
	VerifyOK     bool
	// Interrupted: the demonstration was stopped (Ctrl-C) or timed out before the end, so
	// lost counts the jobs not yet terminal.
	Interrupted bool
	// Dir is the demonstration's temporary folder, removed at its end unless Kept (-keep).
	Dir  string
	Kept bool
}

// count fills the figures from one snapshot of the database (a read-only REPEATABLE READ
// transaction, so runs published while it counts do not skew one count against another);
// ids are the jobs the client queued.
func (r *Report) count(ctx context.Context, sdb *sql.DB, ids map[int64]bool) error {
	db, err := sdb.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	defer db.Rollback()
	rows, err := db.QueryContext(ctx, `SELECT j.id, j.state, j.attempt, j.error, COALESCE(j.run_id, 0),
		(SELECT COUNT(*) FROM runs r WHERE r.job_id = j.id),
		(SELECT COUNT(*) FROM runs r WHERE r.job_id = j.id AND r.id = j.run_id)
		FROM jobs j ORDER BY j.id`)
	if err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	seen := map[int64]bool{}
	r.Jobs, r.PublishedOnce, r.Requeued, r.Duplicates, r.Lost, r.Failed = 0, 0, 0, 0, 0, nil
	for rows.Next() {
		var id, attempt, runID int64
		var state, reason string
		var runs, own int
		if err := rows.Scan(&id, &state, &attempt, &reason, &runID, &runs, &own); err != nil {
			return fmt.Errorf("count jobs: %w", err)
		}
		seen[id] = true
		r.Jobs++
		if attempt > 1 {
			r.Requeued++
		}
		if runs > 1 {
			r.Duplicates += runs - 1
		}
		switch {
		case state == "published" && runs >= 1 && own == 1:
			if runs == 1 {
				r.PublishedOnce++
			}
		case state == "published":
			r.Lost++ // published without its run
		case state == "failed":
			r.Failed = append(r.Failed, fmt.Sprintf("job %d: %s", id, reason))
			r.Duplicates += runs // a failed job has no run
		default:
			r.Lost++ // still queued or running
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	for id := range ids {
		if !seen[id] {
			r.Lost++
		}
	}
	var orphans int
	q := func(query string, dst *int) {
		if err == nil {
			err = db.QueryRowContext(ctx, query).Scan(dst)
		}
	}
	q(`SELECT COUNT(*) FROM runs WHERE job_id IS NULL OR job_id NOT IN (SELECT id FROM jobs)`, &orphans)
	q(`SELECT COUNT(*) FROM runs`, &r.Runs)
	q(`SELECT COUNT(*) FROM log_entries`, &r.LogEntries)
	q(`SELECT COUNT(*) FROM log_entries e WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = e.run_id AND j.state = 'published')`, &r.LogOrphans)
	q(`SELECT COUNT(DISTINCT size) FROM log_cosignatures WHERE name = '`+witnessName+`'`, &r.CosignedSizes)
	q(`SELECT COUNT(*) FROM log_cosignatures WHERE name = '`+witnessName+`'`, &r.Cosignatures)
	if err != nil {
		return fmt.Errorf("count runs and the log: %w", err)
	}
	r.Duplicates += orphans
	per, err := db.QueryContext(ctx, `SELECT u.name, COUNT(*) FROM runs r JOIN runners u ON u.id = r.runner_id GROUP BY u.name ORDER BY u.name`)
	if err != nil {
		return fmt.Errorf("count runs per runner: %w", err)
	}
	defer per.Close()
	r.PerRunner = nil
	for per.Next() {
		var name string
		var n int
		if err := per.Scan(&name, &n); err != nil {
			return fmt.Errorf("count runs per runner: %w", err)
		}
		r.PerRunner = append(r.PerRunner, fmt.Sprintf("%s: %d", name, n))
	}
	return per.Err()
}

// Problems says why the demonstration failed, "" when it held.
func (r *Report) Problems() string {
	var why []string
	if r.Duplicates != 0 {
		why = append(why, fmt.Sprintf("%d duplicates", r.Duplicates))
	}
	if r.Lost != 0 {
		why = append(why, fmt.Sprintf("%d lost", r.Lost))
	}
	if r.LogOrphans != 0 {
		why = append(why, fmt.Sprintf("%d log entries of no published run", r.LogOrphans))
	}
	if !r.VerifyOK {
		why = append(why, "the random run's bundle did not verify against the log")
	}
	return strings.Join(why, "; ")
}

// Print writes the report.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n== scale demonstration: 3 replicas (PostgreSQL + versitygw), 5 runners, 1 witness ==\n")
	if r.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED before every job was terminal: the counts below are of an unfinished demonstration (lost counts the jobs still open)\n")
	}
	fmt.Fprintf(w, "setup (PostgreSQL, versitygw, build, replicas, enrolment): %v\n", r.Setup.Round(time.Millisecond))
	fmt.Fprintf(w, "wall time, first job queued to last job terminal:         %v\n", r.Wall.Round(time.Millisecond))
	fmt.Fprintf(w, "jobs queued:              %d (through replicas 0/1/2: %s)\n", r.Jobs, joinInts(r.Queued))
	fmt.Fprintf(w, "published exactly once:   %d\n", r.PublishedOnce)
	fmt.Fprintf(w, "failed:                   %d\n", len(r.Failed))
	for _, f := range r.Failed {
		fmt.Fprintf(w, "  %s\n", f)
	}
	fmt.Fprintf(w, "re-queued (attempt > 1):  %d\n", r.Requeued)
	fmt.Fprintf(w, "duplicates:               %d (must be 0)\n", r.Duplicates)
	fmt.Fprintf(w, "lost:                     %d (must be 0)\n", r.Lost)
	if r.Killed != "" {
		fmt.Fprintf(w, "midway, after %d published: %s\n", r.KilledAt, r.Killed)
	}
	fmt.Fprintf(w, "runs: %d; log entries: %d (of no published run: %d); log size (checkpoint cosigned by the witness): %d\n",
		r.Runs, r.LogEntries, r.LogOrphans, r.LogSize)
	fmt.Fprintf(w, "witness cosignatures: %d checkpoints cosigned, %d signature lines kept; %d on the final checkpoint (witness restarted %d times)\n",
		r.CosignedSizes, r.Cosignatures, r.CheckpointWitnessSigs, r.WitnessRestarts)
	fmt.Fprintf(w, "runs per runner: %s\n", strings.Join(r.PerRunner, ", "))
	fmt.Fprintf(w, "balancer answers per replica: %s\n", joinInts64(r.Served))
	if r.VerifyRun != 0 {
		verdict := "FAILED"
		if r.VerifyOK {
			verdict = "VERIFIED"
		}
		fmt.Fprintf(w, "random run %d: pqrepro verify --log (log key, witness and runner keys pinned): %s\n", r.VerifyRun, verdict)
		for _, l := range strings.Split(r.VerifyOutput, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if r.Kept {
		fmt.Fprintf(w, "kept: %s\n", r.Dir)
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, "/")
}

func joinInts64(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprintf("replica %d: %d", i, n)
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}
