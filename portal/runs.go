package portal

import (
	"bytes"
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// listParams are the query parameters of the run and job lists, in the order links carry them.
var listParams = []string{"paper", "experiment", "kind", "algorithm", "board", "assurance", "origin", "method", "submitter", "state", "from", "to", "limit"}

// jobOnly and runOnly name the filters that apply to one list only.
var (
	runOnly = []string{"kind", "algorithm", "assurance", "origin", "submitter"}
	jobOnly = []string{"state"}
)

const dateLayout = "2006-01-02"

// runOrigins are who can have run a published run: the portal's runners, a community
// submitter, or a local run submitted as a bundle.
var runOrigins = []string{attest.OriginPortalRunner, attest.OriginCommunity, attest.OriginLocal}

// rawListFilter is the list filters as the query gave them, unchecked and cut to 200
// characters each: only to show a refused filter form again with what was typed.
func rawListFilter(c echo.Context) (store.ListFilter, url.Values) {
	keep := url.Values{}
	for _, k := range listParams {
		if v := c.QueryParam(k); v != "" {
			keep.Set(k, strings.ToValidUTF8(v[:min(len(v), 200)], ""))
		}
	}
	return store.ListFilter{Paper: keep.Get("paper"), Experiment: keep.Get("experiment"), Kind: keep.Get("kind"), Algorithm: keep.Get("algorithm"),
		BoardClass: keep.Get("board"), Level: keep.Get("assurance"), Method: keep.Get("method"), Submitter: keep.Get("submitter"), State: keep.Get("state"),
		Origin: keep.Get("origin")}, keep
}

// listQuery reads a list's filters, cursor and page size from the query. jobs selects the
// job list's filters; a filter the list does not have is refused by name. defLimit is the
// page size when none is given; lenient makes an invalid limit defLimit instead of an error
// (the run API always did so).
func listQuery(c echo.Context, jobs bool, defLimit int, lenient bool) (store.ListFilter, url.Values, error) {
	q := c.QueryParams()
	var f store.ListFilter
	keep := url.Values{}
	for _, k := range listParams {
		v := q.Get(k)
		if v == "" {
			continue
		}
		if len(v) > 200 {
			return f, nil, onField(k, fault.New(fault.Invalid, "filter %s: at most 200 characters", k))
		}
		if jobs && slices.Contains(runOnly, k) {
			return f, nil, fault.New(fault.Invalid, "jobs cannot be filtered by %s: a job is a request for an experiment on a board class; filter /runs instead", k)
		}
		if !jobs && slices.Contains(jobOnly, k) {
			return f, nil, fault.New(fault.Invalid, "runs cannot be filtered by %s: every run is published; filter /jobs instead", k)
		}
		keep.Set(k, v)
	}
	f.Paper, f.Experiment, f.Kind, f.Algorithm = keep.Get("paper"), keep.Get("experiment"), keep.Get("kind"), keep.Get("algorithm")
	f.BoardClass, f.Level, f.Method, f.Submitter, f.State = keep.Get("board"), keep.Get("assurance"), keep.Get("method"), keep.Get("submitter"), keep.Get("state")
	if f.Level != "" && !slices.Contains([]artifacts.Level{artifacts.AssuranceHost, artifacts.AssuranceEmulated, artifacts.AssuranceHardware}, artifacts.Level(f.Level)) {
		return f, nil, onField("assurance", fault.New(fault.Invalid, "filter assurance: %q is not host, emulated or hardware", f.Level))
	}
	f.Origin = keep.Get("origin")
	if f.Origin != "" && !slices.Contains(runOrigins, f.Origin) {
		return f, nil, onField("origin", fault.New(fault.Invalid, "filter origin: %q is not %s", f.Origin, strings.Join(runOrigins, ", ")))
	}
	if f.State != "" && !slices.Contains([]string{store.JobQueued, store.JobRunning, store.JobPublished, store.JobFailed}, f.State) {
		return f, nil, onField("state", fault.New(fault.Invalid, "filter state: %q is not queued, running, published or failed", f.State))
	}
	for _, d := range []struct {
		name string
		dst  *time.Time
		add  time.Duration
	}{{"from", &f.From, 0}, {"to", &f.To, 24 * time.Hour}} {
		v := keep.Get(d.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(dateLayout, v)
		if err != nil {
			return f, nil, onField(d.name, fault.New(fault.Invalid, "filter %s: %q is not a date: pick one in the form's date field, or write it year first, YYYY-MM-DD (UTC), e.g. 2026-01-31", d.name, v))
		}
		*d.dst = t.Add(d.add) // "to" includes its whole day
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return f, nil, onField("to", fault.New(fault.Invalid, "filter from (%s) is after to (%s)", keep.Get("from"), keep.Get("to")))
	}
	f.Limit = defLimit
	if v := keep.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err == nil && n >= 1 && n <= store.MaxPage:
			f.Limit = n
		case lenient:
			keep.Del("limit")
		default:
			return f, nil, fault.New(fault.Invalid, "limit: a page holds 1 to %d rows", store.MaxPage)
		}
	}
	if v := q.Get("after"); v != "" {
		cur, err := store.ParseCursor(v)
		if err != nil {
			return f, nil, err
		}
		f.After = &cur
	}
	return f, keep, nil
}

// nextLink is base with the list's filters and the cursor of the next page.
func nextLink(base string, keep url.Values, next *store.Cursor) string {
	if next == nil {
		return ""
	}
	q := url.Values{}
	for k, v := range keep {
		q[k] = v
	}
	q.Set("after", next.String())
	return base + "?" + q.Encode()
}

// capNote says where a capped search stopped.
func capNote[T any](p store.ListPage[T]) string {
	if !p.Capped {
		return ""
	}
	back := ""
	if p.Next != nil {
		back = " (back to " + when(time.UnixMilli(p.Next.At)) + ")"
	}
	lead := "the time order"
	if p.Lead != "" {
		lead = "the " + p.Lead + " filter's index"
	}
	return fmt.Sprintf("This page searched %d rows of %s%s without filling the page: only one of paper, experiment, board, kind, method, assurance and submitter (with the dates) is served from an index, the other filters are tested row by row. Next continues the search.",
		p.Examined, lead, back)
}

// A refused filter shows the form again with the values given and the error beside the field,
// and no list.
func (s *Server) runsPage(c echo.Context) error {
	f, keep, err := listQuery(c, false, 50, false)
	fe, status, ok := formRefusal(err)
	if err != nil && !ok {
		return err
	}
	ctx := c.Request().Context()
	var p store.ListPage[store.Run]
	if err != nil {
		f, keep = rawListFilter(c)
	} else if p, err = s.store.ListRuns(ctx, f); err != nil {
		return err
	}
	facets, err := s.store.Facets(ctx)
	if err != nil {
		return err
	}
	algs, _, _, err := s.algOps(ctx)
	if err != nil {
		return err
	}
	v := templates.RunsView{Page: s.page(c, "Runs"), Next: nextLink("/runs", keep, p.Next), CapNote: capNote(p),
		First: f.After != nil, FirstLink: "/runs?" + keep.Encode(), Submitter: f.Submitter, Algorithm: f.Algorithm, From: keep.Get("from"), To: keep.Get("to"),
		JSON: "/api/v1/runs?" + keep.Encode(), Filtered: len(keep) > 0, Error: fe}
	csv := url.Values{}
	for k, vs := range keep {
		csv[k] = vs
	}
	csv.Set("format", "csv")
	v.CSV = "/api/v1/runs?" + csv.Encode()
	v.Filters = []templates.Filter{
		filterSelect("paper", "Paper", facets.Papers, f.Paper),
		filterSelect("experiment", "Experiment", facets.Experiments, f.Experiment),
		filterSelect("kind", "Kind", facets.Kinds, f.Kind),
		filterSelect("board", "Board class", facets.Boards, f.BoardClass),
		filterSelect("assurance", "Assurance", facets.Levels, f.Level),
		filterSelect("origin", "Origin (who ran it)", runOrigins, f.Origin),
		filterSelect("method", "Method", facets.Methods, f.Method),
	}
	v.Algorithms = algs
	for _, r := range p.Items {
		v.Runs = append(v.Runs, runListRow(r))
	}
	return s.render(c, cmp.Or(status, http.StatusOK), templates.RunsPage(v))
}

func filterSelect(name, label string, values []string, selected string) templates.Filter {
	fl := templates.Filter{Name: name, Label: label}
	if selected != "" && !slices.Contains(values, selected) {
		values = append([]string{selected}, values...) // a value with no run yet stays chosen
	}
	for _, v := range values {
		fl.Options = append(fl.Options, templates.Option{Value: v, Label: v, Selected: v == selected})
	}
	return fl
}

func runListRow(r store.Run) templates.RunListRow {
	by := r.Submitter
	if by == "" {
		by = r.RunnerName
	}
	return templates.RunListRow{ID: r.ID, Paper: r.Paper, Experiment: r.Experiment, Kind: string(r.Kind), Method: string(r.Method), Board: r.BoardClass,
		Declared: r.ClassStatus == artifacts.ClassDeclared, OwnManifest: !r.Catalogue, Assurance: assurance(r.BoardClass, string(r.Level), r.Origin),
		Published: when(r.PublishedAt), CellsOK: r.CellsOK, CellsTotal: r.CellsTotal, By: by}
}

// A refused filter shows the form again with the values given and the error beside the field,
// and no list.
func (s *Server) jobsPage(c echo.Context) error {
	f, keep, err := listQuery(c, true, 50, false)
	fe, status, ok := formRefusal(err)
	if err != nil && !ok {
		return err
	}
	ctx := c.Request().Context()
	var p store.ListPage[store.Job]
	if err != nil {
		f, keep = rawListFilter(c)
	} else if p, err = s.store.ListJobs(ctx, f); err != nil {
		return err
	}
	facets, err := s.store.Facets(ctx)
	if err != nil {
		return err
	}
	v := templates.JobsView{Page: s.page(c, "Jobs"), Next: nextLink("/jobs", keep, p.Next), CapNote: capNote(p),
		First: f.After != nil, FirstLink: "/jobs?" + keep.Encode(), From: keep.Get("from"), To: keep.Get("to"), JSON: "/api/v1/jobs?" + keep.Encode(), Error: fe}
	csv := url.Values{"format": {"csv"}}
	for k, vs := range keep {
		csv[k] = vs
	}
	v.CSV = "/api/v1/jobs?" + csv.Encode()
	v.Filters = []templates.Filter{
		filterSelect("paper", "Paper", facets.Papers, f.Paper),
		filterSelect("experiment", "Experiment", facets.Experiments, f.Experiment),
		filterSelect("board", "Board class", facets.Boards, f.BoardClass),
		filterSelect("state", "State", []string{store.JobQueued, store.JobRunning, store.JobPublished, store.JobFailed}, f.State),
		filterSelect("method", "Method", facets.Methods, f.Method),
	}
	for _, j := range p.Items {
		v.Jobs = append(v.Jobs, templates.JobListRow{ID: j.ID, Paper: j.Paper, Experiment: j.Experiment, Board: j.BoardClass, Method: string(j.Method), State: j.State,
			Created: when(j.CreatedAt), RunID: j.RunID, Error: j.Error})
	}
	return s.render(c, cmp.Or(status, http.StatusOK), templates.JobsPage(v))
}

// setNext announces the next page of an API list: a Link header (rel="next") and
// X-Next-Cursor, so the body stays the array it always was; X-Scan-Capped says a capped
// search stopped before the page was full.
func setNext[T any](c echo.Context, base string, keep url.Values, p store.ListPage[T]) {
	h := c.Response().Header()
	if p.Next != nil {
		h.Set("Link", "<"+nextLink(base, keep, p.Next)+`>; rel="next"`)
		h.Set("X-Next-Cursor", p.Next.String())
	}
	if p.Capped {
		h.Set("X-Scan-Capped", strconv.Itoa(p.Examined))
	}
}

// apiRuns lists runs as JSON (an array, newest first), or CSV with ?format=csv, with the
// filters and cursor of /runs. An absent, non-positive or too large limit is 100, as it
// always was.
func (s *Server) apiRuns(c echo.Context) error {
	f, keep, err := listQuery(c, false, 100, true)
	if err != nil {
		return err
	}
	p, err := s.store.ListRuns(c.Request().Context(), f)
	if err != nil {
		return err
	}
	setNext(c, "/api/v1/runs", keep, p)
	if c.QueryParam("format") == "csv" {
		var buf bytes.Buffer
		w := newCSV(&buf)
		w.Write([]string{"id", "url", "paper", "experiment", "kind", "method", "board", "level", "class_status", "origin", "submitter", "runner", "published_at", "cells_ok", "cells_total"})
		for _, r := range p.Items {
			w.Write([]string{strconv.FormatInt(r.ID, 10), fmt.Sprintf("/runs/%d", r.ID), r.Paper, r.Experiment, string(r.Kind), string(r.Method), r.BoardClass, string(r.Level), r.ClassStatus, r.Origin,
				r.Submitter, r.RunnerName, r.PublishedAt.UTC().Format(time.RFC3339), strconv.Itoa(r.CellsOK), strconv.Itoa(r.CellsTotal)})
		}
		w.Flush()
		return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
	}
	out := make([]apiRunJSON, 0, len(p.Items))
	for _, r := range p.Items {
		out = append(out, runJSON(r))
	}
	return c.JSON(http.StatusOK, out)
}

// apiJobs lists jobs as JSON (or CSV with ?format=csv) with the filters and cursor of /jobs.
func (s *Server) apiJobs(c echo.Context) error {
	f, keep, err := listQuery(c, true, 100, false)
	if err != nil {
		return err
	}
	p, err := s.store.ListJobs(c.Request().Context(), f)
	if err != nil {
		return err
	}
	setNext(c, "/api/v1/jobs", keep, p)
	if c.QueryParam("format") == "csv" {
		var buf bytes.Buffer
		w := newCSV(&buf)
		w.Write([]string{"id", "url", "paper", "experiment", "board", "method", "state", "created_at", "run_id", "error"})
		for _, j := range p.Items {
			run := ""
			if j.RunID > 0 {
				run = strconv.FormatInt(j.RunID, 10)
			}
			w.Write([]string{strconv.FormatInt(j.ID, 10), fmt.Sprintf("/jobs/%d", j.ID), j.Paper, j.Experiment, j.BoardClass, string(j.Method), j.State,
				j.CreatedAt.UTC().Format(time.RFC3339), run, j.Error})
		}
		w.Flush()
		return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
	}
	type jobJSON struct {
		ID         int64            `json:"id"`
		URL        string           `json:"url"`
		Paper      string           `json:"paper"`
		Experiment string           `json:"experiment"`
		Board      string           `json:"board"`
		Method     artifacts.Method `json:"method"`
		State      string           `json:"state"`
		CreatedAt  time.Time        `json:"createdAt"`
		RunID      int64            `json:"runId,omitempty"`
		Error      string           `json:"error,omitempty"`
	}
	out := make([]jobJSON, 0, len(p.Items))
	for _, j := range p.Items {
		out = append(out, jobJSON{ID: j.ID, URL: fmt.Sprintf("/jobs/%d", j.ID), Paper: j.Paper, Experiment: j.Experiment, Board: j.BoardClass, Method: j.Method,
			State: j.State, CreatedAt: j.CreatedAt, RunID: j.RunID, Error: j.Error})
	}
	return c.JSON(http.StatusOK, out)
}
