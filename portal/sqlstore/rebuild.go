package sqlstore

import (
	"context"
	"fmt"
	"pqrepro/portal/store"
)

// RunsToRebuild lists the ids of runs whose stored comparison report is older than version
// (every run when all is set), oldest first, after the run id after (for batches).
func (s *DB) RunsToRebuild(ctx context.Context, version int, all bool, after int64, limit int) ([]int64, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id FROM runs WHERE id > ? AND (? = 1 OR report_version < ?) ORDER BY id LIMIT ?`,
		after, all, version, limit)
	if err != nil {
		return nil, fmt.Errorf("runs to rebuild: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("runs to rebuild: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// SaveRebuilt stores a rebuilt report, the run's claim verdicts and its cells' details in
// one transaction; the claim tallies lose the run's old verdicts and gain its new ones in
// the same transaction.
func (s *DB) SaveRebuilt(ctx context.Context, r store.Rebuilt) error {
	return s.tx(ctx, func(tx *Tx) error {
		tx.change(genRuns)
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM cells WHERE run_id = ?`, r.RunID).Scan(&n); err != nil {
			return fmt.Errorf("count cells of run %d: %w", r.RunID, err)
		}
		if n != len(r.Cells) {
			return fmt.Errorf("run %d stores %d cells, its bundle has %d", r.RunID, n, len(r.Cells))
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET report = ?, report_version = ?, catalogue = ? WHERE id = ?`, r.Report, r.ReportVersion, boolInt(r.Catalogue), r.RunID); err != nil {
			return fmt.Errorf("update report of run %d: %w", r.RunID, err)
		}
		for i, c := range r.Cells {
			if _, err := tx.ExecContext(ctx, `UPDATE cells SET keys = ?, requested = ?, budget_reached = ?, variant = ?, peak_heap_bytes = ?, loaded = ?,
				implementation = ?, msg_bytes = ? WHERE run_id = ? AND idx = ?`,
				c.Keys, c.Requested, c.BudgetReached, c.Variant, peakHeap(c), r.Loaded, cellImplementation(c), cellMessage(c), r.RunID, i); err != nil {
				return fmt.Errorf("update cell %d of run %d: %w", i, r.RunID, err)
			}
		}
		sums, err := oldVerdicts(ctx, tx, r.RunID)
		if err != nil {
			return err
		}
		var origin, board, level string
		if err := tx.QueryRowContext(ctx, `SELECT origin, board_class, level FROM runs WHERE id = ?`, r.RunID).Scan(&origin, &board, &level); err != nil {
			return fmt.Errorf("board of run %d: %w", r.RunID, err)
		}
		for _, v := range r.Claims {
			sums.verdict(v, origin, board, level, 1)
		}
		if err := sums.apply(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM claim_verdicts WHERE run_id = ?`, r.RunID); err != nil {
			return fmt.Errorf("clear claim verdicts of run %d: %w", r.RunID, err)
		}
		for _, v := range r.Claims {
			if _, err := tx.ExecContext(ctx, `INSERT INTO claim_verdicts (run_id, paper, claim_id, verdict, reason, class_status) VALUES (?, ?, ?, ?, ?, ?)`,
				r.RunID, v.Paper, v.ClaimID, v.Verdict, v.Reason, v.ClassStatus); err != nil {
				return fmt.Errorf("store claim verdict of run %d: %w", r.RunID, err)
			}
		}
		return nil
	})
}

// oldVerdicts is a summary delta taking a run's stored claim verdicts off the tallies.
func oldVerdicts(ctx context.Context, tx *Tx, runID int64) (*summaryDelta, error) {
	rows, err := tx.QueryContext(ctx, `SELECT v.paper, v.claim_id, v.verdict, v.class_status, r.origin, r.board_class, r.level
		FROM claim_verdicts v JOIN runs r ON r.id = v.run_id WHERE v.run_id = ?`, runID)
	if err != nil {
		return nil, fmt.Errorf("claim verdicts of run %d: %w", runID, err)
	}
	defer rows.Close()
	d := newSummaryDelta()
	for rows.Next() {
		var v store.ClaimVerdict
		var origin, board, level string
		if err := rows.Scan(&v.Paper, &v.ClaimID, &v.Verdict, &v.ClassStatus, &origin, &board, &level); err != nil {
			return nil, fmt.Errorf("claim verdicts of run %d: %w", runID, err)
		}
		d.verdict(v, origin, board, level, -1)
	}
	return d, rows.Err()
}
