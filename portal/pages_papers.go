package portal

// A paper's page.

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"pqrepro/experiments"
	"pqrepro/portal/fault"
	"pqrepro/portal/sqlite"
	"pqrepro/templates"
)

func (s *Server) paperOf(id string) (*experiments.Paper, error) {
	p, ok := s.catalog.Paper(id)
	if !ok {
		return nil, fault.New(fault.NotFound, "no paper %q", id)
	}
	return p, nil
}

func (s *Server) paperPage(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.paperOf(c.Param("paper"))
	if err != nil {
		return err
	}
	v := templates.PaperView{Page: s.page(c, p.ID), ID: p.ID, Title: p.Title, Citation: p.Citation, Summary: p.Summary,
		Measured: p.Measured, Boards: p.Boards, Provenance: p.Provenance}
	for _, m := range p.Manifests {
		v.Experiments = append(v.Experiments, templates.ExperimentRow{Ref: m.Ref(), Name: m.Metadata.Name, Title: m.Metadata.Title,
			Kind: m.Kind, Method: m.Spec.Method, Cells: len(m.Cells())})
	}
	for _, r := range p.Reference {
		n := ""
		if r.N > 0 {
			n = strconv.Itoa(r.N)
		}
		v.Reference = append(v.Reference, templates.RefRow{Board: r.Board, Library: r.Library, Algorithm: r.Algorithm, Operation: r.Operation,
			Scenario: r.Scenario, Metric: r.Metric, Stat: r.Stat, Value: r.Text, Unit: r.Unit, N: n, Source: r.Source, Note: r.Note})
	}
	verdicts, err := s.store.ClaimVerdicts(ctx, p.ID, 0)
	if err != nil {
		return err
	}
	tallies, err := s.store.ClaimTallies(ctx, p.ID)
	if err != nil {
		return err
	}
	v.Claims = claimViews(p, verdicts, tallies)
	v.Figures = inTextFigures(p)
	runs, err := s.store.Runs(ctx, sqlite.RunFilter{Paper: p.ID, Limit: 30})
	if err != nil {
		return err
	}
	v.Runs = runRows(runs)
	return s.render(c, http.StatusOK, templates.PaperPage(v))
}
