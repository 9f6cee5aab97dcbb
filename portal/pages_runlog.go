package portal

// A run's log page: the bundle's log.txt read by artifacts/logtext.

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/artifacts/logtext"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// Bounds of the run log page: the log's head (the run header and the board's identification),
// its summary lines, and its tail. The whole log is /runs/:id/log.txt and in the bundle.
const (
	runLogHead    = 64 << 10
	runLogSummary = 1 << 20
	runLogTail    = 128 << 10
)

// runLogView reads a run's log: human lines (logtext.Human) with the raw log kept for a
// toggle, both bounded to the head, every summary line and the tail of a long log.
func runLogView(r store.Run, log []byte) templates.RunLogView {
	raw, omitted := logtext.Bound(string(log), runLogHead, runLogSummary, runLogTail)
	v := templates.RunLogView{ID: r.ID, Experiment: r.Experiment, Board: r.BoardClass, Log: raw, Size: bytesHuman(int64(len(log))), Omitted: omitted}
	v.HumanLog, v.Framed = logtext.Human(raw)
	v.Trouble = logtext.Count(string(log)).String()
	return v
}

// readRunLog returns the run named by :id and its bundle's log.txt.
func (s *Server) readRunLog(c echo.Context) (store.Run, []byte, error) {
	rc, id, err := s.openRunBundle(c)
	if err != nil {
		return store.Run{}, nil, err
	}
	defer rc.Close()
	b, err := artifacts.ReadTarGz(rc, s.cfg.MaxBundleBytes)
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("read stored bundle of run %d: %w", id, err)
	}
	r, err := s.store.Run(c.Request().Context(), id)
	return r, b.Files[artifacts.FileLog], err
}

// runLogPage is GET /runs/:id/log.
func (s *Server) runLogPage(c echo.Context) error {
	r, log, err := s.readRunLog(c)
	if err != nil {
		return err
	}
	v := runLogView(r, log)
	v.Page = s.page(c, fmt.Sprintf("Run %d log", r.ID))
	return s.render(c, http.StatusOK, templates.RunLogPage(v))
}

// runLogText is GET /runs/:id/log.txt: the bundle's whole log.txt.
func (s *Server) runLogText(c echo.Context) error {
	r, log, err := s.readRunLog(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="run-%d-log.txt"`, r.ID))
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", log)
}
