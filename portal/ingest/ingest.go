// Package ingest is the one path a signed result bundle takes into the portal: verify its
// signatures against the expected keys, check its binding to the job it answers, re-derive
// its statistics from its samples, compare it with its paper and store it — the archive by
// digest and the run with its cells and claim verdicts in one publication. Nothing is stored
// when any step fails, and every refusal is a fault.Invalid error whose message says what
// was wrong with the upload. The runner protocol, the submission page and API, and the
// rebuild of stored reports all go through it.
package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/energy"
	"pqrepro/experiments"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

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

// Blobs stores a bundle's archive under its digest.
type Blobs interface {
	// Put stores at most max bytes from r and returns their digest ("sha256:<hex>") and size.
	Put(ctx context.Context, r io.Reader, max int64) (digest string, size int64, err error)
}

// Ingest publishes bundles. Its fields are set once and read concurrently.
type Ingest struct {
	// Catalog holds the papers, the experiments and the board classes.
	Catalog *experiments.Catalog
	// Blobs keeps the archives.
	Blobs Blobs
	// Commit publishes a verified run in one transaction and returns its id; a bundle
	// published before is a *store.DuplicateBundleError.
	Commit func(ctx context.Context, p store.Publication) (int64, error)
	// PortalURL is this portal's public URL, which a runner signs into a job's bundle.
	PortalURL string
	// MaxBundleBytes limits an archive.
	MaxBundleBytes int64
}

// Incoming is a signed bundle arriving from a runner (with its job and lease) or from a
// community member (with their account id).
type Incoming struct {
	// Data is the .tar.gz as uploaded; it is stored only once everything has verified.
	Data []byte
	// Keys are the keys the bundle must be signed with: the runner's or the submitter's.
	Keys      identity.PublicKeys
	Origin    string
	RunnerID  int64
	Submitter int64
	// Job and LeaseID are the job a runner's bundle completes and its lease (nil, "" for a
	// community bundle).
	Job     *store.Job
	LeaseID string
}

// Published is what Publish stored.
type Published struct {
	RunID      int64
	Experiment string
	Board      string
	// ClassStatus is the board class's status as checked from the bundle's environment.
	ClassStatus string
	Signer      string
}

// Read unpacks an uploaded archive; anything unreadable is refused as malformed.
func (g *Ingest) Read(data []byte) (*artifacts.Bundle, error) {
	b, err := artifacts.ReadTarGz(bytes.NewReader(data), g.MaxBundleBytes)
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, "malformed archive: %s", publicText(err))
	}
	return b, nil
}

// BundleDigest is the digest the blob store files data under ("sha256:<hex>").
func BundleDigest(data []byte) string {
	return artifacts.Digest(data)
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

// VerifyRefusal turns a verification failure into the reason shown to the uploader.
func VerifyRefusal(err error) error {
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

// NoCellError refuses a bundle in which no cell ran ok (artifacts.ErrNoCellOK): a job that
// sent it fails with this reason.
type NoCellError struct{ err error }

func (e *NoCellError) Error() string { return e.err.Error() }
func (e *NoCellError) Unwrap() error { return e.err }

// checked is a bundle that verified, with its parsed parts.
type checked struct {
	v       *attest.Verification
	binding string
	res     *artifacts.Result
	m       *artifacts.Manifest
	env     artifacts.Environment
	envJSON []byte
	class   experiments.ClassCheck
	samples artifacts.Samples
}

// Publish verifies a bundle against in.Keys, checks it against its job, re-derives it,
// compares it with its paper, stores the archive by digest and publishes the run with its
// cells and claim verdicts in one transaction. Nothing is stored when any step fails.
func (g *Ingest) Publish(ctx context.Context, b *artifacts.Bundle, in Incoming) (Published, error) {
	c, err := g.verify(b, in)
	if err != nil {
		return Published{}, err
	}
	if err := c.parse(b); err != nil {
		return Published{}, err
	}
	if err := g.checkClass(c, in.Job); err != nil {
		return Published{}, err
	}
	if err := c.rederive(b); err != nil {
		return Published{}, err
	}
	pub, err := g.publication(ctx, c, in)
	if err != nil {
		return Published{}, err
	}
	id, err := g.Commit(ctx, pub)
	if err != nil {
		return Published{}, err
	}
	return Published{RunID: id, Experiment: c.res.Experiment, Board: c.res.Board, ClassStatus: c.class.Status, Signer: c.v.KeyFingerprint}, nil
}

// verify checks the signatures against in.Keys and the bundle's binding: to in.Job for a
// runner's bundle; a community bundle must not be bound to a job of this portal.
func (g *Ingest) verify(b *artifacts.Bundle, in Incoming) (*checked, error) {
	v, err := attest.Verify(b, &in.Keys)
	if err != nil {
		var ve *attest.VerifyError
		if in.Job != nil && errors.As(err, &ve) && ve.Kind == attest.VerifyKindKey {
			return nil, fault.Wrap(fault.Invalid, err, "bundle refused: runner: the bundle is not signed by the keys of runner %d, which holds the lease (%s)", in.RunnerID, ve.Error())
		}
		return nil, VerifyRefusal(err)
	}
	c := &checked{v: v, binding: store.BindingUnbound}
	switch {
	case in.Job != nil:
		if err := g.checkBinding(v, in.Job); err != nil {
			return nil, err
		}
		c.binding = store.BindingJob
	case v.Legacy:
		c.binding = store.BindingLegacy
	case v.Statement.Predicate.Job != nil && v.Statement.Predicate.Job.Portal == g.PortalURL:
		return nil, fault.New(fault.Invalid, "bundle refused: job: the bundle was signed for job %d of this portal; only that job's runner publishes it, by completing the job", v.Statement.Predicate.Job.JobID)
	}
	return c, nil
}

// checkBinding refuses a runner's bundle that is not bound to the job, lease and portal it
// is completed on, naming the field that differs. The signing keys were checked against the
// leasing runner's by Verify.
func (g *Ingest) checkBinding(v *attest.Verification, j *store.Job) error {
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
	case p.Job.Portal != g.PortalURL:
		return refuse("portal", "the bundle was signed for portal %q, this portal is %q", p.Job.Portal, g.PortalURL)
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

// parse reads the result, the manifest and the environment, and refuses them when they do
// not agree with each other or with the attestation.
func (c *checked) parse(b *artifacts.Bundle) error {
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "malformed result.json: %s", publicText(err))
	}
	m, err := artifacts.ParseManifest(b.Files[artifacts.FileManifest], artifacts.FileManifest)
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "malformed manifest.yaml: %s", publicText(err))
	}
	if m.ID() != res.ManifestID || m.Ref() != res.Experiment {
		return fault.New(fault.Invalid, "digest mismatch: result.json names manifest %s (%s) but the bundle's manifest is %s (%s)",
			artifacts.ShortDigest(res.ManifestID), res.Experiment, artifacts.ShortDigest(m.ID()), m.Ref())
	}
	c.envJSON = b.Files[artifacts.FileEnvironment]
	if err := json.Unmarshal(c.envJSON, &c.env); err != nil {
		return fault.Wrap(fault.Invalid, err, "malformed environment.json")
	}
	level := c.v.Statement.Predicate.Assurance.Level
	if level != res.Assurance || c.env.Board.Class != res.Board {
		return fault.New(fault.Invalid, "inconsistent bundle: attestation says %s, result says %s on %s, environment says board %s",
			level, res.Assurance, res.Board, c.env.Board.Class)
	}
	// A simulated meter's energy replays a recorded capture: not a measurement of this run.
	if err := artifacts.CheckMeasuredEnergy(res, &c.env); err != nil {
		return fault.Wrap(fault.Invalid, err, "bundle refused: %s", err.Error())
	}
	c.res, c.m = res, m
	return nil
}

// checkClass checks the board class again from the bundle's own environment (what the
// machine reported), never from the class status the bundle claims: a clear mismatch is
// refused; a class nothing can check is published as declared. A runner's bundle must answer
// its job's experiment, manifest and board class.
func (g *Ingest) checkClass(c *checked, j *store.Job) error {
	class, err := g.Catalog.CheckClass(c.env.Board.Class, c.env)
	if err != nil {
		var me *experiments.ClassMismatchError
		if errors.As(err, &me) {
			return fault.Wrap(fault.Invalid, err, "bundle refused: %s", me.Error())
		}
		return fmt.Errorf("check board class %s: %w", c.env.Board.Class, err)
	}
	c.class = class
	c.env.Board.ClassStatus = class.Status // what the comparison and its verdicts carry
	if res := c.res; j != nil && (res.Experiment != j.Experiment || res.ManifestID != j.ManifestID || res.Board != j.BoardClass) {
		return fault.New(fault.Invalid, "the bundle does not answer job %d: it ran %s (%s) on %s, the job asked for %s (%s) on %s",
			j.ID, res.Experiment, artifacts.ShortDigest(res.ManifestID), res.Board, j.Experiment, artifacts.ShortDigest(j.ManifestID), j.BoardClass)
	}
	return nil
}

// rederive re-derives the result's statistics from the samples and refuses a run that
// measured nothing or below the floor of its unit.
func (c *checked) rederive(b *artifacts.Bundle) error {
	samples, err := artifacts.ParseBundleSamples(b)
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "malformed samples: %s", publicText(err))
	}
	if err := artifacts.Rederive(c.m, c.res, samples); err != nil {
		return fault.Wrap(fault.Invalid, err, "result does not re-derive: %s", err.Error())
	}
	if err := energy.RederivePower(c.res, &c.env, b.Files[artifacts.FilePower]); err != nil {
		return fault.Wrap(fault.Invalid, err, "energy does not re-derive: %s", publicText(err))
	}
	if err := artifacts.CheckSomeCellOK(c.res); err != nil {
		// A run that measured nothing is not a result, whoever sends it: nothing is
		// published, and a job fails with why.
		nc := &NoCellError{err: err}
		return fault.Wrap(fault.Invalid, nc, "bundle refused: %s", nc.Error())
	}
	if err := artifacts.CheckFloor(c.res, samples, &c.env); err != nil {
		return fault.Wrap(fault.Invalid, err, "bundle refused: %s", err.Error())
	}
	c.samples = samples
	return nil
}

// publication compares the checked run with its paper, stores the archive and returns the
// run to commit.
func (g *Ingest) publication(ctx context.Context, c *checked, in Incoming) (store.Publication, error) {
	res, m, env := c.res, c.m, c.env
	catalogue := g.catalogueManifest(m, in.Job != nil)
	cells := fileCells(m, &env, res.Cells)
	filed := *res // compared as filed: each cell with its implementation
	filed.Cells = cells
	repJSON, verdicts, err := g.compareRun(&filed, c.samples, env, m, catalogue)
	if err != nil {
		return store.Publication{}, err
	}
	checksJSON, _ := json.Marshal(c.v.Checked)
	digest, size, err := g.Blobs.Put(ctx, bytes.NewReader(in.Data), g.MaxBundleBytes)
	if err != nil {
		return store.Publication{}, err
	}
	ok := 0
	for _, cell := range res.Cells {
		if cell.Status == artifacts.StatusOK {
			ok++
		}
	}
	run := store.Run{
		Experiment: res.Experiment, Paper: m.Metadata.Paper, ManifestID: res.ManifestID, Kind: res.Kind, Method: res.Method,
		BoardClass: res.Board, BoardName: env.Board.Name, Level: res.Assurance, ClassStatus: c.class.Status, Origin: in.Origin, Catalogue: catalogue, RunnerID: in.RunnerID, SubmitterID: in.Submitter,
		Binding: c.binding, Signer: c.v.KeyFingerprint, PublicKeys: in.Keys, Bundle: digest, BundleSize: size, Firmware: env.Board.FirmwareDigest,
		StartedAt: res.StartedAt, FinishedAt: res.FinishedAt, Environment: string(c.envJSON),
		Report: repJSON, ReportVersion: ReportVersion, Checks: string(checksJSON), CellsTotal: len(res.Cells), CellsOK: ok,
		Loaded: loadedRun(res, env),
	}
	pub := store.Publication{Run: run, Cells: cells, Claims: verdicts, RunnerID: in.RunnerID, LeaseID: in.LeaseID}
	if in.Job != nil {
		pub.JobID = in.Job.ID
	}
	return pub, nil
}
