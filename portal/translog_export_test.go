package portal

import (
	"context"

	"pqrepro/templates"
)

// RunLogStatus exposes the run page's log status builder to the external tests.
func (s *Server) RunLogStatus(ctx context.Context, runID int64) templates.LogStatusView {
	return s.runLogStatus(ctx, runID)
}
