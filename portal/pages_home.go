package portal

// The home page and the run and job rows every listing shares.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/portal/store"
	"pqrepro/templates"
)

func runRows(runs []store.Run) []templates.RunRow {
	var out []templates.RunRow
	for _, r := range runs {
		by := ""
		if r.Submitter != "" {
			by = " · " + r.Submitter
		} else if r.RunnerName != "" {
			by = " · " + r.RunnerName
		}
		out = append(out, templates.RunRow{ID: r.ID, Experiment: r.Experiment, Board: r.BoardClass, When: when(r.PublishedAt),
			Assurance: templates.Assurance{Level: r.Level, Origin: r.Origin}, CellsOK: r.CellsOK, CellsTotal: r.CellsTotal, Signer: r.Signer, By: by})
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
	runs, err := s.store.Runs(ctx, store.RunFilter{Limit: 15})
	if err != nil {
		return err
	}
	v.Runs = runRows(runs)
	jobs, err := s.store.Jobs(ctx, "", 20)
	if err != nil {
		return err
	}
	for _, j := range jobRows(jobs) {
		if j.State == store.JobQueued || j.State == store.JobRunning {
			v.Jobs = append(v.Jobs, j)
		}
	}
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
// (unit, assurance, method, class status), its first five boards, never two rankings in
// one list; one empty list when nothing was measured.
func highlightLists(alg, op string, groups []templates.LeaderGroup) []templates.Highlight {
	link := leaderLink(alg, op, store.MetricLatency)
	if len(groups) == 0 {
		return []templates.Highlight{{Algorithm: alg, Operation: op, Link: link}}
	}
	var out []templates.Highlight
	for _, g := range groups {
		hl := templates.Highlight{Algorithm: alg, Operation: op, Link: link, Ranking: g.Title, Declared: g.Declared}
		hl.Rows = g.Rows[:min(len(g.Rows), 5)]
		out = append(out, hl)
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
