package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"pqrepro/artifacts"
	"pqrepro/portal/store"
	"slices"
	"strings"
)

// column is a filter's column with its value.
type column struct {
	name, col, val string
}

// runLeads are the run filters with an index ending in (published_at, id), in the order
// one is chosen to lead: the most selective first.
func runColumns(f store.ListFilter) []column {
	return []column{
		{"experiment", "r.experiment", f.Experiment},
		{"paper", "r.paper", f.Paper},
		{"board", "r.board_class", f.BoardClass},
		{"kind", "r.kind", f.Kind},
		{"method", "r.method", f.Method},
		{"assurance", "r.level", f.Level},
	}
}

func jobColumns(f store.ListFilter) []column {
	return []column{
		{"experiment", "j.experiment", f.Experiment},
		{"paper", "j.paper", f.Paper},
		{"board", "j.board_class", f.BoardClass},
		{"state", "j.state", f.State},
		{"method", "j.method", f.Method},
	}
}

// keyset is the page's index range: (lead filter) AND time bounds AND (t, id) < cursor.
type keyset struct {
	where  []string
	params []any
	// test is a boolean SQL expression of the filters that do not lead, evaluated per
	// examined row; testParams are its parameters.
	test       []string
	testParams []any
	lead       string
}

func buildKeyset(cols []column, timeCol, idCol string, f store.ListFilter, extraTest func(*keyset)) keyset {
	var k keyset
	for _, c := range cols {
		if c.val == "" {
			continue
		}
		if k.lead == "" {
			k.lead = c.name
			k.where = append(k.where, c.col+" = ?")
			k.params = append(k.params, c.val)
			continue
		}
		k.test = append(k.test, c.col+" = ?")
		k.testParams = append(k.testParams, c.val)
	}
	if extraTest != nil {
		extraTest(&k)
	}
	if !f.From.IsZero() {
		k.where = append(k.where, timeCol+" >= ?")
		k.params = append(k.params, ms0(f.From))
	}
	if !f.To.IsZero() {
		k.where = append(k.where, timeCol+" < ?")
		k.params = append(k.params, ms0(f.To))
	}
	after := store.Cursor{At: math.MaxInt64, ID: math.MaxInt64}
	if f.After != nil {
		after = *f.After
	}
	// A row value comparison: portable (PostgreSQL, SQLite 3.15+) and a range on the index.
	k.where = append(k.where, "("+timeCol+", "+idCol+") < (?, ?)")
	k.params = append(k.params, after.At, after.ID)
	return k
}

// keysetQuery is the index walk of a page of limit rows: ids, times and whether the filters
// that do not lead hold, newest first. Without such filters every row examined is kept, so
// the walk stops one row past the page; with them, at ScanCap rows.
func keysetQuery(table, timeCol, idCol string, k keyset, limit int) (string, []any) {
	test, walk := "1", limit+1
	if len(k.test) > 0 {
		test, walk = "CASE WHEN "+strings.Join(k.test, " AND ")+" THEN 1 ELSE 0 END", store.ScanCap
	}
	q := `SELECT ` + idCol + `, ` + timeCol + `, ` + test + ` FROM ` + table + ` WHERE ` + strings.Join(k.where, " AND ") +
		` ORDER BY ` + timeCol + ` DESC, ` + idCol + ` DESC LIMIT ?`
	return q, append(append(append([]any{}, k.testParams...), k.params...), walk)
}

// scanKeys walks the keyset's index (at most ScanCap rows) and returns the ids of the rows
// whose filters all hold, up to limit, with the page's continuation.
func (s *DB) scanKeys(ctx context.Context, table, timeCol, idCol string, k keyset, limit int) ([]int64, store.ListPage[struct{}], error) {
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, store.MaxPage)
	q, params := keysetQuery(table, timeCol, idCol, k, limit)
	rows, err := s.read.QueryContext(ctx, q, params...)
	if err != nil {
		return nil, store.ListPage[struct{}]{}, fmt.Errorf("scan %s: %w", table, err)
	}
	defer rows.Close()
	page := store.ListPage[struct{}]{Lead: k.lead}
	var ids []int64
	var last store.Cursor
	for rows.Next() {
		var id, at int64
		var ok int
		if err := rows.Scan(&id, &at, &ok); err != nil {
			return nil, page, fmt.Errorf("scan %s: %w", table, err)
		}
		if ok == 1 {
			if len(ids) == limit {
				// One more match exists: the next page starts after the last one kept.
				page.Next = &last
				return ids, page, nil
			}
			ids = append(ids, id)
		}
		page.Examined++
		last = store.Cursor{At: at, ID: id}
	}
	if err := rows.Err(); err != nil {
		return nil, page, fmt.Errorf("scan %s: %w", table, err)
	}
	if page.Examined == store.ScanCap {
		// The search stopped at the cap: more rows may match further back.
		page.Capped = len(ids) < limit
		page.Next = &last
	}
	return ids, page, nil
}

// ListPlan is the query plan of the index walk of ListRuns for f, in the dialect's words
// (SQLite: EXPLAIN QUERY PLAN's details; PostgreSQL: the plan's nodes and index names), to
// check which filters an index serves.
func (s *DB) ListPlan(ctx context.Context, f store.ListFilter) (string, error) {
	k := buildKeyset(runColumns(f), "r.published_at", "r.id", f, nil)
	q := `SELECT r.id, r.published_at FROM runs r WHERE ` + strings.Join(k.where, " AND ") + ` ORDER BY r.published_at DESC, r.id DESC LIMIT 10`
	return s.Explain(ctx, q, k.params...)
}

// Explain is the dialect's plan of query q.
func (s *DB) Explain(ctx context.Context, q string, args ...any) (string, error) {
	if s.d.Explain == nil {
		return "", fmt.Errorf("plan: %s has no EXPLAIN", s.d.Name)
	}
	out, err := s.d.Explain(ctx, s.read, q, args)
	if err != nil {
		return "", fmt.Errorf("plan: %w", err)
	}
	return out, nil
}

// runKeyset is ListRuns' index walk for f, with the submitter's user id (0 for none).
func runKeyset(f store.ListFilter, subID int64) keyset {
	return buildKeyset(runColumns(f), "r.published_at", "r.id", f, func(k *keyset) {
		if subID != 0 {
			if k.lead == "" {
				k.lead = "submitter"
				k.where = append(k.where, "r.submitter_id = ?")
				k.params = append(k.params, subID)
			} else {
				k.test = append(k.test, "r.submitter_id = ?")
				k.testParams = append(k.testParams, subID)
			}
		}
		if f.Origin != "" {
			// No index leads with the origin (three values): tested per examined row.
			k.test = append(k.test, "r.origin = ?")
			k.testParams = append(k.testParams, f.Origin)
		}
		if f.Algorithm != "" {
			// Cells of one run are probed on cells_run_algorithm: a few rows per run. A scalar
			// subquery, not EXISTS, which PostgreSQL may turn into a hash of every cell of the
			// algorithm (growing with the cells, not with the page).
			// The name matches in part and regardless of case ("ml-kem" finds every ML-KEM
			// parameter set and ML-KEM-768+ML-DSA-44): a reader need not know the exact name.
			k.test = append(k.test, `(SELECT 1 FROM cells c WHERE c.run_id = r.id AND lower(c.algorithm) LIKE ? ESCAPE '\' LIMIT 1) IS NOT NULL`)
			k.testParams = append(k.testParams, "%"+likeEscaper.Replace(strings.ToLower(f.Algorithm))+"%")
		}
	})
}

// ListRuns returns one page of runs, newest first by (published_at, id), without their large
// JSON fields. See ListPage for how far a page searches.
func (s *DB) ListRuns(ctx context.Context, f store.ListFilter) (store.ListPage[store.Run], error) {
	var subID int64
	if f.Submitter != "" {
		err := s.read.QueryRowContext(ctx, `SELECT id FROM users WHERE lower(name) = lower(?)`, f.Submitter).Scan(&subID)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ListPage[store.Run]{}, nil // nobody by that name submitted anything
		}
		if err != nil {
			return store.ListPage[store.Run]{}, fmt.Errorf("list runs: submitter %q: %w", f.Submitter, err)
		}
	}
	k := runKeyset(f, subID)
	ids, p, err := s.scanKeys(ctx, "runs r", "r.published_at", "r.id", k, f.Limit)
	if err != nil {
		return store.ListPage[store.Run]{}, fmt.Errorf("list runs: %w", err)
	}
	out := store.ListPage[store.Run]{Next: p.Next, Examined: p.Examined, Capped: p.Capped, Lead: p.Lead}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+runListCols+runFrom+` WHERE `+inList("r.id", len(ids))+` ORDER BY r.published_at DESC, r.id DESC`, args...)
	if err != nil {
		return out, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return out, fmt.Errorf("list runs: %w", err)
		}
		out.Items = append(out.Items, r)
	}
	return out, rows.Err()
}

// ListJobs returns one page of jobs, newest first by (created_at, id), without their
// manifests' text. Algorithm, kind, assurance and submitter do not apply to jobs.
func (s *DB) ListJobs(ctx context.Context, f store.ListFilter) (store.ListPage[store.Job], error) {
	k := buildKeyset(jobColumns(f), "j.created_at", "j.id", f, nil)
	ids, p, err := s.scanKeys(ctx, "jobs j", "j.created_at", "j.id", k, f.Limit)
	if err != nil {
		return store.ListPage[store.Job]{}, fmt.Errorf("list jobs: %w", err)
	}
	out := store.ListPage[store.Job]{Next: p.Next, Examined: p.Examined, Capped: p.Capped, Lead: p.Lead}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.read.QueryContext(ctx, `SELECT `+jobCols+jobFrom+` WHERE `+inList("j.id", len(ids))+` ORDER BY j.created_at DESC, j.id DESC`, args...)
	if err != nil {
		return out, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return out, fmt.Errorf("list jobs: %w", err)
		}
		j.ManifestYAML = ""
		out.Items = append(out.Items, j)
	}
	return out, rows.Err()
}

// facetCols are the run columns Facets lists, each the first column of an index.
var facetCols = []string{"paper", "experiment", "board_class", "level", "kind", "method"}

// qDistinct is a loose index scan of a runs column (one of facetCols, never a request's):
// its distinct values in order, each found by one probe of an index leading with the column
// (the least value after the last), so the cost grows with the values, not with the runs.
func qDistinct(col string) string {
	return `WITH RECURSIVE vals (x) AS (SELECT MIN(` + col + `) FROM runs
		UNION ALL SELECT (SELECT MIN(` + col + `) FROM runs WHERE ` + col + ` > vals.x) FROM vals WHERE vals.x IS NOT NULL)
		SELECT x FROM vals WHERE x IS NOT NULL`
}

// qDistinct2 is qDistinct for the distinct pairs of two columns of a table (constants, never a
// request's) on an index leading with (a, b): the values of a by one probe each, then for
// each the values of b after it, in (a, b) order; keep, when set, is a condition on the
// pair (x, y) tested once per pair.
func qDistinct2(table, a, b, keep string) string {
	if keep == "" {
		keep = "1 = 1"
	}
	return `WITH RECURSIVE firsts (x) AS (SELECT MIN(` + a + `) FROM ` + table + `
		UNION ALL SELECT (SELECT MIN(` + a + `) FROM ` + table + ` WHERE ` + a + ` > firsts.x) FROM firsts WHERE firsts.x IS NOT NULL),
	pairs (x, y) AS (SELECT x, (SELECT MIN(` + b + `) FROM ` + table + ` WHERE ` + a + ` = firsts.x) FROM firsts WHERE firsts.x IS NOT NULL
		UNION ALL SELECT x, (SELECT MIN(` + b + `) FROM ` + table + ` WHERE ` + a + ` = pairs.x AND ` + b + ` > pairs.y) FROM pairs WHERE pairs.y IS NOT NULL)
	SELECT x, y FROM pairs WHERE y IS NOT NULL AND ` + keep + ` ORDER BY x, y`
}

// Facets lists the distinct values of the run filters that have runs, in order.
func (s *DB) Facets(ctx context.Context) (store.RunFacets, error) {
	var f store.RunFacets
	for _, q := range []struct {
		col string
		dst *[]string
	}{{facetCols[0], &f.Papers}, {facetCols[1], &f.Experiments}, {facetCols[2], &f.Boards}, {facetCols[3], &f.Levels}, {facetCols[4], &f.Kinds}, {facetCols[5], &f.Methods}} {
		rows, err := s.read.QueryContext(ctx, qDistinct(q.col))
		if err != nil {
			return f, fmt.Errorf("run facets %s: %w", q.col, err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return f, fmt.Errorf("run facets %s: %w", q.col, err)
			}
			*q.dst = append(*q.dst, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return f, fmt.Errorf("run facets %s: %w", q.col, err)
		}
	}
	return f, nil
}

const qSchemes = `SELECT algorithm, operation, unit, method, class_status, implementation, keys, msg_bytes, MIN(p25), MAX(p75), SUM(n), COUNT(*), MAX(run_id) FROM cells
		WHERE level = ? AND board_class = ? AND status = 'ok' AND median IS NOT NULL
		GROUP BY algorithm, operation, unit, method, class_status, implementation, keys, msg_bytes
		ORDER BY algorithm, operation, unit, method, class_status, implementation, keys, msg_bytes`

// qBoardLevels is BoardLevels' query: a loose scan of runs_board_level.
var qBoardLevels = qDistinct2("runs", "board_class", "level", "")

// Schemes aggregates every ok cell of one assurance level and board class per algorithm,
// operation, unit, method, class status, implementation, key form and message size. The database does the work, as for Standings:
// one grouped range scan of the covering index cells_scheme, then per group the median of
// its runs' medians read at the middle offset of the same index (ordered by median within a
// group), so a few rows come back however many runs there are.
func (s *DB) Schemes(ctx context.Context, level, board string) ([]store.SchemeRow, error) {
	rows, err := s.read.QueryContext(ctx, qSchemes, level, board)
	if err != nil {
		return nil, fmt.Errorf("schemes on %s %s: %w", level, board, err)
	}
	var out []store.SchemeRow
	for rows.Next() {
		var r store.SchemeRow
		if err := rows.Scan(&r.Algorithm, &r.Operation, &r.Unit, &r.Method, &r.ClassStatus, &r.Implementation, &r.Keys, &r.MessageBytes,
			&r.P25, &r.P75, &r.N, &r.Runs, &r.LatestRun); err != nil {
			rows.Close()
			return nil, fmt.Errorf("schemes on %s %s: %w", level, board, err)
		}
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schemes on %s %s: %w", level, board, err)
	}
	for i := range out {
		r := &out[i]
		mid, err := s.read.QueryContext(ctx, `SELECT median FROM cells
			WHERE level = ? AND board_class = ? AND status = 'ok' AND algorithm = ? AND operation = ? AND unit = ? AND method = ? AND class_status = ?
			AND implementation = ? AND keys = ? AND msg_bytes = ? AND median IS NOT NULL
			ORDER BY median LIMIT ? OFFSET ?`, level, board, r.Algorithm, r.Operation, r.Unit, r.Method, r.ClassStatus,
			r.Implementation, r.Keys, r.MessageBytes, 2-r.Runs%2, (r.Runs-1)/2)
		if err != nil {
			return nil, fmt.Errorf("schemes on %s %s median: %w", level, board, err)
		}
		var sum float64
		var n int
		for mid.Next() {
			var v float64
			if err := mid.Scan(&v); err != nil {
				mid.Close()
				return nil, fmt.Errorf("schemes on %s %s median: %w", level, board, err)
			}
			sum += v
			n++
		}
		mid.Close()
		if err := mid.Err(); err != nil {
			return nil, fmt.Errorf("schemes on %s %s median: %w", level, board, err)
		}
		if n > 0 {
			r.Median = sum / float64(n)
		}
		if r.Hashing, err = s.latestHashing(ctx, r); err != nil {
			return nil, fmt.Errorf("schemes on %s %s hashing: %w", level, board, err)
		}
	}
	return out, nil
}

// latestHashing is the hashing share of r's cell in its latest run (by the primary key: a
// run's cells are few), nil when that run measured none.
func (s *DB) latestHashing(ctx context.Context, r *store.SchemeRow) (*artifacts.Hashing, error) {
	var share, bound sql.NullFloat64
	var absent string
	err := s.read.QueryRowContext(ctx, `SELECT hash_share, hash_bound, hash_absent FROM cells
		WHERE run_id = ? AND algorithm = ? AND operation = ? AND status = 'ok' AND implementation = ? AND keys = ? AND msg_bytes = ?
		ORDER BY idx LIMIT 1`, r.LatestRun, r.Algorithm, r.Operation, r.Implementation, r.Keys, r.MessageBytes).Scan(&share, &bound, &absent)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	case share.Valid:
		return &artifacts.Hashing{Share: share.Float64, Bound: bound.Float64}, nil
	case absent != "":
		return &artifacts.Hashing{Absent: absent}, nil
	}
	return nil, nil
}

// BoardLevels lists the (level, board class) pairs that have runs.
func (s *DB) BoardLevels(ctx context.Context) ([]store.BoardLevel, error) {
	out, err := queryPairs(ctx, s.read, qBoardLevels, "board levels", func(board, level string) store.BoardLevel {
		return store.BoardLevel{BoardClass: board, Level: level}
	})
	slices.SortFunc(out, func(a, b store.BoardLevel) int {
		return cmp.Or(strings.Compare(a.Level, b.Level), strings.Compare(a.BoardClass, b.BoardClass))
	})
	return out, err
}

// queryPairs runs q, whose rows are two strings, and makes a T of each.
func queryPairs[T any](ctx context.Context, c *Conn, q, what string, mk func(a, b string) T) ([]T, error) {
	rows, err := c.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var a, b string
		if err := rows.Scan(&a, &b); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, mk(a, b))
	}
	return out, rows.Err()
}

// qPairReport is PairReport's query (/compare), by the primary key.
const qPairReport = `SELECT report FROM run_pair_intervals WHERE run_a = ? AND run_b = ? AND code_version = ?`

// PairReport returns the stored report of run b against run a for a code version; ok is
// false when none is stored.
func (s *DB) PairReport(ctx context.Context, a, b int64, version string) (report string, ok bool, err error) {
	err = s.read.QueryRowContext(ctx, qPairReport, a, b, version).Scan(&report)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("pair report %d/%d: %w", a, b, err)
	}
	return report, true, nil
}

// SavePairReport keeps the report of run b against run a for a code version; a report
// already stored (another request computed it first) is kept.
func (s *DB) SavePairReport(ctx context.Context, a, b int64, version, report string) error {
	_, err := s.write.ExecContext(ctx, `INSERT INTO run_pair_intervals (run_a, run_b, code_version, computed_at, report) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (run_a, run_b, code_version) DO NOTHING`, a, b, version, ms0(s.Now()), report)
	if err != nil {
		return fmt.Errorf("save pair report %d/%d: %w", a, b, err)
	}
	return nil
}

// PairReports counts the stored pair reports (for tests and the rebuild command).
func (s *DB) PairReports(ctx context.Context) (int, error) {
	var n int
	err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM run_pair_intervals`).Scan(&n)
	return n, err
}

// likeEscaper escapes LIKE's wildcards and its escape character in a user's text.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)
