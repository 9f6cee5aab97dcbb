package ingest

import (
	"encoding/json"
	"fmt"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/portal/store"
)

// compareRun compares a run with its paper (the manifest's reference dataset, else its
// paper) and returns the report as stored JSON and the claim verdicts. The report checks the
// claims of any run; only a run of the catalogue's manifest (catalogue) gives verdicts that
// count toward the paper's claims, the others' are shown on their page only.
func (g *Ingest) compareRun(res *artifacts.Result, samples artifacts.Samples, env artifacts.Environment, m *artifacts.Manifest, catalogue bool) (string, []store.ClaimVerdict, error) {
	board := env.Board
	paperID := m.Spec.Reference.Dataset
	if paperID == "" {
		paperID = m.Metadata.Paper
	}
	var rep compare.Report
	var verdicts []store.ClaimVerdict
	if p, ok := g.Catalog.Paper(paperID); ok {
		rep = compare.Compare(compare.Run{Result: res, Samples: samples, Board: board, Timing: env.Timing}, m, p)
		for _, cr := range rep.Claims {
			if catalogue {
				verdicts = append(verdicts, store.ClaimVerdict{Paper: p.ID, ClaimID: cr.Claim.ID, Verdict: cr.Verdict, Reason: cr.Reason, ClassStatus: cr.ClassStatus})
			}
		}
	} else {
		rep = compare.Report{Dataset: paperID, Board: res.Board, Assurance: res.Assurance, ClassStatus: board.ClassStatus}
	}
	repJSON, err := json.Marshal(rep)
	if err != nil {
		return "", nil, fmt.Errorf("encode report: %w", err)
	}
	return string(repJSON), verdicts, nil
}

// loadedRun reports whether a host run was measured while other processes used the CPU above
// the runner's threshold: its claims are not verdicted (compare) and its cells stay out of the
// home page's highlights. Emulated and hardware counts are never loaded by the host.
func loadedRun(res *artifacts.Result, env artifacts.Environment) bool {
	return res.Assurance == artifacts.AssuranceHost && env.Timing != nil && env.Timing.External != nil && env.Timing.External.Exceeded
}

// catalogueManifest reports whether a run ran a manifest of this portal's catalogue: it
// answered a job of this portal (whose manifest the portal took from its catalogue), or its
// manifest is, digest for digest, the catalogue's experiment of that name. Only such runs
// count toward a paper's claims; any other manifest (a renamed, edited or unknown experiment)
// is the submitter's own.
func (g *Ingest) catalogueManifest(m *artifacts.Manifest, job bool) bool {
	if job {
		return true
	}
	cm, err := g.Catalog.Manifest(m.Ref())
	return err == nil && cm.ID() == m.ID()
}

// fileCells are a run's cells as the store files them: each with the implementation it
// timed (recorded, or derived from the environment for bundles that predate it) and the
// size of the message it signed (recorded, or the manifest's), so that rankings group by
// them. The bundle itself is not changed.
func fileCells(m *artifacts.Manifest, env *artifacts.Environment, cells []artifacts.Cell) []artifacts.Cell {
	out := make([]artifacts.Cell, len(cells))
	for i, c := range cells {
		im := artifacts.CellImplementation(m.Kind, m.Spec.Method, env, c)
		c.Implementation = &im
		if n := artifacts.CellMessageBytes(m, c); n > 0 && (c.Sizes == nil || c.Sizes.Message == 0) {
			sz := artifacts.Sizes{}
			if c.Sizes != nil {
				sz = *c.Sizes
			}
			sz.Message = n
			c.Sizes = &sz
		}
		out[i] = c
	}
	return out
}

// Rebuild compares a stored run's bundle again with the current comparison and reference
// data: the run's report, claim verdicts and filed cells as of ReportVersion. classStatus is
// the status the run was published with, jobBound whether it answered a job of this portal.
func (g *Ingest) Rebuild(runID int64, b *artifacts.Bundle, classStatus string, jobBound bool) (store.Rebuilt, error) {
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		return store.Rebuilt{}, fmt.Errorf("parse result.json: %w", err)
	}
	m, err := artifacts.ParseManifest(b.Files[artifacts.FileManifest], artifacts.FileManifest)
	if err != nil {
		return store.Rebuilt{}, fmt.Errorf("parse manifest.yaml: %w", err)
	}
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		return store.Rebuilt{}, fmt.Errorf("parse environment.json: %w", err)
	}
	env.Board.ClassStatus = classStatus
	samples, err := artifacts.ParseBundleSamples(b)
	if err != nil {
		return store.Rebuilt{}, fmt.Errorf("parse samples: %w", err)
	}
	catalogue := g.catalogueManifest(m, jobBound)
	filed := *res // compared as filed: each cell with its implementation
	filed.Cells = fileCells(m, &env, res.Cells)
	rep, verdicts, err := g.compareRun(&filed, samples, env, m, catalogue)
	if err != nil {
		return store.Rebuilt{}, err
	}
	return store.Rebuilt{RunID: runID, Report: rep, ReportVersion: ReportVersion, Claims: verdicts,
		Cells: filed.Cells, Catalogue: catalogue, Loaded: loadedRun(res, env)}, nil
}
