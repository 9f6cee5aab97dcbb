// Package host is the host board: the runner's own CPU, running experiments in-process in
// Go (Host). It identifies the machine and checks its declared board class, and runs every
// experiment kind through its kind table (hostKinds), which names an executor of
// runner/exec/... or a method of runner/method/... for each.
package host

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/runner"
	"pqrepro/runner/exec/bench"
	"pqrepro/runner/exec/telemetry"
	"pqrepro/runner/exec/tlsmatrix"
	"pqrepro/runner/method/openssl"
	"pqrepro/runner/method/procop"
	"pqrepro/runner/trial"
)

// Host is the runner's own CPU as a board: experiments run in-process in Go, timed with the
// monotonic clock. It is always present, so pqrepro works with nothing plugged in.
type Host struct {
	// Class is the board class results are filed under: "host" unless the operator declares
	// the machine to be one of the reference boards (e.g. "rpi4-b" on a Raspberry Pi 4).
	Class string
	// Exe is the pqrepro binary used for the process-per-operation method ("" = this process's).
	Exe string
	// PowercapRoot is where RAPL domains are looked for (default /sys/class/powercap).
	PowercapRoot string
	// Roots are where the machine is read from for its identity and the class check
	// (default /proc and /sys).
	Roots runner.Roots

	// OpenSSL is the openssl command line the openssl-cli method runs (default: openssl on PATH).
	OpenSSL openssl.Config
	// Meter, when set, runs the metered energy pass (runner/host/meter.go): an idle window,
	// then a load window per cell; nil: no meter, and energy only from RAPL where present.
	Meter Meter
	// TLSOutside is how tls-matrix cells reach an outside server (spec.tls.server HOST:PORT):
	// its trust anchors and name; nil means the system's roots and the address's host.
	TLSOutside *tlsmatrix.Outside

	openssl opensslRun

	// tlsFault breaks tls-matrix cells on purpose (tlsCellConfig.Fault); tests only.
	tlsFault string
	// tlsEnv is the latest tls-matrix run's record for environment.json.
	tlsMu  sync.Mutex
	tlsEnv *artifacts.TLSEnvironment
	// schedule is the latest run's interleaving of its cells (under tlsMu).
	schedule *artifacts.Schedule
	// power is the latest run's metered pass (under tlsMu).
	power meterRun

	once sync.Once
	kems map[string]*bench.KEM
	sigs map[string]*bench.Sig
}

var _ runner.Board = (*Host)(nil)

func (h *Host) impls() (map[string]*bench.KEM, map[string]*bench.Sig) {
	h.once.Do(func() { h.kems, h.sigs = bench.Algorithms() })
	return h.kems, h.sigs
}

// Identity describes the host board. A declared class (Class) is checked against the board
// catalogue from what this machine reports; a clear mismatch (an amd64 machine declared a
// Raspberry Pi 4) is an error and nothing runs.
func (h *Host) Identity(ctx context.Context) (artifacts.BoardIdentity, error) {
	chk, err := h.CheckClass()
	if err != nil {
		return artifacts.BoardIdentity{}, err
	}
	return artifacts.BoardIdentity{
		Name: artifacts.HostBoard, Class: h.class(), Driver: artifacts.DriverHost, Chip: runner.MachineEnvironment(h.Roots).CPUModel,
		RNG: "seeded SHAKE256 stream for keys and messages where the library accepts a reader; OS RNG otherwise (noted per algorithm)", Assurance: artifacts.AssuranceHost,
		ClassStatus: chk.Status, ClassNote: chk.Note,
	}, nil
}

// CheckClass checks the host's board class against the board catalogue (see
// experiments.Catalog.CheckClass) from what this machine reports: its architecture, CPU,
// clock and virtualization. It returns the status (verified or declared) with its note, or
// a *experiments.ClassMismatchError refusing the class.
func (h *Host) CheckClass() (experiments.ClassCheck, error) {
	env := runner.MachineEnvironment(h.Roots)
	env.Board = artifacts.BoardIdentity{Driver: artifacts.DriverHost, Class: h.class()}
	return experiments.CheckClassEmbedded(h.class(), env)
}

// Run executes every cell of m in order. It returns ctx.Err() if cancelled; a cell whose
// output check fails is recorded as failed and the run goes on.
func (h *Host) Run(ctx context.Context, m *artifacts.Manifest, obs runner.Observer, log io.Writer) ([]runner.CellResult, error) {
	if m.Spec.Method == artifacts.MethodOpenSSLCLI {
		return h.runOpenSSLCLI(ctx, m, obs, log)
	}
	kems, sigs := h.impls()
	meter, reason := trial.OpenRAPL(h.powercapRoot())
	if meter == nil {
		fmt.Fprintf(log, "energy: absent: %s\n", reason)
	} else {
		fmt.Fprintf(log, "energy: %s\n", meter.Source())
	}
	loadWindow := h.startMeter(ctx, m, log)
	_, loadD := m.Spec.EnergyWindows()
	cells := m.Cells()
	var exec trial.Executor
	if mk := hostKinds[m.Kind]; mk != nil {
		exec = mk(h)
	}
	if e, ok := exec.(interface {
		Environment() *artifacts.TLSEnvironment
	}); ok {
		defer func() {
			h.tlsMu.Lock()
			h.tlsEnv = e.Environment()
			h.tlsMu.Unlock()
		}()
	}
	noted := map[string]bool{}
	note := func(alg, text string) {
		if text != "" && !noted[alg] {
			noted[alg] = true
			fmt.Fprintf(log, "inputs: %s: %s\n", alg, text)
		}
	}
	// The cells run in rounds (rounds.go); a cell whose run breaks (an error, not a failed
	// cell) cancels the others and its error is the run's.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([][]runner.CellResult, len(cells))
	var firstErr error // the first cell whose run broke (one cell runs at a time)
	sched := trial.NewScheduler(m.Spec.Seed, time.Now())
	finished := 0 // cells done, for the observer
	for i, ref := range cells {
		sched.Add(func(t *trial.Turns) {
			obs.CellStarted(finished, len(cells), ref)
			for _, alg := range []string{ref.Algorithm, pairPart(ref.Algorithm, 0), pairPart(ref.Algorithm, 1)} {
				if k := kems[alg]; k != nil {
					note(alg, k.RNGNote)
				}
				if s := sigs[alg]; s != nil {
					note(alg, s.RNGNote)
				}
			}
			plan := trial.Plan{
				Warmup: m.Spec.Warmup, Iterations: m.Spec.Iterations, MinIterations: m.Spec.MinIterations,
				Budget: time.Duration(m.Spec.Budget), Energy: meter, Meter: loadWindow, MeterLoad: loadD,
				Progress: func(done int) { obs.Iteration(finished, done, m.Spec.Iterations) },
				Turns:    t, Process: m.Spec.Method == artifacts.MethodProcessPerOperation,
			}
			var r trial.Outcome
			var err error
			if m.Spec.Method == artifacts.MethodProcessPerOperation {
				r, err = procop.Cell(ctx, h.Exe, kems, sigs, trial.Cell{Manifest: m, Ref: ref, Plan: plan}, log)
			} else if exec != nil {
				r, err = exec.Cell(ctx, trial.Cell{Manifest: m, Ref: ref, Plan: plan})
			} else {
				r.Cell = artifacts.Cell{Status: artifacts.StatusSkipped, Error: "the host board has no executor for " + string(m.Kind) + " experiments"}
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err // the cells cancelled after it return ctx.Err(), not the cause
				}
				cancel()
				return
			}
			results[i] = h.cellResults(m, ref, r, meter, reason, t.Elapsed(), log)
			finished++
			obs.CellDone(finished-1, len(cells), results[i][len(results[i])-1].Cell)
		})
	}
	rounds, err := sched.Run(ctx)
	if firstErr != nil {
		return nil, firstErr
	}
	if err != nil {
		return nil, err
	}
	h.noteSchedule(&artifacts.Schedule{Rounds: rounds, Order: trial.RoundOrder})
	var out []runner.CellResult
	for _, rs := range results {
		out = append(out, rs...)
	}
	return out, nil
}

// cellResults turns a cell's run (and its variants) into the run's cell results, and logs
// each with the time its turns took.
func (h *Host) cellResults(m *artifacts.Manifest, ref artifacts.CellRef, r trial.Outcome, meter *trial.RAPL, reason string, took time.Duration, log io.Writer) []runner.CellResult {
	var out []runner.CellResult
	for _, r := range append([]trial.Outcome{r}, r.Variants...) {
		r.Cell.Algorithm, r.Cell.Operation = ref.Algorithm, ref.Operation
		r.Cell.Requested = m.Spec.Iterations
		if r.Cell.Status == artifacts.StatusOK && r.Cell.Energy == nil && meter == nil {
			r.Cell.Energy = &artifacts.Energy{Absent: h.absentReason(reason, r.PowerAbsent)}
		}
		why, variant := "", ""
		if r.Cell.Error != "" {
			why = ": " + r.Cell.Error
		}
		if r.Cell.Variant != "" {
			variant = " [" + r.Cell.Variant + "]"
		}
		blocks := ""
		if r.Cell.Block > 0 {
			blocks = fmt.Sprintf(", %d a turn", r.Cell.Block)
		}
		fmt.Fprintf(log, "cell %s %s%s: %s n=%d in %s%s%s\n", ref.Algorithm, ref.Operation, variant, r.Cell.Status, len(r.Samples), took.Round(time.Millisecond), blocks, why)
		out = append(out, runner.CellResult{Cell: r.Cell, Samples: r.Samples, TLS: r.TLS, TLSRounds: r.TLSRounds, Rounds: r.Rounds, Offsets: r.Offsets, Power: r.Power})
	}
	return out
}

// noteSchedule keeps the latest run's schedule for its result (runner.ScheduleNoter).
func (h *Host) noteSchedule(s *artifacts.Schedule) {
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	h.schedule = s
}

// LastSchedule implements runner.ScheduleNoter: the latest run's schedule.
func (h *Host) LastSchedule() *artifacts.Schedule {
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	return h.schedule
}

// hostKinds makes the host board's executor of one run for every experiment kind
// (artifacts.Kinds); a test checks that none is missing. The cells of a run share what its
// executor keeps (the signature pools, the TLS chains).
var hostKinds = map[artifacts.Kind]func(h *Host) trial.Executor{
	artifacts.KindKEMBench:       (*Host).benchExecutor,
	artifacts.KindSigBench:       (*Host).benchExecutor,
	artifacts.KindKEMSigSequence: (*Host).benchExecutor,
	artifacts.KindTLSMatrix: func(h *Host) trial.Executor {
		return &tlsmatrix.HostRun{Exe: h.Exe, Fault: h.tlsFault, Outside: h.TLSOutside}
	},
	artifacts.KindMQTTTelemetry: func(*Host) trial.Executor { return trial.ExecutorFunc(telemetry.Host) },
}

func (h *Host) benchExecutor() trial.Executor { return bench.NewExecutor(h.impls()) }

// pairPart returns the KEM (i=0) or signature (i=1) of a "KEM+SIG" name, or "".
func pairPart(name string, i int) string {
	k, s, ok := artifacts.SplitPair(name)
	if !ok {
		return ""
	}
	return []string{k, s}[i]
}

func (h *Host) class() string {
	if h.Class != "" {
		return h.Class
	}
	return artifacts.HostBoard
}

func (h *Host) powercapRoot() string {
	if h.PowercapRoot != "" {
		return h.PowercapRoot
	}
	return "/sys/class/powercap"
}

var (
	_ runner.EnvironmentNoter = (*Host)(nil)
	_ runner.ScheduleNoter    = (*Host)(nil)
)

// noteTLS adds a tls-matrix run's chains and methods to environment.json.
func (h *Host) noteTLS(m *artifacts.Manifest, env *artifacts.Environment) {
	if m.Kind != artifacts.KindTLSMatrix {
		return
	}
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	env.TLS = h.tlsEnv
	env.TimerSource = "Go monotonic clock around the client's Handshake call, nanoseconds"
}

// opensslRun is what the host remembers of its last openssl-cli run for environment.json.
type opensslRun struct {
	mu   sync.Mutex
	info *artifacts.OpenSSLInfo
}

// runOpenSSLCLI runs every cell of an openssl-cli manifest with the host's openssl, and with
// the host's meter its metered pass (the idle window first, then each cell's commands back to
// back in its load window). It refuses the whole run up front (an error, nothing published)
// when there is no openssl 3.5.
func (h *Host) runOpenSSLCLI(ctx context.Context, m *artifacts.Manifest, obs runner.Observer, log io.Writer) ([]runner.CellResult, error) {
	o, err := openssl.Resolve(ctx, h.OpenSSL)
	if err != nil {
		return nil, fmt.Errorf("openssl-cli: %w", err)
	}
	info := o.Info(ctx)
	h.openssl.mu.Lock()
	h.openssl.info = &info
	h.openssl.mu.Unlock()
	loadWindow := h.startMeter(ctx, m, log)
	cells, sched, err := o.Run(ctx, m, info, loadWindow, obs, log)
	if err != nil {
		return nil, err
	}
	if why := h.meterAbsent(); why != "" {
		for i := range cells {
			if c := &cells[i].Cell; c.Status == artifacts.StatusOK {
				c.Energy = &artifacts.Energy{Absent: why}
			}
		}
	}
	h.noteSchedule(sched)
	return cells, nil
}

// NoteEnvironment implements runner.EnvironmentNoter: it adds what the last run learnt to its
// environment.json: the TLS chains of a tls-matrix run, the openssl an openssl-cli run used.
func (h *Host) NoteEnvironment(m *artifacts.Manifest, env *artifacts.Environment) {
	h.noteTLS(m, env)
	if m.Spec.Method != artifacts.MethodOpenSSLCLI {
		return
	}
	h.openssl.mu.Lock()
	defer h.openssl.mu.Unlock()
	env.OpenSSL = h.openssl.info
	env.TimerSource = "Go monotonic clock around each openssl process (os/exec start to exit), nanoseconds"
}

// Methods are the timing methods the host board can run with these capabilities.
func Methods(c protocol.Capabilities) []artifacts.Method {
	ms := []artifacts.Method{artifacts.MethodInProcess, artifacts.MethodProcessPerOperation, artifacts.MethodLoopbackTCP}
	if c.OpenSSLUsable {
		ms = append(ms, artifacts.MethodOpenSSLCLI)
	}
	return ms
}
