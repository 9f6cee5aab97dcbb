package portal

// Board classes and runners.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

func (s *Server) boardRows(ctx context.Context) ([]templates.BoardRow, error) {
	counts, err := s.store.BoardCounts(ctx)
	if err != nil {
		return nil, err
	}
	runners, err := s.connectedRunners(ctx)
	if err != nil {
		return nil, err
	}
	offered := map[string][]string{}
	for _, r := range runners {
		for _, b := range r.Boards {
			if b.Available {
				offered[b.Class] = append(offered[b.Class], r.Name)
			}
		}
	}
	var out []templates.BoardRow
	seen := map[string]bool{}
	add := func(row templates.BoardRow) {
		seen[row.Class] = true
		for _, c := range counts {
			if c.BoardClass == row.Class {
				row.Runs = c.Runs
			}
		}
		row.Runners = strings.Join(offered[row.Class], ", ")
		out = append(out, row)
	}
	add(templates.BoardRow{Class: "host", Name: "the runner's own CPU", CPU: "the runner's (each run records its own)", Arch: "the runner's", Papers: "any"})
	for _, b := range s.catalog.Boards {
		if !seen[b.Slug] {
			clock := ""
			if b.ClockMHz != "" {
				clock = b.ClockMHz + " MHz"
			}
			add(templates.BoardRow{Class: b.Slug, Name: b.Name, CPU: b.CPU, Arch: b.Arch, Clock: clock, Memory: b.Memory, Papers: paperList(b.Papers)})
		}
	}
	for class := range offered {
		if !seen[class] {
			add(templates.BoardRow{Class: class})
		}
	}
	for _, c := range counts {
		if !seen[c.BoardClass] {
			add(templates.BoardRow{Class: c.BoardClass})
		}
	}
	return out, nil
}

// paperList names the papers of a board's catalogue entry ("000;003") as the site names
// them: "paper000, paper003"; empty entries are dropped.
func paperList(ids string) string {
	var out []string
	for _, id := range strings.Split(ids, ";") {
		if id = strings.TrimSpace(id); id != "" {
			if !strings.HasPrefix(id, "paper") {
				id = "paper" + id
			}
			out = append(out, id)
		}
	}
	return strings.Join(out, ", ")
}

func runnerRows(rs []store.Runner, within time.Duration) []templates.RunnerRow {
	var out []templates.RunnerRow
	for _, r := range rs {
		var boards []string
		for _, b := range r.Boards {
			s := boardLabel(b.Name, b.Class, b.Driver)
			if !b.Available {
				s += " unavailable: " + b.Reason
			}
			boards = append(boards, s)
		}
		out = append(out, templates.RunnerRow{ID: r.ID, Name: r.Name, Fingerprint: r.Fingerprint, Version: r.Version, LastSeen: when(r.LastSeen),
			Boards: strings.Join(boards, "; "), Connected: time.Since(r.LastSeen) <= within})
	}
	return out
}

func (s *Server) boardsPage(c echo.Context) error {
	ctx := c.Request().Context()
	rows, err := s.boardRows(ctx)
	if err != nil {
		return err
	}
	rs, err := s.store.Runners(ctx)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.BoardsPage(templates.BoardsView{Page: s.page(c, "Boards"), Boards: rows, Runners: runnerRows(rs, s.cfg.ConnectedWithin)}))
}

func (s *Server) boardPage(c echo.Context) error {
	ctx := c.Request().Context()
	class := c.Param("class")
	if !artifacts.ValidBoardClass(class) {
		return fault.New(fault.NotFound, "no board class %q", class)
	}
	rows, err := s.boardRows(ctx)
	if err != nil {
		return err
	}
	v := templates.BoardView{Page: s.page(c, class), Board: templates.BoardRow{Class: class}}
	for _, r := range rows {
		if r.Class == class {
			v.Board = r
		}
	}
	runs, more, err := s.runsPage1(ctx, store.ListFilter{BoardClass: class, Limit: boardRuns})
	if err != nil {
		return err
	}
	v.Runs, v.RunsMore = runRows(runs), more
	return s.render(c, http.StatusOK, templates.BoardPage(v))
}

// boardLabel names a runner's board once: "pi4 (rpi4-b, serial)", and "host" rather than
// "host [host, host]".
func boardLabel(name, class string, driver artifacts.Driver) string {
	var extra []string
	for _, x := range []string{class, string(driver)} {
		if x != "" && x != name && !slices.Contains(extra, x) {
			extra = append(extra, x)
		}
	}
	if len(extra) == 0 {
		return name
	}
	return name + " (" + strings.Join(extra, ", ") + ")"
}
