package portal

// A job's page and its JSON for the page's script.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/portal/fault"
	"pqrepro/portal/sqlite"
	"pqrepro/templates"
)

// jobProgress computes percent, detail and ETA from a job's last heartbeat.
func jobProgress(j sqlite.Job) (percent int, detail, eta string) {
	p := j.Progress
	frac := 0.0
	if p.CellsTotal > 0 {
		frac = float64(p.CellsDone)
		if p.Requested > 0 && p.CellsDone < p.CellsTotal {
			frac += float64(p.Iteration) / float64(p.Requested)
		}
		frac /= float64(p.CellsTotal)
	}
	switch j.State {
	case sqlite.JobPublished:
		frac = 1
	case sqlite.JobRunning:
		if el := time.Since(j.StartedAt); frac > 0.01 {
			eta = (time.Duration(float64(el)/frac) - el).Round(time.Second).String()
		}
	}
	detail = fmt.Sprintf("%d of %d cells done", p.CellsDone, p.CellsTotal)
	if p.Current != "" && j.State == sqlite.JobRunning {
		detail += fmt.Sprintf(" · current cell %s (%d/%d iterations)", p.Current, p.Iteration, p.Requested)
	}
	if eta != "" {
		detail += " · ETA " + eta
	}
	switch {
	case j.State == sqlite.JobQueued:
		detail = "waiting for a runner with board " + j.BoardClass
	case j.State == sqlite.JobRunning && p.CellsTotal == 0:
		detail = "the runner is preparing board " + j.BoardClass
	}
	return int(frac * 100), detail, eta
}

func (s *Server) jobPage(c echo.Context) error {
	if strings.HasSuffix(c.Param("id"), ".json") {
		return s.jobJSON(c)
	}
	j, log, err := s.jobWithLog(c)
	if err != nil {
		return err
	}
	id := j.ID
	pct, _, eta := jobProgress(j)
	v := templates.JobView{Page: s.page(c, fmt.Sprintf("Job %d", id)), ID: j.ID, Experiment: j.Experiment, Board: j.BoardClass, State: j.State,
		Runner: j.RunnerName, Firmware: j.Firmware, Attempt: j.Attempt, Note: j.Note, Error: j.Error, RunID: j.RunID,
		CellsDone: j.Progress.CellsDone, CellsTotal: j.Progress.CellsTotal, Iteration: j.Progress.Iteration, Requested: j.Progress.Requested,
		Current: j.Progress.Current, ETA: eta, Percent: pct, Log: log.Text, LogEnd: log.End, LogAttempt: log.Attempt, Created: when(j.CreatedAt), Started: when(j.StartedAt),
		Finished: when(j.FinishedAt), Terminal: j.Terminal()}
	if !j.StartedAt.IsZero() {
		end := j.FinishedAt
		if end.IsZero() {
			end = time.Now()
		}
		v.Elapsed = end.Sub(j.StartedAt).Round(time.Second).String()
	}
	if !v.Terminal {
		v.Page.Refresh = 2
	}
	return s.render(c, http.StatusOK, templates.JobPage(v))
}

// Bounds of the job page's log: its head (the run header) and its most recent tail, and the
// most one poll adds.
const (
	jobLogHead = 16 << 10
	jobLogTail = 64 << 10
)

// jobWithLog loads the job named by the :id parameter and its log's head and tail.
func (s *Server) jobWithLog(c echo.Context) (sqlite.Job, sqlite.LogView, error) {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return sqlite.Job{}, sqlite.LogView{}, err
	}
	j, err := s.store.Job(ctx, id)
	if err != nil {
		return sqlite.Job{}, sqlite.LogView{}, err
	}
	log, err := s.store.JobLogView(ctx, id, 0, jobLogHead, jobLogTail)
	return j, log, err
}

// jobJSON is the job page's data for scripts: GET /jobs/:id.json and /api/v1/jobs/:id. The log
// is its bounded head and tail ("log"), or with ?after=END&attempt=A only what was appended
// since position END of attempt A ("logAppend"; "logReset" with a fresh "log" when the
// attempt changed). "logEnd" and "logAttempt" are where the next poll continues.
func (s *Server) jobJSON(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	j, err := s.store.Job(ctx, id)
	if err != nil {
		return err
	}
	pct, detail, eta := jobProgress(j)
	out := map[string]any{"id": j.ID, "experiment": j.Experiment, "board": j.BoardClass, "state": j.State,
		"terminal": j.Terminal(), "attempt": j.Attempt, "percent": pct, "detail": detail, "eta": eta, "progress": j.Progress,
		"runId": j.RunID, "error": j.Error, "note": j.Note}
	if a, e := c.QueryParam("attempt"), c.QueryParam("after"); a != "" && e != "" {
		attempt, err1 := strconv.Atoi(a)
		after, err2 := strconv.ParseInt(e, 10, 64)
		if err1 != nil || err2 != nil {
			return fault.New(fault.Invalid, "after and attempt must be numbers")
		}
		text, end, ok, err := s.store.LogSince(ctx, id, attempt, after, jobLogTail)
		if err != nil {
			return err
		}
		if ok {
			out["logAppend"], out["logEnd"], out["logAttempt"] = text, end, attempt
			return c.JSON(http.StatusOK, out)
		}
		out["logReset"] = true
	}
	log, err := s.store.JobLogView(ctx, id, 0, jobLogHead, jobLogTail)
	if err != nil {
		return err
	}
	out["log"], out["logEnd"], out["logAttempt"] = log.Text, log.End, log.Attempt
	return c.JSON(http.StatusOK, out)
}
