package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"pqrepro/portal/store"
)

// A pageQuery is one query behind a page, by name, with the arguments to explain it with.
type pageQuery struct {
	name string
	q    string
	args []any
}

// planSample holds values to explain the page queries with, taken from the newest run, its
// first cell and verdict, and the newest job, so the planner sees values the data has.
type planSample struct {
	runID                                               int64
	paper, experiment, board, level, kind, method, fp   string
	algorithm, operation, unit, classStatus, origin     string
	implementation, keys                                string
	msgBytes                                            int
	claim, jobExperiment, jobState, jobPaper, firmBoard string
	runnerID, userID                                    int64
}

func (s *DB) planSample(ctx context.Context) (planSample, error) {
	p := planSample{runID: 1, paper: "paper001", experiment: "paper001/mlkem", board: "host", level: "host", kind: "kem-bench", method: "in-process",
		algorithm: "ML-KEM-768", operation: "encaps", unit: "ns", classStatus: "declared", origin: "community", claim: "C001-01",
		jobExperiment: "paper001/mlkem", jobState: store.JobQueued, jobPaper: "paper001", firmBoard: "host", runnerID: 1, userID: 1}
	for _, q := range []struct {
		sql  string
		dest []any
	}{
		{`SELECT id, paper, experiment, board_class, level, kind, method, signer, COALESCE(runner_id, 0) FROM runs ORDER BY id DESC LIMIT 1`,
			[]any{&p.runID, &p.paper, &p.experiment, &p.board, &p.level, &p.kind, &p.method, &p.fp, &p.runnerID}},
		{`SELECT algorithm, operation, unit, class_status, origin, implementation, keys, msg_bytes FROM cells WHERE run_id = (SELECT MAX(id) FROM runs) AND status = 'ok' ORDER BY idx LIMIT 1`,
			[]any{&p.algorithm, &p.operation, &p.unit, &p.classStatus, &p.origin, &p.implementation, &p.keys, &p.msgBytes}},
		{`SELECT claim_id FROM claim_verdicts WHERE run_id = (SELECT MAX(id) FROM runs) ORDER BY claim_id LIMIT 1`, []any{&p.claim}},
		{`SELECT experiment, state, paper FROM jobs ORDER BY id DESC LIMIT 1`, []any{&p.jobExperiment, &p.jobState, &p.jobPaper}},
		{`SELECT board_class FROM firmware ORDER BY created_at DESC LIMIT 1`, []any{&p.firmBoard}},
		{`SELECT submitter_id FROM runs WHERE submitter_id IS NOT NULL ORDER BY id DESC LIMIT 1`, []any{&p.userID}},
	} {
		if err := s.read.QueryRowContext(ctx, q.sql).Scan(q.dest...); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return p, fmt.Errorf("plan sample: %w", err)
		}
	}
	return p, nil
}

// pageQueries lists every query a page or the JSON API runs against the store, by page,
// except the summaries (RunCounts, BoardCounts, ClaimTallies, maintained elsewhere) and the
// job log's reads (bounded per attempt by store.LogLimits, on job_logs' primary key).
func (s *DB) pageQueries(p planSample) []pageQuery {
	now := time.Now()
	cur := &store.Cursor{At: now.UnixMilli(), ID: p.runID}
	var out []pageQuery
	runList := func(name string, f store.ListFilter) {
		q, args := keysetQuery("runs r", "r.published_at", "r.id", runKeyset(f, 0), f.Limit)
		out = append(out, pageQuery{name, q, args})
	}
	jobList := func(name string, f store.ListFilter) {
		q, args := keysetQuery("jobs j", "j.created_at", "j.id", buildKeyset(jobColumns(f), "j.created_at", "j.id", f, nil), f.Limit)
		out = append(out, pageQuery{name, q, args})
	}
	// The home page: recent runs, jobs in progress, connected runners (and the highlights'
	// standings, as on the leaderboards).
	runList("home runs", store.ListFilter{Limit: 15})
	jobList("home jobs running", store.ListFilter{State: store.JobRunning, Limit: 10})
	jobList("home jobs queued", store.ListFilter{State: store.JobQueued, Limit: 10})
	out = append(out, pageQuery{"runners", qRunners, []any{store.AdminList}})
	// A paper: its runs, its claims' newest verdicts.
	runList("paper runs", store.ListFilter{Paper: p.paper, Limit: 30})
	out = append(out, pageQuery{"paper next claim", qNextClaim, []any{p.paper, ""}},
		pageQuery{"paper claim verdicts", qClaimVerdicts, []any{p.paper, p.claim, store.VerdictsPerClaim}})
	// A board; an experiment.
	runList("board runs", store.ListFilter{BoardClass: p.board, Limit: 100})
	runList("experiment runs", store.ListFilter{Experiment: p.experiment, Limit: 30})
	jobList("experiment jobs", store.ListFilter{Experiment: p.jobExperiment, Limit: 10})
	out = append(out, pageQuery{"firmware builds", qFirmware, []any{store.AdminList}},
		pageQuery{"firmware builds of a board", qBoardFirmware, []any{p.firmBoard, store.AdminList}})
	// A run (and /api/v1/runs/:id): the run, its cells, its verdicts, its signer's revocation,
	// its transparency-log entry; /compare's stored report of a pair.
	out = append(out, pageQuery{"run", qRun, []any{p.runID}},
		pageQuery{"run cells", qCells, []any{p.runID}},
		pageQuery{"run verdicts", qRunVerdicts, []any{p.runID}},
		pageQuery{"run signer revoked", qSignerRevoked, []any{p.runnerID, p.fp}},
		pageQuery{"run log entry", qLogEntry, []any{p.runID}},
		pageQuery{"compare report", qPairReport, []any{p.runID - 1, p.runID, "v1"}})
	// The leaderboards (and /api/v1/leaderboards, the home page's highlights).
	out = append(out, pageQuery{"leaderboard algorithms", qMeasuredAlgOps, nil},
		pageQuery{"leaderboard", qStandings, []any{p.algorithm, p.operation}},
		pageQuery{"leaderboard median", qStandingMedian, []any{p.algorithm, p.operation, p.unit, p.level, p.method, p.classStatus, p.board, p.origin,
			p.implementation, p.keys, p.msgBytes, 1, 0}},
		pageQuery{"schemes boards", qBoardLevels, nil},
		pageQuery{"schemes", qSchemes, []any{p.level, p.board}})
	// /runs (and /api/v1/runs) with each filter that leads an index, a date range and a
	// cursor; the rows of a page; the filters' values.
	runList("runs", store.ListFilter{Limit: 50, From: now.Add(-365 * 24 * time.Hour), To: now, After: cur})
	runList("runs by paper", store.ListFilter{Paper: p.paper, Limit: 50, After: cur})
	runList("runs by experiment", store.ListFilter{Experiment: p.experiment, Limit: 50})
	runList("runs by board", store.ListFilter{BoardClass: p.board, Limit: 50, To: now})
	runList("runs by assurance", store.ListFilter{Level: p.level, Limit: 50})
	runList("runs by kind", store.ListFilter{Kind: p.kind, Limit: 50})
	runList("runs by method", store.ListFilter{Method: p.method, Limit: 50})
	q, args := keysetQuery("runs r", "r.published_at", "r.id", runKeyset(store.ListFilter{}, p.userID), 50)
	out = append(out, pageQuery{"runs by submitter", q, args})
	runList("runs by algorithm", store.ListFilter{Algorithm: p.algorithm, Limit: 50})
	out = append(out, pageQuery{"runs rows", `SELECT ` + runCols + runFrom + ` WHERE ` + inList("r.id", 2) + ` ORDER BY r.published_at DESC, r.id DESC`, []any{p.runID, p.runID - 1}})
	for _, col := range facetCols {
		out = append(out, pageQuery{"runs facet " + col, qDistinct(col), nil})
	}
	// /jobs (and /api/v1/jobs) with each filter.
	jobList("jobs", store.ListFilter{Limit: 50, After: cur})
	jobList("jobs by paper", store.ListFilter{Paper: p.jobPaper, Limit: 50})
	jobList("jobs by experiment", store.ListFilter{Experiment: p.jobExperiment, Limit: 50})
	jobList("jobs by board", store.ListFilter{BoardClass: p.board, Limit: 50})
	jobList("jobs by state", store.ListFilter{State: p.jobState, Limit: 50})
	jobList("jobs by method", store.ListFilter{Method: p.method, Limit: 50})
	out = append(out, pageQuery{"job", qJob, []any{1}})
	out = append(out, pageQuery{"jobs rows", `SELECT ` + jobCols + jobFrom + ` WHERE ` + inList("j.id", 2) + ` ORDER BY j.created_at DESC, j.id DESC`, []any{1, 2}})
	// The administrator's page and the submit page.
	out = append(out, pageQuery{"users", qUsers, []any{store.AdminList}},
		pageQuery{"enrolment tokens", qEnrolTokens, []any{store.EnrolTokenList}},
		pageQuery{"submitter keys", qAllKeys, []any{store.AdminList}},
		pageQuery{"submitter keys of a user", qUserKeys, []any{p.userID, store.AdminList}})
	return out
}

// PagePlans returns the plan of every query behind a page (see pageQueries), by name, in the
// dialect's words (Explain), with values taken from the stored data; for the plan tests.
func (s *DB) PagePlans(ctx context.Context) (map[string]string, error) {
	p, err := s.planSample(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, q := range s.pageQueries(p) {
		plan, err := s.Explain(ctx, q.q, q.args...)
		if err != nil {
			return nil, fmt.Errorf("plan of %s: %w", q.name, err)
		}
		out[q.name] = plan
	}
	return out, nil
}

// Analyze refreshes the planner's statistics (the dialect's Analyze, else ANALYZE).
func (s *DB) Analyze(ctx context.Context) error {
	q := s.d.Analyze
	if q == "" {
		q = "ANALYZE"
	}
	if _, err := s.write.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}
