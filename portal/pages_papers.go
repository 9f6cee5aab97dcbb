package portal

// A paper's page.

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/experiments"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

func (s *Server) paperOf(id string) (*experiments.Paper, error) {
	p, ok := s.catalog.Paper(id)
	if !ok {
		return nil, fault.New(fault.NotFound, "no paper %q", id)
	}
	return p, nil
}

// experimentRole is a tls-matrix's role (artifacts.TLSRoles, the default included), "" for
// any other kind.
func experimentRole(m *artifacts.Manifest) string {
	if m.Spec.TLS == nil {
		return ""
	}
	return artifacts.RoleOf(m.Spec.TLS.Role)
}

func (s *Server) paperPage(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.paperOf(c.Param("paper"))
	if err != nil {
		return err
	}
	parts, err := s.paperParts(p)
	if err != nil {
		return err
	}
	v := templates.PaperView{Page: s.page(c, p.ID), Parts: parts}
	verdicts, err := s.store.ClaimVerdicts(ctx, p.ID, 0)
	if err != nil {
		return err
	}
	tallies, err := s.store.ClaimTallies(ctx, p.ID)
	if err != nil {
		return err
	}
	v.Claims = claimViews(p, verdicts, tallies)
	runs, more, err := s.runsPage1(ctx, store.ListFilter{Paper: p.ID, Limit: paperRuns})
	if err != nil {
		return err
	}
	v.Runs, v.RunsMore = runRows(runs), more
	return s.render(c, http.StatusOK, templates.PaperPage(v))
}

// paperStatic is what paper p's page shows that no publication changes.
func (s *Server) paperStatic(p *experiments.Paper) templates.PaperStatic {
	v := templates.PaperStatic{ID: p.ID, Title: p.Title, Citation: p.Citation, Summary: p.Summary,
		Measured: p.Measured, Boards: p.Boards, Provenance: p.Provenance}
	for _, m := range p.Manifests {
		v.Experiments = append(v.Experiments, templates.ExperimentRow{Ref: m.Ref(), Name: m.Metadata.Name, Title: m.Metadata.Title,
			Kind: string(m.Kind), Method: string(m.Spec.Method), Cells: len(m.Cells()), Role: experimentRole(m)})
	}
	v.RefGroups, v.RefInline = refGroups(p, p.Reference, inlineReferenceRows)
	v.RefTotal = len(p.Reference)
	v.Figures = inTextFigures(p)
	v.Energy = s.energyView(p)
	return v
}

// paperPartsKept are the papers' unchanging page parts, rendered on a paper's first view and
// kept while the server runs (the catalogue is fixed at start): paper002's reference groups,
// energy section and trace plot were two thirds of its page's bytes and most of its CPU.
type paperPartsKept struct {
	mu    sync.Mutex
	parts map[*experiments.Paper]*paperPartsEntry
}

type paperPartsEntry struct {
	once  sync.Once
	parts templates.PaperParts
	err   error
}

// paperParts returns paper p's unchanging parts, rendering them on first use; concurrent
// first requests wait for one rendering.
func (s *Server) paperParts(p *experiments.Paper) (templates.PaperParts, error) {
	s.paperKept.mu.Lock()
	if s.paperKept.parts == nil {
		s.paperKept.parts = map[*experiments.Paper]*paperPartsEntry{}
	}
	e := s.paperKept.parts[p]
	if e == nil {
		e = &paperPartsEntry{}
		s.paperKept.parts[p] = e
	}
	s.paperKept.mu.Unlock()
	e.once.Do(func() {
		e.parts, e.err = templates.NewPaperParts(s.paperStatic(p))
		if e.err != nil {
			e.err = fmt.Errorf("render the unchanging parts of %s: %w", p.ID, e.err)
		}
	})
	return e.parts, e.err
}

// inlineReferenceRows is how many reference rows a paper page shows in place: a paper with
// more (paper002 has thousands) lists its groups, each on a page of its own.
const inlineReferenceRows = 300

// refKey groups a paper's reference numbers: by board and library.
func refKey(r experiments.Row) (board, library string) { return r.Board, r.Library }

// refGroups groups reference rows by board and library, in the order they first appear,
// with their rows when the whole table has at most inline rows.
func refGroups(p *experiments.Paper, rows []experiments.Row, inline int) ([]templates.RefGroup, bool) {
	var out []templates.RefGroup
	index := map[[2]string]int{}
	show := len(rows) <= inline
	for _, r := range rows {
		b, l := refKey(r)
		i, ok := index[[2]string{b, l}]
		if !ok {
			i = len(out)
			index[[2]string{b, l}] = i
			q := url.Values{"board": {b}}
			if l != "" {
				q.Set("library", l)
			}
			out = append(out, templates.RefGroup{Board: b, Library: l, Link: "/papers/" + p.ID + "/reference?" + q.Encode()})
		}
		g := &out[i]
		g.Rows++
		if a := refAlgorithm(r); !slices.Contains(g.Algorithms, a) {
			g.Algorithms = append(g.Algorithms, a)
		}
		if show {
			g.Refs = append(g.Refs, refRow(r))
		}
	}
	return out, show
}

// noAlgorithm names, in a list of a reference group's algorithms, the figures of no algorithm
// (paper002's idle power of a whole board): never an empty entry.
const noAlgorithm = "whole-board figures (no algorithm)"

// refAlgorithm is a reference row's algorithm as its group lists it.
func refAlgorithm(r experiments.Row) string {
	if strings.TrimSpace(r.Algorithm) == "" {
		return noAlgorithm
	}
	return r.Algorithm
}

func refRow(r experiments.Row) templates.RefRow {
	n := ""
	if r.N > 0 {
		n = strconv.Itoa(r.N)
	}
	return templates.RefRow{Board: r.Board, Library: r.Library, Algorithm: r.Algorithm, Operation: r.Operation,
		Scenario: r.Scenario, Metric: r.Metric, Stat: r.Stat, Value: r.Text, Unit: r.Unit, N: n, Source: r.Source, Note: r.Note}
}

// paperReference is one group of a paper's reference numbers (GET
// /papers/:paper/reference?board=&library=), its rows collapsible per algorithm.
func (s *Server) paperReference(c echo.Context) error {
	p, err := s.paperOf(c.Param("paper"))
	if err != nil {
		return err
	}
	board, library := c.QueryParam("board"), c.QueryParam("library")
	v := templates.PaperReferenceView{Page: s.page(c, p.ID+" reference numbers"), ID: p.ID, Title: p.Title, Board: board, Library: library}
	for _, r := range p.Reference {
		if b, l := refKey(r); b != board || l != library {
			continue
		}
		a := refAlgorithm(r)
		i := slices.IndexFunc(v.Algorithms, func(g templates.RefGroup) bool { return g.Algorithms[0] == a })
		if i < 0 {
			i = len(v.Algorithms)
			v.Algorithms = append(v.Algorithms, templates.RefGroup{Board: board, Library: library, Algorithms: []string{a}})
		}
		v.Algorithms[i].Rows++
		v.Algorithms[i].Refs = append(v.Algorithms[i].Refs, refRow(r))
	}
	if len(v.Algorithms) == 0 {
		return fault.New(fault.NotFound, "paper %s has no reference numbers for board %q, library %q", p.ID, board, library)
	}
	return s.render(c, http.StatusOK, templates.PaperReferencePage(v))
}
