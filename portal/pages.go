package portal

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/portal/blob"
	"pqrepro/portal/fault"
	"pqrepro/portal/plot"
	"pqrepro/portal/sqlite"
	"pqrepro/templates"
)

// highlights are the home page's small leaderboards.
var highlights = [][2]string{{"ML-KEM-768", "encaps"}, {"ML-DSA-65", "sign"}, {"ML-DSA-65", "verify"}}

func runRows(runs []sqlite.Run) []templates.RunRow {
	var out []templates.RunRow
	for _, r := range runs {
		by := ""
		if r.Submitter != "" {
			by = " · " + r.Submitter
		} else if r.RunnerName != "" {
			by = " · " + r.RunnerName
		}
		out = append(out, templates.RunRow{ID: r.ID, Experiment: r.Experiment, Board: r.BoardClass, When: when(r.PublishedAt),
			Assurance: templates.Assurance{Level: r.Level, Origin: r.Origin}, CellsOK: r.CellsOK, CellsTotal: r.CellsTotal, Signer: r.Signer, By: by})
	}
	return out
}

func jobRows(jobs []sqlite.Job) []templates.JobRow {
	var out []templates.JobRow
	for _, j := range jobs {
		out = append(out, templates.JobRow{ID: j.ID, Experiment: j.Experiment, Board: j.BoardClass, State: j.State, When: when(j.CreatedAt), RunID: j.RunID})
	}
	return out
}

func (s *Server) home(c echo.Context) error {
	ctx := c.Request().Context()
	counts, err := s.store.RunCounts(ctx)
	if err != nil {
		return err
	}
	v := templates.Home{Page: s.page(c, "Papers")}
	for _, p := range s.catalog.Papers {
		v.Papers = append(v.Papers, templates.PaperCard{ID: p.ID, Title: p.Title, Citation: p.Citation, Experiments: len(p.Manifests),
			Runs: counts[p.ID], Measured: strings.Join(p.Measured, ", ")})
	}
	runs, err := s.store.Runs(ctx, sqlite.RunFilter{Limit: 15})
	if err != nil {
		return err
	}
	v.Runs = runRows(runs)
	jobs, err := s.store.Jobs(ctx, "", 20)
	if err != nil {
		return err
	}
	for _, j := range jobRows(jobs) {
		if j.State == sqlite.JobQueued || j.State == sqlite.JobRunning {
			v.Jobs = append(v.Jobs, j)
		}
	}
	for _, h := range highlights {
		lb, err := s.leaderboard(ctx, h[0], h[1], sqlite.MetricLatency)
		if err != nil {
			return err
		}
		v.Highlights = append(v.Highlights, highlightLists(h[0], h[1], leaderGroups(lb.Measured))...)
	}
	runners, err := s.connectedRunners(ctx)
	if err != nil {
		return err
	}
	v.Runners = len(runners)
	return s.render(c, http.StatusOK, templates.HomePage(v))
}

// highlightLists are the home page's lists for one (algorithm, operation): one per ranking
// (unit, assurance, method, class status), its first five boards, never two rankings in
// one list; one empty list when nothing was measured.
func highlightLists(alg, op string, groups []templates.LeaderGroup) []templates.Highlight {
	link := leaderLink(alg, op, sqlite.MetricLatency)
	if len(groups) == 0 {
		return []templates.Highlight{{Algorithm: alg, Operation: op, Link: link}}
	}
	var out []templates.Highlight
	for _, g := range groups {
		hl := templates.Highlight{Algorithm: alg, Operation: op, Link: link, Ranking: g.Title, Declared: g.Declared}
		hl.Rows = g.Rows[:min(len(g.Rows), 5)]
		out = append(out, hl)
	}
	return out
}

func (s *Server) connectedRunners(ctx context.Context) ([]sqlite.Runner, error) {
	all, err := s.store.Runners(ctx)
	if err != nil {
		return nil, err
	}
	var out []sqlite.Runner
	for _, r := range all {
		if time.Since(r.LastSeen) <= s.cfg.ConnectedWithin {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *Server) paperOf(id string) (*experiments.Paper, error) {
	p, ok := s.catalog.Paper(id)
	if !ok {
		return nil, fault.New(fault.NotFound, "no paper %q", id)
	}
	return p, nil
}

func (s *Server) paperPage(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.paperOf(c.Param("paper"))
	if err != nil {
		return err
	}
	v := templates.PaperView{Page: s.page(c, p.ID), ID: p.ID, Title: p.Title, Citation: p.Citation, Summary: p.Summary,
		Measured: p.Measured, Boards: p.Boards, Provenance: p.Provenance}
	for _, m := range p.Manifests {
		v.Experiments = append(v.Experiments, templates.ExperimentRow{Ref: m.Ref(), Name: m.Metadata.Name, Title: m.Metadata.Title,
			Kind: m.Kind, Method: m.Spec.Method, Cells: len(m.Cells())})
	}
	for _, r := range p.Reference {
		n := ""
		if r.N > 0 {
			n = strconv.Itoa(r.N)
		}
		v.Reference = append(v.Reference, templates.RefRow{Board: r.Board, Library: r.Library, Algorithm: r.Algorithm, Operation: r.Operation,
			Scenario: r.Scenario, Metric: r.Metric, Stat: r.Stat, Value: r.Text, Unit: r.Unit, N: n, Source: r.Source, Note: r.Note})
	}
	verdicts, err := s.store.ClaimVerdicts(ctx, p.ID, 0)
	if err != nil {
		return err
	}
	tallies, err := s.store.ClaimTallies(ctx, p.ID)
	if err != nil {
		return err
	}
	v.Claims = claimViews(p, verdicts, tallies)
	v.Figures = inTextFigures(p)
	runs, err := s.store.Runs(ctx, sqlite.RunFilter{Paper: p.ID, Limit: 30})
	if err != nil {
		return err
	}
	v.Runs = runRows(runs)
	return s.render(c, http.StatusOK, templates.PaperPage(v))
}

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
				b.Available, b.FirmwareOnly, b.Reason = false, false, why
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
			out = append(out, templates.BoardOption{Class: b.Class, Label: b.Name + " (" + b.Driver + ")", Runner: r.Name, Reason: b.Reason,
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
func methodUnavailable(method string, runners []sqlite.Runner) string {
	if method != artifacts.MethodOpenSSLCLI {
		return "its runner does not run " + method + " experiments"
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
	ctx := c.Request().Context()
	m, p, err := s.manifestOf(c)
	if err != nil {
		return err
	}
	_, signed := currentUser(c)
	v := templates.ExperimentView{Page: s.page(c, m.Ref()), Ref: m.Ref(), Paper: p.ID, PaperTitle: p.Title, Name: m.Metadata.Name,
		Title: m.Metadata.Title, Description: m.Metadata.Description, Kind: m.Kind, Method: m.Spec.Method, ManifestYAML: string(m.YAML()),
		ManifestID: m.ID(), Iterations: m.Spec.Iterations, IntendedBoards: m.Spec.Boards, SignedIn: signed}
	for _, cr := range m.Cells() {
		v.Cells = append(v.Cells, cr.Algorithm+" "+cr.Operation)
	}
	if v.Boards, err = s.boardOptions(ctx, m); err != nil {
		return err
	}
	fw, err := s.store.FirmwareBuilds(ctx, "")
	if err != nil {
		return err
	}
	for _, f := range fw {
		v.Firmware = append(v.Firmware, templates.FirmwareOption{Digest: f.Digest, BoardClass: f.BoardClass,
			Label: fmt.Sprintf("%s for %s (%s, %s)", shortDigest(f.Digest), f.BoardClass, f.Filename, f.Toolchain)})
	}
	jobs, err := s.store.Jobs(ctx, m.Ref(), 10)
	if err != nil {
		return err
	}
	v.Jobs = jobRows(jobs)
	runs, err := s.store.Runs(ctx, sqlite.RunFilter{Experiment: m.Ref(), Limit: 30})
	if err != nil {
		return err
	}
	v.Runs = runRows(runs)
	if m.Kind == artifacts.KindTLSMatrix && len(runs) > 0 {
		if v.HeatMap, err = s.runHeatMap(ctx, runs[0]); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, templates.ExperimentPage(v))
}

// startJob queues a re-run of the experiment on the chosen board class.
func (s *Server) startJob(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	base, _, err := s.manifestOf(c)
	if err != nil {
		return err
	}
	board := c.FormValue("board")
	opts, err := s.boardOptions(ctx, base)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(opts, func(o templates.BoardOption) bool { return o.Class == board && (o.Available || o.FirmwareOnly) })
	if i < 0 {
		if j := slices.IndexFunc(opts, func(o templates.BoardOption) bool { return o.Class == board }); j >= 0 && opts[j].Reason != "" {
			return fault.New(fault.Invalid, "board %s cannot run %s: %s", board, base.Ref(), opts[j].Reason)
		}
		return fault.New(fault.Invalid, "no connected runner offers board %q right now", board)
	}
	firmware := c.FormValue("firmware")
	if !opts[i].Available && firmware == "" {
		return fault.New(fault.Invalid, "board %s has no firmware of its own on its runner: choose an uploaded firmware build for it", board)
	}
	if firmware != "" {
		f, err := s.store.FirmwareBuild(ctx, firmware)
		if err != nil {
			return err
		}
		if f.BoardClass != board {
			return fault.New(fault.Invalid, "firmware %s is built for %s, not %s", shortDigest(firmware), f.BoardClass, board)
		}
	} else if opts[i].NeedsFirmware && base.Spec.Firmware != "" {
		// The manifest pins a build: use it when the portal stores it; otherwise the runner
		// uses its own build, whose digest the result records.
		if _, err := s.store.FirmwareBuild(ctx, base.Spec.Firmware); err == nil {
			firmware = base.Spec.Firmware
		}
	}
	// Copy the manifest through its YAML so the catalogue's stays untouched.
	m, err := artifacts.ParseManifest(base.YAML(), base.Ref())
	if err != nil {
		return fmt.Errorf("copy manifest %s: %w", base.Ref(), err)
	}
	if it := c.FormValue("iterations"); it != "" {
		n, err := strconv.Atoi(it)
		if err != nil || n < 1 || n > base.Spec.Iterations {
			return fault.New(fault.Invalid, "iterations must be between 1 and %d", base.Spec.Iterations)
		}
		if n != m.Spec.Iterations {
			m.Spec.Iterations = n
			m.Spec.Warmup = min(m.Spec.Warmup, n)
			m.Spec.MinIterations = min(m.Spec.MinIterations, n)
			if err := m.Validate(); err != nil {
				return fault.Wrap(fault.Invalid, err, "iterations: %s", err.Error())
			}
		}
	}
	id, err := s.store.CreateJob(ctx, sqlite.NewJob{Experiment: m.Ref(), Paper: m.Metadata.Paper, ManifestYAML: string(m.YAML()), ManifestID: m.ID(),
		BoardClass: board, Firmware: firmware, Method: m.Spec.Method, RequestedBy: u.ID})
	if err != nil {
		return err
	}
	s.log.Info("job queued", "job", id, "experiment", m.Ref(), "board", board, "by", u.Name)
	s.queue.broadcast()
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/jobs/%d", id))
}

// jobProgress computes percent, detail and ETA from a job's last heartbeat.
func jobProgress(j sqlite.Job) (percent int, detail, eta string) {
	p := j.Progress
	frac := 0.0
	if p.CellsTotal > 0 {
		frac = float64(p.CellsDone)
		if p.Requested > 0 && p.CellsDone < p.CellsTotal {
			frac += float64(p.Iteration) / float64(p.Requested)
		}
		frac /= float64(p.CellsTotal)
	}
	switch j.State {
	case sqlite.JobPublished:
		frac = 1
	case sqlite.JobRunning:
		if el := time.Since(j.StartedAt); frac > 0.01 {
			eta = (time.Duration(float64(el)/frac) - el).Round(time.Second).String()
		}
	}
	detail = fmt.Sprintf("%d of %d cells done", p.CellsDone, p.CellsTotal)
	if p.Current != "" && j.State == sqlite.JobRunning {
		detail += fmt.Sprintf(" · current cell %s (%d/%d iterations)", p.Current, p.Iteration, p.Requested)
	}
	if eta != "" {
		detail += " · ETA " + eta
	}
	switch {
	case j.State == sqlite.JobQueued:
		detail = "waiting for a runner with board " + j.BoardClass
	case j.State == sqlite.JobRunning && p.CellsTotal == 0:
		detail = "the runner is preparing board " + j.BoardClass
	}
	return int(frac * 100), detail, eta
}

func (s *Server) jobPage(c echo.Context) error {
	if strings.HasSuffix(c.Param("id"), ".json") {
		return s.jobJSON(c)
	}
	j, log, err := s.jobWithLog(c)
	if err != nil {
		return err
	}
	id := j.ID
	pct, _, eta := jobProgress(j)
	v := templates.JobView{Page: s.page(c, fmt.Sprintf("Job %d", id)), ID: j.ID, Experiment: j.Experiment, Board: j.BoardClass, State: j.State,
		Runner: j.RunnerName, Firmware: j.Firmware, Attempt: j.Attempt, Note: j.Note, Error: j.Error, RunID: j.RunID,
		CellsDone: j.Progress.CellsDone, CellsTotal: j.Progress.CellsTotal, Iteration: j.Progress.Iteration, Requested: j.Progress.Requested,
		Current: j.Progress.Current, ETA: eta, Percent: pct, Log: log.Text, LogEnd: log.End, LogAttempt: log.Attempt, Created: when(j.CreatedAt), Started: when(j.StartedAt),
		Finished: when(j.FinishedAt), Terminal: j.Terminal()}
	if !j.StartedAt.IsZero() {
		end := j.FinishedAt
		if end.IsZero() {
			end = time.Now()
		}
		v.Elapsed = end.Sub(j.StartedAt).Round(time.Second).String()
	}
	if !v.Terminal {
		v.Page.Refresh = 2
	}
	return s.render(c, http.StatusOK, templates.JobPage(v))
}

// firmwareBuildKVs shows the parts of a firmware build record (metadata.json) a reader needs:
// toolchain, flags and code size per algorithm as read from the ELF.
func firmwareBuildKVs(raw json.RawMessage) []templates.KV {
	var b struct {
		Toolchain string `json:"toolchain"`
		CFlags    string `json:"cflags"`
		KATs      string `json:"kat_vectors"`
		CodeSize  []struct {
			Group string `json:"group"`
			Total int    `json:"total"`
		} `json:"code_size"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &b) != nil {
		return nil
	}
	var sizes []string
	for _, c := range b.CodeSize {
		sizes = append(sizes, fmt.Sprintf("%s %d B", c.Group, c.Total))
	}
	return []templates.KV{{Key: "Firmware toolchain", Value: b.Toolchain}, {Key: "Firmware flags", Value: b.CFlags},
		{Key: "Firmware self-test vectors", Value: b.KATs}, {Key: "Code size (code + read-only data)", Value: strings.Join(sizes, ", ")}}
}

// Bounds of the job page's log: its head (the run header) and its most recent tail, and the
// most one poll adds.
const (
	jobLogHead = 16 << 10
	jobLogTail = 64 << 10
)

// jobWithLog loads the job named by the :id parameter and its log's head and tail.
func (s *Server) jobWithLog(c echo.Context) (sqlite.Job, sqlite.LogView, error) {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return sqlite.Job{}, sqlite.LogView{}, err
	}
	j, err := s.store.Job(ctx, id)
	if err != nil {
		return sqlite.Job{}, sqlite.LogView{}, err
	}
	log, err := s.store.JobLogView(ctx, id, 0, jobLogHead, jobLogTail)
	return j, log, err
}

// jobJSON is the job page's data for scripts: GET /jobs/:id.json and /api/v1/jobs/:id. The log
// is its bounded head and tail ("log"), or with ?after=END&attempt=A only what was appended
// since position END of attempt A ("logAppend"; "logReset" with a fresh "log" when the
// attempt changed). "logEnd" and "logAttempt" are where the next poll continues.
func (s *Server) jobJSON(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	j, err := s.store.Job(ctx, id)
	if err != nil {
		return err
	}
	pct, detail, eta := jobProgress(j)
	out := map[string]any{"id": j.ID, "experiment": j.Experiment, "board": j.BoardClass, "state": j.State,
		"terminal": j.Terminal(), "attempt": j.Attempt, "percent": pct, "detail": detail, "eta": eta, "progress": j.Progress,
		"runId": j.RunID, "error": j.Error, "note": j.Note}
	if a, e := c.QueryParam("attempt"), c.QueryParam("after"); a != "" && e != "" {
		attempt, err1 := strconv.Atoi(a)
		after, err2 := strconv.ParseInt(e, 10, 64)
		if err1 != nil || err2 != nil {
			return fault.New(fault.Invalid, "after and attempt must be numbers")
		}
		text, end, ok, err := s.store.LogSince(ctx, id, attempt, after, jobLogTail)
		if err != nil {
			return err
		}
		if ok {
			out["logAppend"], out["logEnd"], out["logAttempt"] = text, end, attempt
			return c.JSON(http.StatusOK, out)
		}
		out["logReset"] = true
	}
	log, err := s.store.JobLogView(ctx, id, 0, jobLogHead, jobLogTail)
	if err != nil {
		return err
	}
	out["log"], out["logEnd"], out["logAttempt"] = log.Text, log.End, log.Attempt
	return c.JSON(http.StatusOK, out)
}

func (s *Server) runPage(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return err
	}
	cells, err := s.store.Cells(ctx, id)
	if err != nil {
		return err
	}
	v := templates.RunView{Page: s.page(c, fmt.Sprintf("Run %d", id)), ID: r.ID, JobID: r.JobID, Experiment: r.Experiment, Paper: r.Paper,
		Kind: r.Kind, Method: r.Method, Board: r.BoardClass, BoardName: r.BoardName, Assurance: templates.Assurance{Level: r.Level, Origin: r.Origin},
		BindingNote: bindingNote(r.Binding),
		Runner:      r.RunnerName, Submitter: r.Submitter, Signer: r.Signer, Bundle: r.Bundle, BundleSize: bytesHuman(r.BundleSize), Firmware: r.Firmware,
		ManifestID: r.ManifestID, Started: when(r.StartedAt), Finished: when(r.FinishedAt), Published: when(r.PublishedAt),
		Duration: r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()}
	if v.Firmware == "" {
		v.Firmware = "none (the board needs no firmware)"
	}
	rev, err := s.store.SignerRevoked(ctx, r)
	if err != nil {
		return err
	}
	v.SignerRevoked = whenSet(rev)
	var rows []plot.Row
	unit := ""
	for _, cl := range cells {
		row := templates.CellRow{Algorithm: cl.Algorithm, Operation: cl.Operation, Status: cl.Status, Error: cl.Error, Unit: cl.Unit, Heap: "–", Stack: "–", Keys: cmp.Or(cl.Keys, "–")}
		if st := cl.Stats; st != nil {
			row.N = st.N
			row.Min, row.P25, row.Median, row.P75 = cellValue(st.Min, cl.Unit), cellValue(st.P25, cl.Unit), cellValue(st.Median, cl.Unit), cellValue(st.P75, cl.Unit)
			row.Max, row.Mean, row.Stddev = cellValue(st.Max, cl.Unit), cellValue(st.Mean, cl.Unit), cellValue(st.Stddev, cl.Unit)
			if unit == "" {
				unit = cl.Unit
			}
			if cl.Unit == unit {
				rows = append(rows, plot.Row{Label: cl.Algorithm + " " + cl.Operation, Min: st.Min, P25: st.P25, Median: st.Median, P75: st.P75, Max: st.Max})
			}
		}
		if cl.Memory != nil && cl.Memory.HeapBytesPerOp != nil {
			row.Heap = human(*cl.Memory.HeapBytesPerOp, "B")
		}
		if cl.Memory != nil && cl.Memory.StackBytes != nil {
			row.Stack = human(float64(*cl.Memory.StackBytes), "B")
		}
		v.Cells = append(v.Cells, row)
	}
	v.Plot = plot.Layout(rows, unitTitle(unit), func(x float64) string { return human(x, unit) })
	v.PlotNote = "Box: p25 to p75 with the median; whiskers: min to max."
	if v.Plot != nil && v.Plot.Log {
		v.PlotNote += " Log axis: the values span more than an order of magnitude."
	}
	v.Timing = s.runTiming(r.ClassStatus, nil)
	var env artifacts.Environment
	if err := json.Unmarshal([]byte(r.Environment), &env); err == nil {
		v.Timing = s.runTiming(r.ClassStatus, &env)
		libs := []string{}
		for k, ver := range env.Libraries {
			libs = append(libs, k+" "+ver)
		}
		slices.Sort(libs)
		v.Environment = []templates.KV{
			{Key: "Runner version", Value: env.RunnerVersion}, {Key: "Go", Value: env.GoVersion}, {Key: "OS / arch", Value: env.OS + "/" + env.Arch + " " + env.Kernel},
			{Key: "CPU", Value: fmt.Sprintf("%s (%d logical)", env.CPUModel, env.CPUs)}, {Key: "Virtualized", Value: strconv.FormatBool(env.Virtualized)},
			{Key: "Board", Value: fmt.Sprintf("%s, class %s, driver %s, chip %s", env.Board.Name, env.Board.Class, env.Board.Driver, env.Board.Chip)},
			{Key: "Board RNG", Value: env.Board.RNG}, {Key: "Timer", Value: env.TimerSource}, {Key: "Energy", Value: env.EnergySource},
			{Key: "Libraries", Value: strings.Join(libs, ", ")},
		}
		if env.Board.Emulator != "" {
			v.Environment = append(v.Environment, templates.KV{Key: "Emulator", Value: env.Board.Emulator})
		}
		v.Environment = append(v.Environment, firmwareBuildKVs(env.Board.FirmwareBuild)...)
	}
	json.Unmarshal([]byte(r.Checks), &v.Checks)
	var rep compare.Report
	if err := json.Unmarshal([]byte(r.Report), &rep); err != nil {
		return fmt.Errorf("run %d report: %w", id, err)
	}
	v.Dataset, v.Tolerance = rep.Dataset, fmt.Sprintf("%.0f%%", rep.Tolerance*100)
	v.Comparison, v.NotComparable = comparisonView(rep)
	v.Claims = claimResultRows(rep, r.Origin)
	if r.Kind == artifacts.KindTLSMatrix {
		if v.HeatMap, err = s.runHeatMap(ctx, r); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, templates.RunPage(v))
}

func (s *Server) boardRows(ctx context.Context) ([]templates.BoardRow, error) {
	counts, err := s.store.BoardCounts(ctx)
	if err != nil {
		return nil, err
	}
	runners, err := s.connectedRunners(ctx)
	if err != nil {
		return nil, err
	}
	offered := map[string][]string{}
	for _, r := range runners {
		for _, b := range r.Boards {
			if b.Available {
				offered[b.Class] = append(offered[b.Class], r.Name)
			}
		}
	}
	var out []templates.BoardRow
	seen := map[string]bool{}
	add := func(row templates.BoardRow) {
		seen[row.Class] = true
		for _, c := range counts {
			if c.BoardClass == row.Class {
				row.Runs = c.Runs
			}
		}
		row.Runners = strings.Join(offered[row.Class], ", ")
		out = append(out, row)
	}
	add(templates.BoardRow{Class: "host", Name: "the runner's own CPU", CPU: "varies", Arch: "varies", Papers: "any"})
	for _, b := range s.catalog.Boards {
		if !seen[b.Slug] {
			add(templates.BoardRow{Class: b.Slug, Name: b.Name, CPU: b.CPU, Arch: b.Arch, Clock: b.ClockMHz + " MHz", Memory: b.Memory, Papers: b.Papers})
		}
	}
	for class := range offered {
		if !seen[class] {
			add(templates.BoardRow{Class: class})
		}
	}
	for _, c := range counts {
		if !seen[c.BoardClass] {
			add(templates.BoardRow{Class: c.BoardClass})
		}
	}
	return out, nil
}

func runnerRows(rs []sqlite.Runner, within time.Duration) []templates.RunnerRow {
	var out []templates.RunnerRow
	for _, r := range rs {
		var boards []string
		for _, b := range r.Boards {
			s := b.Name + " [" + b.Class + ", " + b.Driver + "]"
			if !b.Available {
				s += " unavailable: " + b.Reason
			}
			boards = append(boards, s)
		}
		out = append(out, templates.RunnerRow{ID: r.ID, Name: r.Name, Fingerprint: r.Fingerprint, Version: r.Version, LastSeen: when(r.LastSeen),
			Boards: strings.Join(boards, "; "), Connected: time.Since(r.LastSeen) <= within})
	}
	return out
}

func (s *Server) boardsPage(c echo.Context) error {
	ctx := c.Request().Context()
	rows, err := s.boardRows(ctx)
	if err != nil {
		return err
	}
	rs, err := s.store.Runners(ctx)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.BoardsPage(templates.BoardsView{Page: s.page(c, "Boards"), Boards: rows, Runners: runnerRows(rs, s.cfg.ConnectedWithin)}))
}

var boardClassRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,62}$`)

func (s *Server) boardPage(c echo.Context) error {
	ctx := c.Request().Context()
	class := c.Param("class")
	if !boardClassRE.MatchString(class) {
		return fault.New(fault.NotFound, "no board class %q", class)
	}
	rows, err := s.boardRows(ctx)
	if err != nil {
		return err
	}
	v := templates.BoardView{Page: s.page(c, class), Board: templates.BoardRow{Class: class}}
	for _, r := range rows {
		if r.Class == class {
			v.Board = r
		}
	}
	runs, err := s.store.Runs(ctx, sqlite.RunFilter{BoardClass: class, Limit: 100})
	if err != nil {
		return err
	}
	v.Runs = runRows(runs)
	return s.render(c, http.StatusOK, templates.BoardPage(v))
}

func (s *Server) firmwarePage(c echo.Context) error {
	ctx := c.Request().Context()
	fw, err := s.store.FirmwareBuilds(ctx, c.QueryParam("board"))
	if err != nil {
		return err
	}
	_, signed := currentUser(c)
	v := templates.FirmwareView{Page: s.page(c, "Firmware"), SignedIn: signed, MaxBytes: bytesHuman(s.cfg.MaxFirmwareBytes)}
	for _, f := range fw {
		v.Builds = append(v.Builds, templates.FirmwareRow{Digest: f.Digest, Filename: f.Filename, Size: bytesHuman(f.Size), BoardClass: f.BoardClass,
			Toolchain: f.Toolchain, Libraries: f.Libraries, SourceURL: f.SourceURL, SourceCommit: f.SourceCommit, UploadedBy: f.UploadedBy, When: when(f.CreatedAt)})
	}
	for _, b := range s.catalog.Boards {
		v.Classes = append(v.Classes, b.Slug)
	}
	for _, c := range []string{"qemu-mps2-an386", "qemu-mps2-an505", "qemu-riscv32-virt"} {
		if !slices.Contains(v.Classes, c) {
			v.Classes = append(v.Classes, c)
		}
	}
	return s.render(c, http.StatusOK, templates.FirmwarePage(v))
}

var commitRE = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// uploadFirmware stores a build by digest (temporary file, sync, rename) and records it.
func (s *Server) uploadFirmware(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	f := sqlite.Firmware{BoardClass: strings.TrimSpace(c.FormValue("board_class")), Toolchain: strings.TrimSpace(c.FormValue("toolchain")),
		Libraries: strings.TrimSpace(c.FormValue("libraries")), SourceURL: strings.TrimSpace(c.FormValue("source_url")),
		SourceCommit: strings.TrimSpace(c.FormValue("source_commit"))}
	switch {
	case !boardClassRE.MatchString(f.BoardClass):
		return fault.New(fault.Invalid, "target board class must be a lowercase slug like qemu-mps2-an386")
	case f.Toolchain == "" || len(f.Toolchain) > 200 || len(f.Libraries) > 500:
		return fault.New(fault.Invalid, "give the toolchain (and library versions) that built the firmware")
	case !strings.HasPrefix(f.SourceURL, "https://") && !strings.HasPrefix(f.SourceURL, "http://") || len(f.SourceURL) > 500:
		return fault.New(fault.Invalid, "the source URL must be an http(s) URL")
	case !commitRE.MatchString(f.SourceCommit):
		return fault.New(fault.Invalid, "the source commit must be a hex commit id")
	}
	fh, err := c.FormFile("file")
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "choose a firmware file")
	}
	if fh.Size > s.cfg.MaxFirmwareBytes {
		return fault.New(fault.TooLarge, "firmware is larger than the limit of %s", bytesHuman(s.cfg.MaxFirmwareBytes))
	}
	file, err := fh.Open()
	if err != nil {
		return fmt.Errorf("open uploaded firmware: %w", err)
	}
	defer file.Close()
	f.Digest, f.Size, err = s.blobs.Put(ctx, file, s.cfg.MaxFirmwareBytes)
	if err != nil {
		return err
	}
	f.Filename = sanitizeName(fh.Filename)
	if err := s.store.AddFirmware(ctx, f, u.ID); err != nil {
		return err
	}
	s.log.Info("firmware stored", "digest", f.Digest, "board", f.BoardClass, "by", u.Name)
	return c.Redirect(http.StatusSeeOther, "/firmware?flash=firmware")
}

func sanitizeName(n string) string {
	n = n[strings.LastIndexAny(n, `/\`)+1:]
	n = strings.Map(func(r rune) rune {
		if r < 32 || r == 127 {
			return -1
		}
		return r
	}, n)
	if len(n) > 200 {
		n = n[:200]
	}
	if n == "" {
		n = "firmware.bin"
	}
	return n
}

func (s *Server) firmwareDownload(c echo.Context) error {
	d := c.Param("digest")
	if !blob.ValidDigest(d) {
		return fault.New(fault.NotFound, "no firmware %q", d)
	}
	f, err := s.store.FirmwareBuild(c.Request().Context(), d)
	if err != nil {
		return err
	}
	rc, err := s.blobs.Open(c.Request().Context(), d)
	if err != nil {
		return err
	}
	defer rc.Close()
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename=%q`, f.Filename))
	return c.Stream(http.StatusOK, "application/octet-stream", rc)
}

func (s *Server) submitView(c echo.Context) (templates.SubmitView, error) {
	u, signed := currentUser(c)
	v := templates.SubmitView{Page: s.page(c, "Submit"), SignedIn: signed, MaxBytes: bytesHuman(s.cfg.MaxBundleBytes)}
	if signed {
		keys, err := s.store.SubmitterKeys(c.Request().Context(), u.ID)
		if err != nil {
			return v, err
		}
		for _, k := range keys {
			v.Keys = append(v.Keys, templates.KeyRow{ID: k.ID, Fingerprint: k.Fingerprint, Label: k.Label, Owner: k.UserName, When: when(k.CreatedAt), Revoked: whenSet(k.RevokedAt)})
		}
		ch, err := s.issueChallenge(c.Request().Context(), artifacts.PurposeSubmitterKeys)
		if err != nil {
			return v, err
		}
		v.Challenge = ch.Challenge
	}
	return v, nil
}

func (s *Server) submitPage(c echo.Context) error {
	v, err := s.submitView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.SubmitPage(v))
}

// submitBundle verifies an uploaded community bundle and publishes it, or shows why not.
func (s *Server) submitBundle(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	v, err := s.submitView(c)
	if err != nil {
		return err
	}
	status := http.StatusOK
	fh, err := c.FormFile("bundle")
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "choose a bundle file")
	}
	if fh.Size > s.cfg.MaxBundleBytes {
		return fault.New(fault.TooLarge, "the bundle is larger than the limit of %s", bytesHuman(s.cfg.MaxBundleBytes))
	}
	file, err := fh.Open()
	if err != nil {
		return fmt.Errorf("open uploaded bundle: %w", err)
	}
	defer file.Close()
	data, err := readLimited(file, s.cfg.MaxBundleBytes)
	if err == nil {
		v.RunID, err = s.submitCommunity(ctx, u, data)
	}
	if err != nil {
		if fault.KindOf(err) == fault.Internal {
			return err
		}
		v.Refused = fault.Message(err)
		status = http.StatusUnprocessableEntity
		s.log.Info("submission refused", "by", u.Name, "reason", v.Refused)
	}
	return s.render(c, status, templates.SubmitPage(v))
}

// registerKeys registers keys from the form: a key registration made by
// `pqrepro keys --prove CHALLENGE` over the challenge the submit page showed.
func (s *Server) registerKeys(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	fh, err := c.FormFile("registration")
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "choose the key registration file from pqrepro keys --prove")
	}
	f, err := fh.Open()
	if err != nil {
		return fmt.Errorf("open uploaded key registration: %w", err)
	}
	defer f.Close()
	data, err := readLimited(f, 64<<10)
	if err != nil {
		return err
	}
	var req artifacts.KeyRegistration
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fault.Wrap(fault.Invalid, err, "key registration file: %s", err.Error())
	}
	if l := strings.TrimSpace(c.FormValue("label")); l != "" {
		req.Label = l
	}
	if _, err := s.addSubmitterKeys(ctx, u, req); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/submit?flash=keys")
}

// bindingNote says, for a run page, how the run's signed bundle is bound.
func bindingNote(binding string) string {
	switch binding {
	case sqlite.BindingUnbound:
		return "unbound: a community submission, signed without a job of this portal"
	case sqlite.BindingLegacy:
		return "legacy: a v1 bundle (or one published before bundles were bound to their job); its signature is checked, its job binding cannot be"
	}
	return ""
}
