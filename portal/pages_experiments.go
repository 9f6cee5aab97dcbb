package portal

// An experiment's page and starting a re-run.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/internal/boardcat"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

func (s *Server) manifestOf(c echo.Context) (*artifacts.Manifest, *experiments.Paper, error) {
	p, err := s.paperOf(c.Param("paper"))
	if err != nil {
		return nil, nil, err
	}
	for _, m := range p.Manifests {
		if m.Metadata.Name == c.Param("name") {
			return m, p, nil
		}
	}
	return nil, nil, fault.New(fault.NotFound, "no experiment %s/%s", p.ID, c.Param("name"))
}

// manifestFacts are what an experiment's page shows of a catalogue manifest that its
// rendering would otherwise recompute on every request (the YAML encoding, its digest, the
// cell list: a tenth of the page's CPU).
type manifestFacts struct {
	once     sync.Once
	yaml, id string
	cells    []string
}

// manifestsKept keeps manifestFacts per catalogue manifest (fixed while the server runs).
type manifestsKept struct{ m sync.Map } // *artifacts.Manifest → *manifestFacts

func (k *manifestsKept) of(m *artifacts.Manifest) *manifestFacts {
	v, _ := k.m.LoadOrStore(m, &manifestFacts{})
	f := v.(*manifestFacts)
	f.once.Do(func() {
		f.yaml, f.id = string(m.YAML()), m.ID()
		for _, cr := range m.Cells() {
			f.cells = append(f.cells, cr.Algorithm+" "+cr.Operation)
		}
	})
	return f
}

// boardOptions lists the board classes connected runners offer for an experiment, available
// ones first. A board that cannot run the timing method (openssl-cli needs a runner with
// OpenSSL 3.5 or later), the kind or every algorithm (a board with a declared subset) is
// listed as unavailable, with the reason.
func (s *Server) boardOptions(ctx context.Context, m *artifacts.Manifest) ([]templates.BoardOption, error) {
	intended, method := m.Spec.Boards, m.Spec.Method
	runners, err := s.connectedRunners(ctx)
	if err != nil {
		return nil, err
	}
	var out []templates.BoardOption
	for _, r := range runners {
		for _, b := range r.Boards {
			if !b.CanRun(method) || (method == artifacts.MethodOpenSSLCLI && !r.Capabilities.OpenSSLUsable) {
				b.Available, b.FirmwareOnly = false, false
				b.Reason = methodUnavailable(method, runners)
			} else if why := experiments.BoardCanRun(b, m); why != "" {
				b.Available, b.FirmwareOnly, b.Reason = false, false, why+coverage(b, m)
			}
			i := slices.IndexFunc(out, func(o templates.BoardOption) bool { return o.Class == b.Class })
			if i >= 0 {
				if b.Available && !out[i].Available {
					out[i].Available, out[i].FirmwareOnly, out[i].Reason, out[i].Runner = true, false, "", r.Name
				} else if b.FirmwareOnly && !out[i].Available && !out[i].FirmwareOnly {
					out[i].FirmwareOnly, out[i].Runner = true, r.Name
				}
				continue
			}
			out = append(out, templates.BoardOption{Class: b.Class, Label: boardLabel(b.Name, "", b.Driver), Runner: r.Name, Reason: b.Reason,
				Available: b.Available, FirmwareOnly: !b.Available && b.FirmwareOnly, NeedsFirmware: b.Driver != "host",
				Intended: slices.Contains(intended, b.Class)})
		}
	}
	slices.SortStableFunc(out, func(a, b templates.BoardOption) int {
		if a.Available != b.Available {
			if a.Available {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Class, b.Class)
	})
	return out, nil
}

// methodUnavailable says why a board cannot run an experiment with the method, naming what
// the portal's connected runners have.
func methodUnavailable(method artifacts.Method, runners []store.Runner) string {
	if method != artifacts.MethodOpenSSLCLI {
		return "its runner does not run " + string(method) + " experiments"
	}
	var have []string
	for _, r := range runners {
		v := r.Capabilities.OpenSSL
		switch {
		case v == "":
			v = "no openssl"
		case !r.Capabilities.OpenSSLUsable:
			v += " (too old)"
		}
		have = append(have, r.Name+": "+v)
	}
	return "needs a runner with OpenSSL ≥ 3.5; this portal's runners have: " + strings.Join(have, "; ") +
		" (a Debian 12 runner gets one with scripts/openssl-root and --openssl-root)"
}

func (s *Server) experimentPage(c echo.Context) error {
	v, err := s.experimentView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.ExperimentPage(v))
}

// experimentView is an experiment's page: its manifest, the re-run form, jobs and runs.
func (s *Server) experimentView(c echo.Context) (templates.ExperimentView, error) {
	ctx := c.Request().Context()
	var v templates.ExperimentView
	m, p, err := s.manifestOf(c)
	if err != nil {
		return v, err
	}
	_, signed := currentUser(c)
	facts := s.manifestKept.of(m)
	v = templates.ExperimentView{Page: s.page(c, m.Ref()), Ref: m.Ref(), Paper: p.ID, PaperTitle: p.Title, Name: m.Metadata.Name,
		Title: m.Metadata.Title, Description: m.Metadata.Description, Kind: string(m.Kind), Method: string(m.Spec.Method), ManifestYAML: facts.yaml,
		ManifestID: facts.id, Iterations: m.Spec.Iterations, IntendedBoards: m.Spec.Boards, SignedIn: signed, Cells: facts.cells}
	if m.Spec.TLS != nil {
		v.Batch = m.Spec.TLS.Batch
	}
	if v.Boards, err = s.boardOptions(ctx, m); err != nil {
		return v, err
	}
	fw, err := s.store.FirmwareBuilds(ctx, "")
	if err != nil {
		return v, err
	}
	for _, f := range fw {
		if !f.WithdrawnAt.IsZero() {
			continue // withdrawn: a new job may not name it
		}
		v.Firmware = append(v.Firmware, templates.FirmwareOption{Digest: f.Digest, BoardClass: f.BoardClass,
			Label: fmt.Sprintf("%s for %s (%s, %s)", artifacts.ShortDigest(f.Digest), f.BoardClass, f.Filename, f.Toolchain)})
	}
	jobs, jobsMore, err := s.jobsPage1(ctx, store.ListFilter{Experiment: m.Ref(), Limit: experimentJobs})
	if err != nil {
		return v, err
	}
	v.Jobs, v.JobsMore = jobRows(jobs), jobsMore
	runs, runsMore, err := s.runsPage1(ctx, store.ListFilter{Experiment: m.Ref(), Limit: experimentRuns})
	if err != nil {
		return v, err
	}
	v.Runs, v.RunsMore = runRows(runs), runsMore
	v.Comparable, v.Claims = s.previews.get(m, p, v.Boards)
	if kindViews[m.Kind].heatMap && len(runs) > 0 {
		if v.HeatMap, err = s.runHeatMap(ctx, runs[0]); err != nil {
			return v, err
		}
	}
	return v, nil
}

// startJob queues a re-run of the experiment on the chosen board class.
// A refused form shows the experiment's page again with the choices kept and the error
// beside the field it is about.
func (s *Server) startJob(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	base, _, err := s.manifestOf(c)
	if err != nil {
		return err
	}
	form := templates.RerunForm{Board: c.FormValue("board"), Firmware: c.FormValue("firmware"), Iterations: c.FormValue("iterations")}
	id, notes, err := s.queueRerun(ctx, u, base, form)
	if err != nil {
		return s.refuseForm(c, err, func(fe templates.FormError) (templ.Component, error) {
			v, err := s.experimentView(c)
			form.Error = fe
			v.Rerun = form
			return templates.ExperimentPage(v), err
		})
	}
	s.log.Info("job queued", "job", id, "experiment", base.Ref(), "board", form.Board, "by", u.Name)
	s.queue.broadcast()
	if len(notes) > 0 {
		return s.redirectWithFlash(c, fmt.Sprintf("/jobs/%d", id), flash{Kind: "ok", Msg: "Job queued: " + strings.Join(notes, "; ") + "."})
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/jobs/%d", id))
}

// queueRerun queues the re-run the form asks for, returning the job and what the iteration
// override changed; an error about one of the form's inputs says which (onField).
func (s *Server) queueRerun(ctx context.Context, u store.User, base *artifacts.Manifest, form templates.RerunForm) (int64, []string, error) {
	if form.Board == "" {
		return 0, nil, onField("board", fault.New(fault.Invalid, "choose a board"))
	}
	firmware, err := s.rerunFirmware(ctx, base, form.Board, form.Firmware)
	if err != nil {
		return 0, nil, err
	}
	m, notes, err := rerunManifest(base, form.Iterations)
	if err != nil {
		return 0, nil, onField("iterations", err)
	}
	id, err := s.store.CreateJob(ctx, store.NewJob{Experiment: m.Ref(), Paper: m.Metadata.Paper, ManifestYAML: string(m.YAML()), ManifestID: m.ID(),
		BoardClass: form.Board, Firmware: firmware, Method: m.Spec.Method, RequestedBy: u.ID})
	return id, notes, err
}

// rerunFirmware checks that a connected runner offers board for base and returns the firmware
// build the job uses: the one chosen (built for board), else the manifest's pinned build
// when the portal stores it and the board needs one, else none (the runner's own).
func (s *Server) rerunFirmware(ctx context.Context, base *artifacts.Manifest, board, firmware string) (string, error) {
	opts, err := s.boardOptions(ctx, base)
	if err != nil {
		return "", err
	}
	i := slices.IndexFunc(opts, func(o templates.BoardOption) bool { return o.Class == board && (o.Available || o.FirmwareOnly) })
	if i < 0 {
		if j := slices.IndexFunc(opts, func(o templates.BoardOption) bool { return o.Class == board }); j >= 0 && opts[j].Reason != "" {
			return "", onField("board", fault.New(fault.Invalid, "board %s cannot run %s: %s", board, base.Ref(), opts[j].Reason))
		}
		return "", onField("board", fault.New(fault.Invalid, "no connected runner offers board %q right now", board))
	}
	if !opts[i].Available && firmware == "" {
		return "", onField("firmware", fault.New(fault.Invalid, "board %s has no firmware of its own on its runner: choose an uploaded firmware build for it", board))
	}
	if firmware != "" {
		f, err := s.store.FirmwareBuild(ctx, firmware)
		if fault.Is(err, fault.NotFound) {
			return "", onField("firmware", fault.New(fault.Invalid, "no firmware build %q is stored here: choose one from the list", firmware[:min(len(firmware), 80)]))
		}
		if err != nil {
			return "", err
		}
		if f.BoardClass != board {
			return "", onField("firmware", fault.New(fault.Invalid, "firmware %s is built for %s, not %s", artifacts.ShortDigest(firmware), f.BoardClass, board))
		}
		if !f.WithdrawnAt.IsZero() {
			return "", onField("firmware", fault.New(fault.Invalid, "firmware %s was withdrawn on %s: %s; choose another build", artifacts.ShortDigest(firmware), when(f.WithdrawnAt), f.Withdrawn))
		}
		return firmware, nil
	}
	if opts[i].NeedsFirmware && base.Spec.Firmware != "" {
		// The manifest pins a build: use it when the portal stores it; otherwise the runner
		// uses its own build, whose digest the result records.
		if f, err := s.store.FirmwareBuild(ctx, base.Spec.Firmware); err == nil && f.WithdrawnAt.IsZero() {
			return base.Spec.Firmware, nil
		}
	}
	return "", nil
}

// rerunManifest is the manifest a re-run queues: a copy of base (the catalogue's stays
// untouched) with the form's iterations per cell (1 to base's; "" keeps base's) under the
// iteration override's rule (artifacts.Manifest.OverrideIterations), and what the override
// changed besides the iterations, for the person who asked.
func rerunManifest(base *artifacts.Manifest, iterations string) (*artifacts.Manifest, []string, error) {
	m, err := artifacts.ParseManifest(base.YAML(), base.Ref())
	if err != nil {
		return nil, nil, fmt.Errorf("copy manifest %s: %w", base.Ref(), err)
	}
	if iterations == "" {
		return m, nil, nil
	}
	n, err := strconv.Atoi(iterations)
	if err != nil || n < 1 || n > base.Spec.Iterations {
		return nil, nil, fault.New(fault.Invalid, "iterations must be between 1 and %d", base.Spec.Iterations)
	}
	if n == m.Spec.Iterations {
		return m, nil, nil
	}
	notes := m.OverrideIterations(n)
	if err := m.Validate(); err != nil {
		return nil, nil, fault.Wrap(fault.Invalid, err, "iterations: %s", err.Error())
	}
	return m, notes, nil
}

// coverage says how much of a manifest a board with a declared algorithm subset covers:
// " (it covers 3 of 9 cells)"; "" for a board without one.
func coverage(b protocol.BoardInfo, m *artifacts.Manifest) string {
	if len(b.Algorithms) == 0 {
		return ""
	}
	cells := m.Cells()
	n := 0
	for _, c := range cells {
		if slices.Contains(b.Algorithms, c.Algorithm) {
			n++
		}
	}
	return fmt.Sprintf(" (it covers %d of %d cells)", n, len(cells))
}

// runnableOn lists the board classes the runners offer that can run the manifest now: the
// board available, its runner running the method, its firmware covering every algorithm and
// the kind (experiments.BoardCanRun).
func runnableOn(runners []store.Runner, m *artifacts.Manifest) []string {
	var out []string
	for _, r := range runners {
		for _, b := range r.Boards {
			if !b.Available || !b.CanRun(m.Spec.Method) || (m.Spec.Method == artifacts.MethodOpenSSLCLI && !r.Capabilities.OpenSSLUsable) {
				continue
			}
			if experiments.BoardCanRun(b, m) == "" && !slices.Contains(out, b.Class) {
				out = append(out, b.Class)
			}
		}
	}
	return out
}

// previewCache keeps each experiment's comparability preview per set of offered boards: it
// depends only on the manifest, the paper's reference data (fixed while the portal runs) and
// the boards, so a page view need not recompute it.
type previewCache struct {
	mu sync.Mutex
	m  map[string]cachedPreview
}

type cachedPreview struct {
	comparable []templates.ComparablePreview
	claims     []templates.ClaimPreview
}

// maxPreviews bounds the cache (experiments × board sets); past it the cache starts over.
const maxPreviews = 2000

func (c *previewCache) get(m *artifacts.Manifest, p *experiments.Paper, opts []templates.BoardOption) ([]templates.ComparablePreview, []templates.ClaimPreview) {
	key := m.ID()
	for _, o := range opts {
		key += "\x00" + o.Class
	}
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v.comparable, v.claims
	}
	v.comparable, v.claims = experimentPreview(m, p, opts)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxPreviews {
		c.m = map[string]cachedPreview{}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v.comparable, v.claims
}

// experimentPreview says before a run which published figures a run on each offered board
// (and on each board the paper measured) could be compared with, by Compare's own rules, and
// which of the manifest's claims a run can give a verdict.
func experimentPreview(m *artifacts.Manifest, p *experiments.Paper, opts []templates.BoardOption) ([]templates.ComparablePreview, []templates.ClaimPreview) {
	var targets []compare.PreviewTarget
	seen := map[string]bool{}
	add := func(board string, unit artifacts.Unit) {
		if !seen[board] {
			seen[board] = true
			targets = append(targets, compare.PreviewTarget{Board: board, Unit: unit})
		}
	}
	add("host", artifacts.UnitNanoseconds) // the board every portal's own runner has
	for _, o := range opts {
		unit := artifacts.UnitNanoseconds
		if m, ok := boardcat.LookupEmulated(o.Class); ok && m.IsRP2040JS() {
			unit = artifacts.UnitCycles // of rp2040js's cycle model
		} else if strings.HasPrefix(o.Class, "qemu-") {
			unit = artifacts.UnitInstructions
		}
		add(o.Class, unit)
	}
	for _, row := range p.Reference {
		if row.Board != "" && row.Metric == "latency" {
			add(row.Board, artifacts.UnitNanoseconds) // a runner on that board times in ns
		}
	}
	var out []templates.ComparablePreview
	for _, pb := range compare.Preview(m, p, targets) {
		if pb.Figures == 0 {
			continue
		}
		unit := "timed in ns"
		if i := slices.IndexFunc(targets, func(t compare.PreviewTarget) bool { return t.Board == pb.Board }); i >= 0 && targets[i].Unit == artifacts.UnitInstructions {
			unit = "counts emulated instructions"
		}
		out = append(out, templates.ComparablePreview{Board: pb.Board, Unit: unit, Comparable: pb.Comparable, Figures: pb.Figures, Reasons: pb.Reasons})
	}
	var claims []templates.ClaimPreview
	for _, id := range m.Spec.Reference.Claims {
		cl, ok := p.Claim(id)
		if !ok {
			continue
		}
		judged := "a run checks it (1 check)"
		if len(cl.Checks) != 1 {
			judged = fmt.Sprintf("a run checks it (%d checks)", len(cl.Checks))
		}
		switch {
		case cl.Scope != "":
			judged = "shown, never given a verdict by one run: " + cl.Reason
		case len(cl.Checks) == 0:
			judged = "no check a run can make"
		case len(cl.Boards) > 0:
			judged = fmt.Sprintf("verdict only on %s; elsewhere its checks run and are reported", strings.Join(cl.Boards, ", "))
		}
		claims = append(claims, templates.ClaimPreview{ID: cl.ID, Claim: cl.Claim, Judged: judged})
	}
	return out, claims
}
