package portal

// A paper's published energies re-derived from its authors' traces, for the paper's page.

import (
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"pqrepro/compare/rederive"
	"pqrepro/energy"
	"pqrepro/experiments"
	"pqrepro/portal/fault"
	"pqrepro/portal/plot"
	"pqrepro/templates"
)

// energyPlotCell is the cell whose captures the paper page draws: the Pi 1's ML-KEM-768
// key generation, the example the re-derivation was first checked on by hand.
const energyPlotCell = "rpi1-b ML-KEM-768/keygen"

// energyViews caches each paper's re-derivation: it depends only on the embedded catalogue
// and traces, and takes a second or two, so it is computed once, on the first request.
type energyViews struct {
	mu    sync.Mutex
	views map[string]*energyEntry
}

type energyEntry struct {
	once sync.Once
	view *templates.EnergyView
}

// energyView returns paper p's energies re-derived from its traces, or nil when the project
// holds none. Safe for concurrent use; concurrent first requests wait for one computation.
func (s *Server) energyView(p *experiments.Paper) *templates.EnergyView {
	traces, ok := experiments.Traces(p.ID)
	layout, known := rederive.LayoutOf(p.ID)
	if !ok || !known {
		return nil
	}
	s.energy.mu.Lock()
	if s.energy.views == nil {
		s.energy.views = map[string]*energyEntry{}
	}
	e := s.energy.views[p.ID]
	if e == nil {
		e = &energyEntry{}
		s.energy.views[p.ID] = e
	}
	s.energy.mu.Unlock()
	e.once.Do(func() {
		tab, err := rederive.Rederive(p, traces, layout, rederive.Options{})
		if err != nil {
			s.log.Error("re-derive energies from traces", "paper", p.ID, "err", err)
			e.view = &templates.EnergyView{Label: rederive.Label, Error: "The re-derivation from the paper's traces failed; the server's log says why."}
			return
		}
		v := buildEnergyView(tab)
		if fig, caption, err := energyPlot(tab, traces); err != nil {
			s.log.Error("plot a capture", "paper", p.ID, "err", err)
		} else {
			v.Plot, v.PlotCaption = fig, caption
		}
		e.view = &v
	})
	return e.view
}

// buildEnergyView turns a re-derivation into the page's view.
func buildEnergyView(tab *rederive.Table) templates.EnergyView {
	s := tab.Summarize()
	v := templates.EnergyView{Paper: tab.Paper, Label: rederive.Label, Method: string(tab.EnergyMethod), Caveat: rederive.Caveat, Seed: tab.Seed,
		Replicates: tab.Replicates, FewOps: s.FewOps, Disagreements: s.Disagreements, MinOps: energy.MinBlocks}
	tally := func(name string, t rederive.Tally) templates.EnergyTally {
		return templates.EnergyTally{Source: name, Cells: t.Cells, Rederived: t.Rederived, Inside: t.Inside, Outside: t.Outside,
			NoCapture: t.NoCapture, NoTiming: t.NoTiming}
	}
	v.All = tally("all", s.All)
	for _, src := range []string{rederive.SourceTable4, rederive.SourceAppendix, rederive.SourceRepoOnly} {
		v.BySource = append(v.BySource, tally(src, *s.BySource[src]))
	}
	if s.All.Rederived > 0 {
		v.WidthMin, v.WidthMedian, v.WidthMax = rederive.Percent(s.WidthMin), rederive.Percent(s.WidthMedian), rederive.Percent(s.WidthMax)
	}
	index := map[string]int{}
	for _, c := range tab.Cells {
		i, ok := index[c.Board]
		if !ok {
			i = len(v.Boards)
			index[c.Board] = i
			v.Boards = append(v.Boards, templates.EnergyBoard{Board: c.Board})
		}
		b := &v.Boards[i]
		b.Cells++
		row := templates.EnergyRow{Algorithm: c.Algorithm, Operation: c.Operation, Published: c.Published.Text,
			Sources: strings.Join(c.Sources, ", "), Rederived: "—", Interval: "—", Width: "—", Verdict: c.Verdict, Note: c.Note()}
		if e := c.Estimate; e != nil {
			row.Rederived = rederive.Sig(e.Energy.Point, 5)
			row.Interval = "[" + rederive.Sig(e.Energy.Lo, 4) + ", " + rederive.Sig(e.Energy.Hi, 4) + "]"
			row.Width = rederive.Percent(e.Energy.Width() / e.Energy.Point)
		}
		switch c.Verdict {
		case rederive.Inside:
			b.Inside++
		case rederive.Outside:
			b.Outside++
			v.Outside = append(v.Outside, templates.EnergyOutside{Ref: c.Ref(), Reason: c.Reason, Detail: c.Detail})
		}
		b.Rows = append(b.Rows, row)
	}
	for _, cl := range tab.Claims {
		ec := templates.EnergyClaim{ID: cl.ID, Claim: cl.Claim, Published: cl.Published, Verdict: cl.Verdict, Reason: cl.Reason}
		for _, ch := range cl.Checks {
			_, text, _ := strings.Cut(ch.Line(), ": ")
			ec.Checks = append(ec.Checks, templates.EnergyCheck{Verdict: ch.Verdict, Text: text})
		}
		v.Claims = append(v.Claims, ec)
	}
	if len(tab.Unused) > 0 {
		v.Unused = tab.Unused[0] + "."
	}
	return v
}

// energyPlot draws energyPlotCell's idle and load captures (or the first re-derived cell's),
// each with its mean and the mean's interval, and says what it shows.
func energyPlot(tab *rederive.Table, traces fs.FS) (*plot.TraceFigure, string, error) {
	var cell *rederive.Cell
	for i := range tab.Cells {
		c := &tab.Cells[i]
		if c.Estimate != nil && (cell == nil || c.Ref() == energyPlotCell) {
			cell = c
		}
	}
	if cell == nil {
		return nil, "", nil
	}
	idle, err := rederive.ReadTrace(traces, cell.IdleCapture)
	if err != nil {
		return nil, "", err
	}
	load, err := rederive.ReadTrace(traces, cell.LoadCapture)
	if err != nil {
		return nil, "", err
	}
	e := cell.Estimate
	capture := func(what string, t energy.Trace, m energy.CaptureMean) plot.Capture {
		return plot.Capture{Label: fmt.Sprintf("%s: %s (%.0f s, %.1f readings/s)", what, t.Source, m.Seconds, m.UpdateRate),
			Rate: t.Rate, Power: t.Power, Mean: m.Mean.Point, Lo: m.Mean.Lo, Hi: m.Mean.Hi}
	}
	fig := plot.Traces([]plot.Capture{capture("idle", idle, e.Idle), capture("load", load, e.Load)},
		func(v float64) string { return rederive.Sig(v, 3) })
	caption := fmt.Sprintf("%s: the board's idle capture and the operation's on-load capture as the meter recorded them "+
		"(each column spans its smallest to its largest sample), their means and the means' 95 %% intervals. "+
		"P_load − P_idle = %s W [%s, %s]; × T_op %s s = %s J [%s, %s] per operation, published %s J.",
		cell.Ref(), rederive.Sig(e.Delta.Point, 4), rederive.Sig(e.Delta.Lo, 4), rederive.Sig(e.Delta.Hi, 4),
		rederive.Sig(e.TOp, 6), rederive.Sig(e.Energy.Point, 5), rederive.Sig(e.Energy.Lo, 4), rederive.Sig(e.Energy.Hi, 4), cell.Published.Text)
	return fig, caption, nil
}

// paperEnergy lists a paper's energies re-derived from its traces (GET
// /papers/:paper/energy?board=): one board's, or every board's.
func (s *Server) paperEnergy(c echo.Context) error {
	p, err := s.paperOf(c.Param("paper"))
	if err != nil {
		return err
	}
	e := s.energyView(p)
	if e == nil {
		return fault.New(fault.NotFound, "paper %s has no power traces to re-derive energies from", p.ID)
	}
	board := c.QueryParam("board")
	if board != "" && !slices.ContainsFunc(e.Boards, func(b templates.EnergyBoard) bool { return b.Board == board }) {
		return fault.New(fault.NotFound, "paper %s has no energies of board %q", p.ID, board)
	}
	title := p.ID + " energies re-derived from its traces"
	if board != "" {
		title += ": " + board
	}
	return s.render(c, http.StatusOK, templates.PaperEnergyPage(templates.PaperEnergyView{Page: s.page(c, title), Board: board, Energy: *e}))
}
