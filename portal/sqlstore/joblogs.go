package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"pqrepro/artifacts/logtext"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// finalChunk is the index of the log a runner sends with a failure (when it did not stream it).
const finalChunk = 1000000000

// AppendLog stores log chunk idx of the current attempt and its summary lines (see
// insertSummaries), then trims the job's log to the limits. A chunk stored before (or dropped
// before) is left as it was, so a retried request is harmless. An index outside [0, MaxIndex)
// is invalid.
func (s *DB) AppendLog(ctx context.Context, jobID, runnerID int64, leaseID string, idx int, data string) error {
	lim := s.Logs.OrDefault()
	if idx < 0 || idx >= lim.MaxIndex {
		return fault.New(fault.Invalid, "log chunk index must be between 0 and %d", lim.MaxIndex-1)
	}
	now := ms0(s.Now())
	return s.tx(ctx, func(tx *Tx) error {
		attempt, err := checkLease(ctx, tx, jobID, runnerID, leaseID, now)
		if err != nil {
			return err
		}
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM job_logs WHERE job_id = ? AND attempt = ? AND idx = ?`, jobID, attempt, idx).Scan(&exists); err != nil {
			return fmt.Errorf("job %d log: %w", jobID, err)
		}
		st, err := logState(ctx, tx, jobID, attempt)
		if err != nil {
			return err
		}
		if exists > 0 || idx <= st.maxDropped {
			return nil
		}
		if err := insertChunk(ctx, tx, jobID, attempt, idx, data, st.end, st.end < lim.HeadBytes, now); err != nil {
			return err
		}
		if err := insertSummaries(ctx, tx, lim, jobID, attempt, st, data); err != nil {
			return err
		}
		return trimLog(ctx, tx, lim, jobID, attempt, idx)
	})
}

type attemptLog struct {
	end, stored, dropped, summaries int64
	chunks, maxDropped              int
}

func logState(ctx context.Context, tx *Tx, jobID int64, attempt int) (attemptLog, error) {
	st := attemptLog{maxDropped: -1}
	err := tx.QueryRowContext(ctx, `SELECT end_pos, stored_bytes, stored_chunks, dropped_bytes, max_dropped_idx, summary_bytes FROM job_log_state WHERE job_id = ? AND attempt = ?`,
		jobID, attempt).Scan(&st.end, &st.stored, &st.chunks, &st.dropped, &st.maxDropped, &st.summaries)
	if err == sql.ErrNoRows {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("job %d log state: %w", jobID, err)
	}
	return st, nil
}

// insertChunk stores a chunk at position pos and counts it in the attempt's state; a streamed
// chunk moves the attempt's end.
func insertChunk(ctx context.Context, tx *Tx, jobID int64, attempt, idx int, data string, pos int64, head bool, now int64) error {
	size := int64(len(data))
	if _, err := tx.ExecContext(ctx, `INSERT INTO job_logs (job_id, attempt, idx, data, created_at, size, pos, head) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (job_id, attempt, idx) DO NOTHING`, jobID, attempt, idx, data, now, size, pos, head); err != nil {
		return fmt.Errorf("job %d log chunk %d: %w", jobID, idx, err)
	}
	grow := size
	if idx == finalChunk {
		grow = 0
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO job_log_state (job_id, attempt, end_pos, stored_bytes, stored_chunks) VALUES (?, ?, ?, ?, 1)
		ON CONFLICT (job_id, attempt) DO UPDATE SET end_pos = job_log_state.end_pos + ?, stored_bytes = job_log_state.stored_bytes + ?, stored_chunks = job_log_state.stored_chunks + 1`,
		jobID, attempt, grow, size, grow, size)
	if err != nil {
		return fmt.Errorf("job %d log state: %w", jobID, err)
	}
	return nil
}

// insertSummaries keeps the summary lines (logtext.IsSummary) of a streamed chunk that starts
// at st.end, each at its position in the attempt's log, while the attempt's summary lines stay
// within lim.SummaryBytes. Trimming never drops them, so a bounded log still shows every
// cell's outcome. A chunk is read as starting at a line start and only its whole lines count:
// a runner sends whole lines (runner.Agent does), or the lines it splits are not kept.
func insertSummaries(ctx context.Context, tx *Tx, lim store.LogLimits, jobID int64, attempt int, st attemptLog, data string) error {
	lines, offsets := logtext.Summaries(data, true)
	var added int64
	for i, l := range lines {
		if st.summaries+added+int64(len(l)) > lim.SummaryBytes {
			break
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO job_log_lines (job_id, attempt, pos, line) VALUES (?, ?, ?, ?) ON CONFLICT (job_id, attempt, pos) DO NOTHING`,
			jobID, attempt, st.end+int64(offsets[i]), l); err != nil {
			return fmt.Errorf("job %d log summary lines: %w", jobID, err)
		}
		added += int64(len(l))
	}
	if added == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE job_log_state SET summary_bytes = summary_bytes + ? WHERE job_id = ? AND attempt = ?`, added, jobID, attempt); err != nil {
		return fmt.Errorf("job %d log state: %w", jobID, err)
	}
	return nil
}

// summaryLines returns the attempt's kept summary lines whose positions are in [from, to).
func (s *DB) summaryLines(ctx context.Context, jobID int64, attempt int, from, to int64) ([]string, error) {
	if from >= to {
		return nil, nil
	}
	rows, err := s.read.QueryContext(ctx, `SELECT line FROM job_log_lines WHERE job_id = ? AND attempt = ? AND pos >= ? AND pos < ? ORDER BY pos`,
		jobID, attempt, from, to)
	if err != nil {
		return nil, fmt.Errorf("job %d log summary lines: %w", jobID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// trimLog drops the oldest chunks outside the head until the attempt and the job are within
// the limits: the attempt's own first when it is over, else older attempts' first. The chunk
// just stored (keep) is the newest output and stays.
func trimLog(ctx context.Context, tx *Tx, lim store.LogLimits, jobID int64, attempt, keep int) error {
	for {
		st, err := logState(ctx, tx, jobID, attempt)
		if err != nil {
			return err
		}
		var jobBytes int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(stored_bytes), 0) FROM job_log_state WHERE job_id = ?`, jobID).Scan(&jobBytes); err != nil {
			return fmt.Errorf("job %d log size: %w", jobID, err)
		}
		attemptOver := st.stored > lim.AttemptBytes || st.chunks > lim.MaxChunks
		if !attemptOver && jobBytes <= lim.JobBytes {
			return nil
		}
		var vAttempt, vIdx int
		var vSize int64
		q := `SELECT attempt, idx, size FROM job_logs WHERE job_id = ? AND attempt = ? AND head = 0 AND idx <> ? ORDER BY idx LIMIT 1`
		args := []any{jobID, attempt, keep}
		if !attemptOver {
			q = `SELECT attempt, idx, size FROM job_logs WHERE job_id = ? AND head = 0 AND NOT (attempt = ? AND idx = ?) ORDER BY attempt, idx LIMIT 1`
		}
		err = tx.QueryRowContext(ctx, q, args...).Scan(&vAttempt, &vIdx, &vSize)
		if err == sql.ErrNoRows {
			return nil // only the head and the newest chunk are left: both bounded
		}
		if err != nil {
			return fmt.Errorf("job %d log trim: %w", jobID, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM job_logs WHERE job_id = ? AND attempt = ? AND idx = ?`, jobID, vAttempt, vIdx); err != nil {
			return fmt.Errorf("job %d log trim: %w", jobID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE job_log_state SET stored_bytes = stored_bytes - ?, stored_chunks = stored_chunks - 1,
			dropped_bytes = dropped_bytes + ?, dropped_chunks = dropped_chunks + 1,
			max_dropped_idx = CASE WHEN max_dropped_idx > ? THEN max_dropped_idx ELSE ? END
			WHERE job_id = ? AND attempt = ?`, vSize, vSize, min(vIdx, finalChunk-1), min(vIdx, finalChunk-1), jobID, vAttempt); err != nil {
			return fmt.Errorf("job %d log trim: %w", jobID, err)
		}
	}
}

// latestAttempt is attempt when > 0, else the job's latest attempt with a log (0 when none).
func (s *DB) latestAttempt(ctx context.Context, jobID int64, attempt int) (int, error) {
	if attempt > 0 {
		return attempt, nil
	}
	var a int
	err := s.read.QueryRowContext(ctx, `SELECT COALESCE(MAX(attempt), 0) FROM job_logs WHERE job_id = ?`, jobID).Scan(&a)
	if err != nil {
		return 0, fmt.Errorf("job %d log: %w", jobID, err)
	}
	return a, nil
}

// JobLogView returns the latest attempt's log (or attempt's when > 0) bounded to its first
// headBytes and last tailBytes, cut at line ends, and between them a marker and the summary
// lines of the part left out (up to the limits' SummaryBytes). It reads only the chunks it
// shows.
func (s *DB) JobLogView(ctx context.Context, jobID int64, attempt int, headBytes, tailBytes int) (store.LogView, error) {
	a, err := s.latestAttempt(ctx, jobID, attempt)
	if err != nil || a == 0 {
		return store.LogView{}, err
	}
	summaryBytes := int(s.Logs.OrDefault().SummaryBytes)
	v := store.LogView{Attempt: a}
	var end int64
	err = s.read.QueryRowContext(ctx, `SELECT end_pos FROM job_log_state WHERE job_id = ? AND attempt = ?`, jobID, a).Scan(&end)
	if err != nil && err != sql.ErrNoRows {
		return v, fmt.Errorf("job %d log: %w", jobID, err)
	}
	v.End = end
	if end == 0 { // nothing streamed: the log sent with the failure, if any
		var data string
		err := s.read.QueryRowContext(ctx, `SELECT data FROM job_logs WHERE job_id = ? AND attempt = ? AND idx = ?`, jobID, a, finalChunk).Scan(&data)
		if err != nil && err != sql.ErrNoRows {
			return v, fmt.Errorf("job %d log: %w", jobID, err)
		}
		v.Text, v.Omitted = logtext.Bound(data, headBytes, summaryBytes, tailBytes)
		return v, nil
	}
	head, headEnd, err := s.readChunks(ctx, jobID, a, `pos < ?`, []any{int64(headBytes)}, "pos", headBytes)
	if err != nil {
		return v, err
	}
	if int64(len(head)) >= end { // the whole log is in the head's chunks
		v.Text, v.Omitted = logtext.Bound(head, headBytes, summaryBytes, tailBytes)
		return v, nil
	}
	h := head[:logtext.HeadCut(head, headBytes)]
	tail, tailStart, err := s.readTail(ctx, jobID, a, headEnd, tailBytes)
	if err != nil {
		return v, err
	}
	shown := int64(len(h) + len(tail))
	v.Omitted = max(end-shown, 0)
	if v.Omitted == 0 {
		v.Text = h + tail
		return v, nil
	}
	lines, err := s.summaryLines(ctx, jobID, a, int64(len(h)), tailStart)
	if err != nil {
		return v, err
	}
	kept, n := logtext.KeepSummaries(lines, summaryBytes)
	v.Text = h + logtext.Marker(v.Omitted, n, h == "" || strings.HasSuffix(h, "\n")) + kept + tail
	return v, nil
}

// readChunks concatenates the attempt's streamed chunks matching cond in pos order until
// limit bytes; it returns the text and the position just after the last chunk read.
func (s *DB) readChunks(ctx context.Context, jobID int64, attempt int, cond string, args []any, order string, limit int) (string, int64, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT pos, size, data FROM job_logs WHERE job_id = ? AND attempt = ? AND idx < ? AND `+cond+` ORDER BY `+order,
		append([]any{jobID, attempt, finalChunk}, args...)...)
	if err != nil {
		return "", 0, fmt.Errorf("job %d log: %w", jobID, err)
	}
	defer rows.Close()
	var b strings.Builder
	var after int64
	for rows.Next() && b.Len() < limit {
		var pos, size int64
		var data string
		if err := rows.Scan(&pos, &size, &data); err != nil {
			return "", 0, err
		}
		b.WriteString(data)
		after = pos + size
	}
	return b.String(), after, rows.Err()
}

// readTail returns the last limit bytes of the attempt's streamed log from position from on,
// cut at a line start (logtext.TailCut), and the position where that text begins.
func (s *DB) readTail(ctx context.Context, jobID int64, attempt int, from int64, limit int) (string, int64, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT pos, data FROM job_logs WHERE job_id = ? AND attempt = ? AND idx < ? AND pos >= ? ORDER BY pos DESC`,
		jobID, attempt, finalChunk, from)
	if err != nil {
		return "", 0, fmt.Errorf("job %d log: %w", jobID, err)
	}
	defer rows.Close()
	var parts []string
	n := 0
	start := from
	for n < limit && rows.Next() {
		var data string
		if err := rows.Scan(&start, &data); err != nil {
			return "", 0, err
		}
		parts = append(parts, data)
		n += len(data)
	}
	if err := rows.Err(); err != nil {
		return "", 0, err
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString(parts[i])
	}
	t := b.String()
	cut := logtext.TailCut(t, limit)
	return t[cut:], start + int64(cut), nil
}

// LogSince returns what the attempt's streamed log holds from position after on, at most
// limit bytes (the newest, with a logtext.Marker and the summary lines left out before them
// when more is new or a part was dropped), and the new end. ok is false when after is not a position of this attempt's log
// (another attempt, or beyond its end): the reader should fetch JobLogView afresh.
func (s *DB) LogSince(ctx context.Context, jobID int64, attempt int, after int64, limit int) (text string, end int64, ok bool, err error) {
	latest, err := s.latestAttempt(ctx, jobID, 0)
	if err != nil || latest != attempt || after < 0 {
		return "", 0, false, err
	}
	err = s.read.QueryRowContext(ctx, `SELECT end_pos FROM job_log_state WHERE job_id = ? AND attempt = ?`, jobID, attempt).Scan(&end)
	if err == sql.ErrNoRows || (err == nil && after > end) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("job %d log: %w", jobID, err)
	}
	if after == end {
		return "", end, true, nil
	}
	tail, tailStart, err := s.readTail(ctx, jobID, attempt, after, limit)
	if err != nil {
		return "", 0, false, err
	}
	if gap := end - after - int64(len(tail)); gap > 0 {
		lines, err := s.summaryLines(ctx, jobID, attempt, after, tailStart)
		if err != nil {
			return "", 0, false, err
		}
		kept, n := logtext.KeepSummaries(lines, int(s.Logs.OrDefault().SummaryBytes))
		tail = logtext.Marker(gap, n, false) + kept + tail
	}
	return tail, end, true, nil
}

// JobLog returns the latest attempt's log (or attempt's when > 0) bounded as JobLogView with
// the store's head and the rest of the attempt limit as tail.
func (s *DB) JobLog(ctx context.Context, jobID int64, attempt int) (string, error) {
	lim := s.Logs.OrDefault()
	v, err := s.JobLogView(ctx, jobID, attempt, int(lim.HeadBytes), int(lim.AttemptBytes))
	return v.Text, err
}
