package portal

// A job's page and its JSON for the page's script.

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts/logtext"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// jobProgress computes percent, detail and ETA from a job's last heartbeat.
func jobProgress(j store.Job) (percent int, detail, eta string) {
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
	case store.JobPublished:
		frac = 1
	case store.JobRunning:
		if el := time.Since(j.StartedAt); frac > 0.01 {
			eta = (time.Duration(float64(el)/frac) - el).Round(time.Second).String()
		}
	}
	detail = fmt.Sprintf("%d of %d cells done", p.CellsDone, p.CellsTotal)
	if p.Current != "" && j.State == store.JobRunning {
		detail += fmt.Sprintf(" · current cell %s (%d/%d iterations)", p.Current, p.Iteration, p.Requested)
	}
	if eta != "" {
		detail += " · ETA " + eta
	}
	switch {
	case j.State == store.JobQueued:
		detail = "waiting for a runner with board " + j.BoardClass
	case j.State == store.JobRunning && p.CellsTotal == 0:
		detail = "the runner is preparing board " + j.BoardClass + " (no progress reported yet)"
	case j.State == store.JobFailed:
		detail = "failed"
	case j.State == store.JobPublished:
		detail = fmt.Sprintf("published as run #%d", j.RunID)
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
	v := jobView(j, log, s.now())
	v.Page = s.page(c, fmt.Sprintf("Job %d", j.ID))
	follow := c.QueryParam("follow") == "1"
	switch {
	case !v.Terminal:
		// Without JavaScript the page reloads itself; once published it goes on to the run
		// (a page opened after the job ended stays, with the link).
		v.Page.Refresh, v.Page.RefreshURL = 2, fmt.Sprintf("/jobs/%d?follow=1", j.ID)
	case follow && j.RunID > 0:
		v.Page.Refresh, v.Page.RefreshURL = 5, fmt.Sprintf("/runs/%d", j.RunID)
		v.Redirecting = true
	}
	return s.render(c, http.StatusOK, templates.JobPage(v))
}

// jobView is a job's page from its row and log: the states it went through (queued, picked
// up, measuring, published or failed), progress as the runner reported it, and the log as
// human lines with the raw frames kept.
func jobView(j store.Job, log store.LogView, now time.Time) templates.JobView {
	pct, detail, eta := jobProgress(j)
	v := templates.JobView{ID: j.ID, Experiment: j.Experiment, Board: j.BoardClass, State: j.State,
		Runner: j.RunnerName, Firmware: j.Firmware, Attempt: j.Attempt, Note: j.Note, Error: j.Error, RunID: j.RunID,
		Detail: detail, ETA: eta, Percent: pct, Log: log.Text, LogEnd: log.End, LogAttempt: log.Attempt, Created: when(j.CreatedAt), Started: when(j.StartedAt),
		Finished: when(j.FinishedAt), Terminal: j.Terminal()}
	if j.Cancelled() {
		v.Cancelled, v.Error = j.CancelReason(), ""
	}
	v.HumanLog, v.Framed = logtext.Human(log.Text)
	if !j.StartedAt.IsZero() {
		end := j.FinishedAt
		if end.IsZero() {
			end = now
		}
		v.Elapsed = end.Sub(j.StartedAt).Round(time.Second).String()
	}
	measuring := j.Progress.CellsTotal > 0
	step := func(name, state, at string) templates.JobStep {
		return templates.JobStep{Name: name, State: state, When: at}
	}
	done := func(b bool) string {
		if b {
			return "done"
		}
		return "todo"
	}
	v.Steps = []templates.JobStep{step("Queued", "done", when(j.CreatedAt))}
	switch j.State {
	case store.JobQueued:
		v.Steps[0].State = "current"
		v.Steps = append(v.Steps, step("Picked up by a runner", "todo", ""), step("Measuring", "todo", ""), step("Published", "todo", ""))
	case store.JobRunning:
		cur := "current"
		v.Steps = append(v.Steps, step("Picked up by "+cmpName(j.RunnerName), map[bool]string{true: "done", false: cur}[measuring], when(j.StartedAt)))
		v.Steps = append(v.Steps, step("Measuring", map[bool]string{true: cur, false: "todo"}[measuring], ""), step("Published", "todo", ""))
	case store.JobPublished:
		v.Steps = append(v.Steps, step("Picked up by "+cmpName(j.RunnerName), "done", when(j.StartedAt)), step("Measured", "done", ""),
			step(fmt.Sprintf("Published as run #%d", j.RunID), "done", when(j.FinishedAt)))
	case store.JobFailed:
		v.Steps = append(v.Steps, step("Picked up by "+cmpName(j.RunnerName), done(!j.StartedAt.IsZero()), when(j.StartedAt)),
			step("Failed", "failed", when(j.FinishedAt)))
	}
	return v
}

func cmpName(runner string) string {
	if runner == "" {
		return "a runner"
	}
	return "runner " + runner
}

// Bounds of the job page's log: its head (the run header) and its most recent tail, and the
// most one poll adds.
const (
	jobLogHead = 16 << 10
	jobLogTail = 64 << 10
)

// jobWithLog loads the job named by the :id parameter and its log's head and tail.
func (s *Server) jobWithLog(c echo.Context) (store.Job, store.LogView, error) {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return store.Job{}, store.LogView{}, err
	}
	j, err := s.store.Job(ctx, id)
	if err != nil {
		return store.Job{}, store.LogView{}, err
	}
	log, err := s.store.JobLogView(ctx, id, 0, jobLogHead, jobLogTail)
	return j, log, err
}

// jobJSON is the job page's data for scripts: GET /jobs/:id.json and /api/v1/jobs/:id. The log
// is its bounded head and tail ("log"), or with ?after=END&attempt=A only what was appended
// since position END of attempt A ("logAppend"; "logReset" with a fresh "log" when the
// attempt changed). "logHuman" and "humanAppend" are the same read by logtext.Human, and
// "logFramed" says whether that reading differs from the raw log (a board's frames). "logEnd"
// and "logAttempt" are where the next poll continues.
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
			out["humanAppend"], out["logFramed"] = logtext.Human(text)
			return c.JSON(http.StatusOK, out)
		}
		out["logReset"] = true
	}
	log, err := s.store.JobLogView(ctx, id, 0, jobLogHead, jobLogTail)
	if err != nil {
		return err
	}
	out["log"], out["logEnd"], out["logAttempt"] = log.Text, log.End, log.Attempt
	out["logHuman"], out["logFramed"] = logtext.Human(log.Text)
	return c.JSON(http.StatusOK, out)
}
