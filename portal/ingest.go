package portal

import (
	"context"

	"pqrepro/artifacts"
	"pqrepro/portal/ingest"
)

// ReportVersion is the version of the comparison stored with a run (ingest.ReportVersion).
const ReportVersion = ingest.ReportVersion

// newIngest is the portal's one ingest path: its catalogue, blob store and public URL, and
// runs committed alone or in batches (commitRun).
func (s *Server) newIngest() *ingest.Ingest {
	return &ingest.Ingest{Catalog: s.catalog, Blobs: s.blobs, Commit: s.commitRun, PortalURL: s.cfg.PortalURL(), MaxBundleBytes: s.cfg.MaxBundleBytes}
}

// publish publishes a bundle through the ingest path and then drops what publication changes
// (the cached pages and leaderboards) and wakes the transparency log's sequencer.
func (s *Server) publish(ctx context.Context, b *artifacts.Bundle, in ingest.Incoming) (int64, error) {
	p, err := s.ingest.Publish(ctx, b, in)
	if err != nil {
		return 0, err
	}
	s.invalidate()
	s.pokeLog()
	s.log.Info("published run", "run", p.RunID, "experiment", p.Experiment, "board", p.Board, "class", p.ClassStatus, "origin", in.Origin, "signer", p.Signer)
	return p.RunID, nil
}
