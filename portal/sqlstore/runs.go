package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/store"
)

// errSameBundle: the bundle's unique index refused the run, another transaction having just
// published the same bundle.
var errSameBundle = errors.New("the bundle was published by a concurrent transaction")

// Publish inserts a run with its cells, verdicts and pending transparency-log leaf in one
// transaction, so a run is visible whole or not at all. With a job, a lease that is not held (expired, foreign, finished)
// refuses the publication with a conflict and nothing is stored. A bundle digest is published
// once: a second publication of it returns a *DuplicateBundleError naming the first run.
func (s *DB) Publish(ctx context.Context, p store.Publication) (int64, error) {
	return s.publish(ctx, nil, p)
}

// PublishBatch publishes ps as Publish would, in one transaction: every run is visible or
// none is. It returns their ids in order. When any is refused (a duplicate bundle, a lease
// not held) none is published, and the error names which; the caller may then publish them
// one by one. One transaction per batch spares each publication its own commit, which is
// what a bulk load (bench/seed) waits on.
func (s *DB) PublishBatch(ctx context.Context, ps []store.Publication) ([]int64, error) {
	var ids []int64
	err := s.txOpts(ctx, nil, func(tx *Tx) error {
		ids = ids[:0]
		for i, p := range ps {
			id, err := s.publish(ctx, tx, p)
			if err != nil {
				return fmt.Errorf("publication %d of %d: %w", i+1, len(ps), err)
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publish a batch of %d runs: %w", len(ps), err)
	}
	return ids, nil
}

// publish is Publish inside tx (a batch's), or in a transaction of its own when tx is nil.
func (s *DB) publish(ctx context.Context, in *Tx, p store.Publication) (int64, error) {
	now := s.Now()
	r := p.Run
	var id int64
	// Publication runs at the engine's default isolation (PostgreSQL: read committed), not
	// serializable: what it reads it locks or a constraint guards (the job's row is locked by
	// checkLease; a bundle published twice at once is refused by the unique index on
	// bundle_digest; counters are appended rows nobody reads here), so concurrent publishers
	// never lose a serialisation race, however many there are.
	err := s.within(ctx, in, func(tx *Tx) error {
		if p.JobID != 0 {
			if _, err := checkLease(ctx, tx, p.JobID, p.RunnerID, p.LeaseID, ms0(now)); err != nil {
				return err
			}
		}
		var dup int64
		switch err := tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE bundle_digest = ?`, r.Bundle).Scan(&dup); {
		case err == nil:
			return &store.DuplicateBundleError{RunID: dup, Digest: r.Bundle}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		var err error
		if id, err = insertRun(ctx, tx, p, now); err != nil {
			return err
		}
		if err := queueLogEntry(ctx, tx, id, r.Bundle, now); err != nil {
			return err
		}
		if err := insertCells(ctx, tx, id, r, p.Cells); err != nil {
			return err
		}
		if err := insertVerdicts(ctx, tx, id, r, p.Claims); err != nil {
			return err
		}
		if p.JobID != 0 {
			tx.change(genWork)
			prog, _ := json.Marshal(protocol.Progress{CellsDone: len(p.Cells), CellsTotal: len(p.Cells)})
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'published', run_id = ?, finished_at = ?, lease_id = NULL, progress = ? WHERE id = ?`,
				id, ms0(now), string(prog), p.JobID); err != nil {
				return err
			}
		}
		if err := tx.notify(ctx, store.EventRuns); err != nil {
			return err
		}
		s.hook("publish:uncommitted")
		return nil
	})
	if errors.Is(err, errSameBundle) {
		// The first publication may have committed in a process that stopped before it
		// advanced the counters (PostgreSQL advances them after the commit): advance them now.
		s.changed(ctx, genRuns, genWork)
		var dup int64
		if derr := s.read.QueryRowContext(ctx, `SELECT id FROM runs WHERE bundle_digest = ?`, r.Bundle).Scan(&dup); derr == nil {
			return 0, &store.DuplicateBundleError{RunID: dup, Digest: r.Bundle}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("publish run of %s: %w", r.Experiment, err)
	}
	if in == nil {
		s.hook("publish:committed")
	}
	return id, nil
}

// runBinding and runClassStatus are what a run records when its publication leaves them
// empty: unbound, and declared (nothing said its class was checked).
func runBinding(r store.Run) string {
	if r.Binding == "" {
		return store.BindingUnbound
	}
	return r.Binding
}

func runClassStatus(r store.Run) string {
	if r.ClassStatus == "" {
		return artifacts.ClassDeclared
	}
	return r.ClassStatus
}

// insertRun inserts the publication's run row, published at now, and returns its id;
// errSameBundle when another transaction published the same bundle a moment ago.
func insertRun(ctx context.Context, tx *Tx, p store.Publication, now time.Time) (int64, error) {
	r := p.Run
	keys, _ := json.Marshal(r.PublicKeys)
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO runs (job_id, experiment, paper, manifest_id, kind, method, board_class, board_name, level, class_status, origin,
		runner_id, submitter_id, signer, public_keys, bundle_digest, bundle_size, firmware_digest, started_at, finished_at, published_at,
		environment, report, checks, cells_total, cells_ok, binding, report_version, catalogue)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		nullID(p.JobID), r.Experiment, r.Paper, r.ManifestID, r.Kind, r.Method, r.BoardClass, r.BoardName, r.Level, runClassStatus(r), r.Origin,
		nullID(r.RunnerID), nullID(r.SubmitterID), r.Signer, string(keys), r.Bundle, r.BundleSize, r.Firmware,
		ms0(r.StartedAt), ms0(r.FinishedAt), ms0(now), r.Environment, r.Report, r.Checks, r.CellsTotal, r.CellsOK, runBinding(r), r.ReportVersion, boolInt(r.Catalogue)).Scan(&id)
	if isUnique(err) {
		return 0, errSameBundle // published a moment ago by another transaction
	}
	return id, err
}

// cellColumns are the columns insertCells fills, in order.
const cellColumns = `run_id, idx, algorithm, operation, status, error, unit, n, min, p25, median, p75, max, mean, stddev, heap_per_op,
		board_class, level, origin, stack_bytes, energy_j_per_op, method, class_status, keys, requested, budget_reached, variant, peak_heap_bytes, loaded,
		implementation, msg_bytes, energy_method, hash_share, hash_bound, hash_absent`

// cellsPerInsert bounds the rows of one INSERT of cells (35 values a row: far below either
// engine's limit of bound values a statement).
const cellsPerInsert = 100

// insertCells inserts run id's cells, each with the run's board, level, origin and class
// status so that rankings read one table: up to cellsPerInsert rows a statement (one round
// trip to PostgreSQL for a usual run, not one a cell).
func insertCells(ctx context.Context, tx *Tx, id int64, r store.Run, cells []artifacts.Cell) error {
	classStatus := runClassStatus(r)
	tuple := "(" + placeholders(strings.Count(cellColumns, ",")+1) + ")"
	for first := 0; first < len(cells); first += cellsPerInsert {
		batch := cells[first:min(len(cells), first+cellsPerInsert)]
		var args []any
		for k, c := range batch {
			args = append(args, cellRow(id, first+k, r, classStatus, c)...)
		}
		q := `INSERT INTO cells (` + cellColumns + `) VALUES ` + strings.TrimSuffix(strings.Repeat(tuple+", ", len(batch)), ", ")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// cellRow is the values of cell i of run id, in cellColumns' order.
func cellRow(id int64, i int, r store.Run, classStatus string, c artifacts.Cell) []any {
	var n int
	var st [7]any
	if c.Stats != nil {
		n = c.Stats.N
		st = [7]any{c.Stats.Min, c.Stats.P25, c.Stats.Median, c.Stats.P75, c.Stats.Max, c.Stats.Mean, c.Stats.Stddev}
	}
	var heap, stack, energy any
	if c.Memory != nil && c.Memory.HeapBytesPerOp != nil {
		heap = *c.Memory.HeapBytesPerOp
	}
	if c.Memory != nil && c.Memory.StackBytes != nil {
		stack = float64(*c.Memory.StackBytes)
	}
	if c.Energy != nil && c.Energy.JoulesPerOp != nil {
		energy = c.Energy.JoulesPerOp.Median
	}
	share, bound, absent := cellHashing(c)
	// A variant (crypto/tls beside the engine, a corrected openssl command) is not the
	// manifest's method: its method says so, so rankings never mix it with the method's.
	method := string(r.Method)
	if c.Variant != "" {
		method += " · " + c.Variant
	}
	return []any{id, i, c.Algorithm, c.Operation, c.Status, c.Error, c.Unit, n, st[0], st[1], st[2], st[3], st[4], st[5], st[6], heap,
		r.BoardClass, r.Level, r.Origin, stack, energy, method, classStatus, c.Keys, c.Requested, c.BudgetReached, c.Variant, peakHeap(c), r.Loaded,
		cellImplementation(c), cellMessage(c), store.EnergyMethodOf(c), share, bound, absent}
}

// cellHashing is a cell's hashing columns: its share and bound (NULL when not measured) and
// why it is absent.
func cellHashing(c artifacts.Cell) (share, bound any, absent string) {
	h := c.Hashing
	if h == nil {
		return nil, nil, ""
	}
	if h.Absent != "" {
		return nil, nil, h.Absent
	}
	return h.Share, h.Bound, ""
}

// insertVerdicts inserts run id's claim verdicts and adds the run and its verdicts to the
// summary counters.
func insertVerdicts(ctx context.Context, tx *Tx, id int64, r store.Run, claims []store.ClaimVerdict) error {
	// Up to 100 verdicts a statement (six values a row).
	for rest := claims; len(rest) > 0; {
		batch := rest[:min(len(rest), 100)]
		rest = rest[len(batch):]
		args := make([]any, 0, 6*len(batch))
		for _, v := range batch {
			args = append(args, id, v.Paper, v.ClaimID, v.Verdict, v.Reason, v.ClassStatus)
		}
		q := `INSERT INTO claim_verdicts (run_id, paper, claim_id, verdict, reason, class_status) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", len(batch)), ", ")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	sums := newSummaryDelta()
	sums.run(r, 1)
	for _, v := range claims {
		sums.verdict(v, r.Origin, r.BoardClass, string(r.Level), 1)
	}
	return sums.apply(ctx, tx)
}

// within runs fn in tx when there is one, else in a transaction of its own at the engine's
// default isolation.
func (s *DB) within(ctx context.Context, tx *Tx, fn func(*Tx) error) error {
	if tx != nil {
		return fn(tx)
	}
	return s.txOpts(ctx, nil, fn)
}

const runCols = `r.id, COALESCE(r.job_id, 0), r.experiment, r.paper, r.manifest_id, r.kind, r.method, r.board_class, r.board_name, r.level, r.class_status, r.origin,
	COALESCE(r.runner_id, 0), COALESCE(rn.name, ''), COALESCE(u.name, ''), r.signer, r.public_keys, r.bundle_digest, r.bundle_size, r.firmware_digest,
	r.started_at, r.finished_at, r.published_at, r.cells_total, r.cells_ok, r.binding, r.catalogue`

// runListCols are runCols without the public keys (an ML-DSA-65 key is kilobytes of JSON
// per row) for lists, whose rows never show them; a listed Run has empty PublicKeys.
var runListCols = strings.Replace(runCols, "r.public_keys", "''", 1)

const runFrom = ` FROM runs r LEFT JOIN runners rn ON rn.id = r.runner_id LEFT JOIN users u ON u.id = r.submitter_id`

func scanRun(sc interface{ Scan(...any) error }, extra ...any) (store.Run, error) {
	var r store.Run
	var keys string
	var st, fin, pub sql.NullInt64
	dest := []any{&r.ID, &r.JobID, &r.Experiment, &r.Paper, &r.ManifestID, &r.Kind, &r.Method, &r.BoardClass, &r.BoardName, &r.Level, &r.ClassStatus, &r.Origin,
		&r.RunnerID, &r.RunnerName, &r.Submitter, &r.Signer, &keys, &r.Bundle, &r.BundleSize, &r.Firmware, &st, &fin, &pub, &r.CellsTotal, &r.CellsOK, &r.Binding, &r.Catalogue}
	if err := sc.Scan(append(dest, extra...)...); err != nil {
		return store.Run{}, err
	}
	if keys != "" {
		json.Unmarshal([]byte(keys), &r.PublicKeys)
	}
	r.StartedAt, r.FinishedAt, r.PublishedAt = fromMS(st), fromMS(fin), fromMS(pub)
	return r, nil
}

// qRun is Run's page query (by the primary key); qCells is Cells' (by the primary key
// (run_id, idx), in order: a run's cells are bounded by artifacts.MaxCells).
const (
	qRun   = `SELECT ` + runCols + `, r.environment, r.report, r.checks, r.report_version` + runFrom + ` WHERE r.id = ?`
	qCells = `SELECT algorithm, operation, status, error, unit, n, min, p25, median, p75, max, mean, stddev, heap_per_op,
		stack_bytes, energy_j_per_op, keys, requested, budget_reached, variant, peak_heap_bytes, implementation, msg_bytes,
		hash_share, hash_bound, hash_absent
		FROM cells WHERE run_id = ? ORDER BY idx`
)

// Run returns a run with its environment, report and checks.
func (s *DB) Run(ctx context.Context, id int64) (store.Run, error) {
	var env, rep, checks string
	var version int
	r, err := scanRun(s.read.QueryRowContext(ctx, qRun, id), &env, &rep, &checks, &version)
	if err != nil {
		return store.Run{}, notFound(err, "run %d not found", id)
	}
	r.Environment, r.Report, r.Checks, r.ReportVersion = env, rep, checks, version
	return r, nil
}

// RunByBundle returns the run that published the bundle with this digest; fault.NotFound
// when none did.
func (s *DB) RunByBundle(ctx context.Context, digest string) (store.Run, error) {
	r, err := scanRun(s.read.QueryRowContext(ctx, `SELECT `+runCols+runFrom+` WHERE r.bundle_digest = ?`, digest))
	if err != nil {
		return store.Run{}, notFound(err, "no run published bundle %s", digest)
	}
	return r, nil
}

// Runs lists the newest runs (f.Limit, 50 when unset, at most store.MaxPage), newest first,
// without their large JSON fields: the first page of ListRuns for the same filters.
func (s *DB) Runs(ctx context.Context, f store.RunFilter) ([]store.Run, error) {
	p, err := s.ListRuns(ctx, store.ListFilter{Experiment: f.Experiment, Paper: f.Paper, BoardClass: f.BoardClass, Limit: f.Limit})
	return p.Items, err
}

// Cells returns a run's cells in order.
func (s *DB) Cells(ctx context.Context, runID int64) ([]artifacts.Cell, error) {
	rows, err := s.read.QueryContext(ctx, qCells, runID)
	if err != nil {
		return nil, fmt.Errorf("cells of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []artifacts.Cell
	for rows.Next() {
		var c artifacts.Cell
		var n int
		var v [10]sql.NullFloat64
		var peak sql.NullInt64
		var impl, hashAbsent string
		var msg int
		var hashShare, hashBound sql.NullFloat64
		if err := rows.Scan(&c.Algorithm, &c.Operation, &c.Status, &c.Error, &c.Unit, &n, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
			&v[8], &v[9], &c.Keys, &c.Requested, &c.BudgetReached, &c.Variant, &peak, &impl, &msg, &hashShare, &hashBound, &hashAbsent); err != nil {
			return nil, fmt.Errorf("cells of run %d: %w", runID, err)
		}
		switch {
		case hashShare.Valid:
			// The table keeps the share and its bound; the bundle holds the pass's counts.
			c.Hashing = &artifacts.Hashing{Share: hashShare.Float64, Bound: hashBound.Float64}
		case hashAbsent != "":
			c.Hashing = &artifacts.Hashing{Absent: hashAbsent}
		}
		if impl != "" {
			// The table keeps the implementation's key (its identity as rankings group it);
			// the bundle holds the full record.
			c.Implementation = &artifacts.Implementation{Name: impl}
		}
		if msg > 0 {
			c.Sizes = &artifacts.Sizes{Message: msg}
		}
		if v[7].Valid || v[8].Valid || peak.Valid {
			c.Memory = &artifacts.Memory{}
		}
		if peak.Valid {
			p := int(peak.Int64)
			c.Memory.PeakHeapBytes = &p
		}
		if v[7].Valid {
			h := v[7].Float64
			c.Memory.HeapBytesPerOp = &h
		}
		if v[8].Valid {
			st := int(v[8].Float64)
			c.Memory.StackBytes = &st
		}
		if v[9].Valid {
			// Only the median per operation is kept in the table; the bundle holds the rest.
			c.Energy = &artifacts.Energy{JoulesPerOp: &artifacts.Stats{Median: v[9].Float64}}
		}
		if n > 0 {
			c.Stats = &artifacts.Stats{N: n, Min: v[0].Float64, P25: v[1].Float64, Median: v[2].Float64, P75: v[3].Float64, Max: v[4].Float64, Mean: v[5].Float64, Stddev: v[6].Float64}
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

const verdictCols = `SELECT v.run_id, v.paper, v.claim_id, v.verdict, v.reason, r.board_class, r.level, r.origin, v.class_status
		FROM claim_verdicts v JOIN runs r ON r.id = v.run_id`

// Page queries of ClaimVerdicts (plans.go explains them).
const (
	// qRunVerdicts: one run's verdicts, by the primary key (run_id, claim_id).
	qRunVerdicts = verdictCols + ` WHERE v.run_id = ? ORDER BY v.claim_id`
	// qNextClaim: the paper's next claim with a verdict after a claim id, from
	// claim_verdicts_latest (a loose scan: one probe per claim, however many runs).
	qNextClaim = `SELECT MIN(claim_id) FROM claim_verdicts WHERE paper = ? AND claim_id > ?`
	// qClaimVerdicts: a claim's newest verdicts, walking claim_verdicts_latest backwards.
	qClaimVerdicts = verdictCols + ` WHERE v.paper = ? AND v.claim_id = ? ORDER BY v.run_id DESC LIMIT ?`
)

// ClaimVerdicts returns one run's verdicts (runID > 0, by claim), or a paper's newest
// store.VerdictsPerClaim verdicts of each claim (by claim, newest run first): a bounded read
// however many runs judged the paper; ClaimTallies counts them all.
func (s *DB) ClaimVerdicts(ctx context.Context, paper string, runID int64) ([]store.ClaimVerdict, error) {
	if runID > 0 {
		return s.verdicts(ctx, qRunVerdicts, runID)
	}
	var out []store.ClaimVerdict
	claim := ""
	for range store.MaxClaimsPerPaper {
		var next sql.NullString
		if err := s.read.QueryRowContext(ctx, qNextClaim, paper, claim).Scan(&next); err != nil {
			return nil, fmt.Errorf("claim verdicts of %s: %w", paper, err)
		}
		if !next.Valid {
			break
		}
		claim = next.String
		vs, err := s.verdicts(ctx, qClaimVerdicts, paper, claim, store.VerdictsPerClaim)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

func (s *DB) verdicts(ctx context.Context, q string, args ...any) ([]store.ClaimVerdict, error) {
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("claim verdicts: %w", err)
	}
	defer rows.Close()
	var out []store.ClaimVerdict
	for rows.Next() {
		var v store.ClaimVerdict
		if err := rows.Scan(&v.RunID, &v.Paper, &v.ClaimID, &v.Verdict, &v.Reason, &v.BoardClass, &v.Level, &v.Origin, &v.ClassStatus); err != nil {
			return nil, fmt.Errorf("claim verdicts: %w", err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Page queries of Standings: the grouped scan and each group's median probe, both on the
// covering index cells_rank.
const (
	qStandings = `SELECT unit, level, method, class_status, board_class, origin, implementation, keys, msg_bytes, MIN(p25), MAX(p75), SUM(n), COUNT(*), MAX(run_id)
		FROM cells WHERE algorithm = ? AND operation = ? AND status = 'ok' AND median IS NOT NULL
		GROUP BY unit, level, method, class_status, board_class, origin, implementation, keys, msg_bytes`
	qStandingMedian = `SELECT median FROM cells
			WHERE algorithm = ? AND operation = ? AND status = 'ok' AND median IS NOT NULL AND unit = ? AND level = ? AND method = ? AND class_status = ? AND board_class = ? AND origin = ?
			AND implementation = ? AND keys = ? AND msg_bytes = ?
			ORDER BY median LIMIT ? OFFSET ?`
	// The home page's highlights leave out cells of loaded runs (cells.loaded).
	qQuietStandings = `SELECT unit, level, method, class_status, board_class, origin, implementation, keys, msg_bytes, MIN(p25), MAX(p75), SUM(n), COUNT(*), MAX(run_id)
		FROM cells WHERE algorithm = ? AND operation = ? AND status = 'ok' AND median IS NOT NULL AND loaded = 0
		GROUP BY unit, level, method, class_status, board_class, origin, implementation, keys, msg_bytes`
	qQuietStandingMedian = `SELECT median FROM cells
			WHERE algorithm = ? AND operation = ? AND status = 'ok' AND median IS NOT NULL AND loaded = 0 AND unit = ? AND level = ? AND method = ? AND class_status = ? AND board_class = ? AND origin = ?
			AND implementation = ? AND keys = ? AND msg_bytes = ?
			ORDER BY median LIMIT ? OFFSET ?`
)

// qMeasuredAlgOps is MeasuredAlgOps' query: a loose scan of cells_leaderboard (algorithm,
// operation, status), one probe per pair and one for its first ok cell (a scalar subquery:
// PostgreSQL would make an EXISTS a hash of every ok cell).
var qMeasuredAlgOps = qDistinct2("cells", "algorithm", "operation",
	"(SELECT 1 FROM cells c WHERE c.algorithm = pairs.x AND c.operation = pairs.y AND c.status = 'ok' LIMIT 1) IS NOT NULL")

// Standings aggregates every successful measurement of an (algorithm, operation) per unit,
// level, method, class status, board class and origin. The database does the work: one grouped scan of the
// covering index cells_rank, then for each group the median of its runs' medians read at
// the middle offset of that index (ordered by median within a group), so a few rows come
// back however many runs there are. For MetricHeap the unit is "B".
func (s *DB) Standings(ctx context.Context, algorithm, operation, metric string) ([]store.Standing, error) {
	if col, unit, ok := valueMetric(metric); ok {
		return s.valueStandings(ctx, algorithm, operation, col, unit)
	}
	return s.standings(ctx, qStandings, qStandingMedian, algorithm, operation)
}

// QuietStandings is Standings by latency without the cells of loaded runs (host runs during
// which other processes used the CPU above the runner's threshold): the home page's highlights.
func (s *DB) QuietStandings(ctx context.Context, algorithm, operation string) ([]store.Standing, error) {
	return s.standings(ctx, qQuietStandings, qQuietStandingMedian, algorithm, operation)
}

func (s *DB) standings(ctx context.Context, qGroups, qMedian, algorithm, operation string) ([]store.Standing, error) {
	rows, err := s.read.QueryContext(ctx, qGroups, algorithm, operation)
	if err != nil {
		return nil, fmt.Errorf("leaderboard %s %s: %w", algorithm, operation, err)
	}
	var out []store.Standing
	for rows.Next() {
		var st store.Standing
		if err := rows.Scan(&st.Unit, &st.Level, &st.Method, &st.ClassStatus, &st.BoardClass, &st.Origin, &st.Implementation, &st.Keys, &st.MessageBytes,
			&st.P25, &st.P75, &st.N, &st.Runs, &st.LatestRun); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, st)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		st := &out[i]
		mid, err := s.read.QueryContext(ctx, qMedian, algorithm, operation, st.Unit, st.Level, st.Method, st.ClassStatus, st.BoardClass, st.Origin,
			st.Implementation, st.Keys, st.MessageBytes, 2-st.Runs%2, (st.Runs-1)/2)
		if err != nil {
			return nil, fmt.Errorf("leaderboard %s %s median: %w", algorithm, operation, err)
		}
		var sum float64
		var n int
		for mid.Next() {
			var v float64
			if err := mid.Scan(&v); err != nil {
				mid.Close()
				return nil, err
			}
			sum += v
			n++
		}
		mid.Close()
		if n > 0 {
			st.Median = sum / float64(n)
		}
	}
	return out, nil
}

// valueMetric maps a per-operation metric to its cells column and unit. The column name
// comes from this fixed table only, never from a request.
func valueMetric(metric string) (col, unit string, ok bool) {
	switch metric {
	case store.MetricHeap:
		return "heap_per_op", "B", true
	case store.MetricStack:
		return "stack_bytes", "B", true
	case store.MetricEnergy:
		return "energy_j_per_op", "J", true
	}
	return "", "", false
}

// valueStandings is Standings for a one-value-per-cell metric (heap, stack, energy): a
// rarer query, aggregated in Go.
func (s *DB) valueStandings(ctx context.Context, algorithm, operation, col, unit string) ([]store.Standing, error) {
	// Energy is ranked within one method (RAPL, a meter): another method is another row.
	energyMethod, order := "''", ""
	if col == "energy_j_per_op" {
		energyMethod, order = "energy_method", "energy_method, "
	}
	rows, err := s.read.QueryContext(ctx, `SELECT level, method, class_status, board_class, origin, implementation, keys, msg_bytes, `+energyMethod+`, `+col+`, n, run_id FROM cells
		WHERE algorithm = ? AND operation = ? AND status = 'ok' AND `+col+` IS NOT NULL
		ORDER BY level, method, class_status, board_class, origin, implementation, keys, msg_bytes, `+order+col, algorithm, operation)
	if err != nil {
		return nil, fmt.Errorf("%s leaderboard %s %s: %w", col, algorithm, operation, err)
	}
	defer rows.Close()
	var out []store.Standing
	var vals [][]float64
	for rows.Next() {
		var st store.Standing
		var v float64
		if err := rows.Scan(&st.Level, &st.Method, &st.ClassStatus, &st.BoardClass, &st.Origin, &st.Implementation, &st.Keys, &st.MessageBytes, &st.EnergyMethod, &v, &st.N, &st.LatestRun); err != nil {
			return nil, err
		}
		n := st.N // this cell's samples (the group's first row starts its total at 0)
		k := len(out) - 1
		if k < 0 || out[k].Level != st.Level || out[k].Method != st.Method || out[k].ClassStatus != st.ClassStatus ||
			out[k].BoardClass != st.BoardClass || out[k].Origin != st.Origin || out[k].Quantity != st.Quantity || out[k].EnergyMethod != st.EnergyMethod {
			st.Unit, st.P25, st.P75, st.N = unit, v, v, 0
			out = append(out, st)
			vals = append(vals, nil)
			k++
		}
		o := &out[k]
		o.P25, o.P75 = min(o.P25, v), max(o.P75, v)
		o.N += n
		o.Runs++
		o.LatestRun = max(o.LatestRun, st.LatestRun)
		vals[k] = append(vals[k], v)
	}
	for k, vs := range vals {
		if n := len(vs); n%2 == 1 {
			out[k].Median = vs[n/2]
		} else {
			out[k].Median = (vs[n/2-1] + vs[n/2]) / 2
		}
	}
	return out, rows.Err()
}

// MeasuredAlgOps lists the (algorithm, operation) pairs with at least one ok cell.
func (s *DB) MeasuredAlgOps(ctx context.Context) ([]store.AlgOp, error) {
	return queryPairs(ctx, s.read, qMeasuredAlgOps, "measured algorithms", func(alg, op string) store.AlgOp {
		return store.AlgOp{Algorithm: alg, Operation: op}
	})
}

// CountCells returns the number of stored cells.
func (s *DB) CountCells(ctx context.Context) (int, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM cells`).Scan(&n)
	return n, err
}

// cellImplementation is the implementation key a cell is filed under ("" when none is set).
func cellImplementation(c artifacts.Cell) string {
	if c.Implementation == nil {
		return ""
	}
	return c.Implementation.Key()
}

// cellMessage is the message size a cell is filed under (0 when it signs none).
func cellMessage(c artifacts.Cell) int {
	if c.Sizes == nil {
		return 0
	}
	return c.Sizes.Message
}

// boolInt is a flag as the integer columns store it.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// peakHeap is a cell's board-reported peak heap for the cells table, or NULL.
func peakHeap(c artifacts.Cell) any {
	if c.Memory != nil && c.Memory.PeakHeapBytes != nil {
		return *c.Memory.PeakHeapBytes
	}
	return nil
}
