package portal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// incoming is a signed bundle arriving from a runner (with its job and lease) or from a
// community member (with their account id).
type incoming struct {
	// Data is the .tar.gz as uploaded; it is stored only once everything has verified.
	Data []byte
	// Keys are the keys the bundle must be signed with: the runner's or the submitter's.
	Keys      identity.PublicKeys
	Origin    string
	RunnerID  int64
	Submitter int64
	Job       *store.Job
	LeaseID   string
}

// readBundle unpacks an uploaded archive; anything unreadable is refused as malformed.
func (s *Server) readBundle(data []byte) (*artifacts.Bundle, error) {
	b, err := artifacts.ReadTarGz(bytes.NewReader(data), s.cfg.MaxBundleBytes)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, "malformed archive: %s", publicText(err))
	}
	return b, nil
}

// publicText returns an error's text when it describes the user's own upload (bundle and
// verification errors), else a generic phrase.
func publicText(err error) string {
	var be *artifacts.BundleError
	var ve *attest.VerifyError
	if errors.As(err, &be) || errors.As(err, &ve) {
		return err.Error()
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// verifyRefusal turns a verification failure into the reason shown to the uploader.
func verifyRefusal(err error) error {
	var ve *attest.VerifyError
	if errors.As(err, &ve) {
		switch ve.Kind {
		case attest.VerifyKindDigest:
			return fault.Wrap(fault.Invalid, err, "digest mismatch: %s", ve.Error())
		case attest.VerifyKindSignature:
			return fault.Wrap(fault.Invalid, err, "bad signature: %s", ve.Error())
		case attest.VerifyKindKey:
			return fault.Wrap(fault.Invalid, err, "unknown key: the bundle is not signed with the registered keys (%s)", ve.Error())
		}
		return fault.Wrap(fault.Invalid, err, "malformed bundle: %s", ve.Error())
	}
	return fault.Wrap(fault.Invalid, err, "bundle refused")
}

// bundleDigest is the digest the blob store files data under ("sha256:<hex>").
func bundleDigest(data []byte) string {
	return artifacts.Digest(data)
}

// checkBinding refuses a runner's bundle that is not bound to the job, lease and portal it
// is completed on, naming the field that differs. The signing keys were checked against the
// leasing runner's by Verify.
func (s *Server) checkBinding(v *attest.Verification, j *store.Job) error {
	p := v.Statement.Predicate
	refuse := func(field, format string, args ...any) error {
		return fault.New(fault.Invalid, "bundle refused: %s: "+format, append([]any{field}, args...)...)
	}
	switch {
	case v.Legacy:
		return refuse("predicate", "a legacy (%s) bundle is bound to no job; it can only be submitted as a community result", attest.PredicateTypeV1)
	case p.Assurance.Origin != attest.OriginPortalRunner:
		return refuse("origin", "the bundle was signed with origin %q, a runner result is %q; it can only be submitted as a community result", p.Assurance.Origin, attest.OriginPortalRunner)
	case p.Job == nil:
		return refuse("job", "the bundle carries no job binding")
	case p.Job.Portal != s.cfg.PortalURL():
		return refuse("portal", "the bundle was signed for portal %q, this portal is %q", p.Job.Portal, s.cfg.PortalURL())
	case p.Job.JobID != j.ID:
		return refuse("job", "the bundle was signed for job %d, not job %d", p.Job.JobID, j.ID)
	case p.Job.Attempt != j.Attempt:
		return refuse("attempt", "the bundle was signed for attempt %d of job %d, the lease is attempt %d", p.Job.Attempt, j.ID, j.Attempt)
	case p.Job.LeaseID != j.LeaseID:
		return refuse("lease", "the bundle was signed for another lease of job %d", j.ID)
	case j.LeaseNonce == "" || p.Job.Nonce != j.LeaseNonce:
		return refuse("nonce", "the bundle does not carry the nonce issued with this lease of job %d", j.ID)
	}
	return nil
}

// publish verifies a bundle against in.Keys, checks it against its job, compares it with
// its paper, stores the archive by digest and publishes the run with its cells and claim
// verdicts in one transaction. Nothing is stored when any step fails.
func (s *Server) publish(ctx context.Context, b *artifacts.Bundle, in incoming) (int64, error) {
	v, err := attest.Verify(b, &in.Keys)
	if err != nil {
		var ve *attest.VerifyError
		if in.Job != nil && errors.As(err, &ve) && ve.Kind == attest.VerifyKindKey {
			return 0, fault.Wrap(fault.Invalid, err, "bundle refused: runner: the bundle is not signed by the keys of runner %d, which holds the lease (%s)", in.RunnerID, ve.Error())
		}
		return 0, verifyRefusal(err)
	}
	binding := store.BindingUnbound
	switch {
	case in.Job != nil:
		if err := s.checkBinding(v, in.Job); err != nil {
			return 0, err
		}
		binding = store.BindingJob
	case v.Legacy:
		binding = store.BindingLegacy
	case v.Statement.Predicate.Job != nil && v.Statement.Predicate.Job.Portal == s.cfg.PortalURL():
		return 0, fault.New(fault.Invalid, "bundle refused: job: the bundle was signed for job %d of this portal; only that job's runner publishes it, by completing the job", v.Statement.Predicate.Job.JobID)
	}
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		return 0, fault.Wrap(fault.Invalid, err, "malformed result.json: %s", publicText(err))
	}
	m, err := artifacts.ParseManifest(b.Files[artifacts.FileManifest], artifacts.FileManifest)
	if err != nil {
		return 0, fault.Wrap(fault.Invalid, err, "malformed manifest.yaml: %s", publicText(err))
	}
	if m.ID() != res.ManifestID || m.Ref() != res.Experiment {
		return 0, fault.New(fault.Invalid, "digest mismatch: result.json names manifest %s (%s) but the bundle's manifest is %s (%s)",
			shortDigest(res.ManifestID), res.Experiment, shortDigest(m.ID()), m.Ref())
	}
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		return 0, fault.Wrap(fault.Invalid, err, "malformed environment.json")
	}
	level := v.Statement.Predicate.Assurance.Level
	if level != res.Assurance || env.Board.Class != res.Board {
		return 0, fault.New(fault.Invalid, "inconsistent bundle: attestation says %s, result says %s on %s, environment says board %s",
			level, res.Assurance, res.Board, env.Board.Class)
	}
	// The board class is checked again here from the bundle's own environment (what the
	// machine reported), never from the class status the bundle claims: a clear mismatch
	// is refused and nothing is stored; a class nothing can check is published as declared.
	class, err := s.catalog.CheckClass(env.Board.Class, env)
	if err != nil {
		var me *experiments.ClassMismatchError
		if errors.As(err, &me) {
			return 0, fault.Wrap(fault.Invalid, err, "bundle refused: %s", me.Error())
		}
		return 0, fmt.Errorf("check board class %s: %w", env.Board.Class, err)
	}
	env.Board.ClassStatus = class.Status // what the comparison and its verdicts carry
	if j := in.Job; j != nil {
		if res.Experiment != j.Experiment || res.ManifestID != j.ManifestID || res.Board != j.BoardClass {
			return 0, fault.New(fault.Invalid, "the bundle does not answer job %d: it ran %s (%s) on %s, the job asked for %s (%s) on %s",
				j.ID, res.Experiment, shortDigest(res.ManifestID), res.Board, j.Experiment, shortDigest(j.ManifestID), j.BoardClass)
		}
	}
	samples, err := artifacts.ParseBundleSamples(b)
	if err != nil {
		return 0, fault.Wrap(fault.Invalid, err, "malformed samples: %s", publicText(err))
	}
	if err := artifacts.Rederive(m, res, samples); err != nil {
		return 0, fault.Wrap(fault.Invalid, err, "result does not re-derive: %s", err.Error())
	}
	ok := 0
	for _, c := range res.Cells {
		if c.Status == artifacts.StatusOK {
			ok++
		}
	}
	if err := artifacts.CheckSomeCellOK(res); err != nil {
		// A run that measured nothing is not a result, whoever sends it: nothing is
		// published, and a job fails with why.
		nc := &noCellError{err: err}
		return 0, fault.Wrap(fault.Invalid, nc, "bundle refused: %s", nc.Error())
	}
	if err := artifacts.CheckFloor(res, samples, &env); err != nil {
		return 0, fault.Wrap(fault.Invalid, err, "bundle refused: %s", err.Error())
	}
	catalogue := s.catalogueManifest(m, in.Job != nil)
	cells := fileCells(m, &env, res.Cells)
	filed := *res // compared as filed: each cell with its implementation
	filed.Cells = cells
	repJSON, verdicts, err := s.compareRun(&filed, samples, env, m, catalogue)
	if err != nil {
		return 0, err
	}
	checksJSON, _ := json.Marshal(v.Checked)
	digest, size, err := s.blobs.Put(ctx, bytes.NewReader(in.Data), s.cfg.MaxBundleBytes)
	if err != nil {
		return 0, err
	}
	run := store.Run{
		Experiment: res.Experiment, Paper: m.Metadata.Paper, ManifestID: res.ManifestID, Kind: res.Kind, Method: res.Method,
		BoardClass: res.Board, BoardName: env.Board.Name, Level: level, ClassStatus: class.Status, Origin: in.Origin, Catalogue: catalogue, RunnerID: in.RunnerID, SubmitterID: in.Submitter,
		Binding: binding, Signer: v.KeyFingerprint, PublicKeys: in.Keys, Bundle: digest, BundleSize: size, Firmware: env.Board.FirmwareDigest,
		StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Environment: string(b.Files[artifacts.FileEnvironment]),
		Report: repJSON, ReportVersion: ReportVersion, Checks: string(checksJSON), CellsTotal: len(res.Cells), CellsOK: ok,
		Loaded: loadedRun(res, env),
	}
	pub := store.Publication{Run: run, Cells: cells, Claims: verdicts, RunnerID: in.RunnerID, LeaseID: in.LeaseID}
	if in.Job != nil {
		pub.JobID = in.Job.ID
	}
	id, err := s.commitRun(ctx, pub)
	if err != nil {
		return 0, err
	}
	s.invalidate()
	s.pokeLog()
	s.log.Info("published run", "run", id, "experiment", res.Experiment, "board", res.Board, "class", class.Status, "origin", in.Origin, "signer", v.KeyFingerprint)
	return id, nil
}

// ReportVersion is the version of the comparison the portal stores with a run (runs.report,
// runs.report_version). Raise it when the comparison code or the reference data change what
// a report says; `pqrepro rebuild` then re-derives the older reports from their bundles.
// Pages show a stored report as it is, never recomputing it while rendering.
//
//	1: reports with a version (measured values in the published unit, claim verdicts per board).
//	2: claims scoped as the papers scoped them (declared classes never verdicted on board-gated
//	   claims, C000-04/07 on the paper's devices, C003-01 against Ascon-128a, C002-11 energy of
//	   openssl processes, by-design properties), Holm's correction, exact ratios, a reason for
//	   every verdict, loaded host runs withheld.
//	3: cells filed by implementation and message size (leaderboards, schemes, highlights never
//	   pool them); claim verdicts counted only for runs of the catalogue's manifests.
const ReportVersion = 3

// compareRun compares a run with its paper (the manifest's reference dataset, else its
// paper) and returns the report as stored JSON and the claim verdicts. The report checks the
// claims of any run; only a run of the catalogue's manifest (catalogue) gives verdicts that
// count toward the paper's claims, the others' are shown on their page only.
func (s *Server) compareRun(res *artifacts.Result, samples artifacts.Samples, env artifacts.Environment, m *artifacts.Manifest, catalogue bool) (string, []store.ClaimVerdict, error) {
	board := env.Board
	paperID := m.Spec.Reference.Dataset
	if paperID == "" {
		paperID = m.Metadata.Paper
	}
	var rep compare.Report
	var verdicts []store.ClaimVerdict
	if p, ok := s.catalog.Paper(paperID); ok {
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
func (s *Server) catalogueManifest(m *artifacts.Manifest, job bool) bool {
	if job {
		return true
	}
	cm, err := s.catalog.Manifest(m.Ref())
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

// noCellError refuses a bundle in which no cell ran ok (artifacts.ErrNoCellOK).
type noCellError struct{ err error }

func (e *noCellError) Error() string { return e.err.Error() }
func (e *noCellError) Unwrap() error { return e.err }
