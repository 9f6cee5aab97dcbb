package sqlstore

// The summaries pages read instead of counting every run (migration 0015 / PostgreSQL 0003):
// claim_tallies, board_counts and run_counts, appended to by the transactions that change
// what they count and folded by CompactSummaries, and leader_highlights, written by a
// periodic job.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"pqrepro/portal/store"
)

type tallyKey struct{ paper, claim, origin, level, board, classStatus, verdict string }

type countKey struct{ dimension, key string }

type boardKey struct{ board, level string }

// summaryDelta is what one transaction adds to (or, negative, takes off) the counters.
type summaryDelta struct {
	tallies map[tallyKey]int
	counts  map[countKey]int
	boards  map[boardKey]int
}

func newSummaryDelta() *summaryDelta {
	return &summaryDelta{tallies: map[tallyKey]int{}, counts: map[countKey]int{}, boards: map[boardKey]int{}}
}

// run counts run r (sign +1) or takes it off (-1) per board and level and per dimension.
func (d *summaryDelta) run(r store.Run, sign int) {
	d.boards[boardKey{r.BoardClass, string(r.Level)}] += sign
	d.counts[countKey{store.CountPaper, r.Paper}] += sign
	d.counts[countKey{store.CountExperiment, r.Experiment}] += sign
	d.counts[countKey{store.CountKind, string(r.Kind)}] += sign
	d.counts[countKey{store.CountMethod, string(r.Method)}] += sign
	if r.RunnerID != 0 {
		d.counts[countKey{store.CountRunner, strconv.FormatInt(r.RunnerID, 10)}] += sign
	}
}

// verdict counts one claim verdict of a run of origin on board class and level (sign +1), or
// takes it off (-1).
func (d *summaryDelta) verdict(v store.ClaimVerdict, origin, board, level string, sign int) {
	d.tallies[tallyKey{v.Paper, v.ClaimID, origin, level, board, v.ClassStatus, v.Verdict}] += sign
}

// apply appends the delta's non-zero changes in tx, one multi-row INSERT per table. It reads
// no counter, so two transactions applying deltas never conflict over one.
func (d *summaryDelta) apply(ctx context.Context, tx *Tx) error {
	var tallies, boards, counts [][]any
	for k, n := range d.tallies {
		if n != 0 {
			tallies = append(tallies, []any{k.paper, k.claim, k.origin, k.level, k.board, k.classStatus, k.verdict, n})
		}
	}
	for k, n := range d.boards {
		if n != 0 {
			boards = append(boards, []any{k.board, k.level, n})
		}
	}
	for k, n := range d.counts {
		if n != 0 {
			counts = append(counts, []any{k.dimension, k.key, n})
		}
	}
	for _, t := range []struct {
		table summaryTable
		rows  [][]any
	}{{summaryTables[0], tallies}, {summaryTables[1], boards}, {summaryTables[2], counts}} {
		if err := insertRows(ctx, tx, t.table, t.rows); err != nil {
			return err
		}
	}
	return nil
}

// summaryTable is one counter table: its key columns, then n.
type summaryTable struct {
	name string
	keys []string
}

var summaryTables = []summaryTable{
	{"claim_tallies", []string{"paper", "claim_id", "origin", "level", "board_class", "class_status", "verdict"}},
	{"board_counts", []string{"board_class", "level"}},
	{"run_counts", []string{"dimension", "key"}},
}

// insertRows appends rows (key values, then n) to a counter table, 100 rows a statement.
func insertRows(ctx context.Context, tx *Tx, t summaryTable, rows [][]any) error {
	cols := strings.Join(t.keys, ", ") + ", n"
	tuple := "(" + placeholders(len(t.keys)+1) + ")"
	for len(rows) > 0 {
		batch := rows[:min(len(rows), 100)]
		rows = rows[len(batch):]
		var args []any
		for _, r := range batch {
			args = append(args, r...)
		}
		q := `INSERT INTO ` + t.name + ` (` + cols + `) VALUES ` + strings.TrimSuffix(strings.Repeat(tuple+", ", len(batch)), ", ")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("count in %s: %w", t.name, err)
		}
	}
	return nil
}

// CompactSummaries folds each counter's rows into one, dropping counters that sum to zero,
// in one transaction, and returns how many rows it removed. The periodic summary job runs
// it; readers are right before and after. Rows appended by transactions that commit
// meanwhile are not in its snapshot, so it neither deletes nor counts them (on SQLite no
// writer runs meanwhile).
func (s *DB) CompactSummaries(ctx context.Context) (int, error) {
	removed := 0
	err := s.tx(ctx, func(tx *Tx) error {
		removed = 0
		for _, t := range summaryTables {
			keys := strings.Join(t.keys, ", ")
			var rows int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+t.name).Scan(&rows); err != nil {
				return err
			}
			q, err := tx.QueryContext(ctx, `SELECT `+keys+`, SUM(n) FROM `+t.name+` GROUP BY `+keys)
			if err != nil {
				return err
			}
			var sums [][]any
			zero := false
			for q.Next() {
				vals := make([]string, len(t.keys))
				dest := make([]any, len(t.keys)+1)
				for i := range vals {
					dest[i] = &vals[i]
				}
				var n int
				dest[len(vals)] = &n
				if err := q.Scan(dest...); err != nil {
					q.Close()
					return err
				}
				if n == 0 {
					zero = true
					continue
				}
				row := make([]any, 0, len(vals)+1)
				for _, v := range vals {
					row = append(row, v)
				}
				sums = append(sums, append(row, n))
			}
			q.Close()
			if err := q.Err(); err != nil {
				return err
			}
			if rows == len(sums) && !zero {
				continue // one row per counter already
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t.name); err != nil {
				return err
			}
			if err := insertRows(ctx, tx, t, sums); err != nil {
				return err
			}
			removed += rows - len(sums)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("compact summaries: %w", err)
	}
	return removed, nil
}

// rebuildSummaries is the SQL that recomputes the counters from the runs and their verdicts,
// one row per counter (migration 0015 fills them the same way).
var rebuildSummaries = []string{
	`DELETE FROM claim_tallies`,
	`DELETE FROM board_counts`,
	`DELETE FROM run_counts`,
	`INSERT INTO claim_tallies (paper, claim_id, origin, level, board_class, class_status, verdict, n)
		SELECT v.paper, v.claim_id, r.origin, r.level, r.board_class, v.class_status, v.verdict, COUNT(*)
		FROM claim_verdicts v JOIN runs r ON r.id = v.run_id
		GROUP BY v.paper, v.claim_id, r.origin, r.level, r.board_class, v.class_status, v.verdict`,
	`INSERT INTO board_counts (board_class, level, n) SELECT board_class, level, COUNT(*) FROM runs GROUP BY board_class, level`,
	`INSERT INTO run_counts (dimension, key, n) SELECT 'paper', paper, COUNT(*) FROM runs GROUP BY paper`,
	`INSERT INTO run_counts (dimension, key, n) SELECT 'experiment', experiment, COUNT(*) FROM runs GROUP BY experiment`,
	`INSERT INTO run_counts (dimension, key, n) SELECT 'kind', kind, COUNT(*) FROM runs GROUP BY kind`,
	`INSERT INTO run_counts (dimension, key, n) SELECT 'method', method, COUNT(*) FROM runs GROUP BY method`,
	`INSERT INTO run_counts (dimension, key, n)
		SELECT 'runner', CAST(runner_id AS TEXT), COUNT(*) FROM runs WHERE runner_id IS NOT NULL GROUP BY runner_id`,
}

// RebuildSummaries recomputes the claim tallies and run counts from the stored runs and
// verdicts in one transaction (pqrepro rebuild runs it; so can anyone who doubts them). It
// scans every run: pages never call it.
func (s *DB) RebuildSummaries(ctx context.Context) error {
	err := s.tx(ctx, func(tx *Tx) error {
		for _, q := range rebuildSummaries {
			if _, err := tx.ExecContext(ctx, q); err != nil {
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
// from the maintained counts: the rows of each board class and level.
func (s *DB) BoardCounts(ctx context.Context) ([]store.BoardCount, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT board_class, level, SUM(n) FROM board_counts GROUP BY board_class, level HAVING SUM(n) <> 0 ORDER BY board_class, level`)
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

// RunCounts returns the runs per paper, from the maintained counts.
func (s *DB) RunCounts(ctx context.Context) (map[string]int, error) {
	return s.CountsBy(ctx, store.CountPaper)
}

// CountsBy returns the runs per value of one dimension (store.CountPaper, CountExperiment,
// CountKind, CountMethod, CountRunner), from the maintained counts: the rows of each value.
func (s *DB) CountsBy(ctx context.Context, dimension string) (map[string]int, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT key, SUM(n) FROM run_counts WHERE dimension = ? GROUP BY dimension, key HAVING SUM(n) <> 0`, dimension)
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
// maintained counts: the rows of that value.
func (s *DB) RunCount(ctx context.Context, dimension, key string) (int, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0) FROM run_counts WHERE dimension = ? AND key = ?`, dimension, key).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count runs of %s %s: %w", dimension, key, err)
	}
	return n, nil
}

// ClaimTallies counts, per claim of a paper, origin (portal runners, community), board class,
// assurance level and class status, how many runs gave each verdict; verdicts from different
// origins, boards or levels are never summed. Rows come ordered by claim, origin, level, board
// class and class status, from the maintained tallies: a range of claim_tallies_key, one row
// per tally plus those appended since the last compaction, however many runs there are.
func (s *DB) ClaimTallies(ctx context.Context, paper string) ([]store.ClaimTally, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT claim_id, origin, board_class, level, class_status, verdict, SUM(n) FROM claim_tallies
		WHERE paper = ? GROUP BY paper, claim_id, origin, level, board_class, class_status, verdict HAVING SUM(n) <> 0
		ORDER BY paper, claim_id, origin, level, board_class, class_status, verdict`, paper)
	if err != nil {
		return nil, fmt.Errorf("claim tallies of %s: %w", paper, err)
	}
	defer rows.Close()
	var out []store.ClaimTally
	for rows.Next() {
		var t store.ClaimTally
		if err := rows.Scan(&t.ClaimID, &t.Origin, &t.BoardClass, &t.Level, &t.ClassStatus, &t.Verdict, &t.Runs); err != nil {
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
		tx.change(genRuns)
		if _, err := tx.ExecContext(ctx, `DELETE FROM leader_highlights WHERE algorithm = ? AND operation = ? AND metric = ?`, algorithm, operation, metric); err != nil {
			return err
		}
		for i, st := range rows {
			if _, err := tx.ExecContext(ctx, `INSERT INTO leader_highlights (algorithm, operation, metric, pos, unit, level, method, class_status, board_class, origin,
				implementation, keys, msg_bytes, median, p25, p75, n, runs, latest_run, computed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				algorithm, operation, metric, i, st.Unit, st.Level, st.Method, st.ClassStatus, st.BoardClass, st.Origin,
				st.Implementation, st.Keys, st.MessageBytes, st.Median, st.P25, st.P75, st.N, st.Runs, st.LatestRun, ms0(at)); err != nil {
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
	rows, err := s.read.QueryContext(ctx, `SELECT unit, level, method, class_status, board_class, origin, implementation, keys, msg_bytes, median, p25, p75, n, runs, latest_run, computed_at
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
		if err := rows.Scan(&st.Unit, &st.Level, &st.Method, &st.ClassStatus, &st.BoardClass, &st.Origin, &st.Implementation, &st.Keys, &st.MessageBytes, &st.Median, &st.P25, &st.P75,
			&st.N, &st.Runs, &st.LatestRun, &c); err != nil {
			return nil, time.Time{}, fmt.Errorf("highlights %s %s %s: %w", algorithm, operation, metric, err)
		}
		at = time.UnixMilli(c)
		out = append(out, st)
	}
	return out, at, rows.Err()
}
