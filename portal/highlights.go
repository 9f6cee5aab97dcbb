package portal

// The summary job: it folds the rows publications appended to the store's counters
// (CompactSummaries) and recomputes the home page's small leaderboards into the store, never
// per view, so the home page reads a few stored rows however many cells there are.

import (
	"context"
	"fmt"
	"time"

	"pqrepro/portal/store"
)

// highlights are the home page's small leaderboards.
var highlights = [][2]string{{"ML-KEM-768", "encaps"}, {"ML-DSA-65", "sign"}, {"ML-DSA-65", "verify"}}

// defaultHighlightsEvery is how often the summary job looks for new runs when
// Config.HighlightsEvery is zero.
const defaultHighlightsEvery = time.Minute

// RefreshHighlights recomputes the home page's leaderboards from the stored cells (leaving out
// loaded runs' cells) and saves
// them in the store (each in one transaction). The highlight job runs it; so do the rebuild
// command and tests that want the home page to show what they just published.
func (s *Server) RefreshHighlights(ctx context.Context) error {
	now := s.now()
	for _, h := range highlights {
		rows, err := s.store.QuietStandings(ctx, h[0], h[1])
		if err != nil {
			return fmt.Errorf("highlights %s %s: %w", h[0], h[1], err)
		}
		if err := s.store.SaveHighlights(ctx, h[0], h[1], store.MetricLatency, rows, now); err != nil {
			return err
		}
	}
	return nil
}

// summaryLoop compacts the counters and refreshes the highlights at start and then, every
// interval, when a run was published (here or, through the store's events, by another portal
// process) since the last time, until ctx ends. A failure is logged and tried again next time.
// Every process sharing a database runs it; they do the same work, in transactions.
func (s *Server) summaryLoop(ctx context.Context) {
	every := s.cfg.HighlightsEvery
	if every <= 0 {
		every = defaultHighlightsEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	done, ok := uint64(0), false
	for {
		s.measuredMu.Lock()
		gen := s.generation
		s.measuredMu.Unlock()
		if !ok || gen != done {
			if _, err := s.store.CompactSummaries(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("compact summaries", "err", err)
			}
			if err := s.RefreshHighlights(ctx); err != nil {
				if ctx.Err() == nil {
					s.log.Error("refresh highlights", "err", err)
				}
			} else {
				done, ok = gen, true
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// storedHighlights is the leaderboard of (alg, op) by latency as the highlight job last saved it.
func (s *Server) storedHighlights(ctx context.Context, alg, op string) ([]Standing, error) {
	rows, _, err := s.store.Highlights(ctx, alg, op, store.MetricLatency)
	if err != nil {
		return nil, err
	}
	return rankStandings(rows, store.MetricLatency, op), nil
}
