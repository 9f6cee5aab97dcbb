package portal

// The home page and the run and job rows every listing shares.

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts/attest"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// How many rows a page's list shows before its link to the rest (on /runs or /jobs).
const (
	homeRuns       = 15
	homeJobs       = 10 // of each of running and queued
	paperRuns      = 30
	boardRuns      = 30
	experimentRuns = 30
	experimentJobs = 10
)

// runsPage1 is the first page of the runs f selects, newest first, from f's index, and when
// there are more a link to the same filter on /runs.
func (s *Server) runsPage1(ctx context.Context, f store.ListFilter) ([]store.Run, []templates.MoreLink, error) {
	p, err := s.store.ListRuns(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	if p.Next == nil {
		return p.Items, nil, nil
	}
	q, what := url.Values{}, "All runs"
	for _, kv := range [][3]string{{"paper", f.Paper, " of paper "}, {"experiment", f.Experiment, " of "}, {"board", f.BoardClass, " on "}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
			what += kv[2] + kv[1]
		}
	}
	href := "/runs"
	if len(q) > 0 {
		href += "?" + q.Encode()
	}
	return p.Items, []templates.MoreLink{{Href: href, Label: what + " →"}}, nil
}

// jobsPage1 is runsPage1 for jobs, linking to /jobs.
func (s *Server) jobsPage1(ctx context.Context, f store.ListFilter) ([]store.Job, []templates.MoreLink, error) {
	p, err := s.store.ListJobs(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	if p.Next == nil {
		return p.Items, nil, nil
	}
	q, what := url.Values{}, "All"
	if f.State != "" {
		q.Set("state", f.State)
		what += " " + f.State
	}
	what += " jobs"
	if f.Experiment != "" {
		q.Set("experiment", f.Experiment)
		what += " of " + f.Experiment
	}
	href := "/jobs"
	if len(q) > 0 {
		href += "?" + q.Encode()
	}
	return p.Items, []templates.MoreLink{{Href: href, Label: what + " →"}}, nil
}

func runRows(runs []store.Run) []templates.RunRow {
	var out []templates.RunRow
	for _, r := range runs {
		by := ""
		if r.Submitter != "" {
			by = " · " + r.Submitter
		} else if r.RunnerName != "" {
			by = " · " + r.RunnerName
		}
		out = append(out, templates.RunRow{ID: r.ID, Experiment: r.Experiment, Board: r.BoardClass, When: when(r.PublishedAt), OwnManifest: !r.Catalogue,
			Assurance: assurance(r.BoardClass, string(r.Level), r.Origin), CellsOK: r.CellsOK, CellsTotal: r.CellsTotal, Signer: r.Signer, By: by})
	}
	return out
}

func jobRows(jobs []store.Job) []templates.JobRow {
	var out []templates.JobRow
	for _, j := range jobs {
		out = append(out, templates.JobRow{ID: j.ID, Experiment: j.Experiment, Board: j.BoardClass, State: j.State, When: when(j.CreatedAt), RunID: j.RunID})
	}
	return out
}

func (s *Server) home(c echo.Context) error {
	ctx := c.Request().Context()
	counts, err := s.store.RunCounts(ctx)
	if err != nil {
		return err
	}
	runners, err := s.connectedRunners(ctx)
	if err != nil {
		return err
	}
	v := templates.Home{Page: s.page(c, "Papers"), Runners: len(runners)}
	for _, p := range s.catalog.Papers {
		card := templates.PaperCard{ID: p.ID, Title: p.Title, Citation: p.Citation, Experiments: len(p.Manifests),
			Runs: counts[p.ID], Measured: strings.Join(p.Measured, ", ")}
		for _, m := range p.Manifests {
			for _, b := range runnableOn(runners, m) {
				if !slices.Contains(card.Runnable, b) {
					card.Runnable = append(card.Runnable, b)
				}
			}
		}
		slices.Sort(card.Runnable)
		v.Papers = append(v.Papers, card)
	}
	runs, more, err := s.runsPage1(ctx, store.ListFilter{Limit: homeRuns})
	if err != nil {
		return err
	}
	v.Runs, v.RunsMore = runRows(runs), more
	// Jobs in progress: one page of the running and one of the queued, newest first, each
	// from its own index, with links to the rest.
	var jobs []store.Job
	for _, state := range []string{store.JobRunning, store.JobQueued} {
		js, more, err := s.jobsPage1(ctx, store.ListFilter{State: state, Limit: homeJobs})
		if err != nil {
			return err
		}
		jobs = append(jobs, js...)
		v.JobsMore = append(v.JobsMore, more...)
	}
	slices.SortFunc(jobs, func(a, b store.Job) int { return cmp.Compare(b.ID, a.ID) })
	v.Jobs = jobRows(jobs)
	for _, h := range highlights {
		measured, err := s.storedHighlights(ctx, h[0], h[1])
		if err != nil {
			return err
		}
		v.Highlights = append(v.Highlights, highlightLists(h[0], h[1], leaderGroups(measured))...)
	}
	return s.render(c, http.StatusOK, templates.HomePage(v))
}

// highlightLists are the home page's lists for one (algorithm, operation): one per ranking
// (unit, assurance, method, class status, key form, message size) and origin (the portal's
// own runners first, then community submissions: never one list of both), its first five
// rows ranked within it; one empty list when nothing was measured.
func highlightLists(alg, op string, groups []templates.LeaderGroup) []templates.Highlight {
	link := leaderLink(alg, op, store.MetricLatency)
	if len(groups) == 0 {
		return []templates.Highlight{{Algorithm: alg, Operation: op, Link: link}}
	}
	var out []templates.Highlight
	for _, g := range groups {
		for _, o := range []struct{ origin, title string }{
			{attest.OriginPortalRunner, "the portal's runners"}, {attest.OriginCommunity, "community submissions"},
		} {
			hl := templates.Highlight{Algorithm: alg, Operation: op, Link: link, Ranking: g.Title + " · " + o.title, Declared: g.Declared}
			for _, r := range g.Rows {
				if r.Assurance.Origin == o.origin && len(hl.Rows) < 5 {
					r.Rank = len(hl.Rows) + 1
					if k := len(hl.Rows) - 1; k >= 0 && hl.Rows[k].Median == r.Median {
						r.Rank = hl.Rows[k].Rank // an equal result shares its rank
					}
					hl.Rows = append(hl.Rows, r)
				}
			}
			if len(hl.Rows) > 0 {
				out = append(out, hl)
			}
		}
	}
	return out
}

func (s *Server) connectedRunners(ctx context.Context) ([]store.Runner, error) {
	all, err := s.store.Runners(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Runner
	for _, r := range all {
		if time.Since(r.LastSeen) <= s.cfg.ConnectedWithin {
			out = append(out, r)
		}
	}
	return out, nil
}
