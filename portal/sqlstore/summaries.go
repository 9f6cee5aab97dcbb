package sqlstore

// The summaries pages read instead of counting every run (migration 0015 / PostgreSQL 0003):
// claim_tallies, board_counts and run_counts, kept by the transactions that change what they
// count, and leader_highlights, written by a periodic job.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"pqrepro/portal/store"
)

type tallyKey struct{ paper, claim, level, board, classStatus, verdict string }

type countKey struct{ dimension, key string }

type boardKey struct{ board, level string }

// summaryDelta is what one transaction adds to (or, negative, takes off) the counters of
// one run, in that run's shard.
type summaryDelta struct {
	shard   int64
	tallies map[tallyKey]int
	counts  map[countKey]int
	boards  map[boardKey]int
}

// newSummaryDelta starts the delta of run runID.
func (s *DB) newSummaryDelta(runID int64) *summaryDelta {
	return &summaryDelta{shard: runID % s.shards(), tallies: map[tallyKey]int{}, counts: map[countKey]int{}, boards: map[boardKey]int{}}
}

// shards is the number of rows each counter is spread over (Dialect.CounterShards).
func (s *DB) shards() int64 { return int64(max(s.d.CounterShards, 1)) }

// run counts run r (sign +1) or takes it off (-1) per board and level and per dimension.
func (d *summaryDelta) run(r store.Run, sign int) {
	d.boards[boardKey{r.BoardClass, r.Level}] += sign
	d.counts[countKey{store.CountPaper, r.Paper}] += sign
	d.counts[countKey{store.CountExperiment, r.Experiment}] += sign
	d.counts[countKey{store.CountKind, r.Kind}] += sign
	d.counts[countKey{store.CountMethod, r.Method}] += sign
	if r.RunnerID != 0 {
		d.counts[countKey{store.CountRunner, strconv.FormatInt(r.RunnerID, 10)}] += sign
	}
}

// verdict counts one claim verdict of a run on board class and level (sign +1), or takes it off (-1).
func (d *summaryDelta) verdict(v store.ClaimVerdict, board, level string, sign int) {
	d.tallies[tallyKey{v.Paper, v.ClaimID, level, board, v.ClassStatus, v.Verdict}] += sign
}

// apply writes the delta in tx: one upsert per changed counter, in key order (so two
// transactions never take the same rows in opposite orders), and deletes the counters it
// brought to zero. Each upsert adds to the stored value, so concurrent publishers never
// overwrite each other's counts; on PostgreSQL a lost serialisation race retries the whole
// transaction.
func (d *summaryDelta) apply(ctx context.Context, tx *Tx) error {
	tk := sortedKeys(d.tallies, func(a, b tallyKey) int {
		return cmp.Or(strings.Compare(a.paper, b.paper), strings.Compare(a.claim, b.claim), strings.Compare(a.level, b.level),
			strings.Compare(a.board, b.board), strings.Compare(a.classStatus, b.classStatus), strings.Compare(a.verdict, b.verdict))
	})
	for _, k := range tk {
		n := d.tallies[k]
		if _, err := tx.ExecContext(ctx, `INSERT INTO claim_tallies (paper, claim_id, level, board_class, class_status, verdict, shard, n) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (paper, claim_id, level, board_class, class_status, verdict, shard) DO UPDATE SET n = claim_tallies.n + excluded.n`,
			k.paper, k.claim, k.level, k.board, k.classStatus, k.verdict, d.shard, n); err != nil {
			return fmt.Errorf("count claim verdict %s/%s: %w", k.paper, k.claim, err)
		}
		if n < 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM claim_tallies WHERE paper = ? AND claim_id = ? AND level = ? AND board_class = ? AND class_status = ? AND verdict = ? AND shard = ? AND n <= 0`,
				k.paper, k.claim, k.level, k.board, k.classStatus, k.verdict, d.shard); err != nil {
				return fmt.Errorf("drop claim tally %s/%s: %w", k.paper, k.claim, err)
			}
		}
	}
	bk := sortedKeys(d.boards, func(a, b boardKey) int {
		return cmp.Or(strings.Compare(a.board, b.board), strings.Compare(a.level, b.level))
	})
	for _, k := range bk {
		n := d.boards[k]
		if _, err := tx.ExecContext(ctx, `INSERT INTO board_counts (board_class, level, shard, n) VALUES (?, ?, ?, ?)
			ON CONFLICT (board_class, level, shard) DO UPDATE SET n = board_counts.n + excluded.n`, k.board, k.level, d.shard, n); err != nil {
			return fmt.Errorf("count runs of board %s: %w", k.board, err)
		}
		if n < 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM board_counts WHERE board_class = ? AND level = ? AND shard = ? AND n <= 0`, k.board, k.level, d.shard); err != nil {
				return fmt.Errorf("drop board count %s: %w", k.board, err)
			}
		}
	}
	ck := sortedKeys(d.counts, func(a, b countKey) int {
		return cmp.Or(strings.Compare(a.dimension, b.dimension), strings.Compare(a.key, b.key))
	})
	for _, k := range ck {
		n := d.counts[k]
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_counts (dimension, key, shard, n) VALUES (?, ?, ?, ?)
			ON CONFLICT (dimension, key, shard) DO UPDATE SET n = run_counts.n + excluded.n`, k.dimension, k.key, d.shard, n); err != nil {
			return fmt.Errorf("count runs of %s %s: %w", k.dimension, k.key, err)
		}
		if n < 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM run_counts WHERE dimension = ? AND key = ? AND shard = ? AND n <= 0`, k.dimension, k.key, d.shard); err != nil {
				return fmt.Errorf("drop run count %s %s: %w", k.dimension, k.key, err)
			}
		}
	}
	return nil
}

// sortedKeys returns m's keys with a non-zero value, sorted by cmp.
func sortedKeys[K comparable](m map[K]int, cmp func(a, b K) int) []K {
	out := make([]K, 0, len(m))
	for k, n := range m {
		if n != 0 {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, cmp)
	return out
}

// rebuildSummaries is the SQL that recomputes the counters from the runs and their verdicts
// (the migrations fill them the same way); {shard} stands for the expression of a run's
// shard, r.id % CounterShards.
var rebuildSummaries = []string{
	`DELETE FROM claim_tallies`,
	`DELETE FROM board_counts`,
	`DELETE FROM run_counts`,
	`INSERT INTO claim_tallies (paper, claim_id, level, board_class, class_status, verdict, shard, n)
		SELECT v.paper, v.claim_id, r.level, r.board_class, v.class_status, v.verdict, {shard}, COUNT(*)
		FROM claim_verdicts v JOIN runs r ON r.id = v.run_id
		GROUP BY v.paper, v.claim_id, r.level, r.board_class, v.class_status, v.verdict, {shard}`,
	`INSERT INTO board_counts (board_class, level, shard, n) SELECT r.board_class, r.level, {shard}, COUNT(*) FROM runs r GROUP BY r.board_class, r.level, {shard}`,
	`INSERT INTO run_counts (dimension, key, shard, n) SELECT 'paper', r.paper, {shard}, COUNT(*) FROM runs r GROUP BY r.paper, {shard}`,
	`INSERT INTO run_counts (dimension, key, shard, n) SELECT 'experiment', r.experiment, {shard}, COUNT(*) FROM runs r GROUP BY r.experiment, {shard}`,
	`INSERT INTO run_counts (dimension, key, shard, n) SELECT 'kind', r.kind, {shard}, COUNT(*) FROM runs r GROUP BY r.kind, {shard}`,
	`INSERT INTO run_counts (dimension, key, shard, n) SELECT 'method', r.method, {shard}, COUNT(*) FROM runs r GROUP BY r.method, {shard}`,
	`INSERT INTO run_counts (dimension, key, shard, n)
		SELECT 'runner', CAST(r.runner_id AS TEXT), {shard}, COUNT(*) FROM runs r WHERE r.runner_id IS NOT NULL GROUP BY r.runner_id, {shard}`,
}

// RebuildSummaries recomputes the claim tallies and run counts from the stored runs and
// verdicts in one transaction (pqrepro rebuild runs it; so can anyone who doubts them). It
// scans every run: pages never call it.
func (s *DB) RebuildSummaries(ctx context.Context) error {
	err := s.tx(ctx, func(tx *Tx) error {
		shard := "(r.id % " + strconv.FormatInt(s.shards(), 10) + ")" // a constant of the dialect, never input
		for _, q := range rebuildSummaries {
			if _, err := tx.ExecContext(ctx, strings.ReplaceAll(q, "{shard}", shard)); err != nil {
				return err
			}
		}
		return tx.notify(ctx, store.EventRuns)
	})
	if err != nil {
		return fmt.Errorf("rebuild summaries: %w", err)
	}
	return nil
}

// BoardCounts returns the runs per board class (and the lowest assurance level among them),
// from the maintained counts: a row per board class, level and shard.
func (s *DB) BoardCounts(ctx context.Context) ([]store.BoardCount, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT board_class, level, SUM(n) FROM board_counts GROUP BY board_class, level ORDER BY board_class, level`)
	if err != nil {
		return nil, fmt.Errorf("count runs per board: %w", err)
	}
	defer rows.Close()
	var out []store.BoardCount
	for rows.Next() {
		var board, level string
		var n int
		if err := rows.Scan(&board, &level, &n); err != nil {
			return nil, fmt.Errorf("count runs per board: %w", err)
		}
		if k := len(out) - 1; k >= 0 && out[k].BoardClass == board {
			out[k].Runs += n
			out[k].Levels = min(out[k].Levels, level)
			continue
		}
		out = append(out, store.BoardCount{BoardClass: board, Runs: n, Levels: level})
	}
	return out, rows.Err()
}

// BoardLevels lists the (level, board class) pairs that have runs, from the maintained counts.
func (s *DB) BoardLevels(ctx context.Context) ([]store.BoardLevel, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT DISTINCT board_class, level FROM board_counts`)
	if err != nil {
		return nil, fmt.Errorf("board levels: %w", err)
	}
	defer rows.Close()
	var out []store.BoardLevel
	for rows.Next() {
		var b store.BoardLevel
		if err := rows.Scan(&b.BoardClass, &b.Level); err != nil {
			return nil, fmt.Errorf("board levels: %w", err)
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b store.BoardLevel) int {
		return cmp.Or(strings.Compare(a.Level, b.Level), strings.Compare(a.BoardClass, b.BoardClass))
	})
	return out, rows.Err()
}

// RunCounts returns the runs per paper, from the maintained counts.
func (s *DB) RunCounts(ctx context.Context) (map[string]int, error) {
	return s.CountsBy(ctx, store.CountPaper)
}

// CountsBy returns the runs per value of one dimension (store.CountPaper, CountExperiment,
// CountKind, CountMethod, CountRunner), from the maintained counts: a row per value and shard.
func (s *DB) CountsBy(ctx context.Context, dimension string) (map[string]int, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT key, SUM(n) FROM run_counts WHERE dimension = ? GROUP BY dimension, key`, dimension)
	if err != nil {
		return nil, fmt.Errorf("count runs per %s: %w", dimension, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("count runs per %s: %w", dimension, err)
		}
		out[k] = n
	}
	return out, rows.Err()
}

// RunCount returns the number of runs with one value of a dimension (0 for none), from the
// maintained counts: a row per shard.
func (s *DB) RunCount(ctx context.Context, dimension, key string) (int, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0) FROM run_counts WHERE dimension = ? AND key = ?`, dimension, key).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count runs of %s %s: %w", dimension, key, err)
	}
	return n, nil
}

// ClaimTallies counts, per claim of a paper, board class, assurance level and class status,
// how many runs gave each verdict; verdicts from different boards or levels are never summed.
// Rows come ordered by claim, level, board class and class status, from the maintained
// tallies (a range of their primary key, a row per shard, however many runs there are).
func (s *DB) ClaimTallies(ctx context.Context, paper string) ([]store.ClaimTally, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT claim_id, board_class, level, class_status, verdict, SUM(n) FROM claim_tallies
		WHERE paper = ? GROUP BY paper, claim_id, level, board_class, class_status, verdict
		ORDER BY paper, claim_id, level, board_class, class_status, verdict`, paper)
	if err != nil {
		return nil, fmt.Errorf("claim tallies of %s: %w", paper, err)
	}
	defer rows.Close()
	var out []store.ClaimTally
	for rows.Next() {
		var t store.ClaimTally
		if err := rows.Scan(&t.ClaimID, &t.BoardClass, &t.Level, &t.ClassStatus, &t.Verdict, &t.Runs); err != nil {
			return nil, fmt.Errorf("claim tallies of %s: %w", paper, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// SaveHighlights replaces the stored highlight standings of one (algorithm, operation,
// metric) with rows (in their order), in one transaction.
func (s *DB) SaveHighlights(ctx context.Context, algorithm, operation, metric string, rows []store.Standing, at time.Time) error {
	err := s.tx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM leader_highlights WHERE algorithm = ? AND operation = ? AND metric = ?`, algorithm, operation, metric); err != nil {
			return err
		}
		for i, st := range rows {
			if _, err := tx.ExecContext(ctx, `INSERT INTO leader_highlights (algorithm, operation, metric, pos, unit, level, method, class_status, board_class, origin,
				median, p25, p75, n, runs, latest_run, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				algorithm, operation, metric, i, st.Unit, st.Level, st.Method, st.ClassStatus, st.BoardClass, st.Origin,
				st.Median, st.P25, st.P75, st.N, st.Runs, st.LatestRun, ms0(at)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save highlights %s %s %s: %w", algorithm, operation, metric, err)
	}
	return nil
}

// Highlights returns the stored highlight standings of one (algorithm, operation, metric)
// in the order saved, and when they were computed (zero when never).
func (s *DB) Highlights(ctx context.Context, algorithm, operation, metric string) ([]store.Standing, time.Time, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT unit, level, method, class_status, board_class, origin, median, p25, p75, n, runs, latest_run, computed_at
		FROM leader_highlights WHERE algorithm = ? AND operation = ? AND metric = ? ORDER BY algorithm, operation, metric, pos`, algorithm, operation, metric)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("highlights %s %s %s: %w", algorithm, operation, metric, err)
	}
	defer rows.Close()
	var out []store.Standing
	var at time.Time
	for rows.Next() {
		var st store.Standing
		var c int64
		if err := rows.Scan(&st.Unit, &st.Level, &st.Method, &st.ClassStatus, &st.BoardClass, &st.Origin, &st.Median, &st.P25, &st.P75,
			&st.N, &st.Runs, &st.LatestRun, &c); err != nil {
			return nil, time.Time{}, fmt.Errorf("highlights %s %s %s: %w", algorithm, operation, metric, err)
		}
		at = time.UnixMilli(c)
		out = append(out, st)
	}
	return out, at, rows.Err()
}
