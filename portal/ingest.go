package portal

import (
	"context"

	"pqrepro/artifacts"
	"pqrepro/portal/ingest"
	"pqrepro/portal/rpc"
)

// ReportVersion is the version of the comparison stored with a run (ingest.ReportVersion).
const ReportVersion = ingest.ReportVersion

// newIngest is the portal's one ingest path: its catalogue, blob store and public URL, and
// runs committed alone or in batches (commitRun).
func (s *Server) newIngest() *ingest.Ingest {
	return &ingest.Ingest{Catalog: s.catalog, Blobs: s.blobs, Commit: s.commitRun, PortalURL: s.cfg.PortalURL(), MaxBundleBytes: s.cfg.MaxBundleBytes}
}

// publish publishes a community bundle through the ingest path (runner completions go
// through rpc.Service.Complete).
func (s *Server) publish(ctx context.Context, b *artifacts.Bundle, in ingest.Incoming) (int64, error) {
	p, err := s.ingest.Publish(ctx, b, in)
	if err != nil {
		return 0, err
	}
	s.published(p, in)
	return p.RunID, nil
}

// published drops what a publication changes (the cached pages and leaderboards) and wakes
// the transparency log's sequencer.
func (s *Server) published(p ingest.Published, in ingest.Incoming) {
	s.invalidate()
	s.pokeLog()
	s.log.Info("published run", "run", p.RunID, "experiment", p.Experiment, "board", p.Board, "class", p.ClassStatus, "origin", in.Origin, "signer", p.Signer)
}

// newRPC is the runner protocol's service over the portal's store, ingest and job queue.
func (s *Server) newRPC() *rpc.Service {
	return &rpc.Service{Store: s.store, Ingest: s.ingest, Published: s.published, Queued: s.queue.wait, Log: s.log, Now: s.cfg.Now,
		LeaseDuration: s.cfg.LeaseDuration, LongPoll: s.cfg.LongPoll, LeasePoll: s.cfg.LeasePoll, ChallengeTTL: s.cfg.ChallengeTTL, PortalURL: s.cfg.PortalURL()}
}
