package portal

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"pqrepro/artifacts"
	"pqrepro/portal/store"
)

// RebuildStats says what Rebuild did.
type RebuildStats struct {
	// Rebuilt runs got a fresh report, claim verdicts and cell details; Failed could not be
	// rebuilt (their bundle is missing or no longer parses), each with its reason in Errors.
	Rebuilt, Failed int
	Errors          []string
	// RowsBefore and RowsAfter count the latency leaderboards' rows (standings over every
	// measured algorithm and operation) before and after: cells filed under their
	// implementation, key form and message size split rows that pooled them.
	RowsBefore, RowsAfter int
	// Split lists each leaderboard whose rows changed: "ML-KEM-768 keygen: 2 → 3 rows".
	Split []string
}

// Rebuild re-derives, from each run's stored bundle, the comparison report (and the claim
// verdicts it decides, for runs of the catalogue's manifests), whether the run ran the
// catalogue's manifest, and the cell details the run page and the rankings read from the cells
// table (key form, requested iterations, time budget, implementation, message size): for the runs whose report is older than
// ReportVersion, or every run with all (after the reference data changed); then the claim
// tallies and run counts (RebuildSummaries) and the home page's highlights. It is what
// `pqrepro rebuild` runs; pages never recompute a report. The bundle's signatures were
// checked when it was published and its board class status is kept as published.
func (s *Server) Rebuild(ctx context.Context, all bool) (RebuildStats, error) {
	var st RebuildStats
	before, err := s.leaderboardRows(ctx)
	if err != nil {
		return st, err
	}
	var after int64
	for {
		ids, err := s.store.RunsToRebuild(ctx, ReportVersion, all, after, 200)
		if err != nil {
			return st, err
		}
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			after = id
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if err := s.rebuildRun(ctx, id); err != nil {
				st.Failed++
				st.Errors = append(st.Errors, fmt.Sprintf("run %d: %v", id, err))
				s.log.Warn("rebuild run", "run", id, "err", err)
				continue
			}
			st.Rebuilt++
		}
	}
	// The counters the pages read are recomputed from the runs too, and the home page's
	// highlights from the cells: a reference-data change or a doubt about either is mended here.
	if err := s.store.RebuildSummaries(ctx); err != nil {
		return st, err
	}
	if err := s.RefreshHighlights(ctx); err != nil {
		return st, err
	}
	s.invalidate()
	now, err := s.leaderboardRows(ctx)
	if err != nil {
		return st, err
	}
	for _, k := range slices.Sorted(maps.Keys(now)) {
		st.RowsBefore += before[k]
		st.RowsAfter += now[k]
		if before[k] != now[k] {
			st.Split = append(st.Split, fmt.Sprintf("%s: %d → %d rows", k, before[k], now[k]))
		}
	}
	for k, n := range before {
		if _, ok := now[k]; !ok {
			st.RowsBefore += n
			st.Split = append(st.Split, fmt.Sprintf("%s: %d → 0 rows", k, n))
		}
	}
	return st, nil
}

// leaderboardRows counts the rows of the latency leaderboard of every measured (algorithm,
// operation), by "algorithm operation".
func (s *Server) leaderboardRows(ctx context.Context) (map[string]int, error) {
	pairs, err := s.store.MeasuredAlgOps(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, p := range pairs {
		rows, err := s.store.Standings(ctx, p.Algorithm, p.Operation, store.MetricLatency)
		if err != nil {
			return nil, err
		}
		out[p.Algorithm+" "+p.Operation] = len(rows)
	}
	return out, nil
}

func (s *Server) rebuildRun(ctx context.Context, id int64) error {
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return err
	}
	rc, err := s.blobs.Open(ctx, r.Bundle)
	if err != nil {
		return fmt.Errorf("open bundle %s: %w", artifacts.ShortDigest(r.Bundle), err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, s.cfg.MaxBundleBytes+1))
	rc.Close()
	if err != nil {
		return fmt.Errorf("read bundle %s: %w", artifacts.ShortDigest(r.Bundle), err)
	}
	b, err := s.ingest.Read(data)
	if err != nil {
		return fmt.Errorf("read bundle %s: %w", artifacts.ShortDigest(r.Bundle), err)
	}
	rb, err := s.ingest.Rebuild(id, b, r.ClassStatus, r.JobID != 0)
	if err != nil {
		return err
	}
	return s.store.SaveRebuilt(ctx, rb)
}
