// Package runner is the agent that measures: board drivers, experiment executors, statistics
// and progress reporting. It produces signed result bundles (package artifacts) and never
// talks to the portal's storage; the portal sees it only through the runner protocol.
package runner

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/logtext"
	"pqrepro/energy"
	"pqrepro/internal/lockedio"
)

// Board is anything experiments can run on: the host CPU in-process, an emulated board, a
// real board on a serial port. Run returns one CellResult per manifest cell, in order; it
// returns ctx.Err() when cancelled (and leaves the board in a known state). A cell whose
// output check fails is a failed cell, not an error; an error means the run itself broke
// (a board that went silent, an emulator that died) and nothing must be published.
type Board interface {
	Identity(ctx context.Context) (artifacts.BoardIdentity, error)
	Run(ctx context.Context, m *artifacts.Manifest, obs Observer, log io.Writer) ([]CellResult, error)
}

// KindBoard is a board that runs some experiment kinds from another firmware image (the
// rp2040js board's TLS image for tls-matrix): Execute identifies and runs the board ForKind
// returns for the manifest's kind, q itself for the others. An error is an image the kind
// needs and the board lacks; nothing runs.
type KindBoard interface {
	ForKind(k artifacts.Kind) (Board, error)
}

// EnvironmentNoter is a board that adds to environment.json what it learnt during Run (the
// host: the openssl an openssl-cli run used).
type EnvironmentNoter interface {
	NoteEnvironment(m *artifacts.Manifest, env *artifacts.Environment)
}

// ScheduleNoter is a board that interleaved its last run's cells in rounds (the host).
type ScheduleNoter interface {
	LastSchedule() *artifacts.Schedule
}

// CellResult is a cell as measured: its record (status, sizes, memory, energy) and the raw
// timed samples, from which the executor computes the statistics.
type CellResult struct {
	Cell    artifacts.Cell
	Samples []float64
	// Rounds and Offsets are each sample's round and start (ns since the run's measurement
	// began) when the board ran its cells in rounds; nil otherwise.
	Rounds  []int
	Offsets []float64
	// TLS are a tls-matrix cell's per-batch CPU and per-handshake phase series, written to
	// tls.csv; the cell's TLS record summarises them.
	TLS []artifacts.TLSSeries
	// TLSRounds are the signature rounds of each timed handshake (tls.csv's rounds column),
	// when the signer reported them; nil otherwise.
	TLSRounds []int
	// Power is the cell's load window from a metered energy pass (power.csv); nil otherwise.
	Power *artifacts.PowerWindow
}

// PowerNoter is a board that ran a metered energy pass: the run's idle window and the meter
// (nil, nil when it had no meter or the idle window failed).
type PowerNoter interface {
	LastPower() (*artifacts.PowerWindow, *artifacts.MeterInfo)
}

// Observer follows a run's progress. Calls come from the goroutine running the board.
type Observer interface {
	CellStarted(index, total int, ref artifacts.CellRef)
	Iteration(index, done, requested int)
	CellDone(index, total int, c artifacts.Cell)
}

// NopObserver ignores progress.
type NopObserver struct{}

func (NopObserver) CellStarted(int, int, artifacts.CellRef) {}
func (NopObserver) Iteration(int, int, int)                 {}
func (NopObserver) CellDone(int, int, artifacts.Cell)       {}

// Options configure Execute.
type Options struct {
	// Identity signs the bundle.
	Identity *identity.Identity
	// Version is pqrepro's version, recorded in the environment and the attestation.
	Version string
	// Origin is attest.OriginLocal for CLI runs, OriginPortalRunner for a portal's runner.
	Origin string
	// Job is the lease's binding, signed into the attestation; required with
	// OriginPortalRunner, nil otherwise.
	Job *attest.JobBinding
	// Observer receives progress; nil means none.
	Observer Observer
	// Log, when set, receives a copy of everything written to the bundle's log.txt as it happens.
	Log io.Writer
	// Roots are where the timing context and the environment are read from (default /proc
	// and /sys).
	Roots Roots
}

// RunError is a run that broke (not a failed cell). Log holds what the runner and the board
// said up to the failure, so it can be kept even though no bundle is produced.
type RunError struct {
	Err error
	Log []byte
}

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// Execute runs m on board and returns the signed bundle and its result. On cancellation or a
// broken run it returns a *RunError (wrapping ctx.Err() when cancelled) and no bundle: a run
// that did not finish never looks complete.
func Execute(ctx context.Context, board Board, m *artifacts.Manifest, opt Options) (*artifacts.Bundle, *artifacts.Result, error) {
	if opt.Identity == nil {
		return nil, nil, fmt.Errorf("execute %s: no signing identity", m.Ref())
	}
	obs := opt.Observer
	if obs == nil {
		obs = NopObserver{}
	}
	log := &lockedio.Buffer{Tee: opt.Log}
	fail := func(err error) (*artifacts.Bundle, *artifacts.Result, error) {
		fmt.Fprintf(log, "run failed: %v\n", err)
		return nil, nil, &RunError{Err: err, Log: log.Bytes()}
	}
	if kb, ok := board.(KindBoard); ok {
		b, err := kb.ForKind(m.Kind)
		if err != nil {
			return fail(fmt.Errorf("board for %s: %w", m.Kind, err))
		}
		board = b
	}
	id, err := board.Identity(ctx)
	if err != nil {
		return fail(fmt.Errorf("identify board: %w", err))
	}
	hostTimed := id.Driver == artifacts.DriverHost
	timing := startTiming(opt.Roots, hostTimed)
	started := time.Now().UTC()
	fmt.Fprintf(log, "pqrepro %s: %s (%s) on board %s [%s, %s], manifest %s\n", opt.Version, m.Ref(), m.Kind, id.Name, id.Class, id.ClassStatus, m.ID())
	if id.ClassNote != "" && id.ClassStatus == artifacts.ClassDeclared {
		fmt.Fprintf(log, "board class: %s\n", id.ClassNote)
	}
	sampler := startLoadSampler(opt.Roots, os.Getpid(), loadInterval)
	cells, err := board.Run(ctx, m, obs, log)
	timing.External = sampler.finish()
	if err != nil {
		return fail(fmt.Errorf("run %s on %s: %w", m.Ref(), id.Name, err))
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	res := &artifacts.Result{
		Schema: artifacts.ResultSchema, Experiment: m.Ref(), ManifestID: m.ID(), Kind: m.Kind, Method: m.Spec.Method,
		Board: id.Class, Assurance: id.Assurance, StartedAt: started, FinishedAt: time.Now().UTC(),
	}
	if sn, ok := board.(ScheduleNoter); ok && slices.ContainsFunc(cells, func(c CellResult) bool { return len(c.Rounds) > 0 }) {
		res.Schedule = sn.LastSchedule()
	}
	samples, err := recordCells(res, cells)
	if err != nil {
		return fail(err)
	}
	if err := res.Validate(); err != nil {
		return fail(err)
	}
	// A run in which no cell ran ok is not a result: it is not signed, and its log is kept
	// as a failed run's (the portal and pqrepro submit refuse such a bundle too).
	if err := artifacts.CheckSomeCellOK(res); err != nil {
		return fail(err)
	}
	files := map[string][]byte{artifacts.FileSamples: samples}
	if tlsCSV := tlsSamples(cells); tlsCSV != nil {
		files[artifacts.FileTLS] = tlsCSV
	}
	powerCSV, meter := meteredEnergy(board, res, cells, id.ClockHz, log)
	if powerCSV != nil {
		files[artifacts.FilePower] = powerCSV
	}
	// Sign only what every verifier will re-derive: the same checks as pqrepro verify and
	// the portal's ingest, on the files as written.
	parsed, err := artifacts.ParseBundleSamples(&artifacts.Bundle{Files: files})
	if err != nil {
		return fail(fmt.Errorf("re-read own samples: %w", err))
	}
	if err := artifacts.Rederive(m, res, parsed); err != nil {
		return fail(fmt.Errorf("refusing to sign a result that does not re-derive: %w", err))
	}
	env := environment(board, m, res, id, timing, opt, log)
	env.Meter = meter
	if err := energy.RederivePower(res, &env, powerCSV); err != nil {
		return fail(fmt.Errorf("refusing to sign energy that does not re-derive: %w", err))
	}
	resJSON, _ := json.MarshalIndent(res, "", "  ")
	envJSON, _ := json.MarshalIndent(env, "", "  ")
	fmt.Fprintf(log, "finished: %d cells in %s\n", len(res.Cells), res.FinishedAt.Sub(started).Round(time.Millisecond))
	files[artifacts.FileManifest] = m.YAML()
	files[artifacts.FileResult] = append(resJSON, '\n')
	files[artifacts.FileEnvironment] = append(envJSON, '\n')
	files[artifacts.FileLog] = bundleLog(log.Bytes())
	b := &artifacts.Bundle{Files: files}
	pred := predicate(res, id, opt)
	if err := attest.Sign(b, opt.Identity, pred); err != nil {
		return fail(fmt.Errorf("sign bundle: %w", err))
	}
	return b, res, nil
}

// recordCells adds the board's cells to res, with statistics for the ok ones, and writes
// samples.csv; it refuses more cells or samples than the limits and rounds that do not match
// the samples.
func recordCells(res *artifacts.Result, cells []CellResult) ([]byte, error) {
	var samples bytes.Buffer
	w := csv.NewWriter(&samples)
	w.Write(artifacts.SamplesRoundsHeader)
	if len(cells) > artifacts.MaxCells {
		return nil, fmt.Errorf("the board returned %d cells, more than the limit of %d", len(cells), artifacts.MaxCells)
	}
	for _, c := range cells {
		cell := c.Cell
		if len(c.Samples) > artifacts.MaxSamplesPerCell {
			return nil, fmt.Errorf("cell %s %s: %d samples, more than the limit of %d", cell.Algorithm, cell.Operation, len(c.Samples), artifacts.MaxSamplesPerCell)
		}
		if cell.Status == artifacts.StatusOK {
			cell.Stats = Summarize(c.Samples)
		}
		res.Cells = append(res.Cells, cell)
		if len(c.Rounds) > 0 && (len(c.Rounds) != len(c.Samples) || len(c.Offsets) != len(c.Samples)) {
			return nil, fmt.Errorf("cell %s %s: %d samples, %d rounds, %d offsets", cell.Algorithm, cell.Operation, len(c.Samples), len(c.Rounds), len(c.Offsets))
		}
		for i, v := range c.Samples {
			round, offset := "", ""
			if len(c.Rounds) > 0 {
				round, offset = strconv.Itoa(c.Rounds[i]), strconv.FormatFloat(c.Offsets[i], 'f', -1, 64)
			}
			w.Write([]string{cell.Algorithm, cell.Operation, strconv.Itoa(i), strconv.FormatFloat(v, 'f', -1, 64), string(cell.Unit), cell.Variant, round, offset})
		}
	}
	w.Flush()
	return samples.Bytes(), nil
}

// environment is environment.json: the machine that ran the runner, the timing context, the
// board and what it noted, and the timer and energy sources; it names the implementation of
// every cell whose board did not.
func environment(board Board, m *artifacts.Manifest, res *artifacts.Result, id artifacts.BoardIdentity, timing *artifacts.TimingContext, opt Options, log io.Writer) artifacts.Environment {
	hostTimed := id.Driver == artifacts.DriverHost
	env := hostEnvironment(opt.Version, opt.Roots)
	finishTiming(timing, opt.Roots, hostTimed, env.CPUs)
	env.Timing = timing
	for _, w := range timing.Warnings {
		fmt.Fprintf(log, "timing: %s\n", w)
	}
	env.Board = id
	if hostTimed {
		env.TimerSource = "Go monotonic clock (time.Now/time.Since), nanoseconds"
	} else {
		env.TimerSource = cellsCounter(res.Cells)
	}
	env.EnergySource = energySourceOf(res.Cells)
	if n, ok := board.(EnvironmentNoter); ok {
		n.NoteEnvironment(m, &env)
	}
	// Every cell names the code it timed: a firmware board's cells the implementation its
	// table reports, the rest what the environment says ran (artifacts.DeriveImplementation).
	for i := range res.Cells {
		if res.Cells[i].Implementation == nil {
			im := artifacts.DeriveImplementation(m.Kind, m.Spec.Method, &env, res.Cells[i])
			res.Cells[i].Implementation = &im
		}
	}
	return env
}

// predicate is the attestation's predicate for res, measured on id.
func predicate(res *artifacts.Result, id artifacts.BoardIdentity, opt Options) attest.Predicate {
	summary, _ := json.Marshal(Summary(res))
	origin := opt.Origin
	if origin == "" {
		origin = attest.OriginLocal
	}
	return attest.Predicate{
		Summary:   summary,
		Runner:    attest.RunnerRef{Name: "pqrepro-runner", Version: opt.Version},
		Assurance: attest.Assurance{Level: id.Assurance, Origin: origin},
		CreatedAt: time.Now().UTC().Truncate(time.Second),
		Job:       opt.Job,
	}
}

// RunSummary is the attestation's short summary of result.json.
type RunSummary struct {
	Experiment string `json:"experiment"`
	ManifestID string `json:"manifestId"`
	Board      string `json:"board"`
	Cells      int    `json:"cells"`
	OK         int    `json:"ok"`
	Failed     int    `json:"failed"`
	Skipped    int    `json:"skipped"`
}

// Summary counts a result's cells by status.
func Summary(r *artifacts.Result) RunSummary {
	s := RunSummary{Experiment: r.Experiment, ManifestID: r.ManifestID, Board: r.Board, Cells: len(r.Cells)}
	for _, c := range r.Cells {
		switch c.Status {
		case artifacts.StatusOK:
			s.OK++
		case artifacts.StatusFailed:
			s.Failed++
		default:
			s.Skipped++
		}
	}
	return s
}

func cellsCounter(cells []artifacts.Cell) string {
	for _, c := range cells {
		if c.Counter != "" {
			return c.Counter
		}
	}
	return "none (no cell was timed)"
}

func energySourceOf(cells []artifacts.Cell) string {
	for _, c := range cells {
		if c.Energy != nil && c.Energy.Source != "" {
			return c.Energy.Source
		}
	}
	for _, c := range cells {
		if c.Energy != nil && c.Energy.Absent != "" {
			return "absent: " + c.Energy.Absent
		}
	}
	return "absent: not measured by this board"
}

// tlsSamples renders the cells' TLS series as tls.csv, or nil when no cell has any.
func tlsSamples(cells []CellResult) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(artifacts.TLSHeader)
	any := false
	for _, c := range cells {
		if len(c.TLS) > 0 {
			any = true
			role := ""
			if c.Cell.TLS != nil {
				role = c.Cell.TLS.Role
			}
			artifacts.WriteTLSRows(w, artifacts.KeyOf(c.Cell), role, c.TLSRounds, c.TLS)
		}
	}
	w.Flush()
	if !any {
		return nil
	}
	return buf.Bytes()
}

// bundleLog is the run's whole log for log.txt; a log beyond the bundle's limit for that file
// (artifacts.MaxFileBytes), which no reader would accept, keeps its head, every summary line
// and its tail (logtext.Bound) instead of making the whole bundle unreadable.
func bundleLog(b []byte) []byte {
	limit := int(artifacts.MaxFileBytes(artifacts.FileLog))
	if len(b) <= limit {
		return bytes.Clone(b)
	}
	out, _ := logtext.Bound(string(b), limit/8, limit/4, limit/2)
	return []byte(out)
}
