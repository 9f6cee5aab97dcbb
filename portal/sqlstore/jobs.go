package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/logtext"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// CreateJob queues a job.
func (s *DB) CreateJob(ctx context.Context, n store.NewJob) (int64, error) {
	var id int64
	method := n.Method
	if method == "" {
		method = artifacts.MethodInProcess
	}
	err := s.tx(ctx, func(tx *Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO jobs (experiment, paper, manifest_yaml, manifest_id, board_class, firmware_digest, method, state, requested_by, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?) RETURNING id`, n.Experiment, n.Paper, n.ManifestYAML, n.ManifestID, n.BoardClass, n.Firmware,
			method, nullID(n.RequestedBy), ms0(s.Now())).Scan(&id)
		if err != nil {
			return err
		}
		return tx.notify(ctx, store.EventJobs)
	})
	if err != nil {
		return 0, fmt.Errorf("queue job %s: %w", n.Experiment, err)
	}
	return id, nil
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

const jobCols = `j.id, j.experiment, j.paper, j.manifest_yaml, j.manifest_id, j.board_class, j.firmware_digest, j.state, COALESCE(u.name, ''),
	j.created_at, j.started_at, j.finished_at, COALESCE(j.runner_id, 0), COALESCE(r.name, ''), COALESCE(j.lease_id, ''), j.lease_expires, j.attempt,
	j.progress, j.progress_at, j.note, j.error, COALESCE(j.run_id, 0), j.method, COALESCE(j.lease_nonce, '')`

const jobFrom = ` FROM jobs j LEFT JOIN users u ON u.id = j.requested_by LEFT JOIN runners r ON r.id = j.runner_id`

func scanJob(sc interface{ Scan(...any) error }) (store.Job, error) {
	var j store.Job
	var c, st, fin, le, pa sql.NullInt64
	var prog string
	err := sc.Scan(&j.ID, &j.Experiment, &j.Paper, &j.ManifestYAML, &j.ManifestID, &j.BoardClass, &j.Firmware, &j.State, &j.RequestedBy,
		&c, &st, &fin, &j.RunnerID, &j.RunnerName, &j.LeaseID, &le, &j.Attempt, &prog, &pa, &j.Note, &j.Error, &j.RunID, &j.Method, &j.LeaseNonce)
	if err != nil {
		return store.Job{}, err
	}
	j.CreatedAt, j.StartedAt, j.FinishedAt, j.LeaseExpires, j.ProgressAt = fromMS(c), fromMS(st), fromMS(fin), fromMS(le), fromMS(pa)
	if prog != "" {
		json.Unmarshal([]byte(prog), &j.Progress)
	}
	return j, nil
}

// qJob is Job's page query, by the primary key.
const qJob = `SELECT ` + jobCols + jobFrom + ` WHERE j.id = ?`

// Job returns a job by id.
func (s *DB) Job(ctx context.Context, id int64) (store.Job, error) {
	j, err := scanJob(s.read.QueryRowContext(ctx, qJob, id))
	if err != nil {
		return store.Job{}, notFound(err, "job %d not found", id)
	}
	return j, nil
}

// RequeueExpired returns jobs whose lease expired to the queue, or fails them after
// MaxAttempts, and reports how many were re-queued.
func (s *DB) RequeueExpired(ctx context.Context) (int, error) {
	now := ms0(s.Now())
	var n int64
	err := s.tx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', finished_at = ?, lease_id = NULL, lease_nonce = NULL,
			error = 'the lease expired on every one of ' || attempt || ' attempts: no runner finished the job'
			WHERE state = 'running' AND lease_expires < ? AND attempt >= ?`, now, now, store.MaxAttempts); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'queued', lease_id = NULL, lease_nonce = NULL, lease_expires = NULL, progress = '', progress_at = NULL,
			note = 'attempt ' || attempt || ' lost its lease (the runner stopped reporting); re-queued'
			WHERE state = 'running' AND lease_expires < ?`, now)
		if err != nil {
			return err
		}
		if n, _ = res.RowsAffected(); n > 0 {
			return tx.notify(ctx, store.EventJobs)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("re-queue expired leases: %w", err)
	}
	return int(n), nil
}

// LeaseJob hands the oldest queued job for one of the board classes to the runner under a
// new lease id and nonce until expires, and returns it; fault.NotFound when there is none. An
// openssl-cli job goes only to a board class in opensslClasses (the runner's boards that run
// openssl-cli: OpenSSL 3.5 or later). One UPDATE selects and claims the job, so two runners
// never lease the same job; where writers run in parallel (PostgreSQL) the candidate row is
// locked and rows other leases hold are skipped (the dialect's LeaseLock).
func (s *DB) LeaseJob(ctx context.Context, runnerID int64, classes, firmwareOnly, opensslClasses []string, leaseID, nonce string, expires time.Time) (store.Job, error) {
	if len(classes) == 0 && len(firmwareOnly) == 0 {
		return store.Job{}, fault.New(fault.NotFound, "no job: the runner offers no available board")
	}
	if _, err := s.RequeueExpired(ctx); err != nil {
		return store.Job{}, err
	}
	now := ms0(s.Now())
	args := []any{runnerID, leaseID, nonce, ms0(expires), now}
	for _, c := range classes {
		args = append(args, c)
	}
	for _, c := range firmwareOnly {
		args = append(args, c)
	}
	args = append(args, artifacts.MethodOpenSSLCLI)
	for _, c := range opensslClasses {
		args = append(args, c)
	}
	// Boards that lack only their own firmware take jobs that bring a firmware build.
	var id int64
	err := s.write.QueryRowContext(ctx, `UPDATE jobs SET state = 'running', runner_id = ?, lease_id = ?, lease_nonce = ?, lease_expires = ?, attempt = attempt + 1,
		started_at = ?, progress = '', progress_at = NULL
		WHERE id = (SELECT id FROM jobs WHERE state = 'queued'
			AND (`+inList("board_class", len(classes))+` OR (firmware_digest <> '' AND `+inList("board_class", len(firmwareOnly))+`))
			AND (method <> ? OR `+inList("board_class", len(opensslClasses))+`)
			ORDER BY id LIMIT 1 `+s.d.LeaseLock+`) AND state = 'queued'
		RETURNING id`, args...).Scan(&id)
	if err != nil {
		return store.Job{}, notFound(err, "no job")
	}
	s.changed(ctx, genWork)
	return s.Job(ctx, id)
}

// checkLease returns a conflict error unless the job is running under that runner's
// unexpired lease, and locks the job's row.
func checkLease(ctx context.Context, q *Tx, jobID, runnerID int64, leaseID string, now int64) (attempt int, err error) {
	var state, lease string
	var owner, expires sql.NullInt64
	// The job's row is locked until the transaction ends (where writers run in parallel), so
	// no re-queue or other completion changes it between this check and the writes after it.
	err = q.QueryRowContext(ctx, `SELECT state, COALESCE(lease_id, ''), runner_id, lease_expires, attempt FROM jobs WHERE id = ? `+q.d.RowLock, jobID).
		Scan(&state, &lease, &owner, &expires, &attempt)
	if err != nil {
		return 0, notFound(err, "job %d not found", jobID)
	}
	switch {
	case state != store.JobRunning || lease == "":
		return 0, fault.New(fault.LeaseLost, "job %d is %s: the lease is no longer held", jobID, state)
	case !owner.Valid || owner.Int64 != runnerID || lease != leaseID:
		return 0, fault.New(fault.LeaseLost, "job %d is leased to another runner or under another lease", jobID)
	case !expires.Valid || expires.Int64 < now:
		return 0, fault.New(fault.LeaseLost, "the lease on job %d expired", jobID)
	}
	return attempt, nil
}

// Heartbeat extends a held lease until expires and records progress.
func (s *DB) Heartbeat(ctx context.Context, jobID, runnerID int64, leaseID string, expires time.Time, p protocol.Progress) error {
	prog, _ := json.Marshal(p)
	now := ms0(s.Now())
	return s.tx(ctx, func(tx *Tx) error {
		if _, err := checkLease(ctx, tx, jobID, runnerID, leaseID, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_expires = ?, progress = ?, progress_at = ? WHERE id = ?`, ms0(expires), string(prog), now, jobID)
		return err
	})
}

// FailJob ends a held lease with a failure; the job is failed for good (a run that broke is
// reported, not retried), and log, when not empty, is kept as a final chunk.
func (s *DB) FailJob(ctx context.Context, jobID, runnerID int64, leaseID, reason, log string) error {
	now := ms0(s.Now())
	return s.tx(ctx, func(tx *Tx) error {
		attempt, err := checkLease(ctx, tx, jobID, runnerID, leaseID, now)
		if err != nil {
			return err
		}
		tx.change(genWork)
		st, err := logState(ctx, tx, jobID, attempt)
		if err != nil {
			return err
		}
		if log != "" && st.end == 0 { // a log that was streamed is not stored twice
			// The log sent with a failure is one chunk: bounded as a whole (head, summary lines
			// and tail kept).
			lim := s.Logs.OrDefault()
			summaries := min(lim.SummaryBytes, (lim.AttemptBytes-lim.HeadBytes)/2)
			log, _ = logtext.Bound(log, int(lim.HeadBytes), int(summaries), int(lim.AttemptBytes-lim.HeadBytes-summaries))
			if err := insertChunk(ctx, tx, jobID, attempt, finalChunk, log, 0, true, now); err != nil {
				return err
			}
			if err := trimLog(ctx, tx, lim, jobID, attempt, finalChunk); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET state = 'failed', error = ?, finished_at = ?, lease_id = NULL, lease_nonce = NULL WHERE id = ?`, reason, now, jobID)
		return err
	})
}
