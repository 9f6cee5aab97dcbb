package device

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/wire"
)

// CheckHello stops a run when the board does not run img: the build-id it reports must be
// the one in the flashed ELF's note. A board still running an older image after a flash
// that silently failed, or an emulator booted with another file, ends here.
func CheckHello(h wire.Hello, img *Image) error {
	if !strings.EqualFold(h.BuildID, img.BuildID) {
		return &MismatchError{What: "the build-id the board reports", Want: img.BuildID + " (" + img.Digest + ", " + img.Path + ")", Got: OrNone(h.BuildID)}
	}
	return nil
}

// OrNone is s, or "none" when it is empty.
func OrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Identity is the board identity as HELLO and the image give it; the driver adds Name, Class,
// Driver, Emulator and Assurance.
func Identity(h wire.Hello, img *Image) artifacts.BoardIdentity {
	return artifacts.BoardIdentity{
		Chip: h.Chip, ClockHz: int64(h.ClockHz), Firmware: h.Firmware, FirmwareVersion: h.Version,
		FirmwareDigest: img.Digest, FirmwareBuild: img.MetadataJSON, RNG: rngText(h),
	}
}

func rngText(h wire.Hello) string {
	return fmt.Sprintf("seeded DRBG (%s, re-seeded before every cell with SHA-256 of the manifest seed and the cell)", OrNone(h.RNG))
}

// DescribeHello is one log line with what the board says it is.
func DescribeHello(h wire.Hello) string {
	clock := "no nominal clock"
	if h.ClockHz > 0 {
		clock = fmt.Sprintf("%d Hz", h.ClockHz)
	}
	return fmt.Sprintf("board says: %s %s, firmware %s %s build-id %s, protocol %d, counter %s in %s (resolution %d), stack %s, rng %s, algorithms %s, operations %s",
		h.Board, h.Chip+", "+clock, h.Firmware, h.Version, h.BuildID, h.Proto, h.Counter, h.Unit, h.Resolution, h.Stack, h.RNG,
		strings.Join(h.Algorithms, ","), strings.Join(h.Operations, ","))
}

// ReplayIdentityLog writes what a driver's Identity call said (flashing, HELLO) at the top of
// the run's log, each line marked "identify: ", so the bundle's log shows it too.
func ReplayIdentityLog(log io.Writer, idLog []byte) {
	for _, l := range strings.SplitAfter(string(idLog), "\n") {
		if l != "" {
			io.WriteString(log, "identify: "+l)
		}
	}
}

// CellSeed is the SEED sent before a cell: SHA-256 of the manifest seed, a zero byte and
// "<algorithm>/<operation>". Re-seeding per cell makes a cell's inputs, and so its counts on
// an emulated board, independent of which cells ran before it.
func CellSeed(seed string, ref artifacts.CellRef) []byte {
	h := sha256.New()
	h.Write([]byte(seed))
	h.Write([]byte{0})
	h.Write([]byte(ref.Algorithm + "/" + ref.Operation))
	return h.Sum(nil)
}

// RunOptions say how the samples of a board are labelled.
type RunOptions struct {
	// Counter names the counter behind the samples, e.g. "minstret under QEMU -icount
	// shift=0 (emulated retired instructions)". Default: the counter HELLO names.
	Counter string
	// SelfTest runs the firmware's known-answer vectors before measuring; a failing vector
	// stops the run.
	SelfTest bool
	// EnergyAbsent is why the board has no energy figure (without Metered).
	EnergyAbsent string
	// Metered, with a Meter, runs the metered energy pass: the run's idle window first, then a
	// load window per ok cell while the board runs the cell's operation with LOOP; the board
	// hands Metered's LastPower on to runner.Execute, which computes each cell's energy.
	Metered *Metered
	// TLS matrix on a board with a TLS client (firmware/PROTOCOL.md, TLS): TLSListen is where
	// the runner's engine server listens (host:port, default 127.0.0.1:0); TLSHost is the
	// address the board is told to connect to (default the listener's IP); TLSCADir keeps one
	// CA per signature scheme across runs, the CAs a lab builds into its boards (no folder: the
	// cells are skipped); TLSName is the server name checked (default tlsmatrix.DefaultTLSName).
	TLSListen, TLSHost, TLSCADir, TLSName string
	// TLSOutside is how a board's client trusts an outside server (spec.tls.server HOST:PORT);
	// nil when none was given.
	TLSOutside *TLSOutside
	// TLSClient, when set, plays the client of a board in the server role (spec.tls.role:
	// server) instead of the runner's Go engine: tlsmatrix.OpenSSLClient, OpenSSL's s_client,
	// one process per handshake, connecting to the loopback port the runner relays to the
	// board (run's --tls-client openssl). Its randomness is its own, so such counts need not
	// repeat.
	TLSClient TLSClient
	// Class is the board's class: it picks the manifest's budget for this board
	// (artifacts.Spec.BudgetOn).
	Class string
	// Clock is the board's own time, read at the start and end of budgeted spans (an
	// emulator's CPU time, so that a busy host does not change the n a budget reaches).
	// Default: the wall clock.
	Clock func() time.Duration
	// Reboot starts the board afresh (a new emulator, a reset) and returns its line after
	// HELLO and the build-id check. When a cell breaks the conversation (the board timed out
	// or answered nonsense), the cell is failed with the reason and the run goes on after a
	// Reboot; without Reboot, or when it fails or the board is gone, the cells not yet run
	// are failed as not run. Either way the cells that finished are kept.
	Reboot func(ctx context.Context) (*wire.Conn, wire.Hello, error)
	// HashPass runs the untimed hashing pass (BENCH hash=1) after each ok BENCH cell and
	// records its share in the cell (artifacts.Hashing): a few more operations per cell.
	HashPass bool
	// Executors measure each experiment kind's cells (default BenchKinds); a manifest whose
	// kind has none is refused before anything runs. The complete table, with the TLS matrix
	// and the telemetry executors, is runner/exec/kinds.Board.
	Executors Kinds
}

// TLSClient is a client other than the runner's engine for a board's server-role cells; the
// tls-matrix executor knows the concrete type (the interface keeps the TLS engine out of this
// package, which every board driver links).
type TLSClient interface {
	// Name names the client in the cell's counter.
	Name() string
}

// TLSOutside is an outside TLS server's trust for a board's client (spec.tls.server
// HOST:PORT): CAs are the certificates a board may be given (each cell gets the one whose key
// is of its signature algorithm: a board pins one trust anchor) and ServerName the name its
// leaf must carry (default: the address's host).
type TLSOutside struct {
	CAs        []*x509.Certificate
	ServerName string
}

// Cell is one cell as a board executor gets it: the conversation and the board's HELLO, the
// manifest and the cell, the run's options, the cell's budget on this board, the board's
// clock, the run's log and the progress callback (timed iterations done so far).
type Cell struct {
	Conn     *wire.Conn
	Hello    wire.Hello
	Manifest *artifacts.Manifest
	Ref      artifacts.CellRef
	Options  RunOptions
	Budget   artifacts.BoardBudget
	Clock    func() time.Duration
	Log      io.Writer
	Progress func(done int)
}

// Executor measures one cell on a board. A cell the board cannot run is skipped with the
// reason, a cell whose check fails is failed; an error means the conversation broke (Run then
// fails the cell, and restarts the board when it can).
type Executor func(ctx context.Context, c Cell) (runner.CellResult, error)

// Kinds is a board's executor for each experiment kind (artifacts.Kinds).
type Kinds map[artifacts.Kind]Executor

// BenchKinds are the kinds the firmware's BENCH measures (Bench), the sequence kind among them:
// Bench skips its cells, as no firmware runs it. A complete table adds the TLS matrix and the
// telemetry executors.
func BenchKinds() Kinds {
	return Kinds{artifacts.KindKEMBench: Bench, artifacts.KindSigBench: Bench, artifacts.KindKEMSigSequence: Bench}
}

// Bench measures one cell with the firmware's BENCH, in chunks when the manifest sets a budget,
// and then its hashing share when the run asks for it (RunOptions.HashPass).
func Bench(ctx context.Context, c Cell) (runner.CellResult, error) {
	return benchWithHashing(ctx, c)
}

// maxReboots bounds the reboots of one run.
const maxReboots = 3

// ErrNoCellMeasured is returned by Run when the conversation broke and no cell was measured:
// there is nothing to publish.
var ErrNoCellMeasured = errors.New("no cell was measured")

// linkBroken reports whether err broke the conversation (rather than being the board's answer
// about one cell).
func linkBroken(err error) bool {
	return errors.Is(err, wire.ErrTimeout) || errors.Is(err, wire.ErrGone) || errors.Is(err, wire.ErrLost) ||
		errors.Is(err, wire.ErrProtocol) || errors.Is(err, io.ErrUnexpectedEOF)
}

// unit maps HELLO's unit to the result's.
func unit(u string) (artifacts.Unit, error) {
	switch u {
	case "instructions":
		return artifacts.UnitInstructions, nil
	case "cycles":
		return artifacts.UnitCycles, nil
	case "ns":
		return artifacts.UnitNanoseconds, nil
	case "us":
		return artifacts.UnitMicroseconds, nil
	}
	return "", fmt.Errorf("%w: the firmware counts in %q, which pqrepro does not know", wire.ErrProtocol, u)
}

// Run measures every cell of m on the board behind c, whose HELLO was h. Cells the firmware
// does not implement are skipped with the reason; a sample the firmware marks failed fails
// its cell (no statistics); a firmware error for one cell (setup) fails that cell. Anything
// that breaks the conversation (timeout, lost line, protocol violation) returns an error and
// the results so far: the run must not be published. Cancelling ctx returns an error
// wrapping ctx.Err().
func Run(ctx context.Context, c *wire.Conn, h wire.Hello, m *artifacts.Manifest, obs runner.Observer, log io.Writer, opt RunOptions) ([]runner.CellResult, error) {
	u, err := unit(h.Unit)
	if err != nil {
		return nil, err
	}
	if opt.Executors == nil {
		opt.Executors = BenchKinds()
	}
	exec := opt.Executors[m.Kind]
	if exec == nil {
		return nil, fmt.Errorf("this runner has no board executor for %s experiments", m.Kind)
	}
	counter := opt.Counter
	if counter == "" {
		counter = fmt.Sprintf("firmware counter %s (%s, resolution %d)", h.Counter, h.Unit, h.Resolution)
	}
	if opt.SelfTest {
		if err := selfTest(ctx, c, log); err != nil {
			return nil, err
		}
	}
	cells := m.Cells()
	if m.Spec.Keys == artifacts.KeysParsed {
		fmt.Fprintln(log, "keys: the manifest asks for parsed keys; the firmware decodes every key from its encoding, so cells record keys: encoded")
	}
	if b := m.Spec.BudgetOn(opt.Class); b.Budget > 0 {
		fmt.Fprintln(log, PlanText(m, opt.Class, len(cells)))
	}
	clock := opt.Clock
	if clock == nil {
		t0 := time.Now()
		clock = func() time.Duration { return time.Since(t0) }
	}
	b := &boardRun{c: c, h: h, m: m, opt: opt, log: log, unit: u, counter: counter}
	b.startMeter(ctx)
	var out []runner.CellResult
	for i, ref := range cells {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		obs.CellStarted(i, len(cells), ref)
		if b.broken != nil {
			r := Failed(fmt.Sprintf("not run: the board was lost earlier in the run (%v)", b.broken))
			r.Cell.Algorithm, r.Cell.Operation, r.Cell.Requested = ref.Algorithm, ref.Operation, m.Spec.Iterations
			fmt.Fprintf(log, "cell %s %s: failed: not run, the board was lost\n", ref.Algorithm, ref.Operation)
			out = append(out, r)
			obs.CellDone(i, len(cells), r.Cell)
			continue
		}
		t0 := time.Now()
		link0 := b.c.Stats()
		budget := m.Spec.BudgetOn(opt.Class)
		b.c.SetWorkLimit(time.Duration(budget.OperationLimit))
		progress := func(done int) { obs.Iteration(i, done, m.Spec.Iterations) }
		r, err := exec(ctx, Cell{Conn: b.c, Hello: b.h, Manifest: m, Ref: ref, Options: opt, Budget: budget, Clock: clock, Log: log, Progress: progress})
		if err != nil {
			if ctx.Err() != nil || !linkBroken(err) {
				return out, fmt.Errorf("cell %s %s: %w", ref.Algorithm, ref.Operation, err)
			}
			if r, err = b.linkBroke(ctx, ref, r, err); err != nil {
				return out, err
			}
		}
		b.label(&r, ref)
		b.logCell(ref, r, t0, link0)
		if err := b.meterCell(ctx, &r, ref); err != nil {
			if err := b.meterBroke(ctx, &r, ref, err); err != nil {
				return out, err
			}
		}
		out = append(out, r)
		obs.CellDone(i, len(cells), r.Cell)
	}
	ok := 0
	for _, r := range out {
		if r.Cell.Status == artifacts.StatusOK {
			ok++
		}
	}
	if b.broken != nil && ok == 0 {
		return out, fmt.Errorf("%w: %w", ErrNoCellMeasured, b.broken)
	}
	return out, nil
}

// boardRun is one Run's conversation: the board's line and HELLO (replaced by a reboot), the
// reboots so far, and why the board cannot go on once it cannot (every later cell is then not
// run).
type boardRun struct {
	c       *wire.Conn
	h       wire.Hello
	m       *artifacts.Manifest
	opt     RunOptions
	log     io.Writer
	unit    artifacts.Unit
	counter string
	reboots int
	broken  error
}

// logCell writes a measured cell's line, and what the link counted during it when anything
// went wrong on the line.
func (b *boardRun) logCell(ref artifacts.CellRef, r runner.CellResult, t0 time.Time, link0 wire.LinkStats) {
	budgetNote := ""
	if r.Cell.BudgetReached {
		budgetNote = " (stopped at its budget)"
	}
	fmt.Fprintf(b.log, "cell %s %s: %s n=%d in %s%s %s\n", ref.Algorithm, ref.Operation, r.Cell.Status, len(r.Samples), time.Since(t0).Round(time.Millisecond), budgetNote, r.Cell.Error)
	if d := linkDelta(link0, b.c.Stats()); d.Bad() > 0 || d.Repeats > 0 || d.Resends > 0 {
		fmt.Fprintf(b.log, "link: cell %s %s: %s\n", ref.Algorithm, ref.Operation, d)
	}
}

// meterBroke handles a conversation that broke in a cell's load window: the cell keeps its
// measurement and has no energy, with the reason, and the board is restarted for the
// remaining cells when it can (as linkBroke does); an error only when the run must stop.
func (b *boardRun) meterBroke(ctx context.Context, r *runner.CellResult, ref artifacts.CellRef, err error) error {
	if ctx.Err() != nil || !linkBroken(err) {
		return fmt.Errorf("cell %s %s: load window: %w", ref.Algorithm, ref.Operation, err)
	}
	r.Cell.Energy = &artifacts.Energy{Absent: "the board's link broke in the load window: " + err.Error()}
	_, rerr := b.linkBroke(ctx, ref, runner.CellResult{}, err)
	return rerr
}

// linkBroke fails the cell in which the conversation broke with what happened, and restarts
// the board for the remaining cells when it can; it returns an error only when the run was
// cancelled during a restart.
func (b *boardRun) linkBroke(ctx context.Context, ref artifacts.CellRef, r runner.CellResult, err error) (runner.CellResult, error) {
	why := fmt.Sprintf("the board link broke: %v", err)
	if errors.Is(err, wire.ErrWorkLimit) {
		why = fmt.Sprintf("budget exhausted: one operation ran past its limit of %v on this board (%v)", b.c.WorkLimit(), err)
	}
	if n := len(r.Samples); n > 0 {
		why += fmt.Sprintf("; %d samples measured before it are not published", n)
	}
	fmt.Fprintf(b.log, "cell %s %s: %s\n", ref.Algorithm, ref.Operation, why)
	switch {
	case errors.Is(err, wire.ErrGone):
		b.broken = err
	case b.opt.Reboot == nil:
		b.broken = fmt.Errorf("no way to restart it: %w", err)
	case b.reboots >= maxReboots:
		b.broken = fmt.Errorf("restarted %d times already: %w", b.reboots, err)
	default:
		b.reboots++
		fmt.Fprintf(b.log, "board: restarting it for the remaining cells (restart %d of at most %d)\n", b.reboots, maxReboots)
		nc, nh, rerr := b.opt.Reboot(ctx)
		if rerr != nil {
			if ctx.Err() != nil {
				return Failed(why), rerr
			}
			b.broken = fmt.Errorf("restart failed: %w", rerr)
		} else {
			b.c, b.h = nc, nh
		}
	}
	return Failed(why), nil
}

// label completes a measured cell's record: its name, the implementation the image's table
// names for it, its unit and counter, its key form and why it has no energy figure.
func (b *boardRun) label(r *runner.CellResult, ref artifacts.CellRef) {
	r.Cell.Algorithm, r.Cell.Operation, r.Cell.Requested = ref.Algorithm, ref.Operation, b.m.Spec.Iterations
	if im, ok := b.h.Implementations[ref.Algorithm]; ok {
		// The image's implementation table names the code this cell ran; cells of
		// algorithms it does not name (TLS, telemetry) are named after the image itself
		// (artifacts.DeriveImplementation).
		a := im.Artifact()
		r.Cell.Implementation = &a
	}
	if r.Cell.Status == artifacts.StatusOK && r.Cell.TLS != nil && r.Cell.Unit == b.unit {
		// The board's own client in the board's unit (TLS over the serial line): the machine's
		// counter says what that unit is (an emulator's instructions, rp2040js's cycle model).
		r.Cell.Counter = b.counter + "; " + r.Cell.Counter
	}
	if r.Cell.Status == artifacts.StatusOK && r.Cell.TLS == nil {
		r.Cell.Unit = b.unit
		if r.Cell.Counter == "" {
			r.Cell.Counter = b.counter
		} else {
			r.Cell.Counter = b.counter + "; " + r.Cell.Counter
		}
		if ref.Operation != artifacts.OpKeygen && b.m.Kind != artifacts.KindMQTTTelemetry {
			// The C harness hands every operation the key's FIPS 203 or 204 byte form; it
			// has no parsed-key path, whatever the manifest asks for.
			r.Cell.Keys = artifacts.KeysEncoded
		}
	}
	if r.Cell.Status == artifacts.StatusOK && b.opt.EnergyAbsent != "" {
		r.Cell.Energy = &artifacts.Energy{Absent: b.opt.EnergyAbsent}
	}
}

// selfTest runs the firmware's known-answer vectors; a failing vector is an error.
func selfTest(ctx context.Context, c *wire.Conn, log io.Writer) error {
	t0 := time.Now()
	st, err := c.SelfTest(ctx)
	if err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	var skipped []string
	for _, g := range st.Groups {
		if g.Skipped > 0 {
			skipped = append(skipped, g.String())
		}
	}
	fmt.Fprintf(log, "self-test: %d vectors passed, %d failed in %d groups (%s) in %s\n", st.Pass, st.Fail, len(st.Groups), st.Source, time.Since(t0).Round(time.Millisecond))
	if len(skipped) > 0 {
		fmt.Fprintf(log, "self-test: slow groups not run (SELFTEST full=1 runs them): %s\n", strings.Join(skipped, ", "))
	}
	if st.Fail > 0 {
		var bad []string
		for _, g := range st.Groups {
			if g.Fail > 0 {
				// A Wycheproof group's first_fail is the Wycheproof tcId (PROTOCOL.md, SELFTEST).
				ff := g.FirstFail
				if strings.HasPrefix(g.Function, "wycheproof-") {
					ff = "Wycheproof tcId " + ff
				}
				bad = append(bad, fmt.Sprintf("%s (first failure %s)", g, ff))
			}
		}
		return fmt.Errorf("the firmware fails its known-answer self-test: %s", strings.Join(bad, "; "))
	}
	return nil
}

// linkDelta is what the line counted between two snapshots.
func linkDelta(a, b wire.LinkStats) wire.LinkStats {
	return wire.LinkStats{
		Frames: b.Frames - a.Frames, Duplicates: b.Duplicates - a.Duplicates, Corrupt: b.Corrupt - a.Corrupt,
		Gaps: b.Gaps - a.Gaps, Requests: b.Requests - a.Requests, Repeats: b.Repeats - a.Repeats,
		Resends: b.Resends - a.Resends, BoardErrors: b.BoardErrors - a.BoardErrors, KeepAlives: b.KeepAlives - a.KeepAlives,
	}
}

// PlanText states, before a budgeted run starts, how long it may take on a board class: every
// cell stops at its budget once it has its minimum samples, and may pass the budget by about
// one operation.
func PlanText(m *artifacts.Manifest, class string, cells int) string {
	b := m.Spec.BudgetOn(class)
	total := time.Duration(b.Budget) * time.Duration(cells)
	limit := ""
	if b.OperationLimit > 0 {
		limit = fmt.Sprintf("; one operation may run at most %v, else its cell is failed as budget exhausted", time.Duration(b.OperationLimit))
	}
	return fmt.Sprintf("budget: %d cells of at most %v each on %s: expect at most about %v of board time, more when a slow cell's first %d samples take longer than its budget%s",
		cells, time.Duration(b.Budget), OrNone(class), total.Round(time.Second), b.MinIterations, limit)
}

// Skipped is a cell the board cannot run, with the reason.
func Skipped(reason string) runner.CellResult {
	return runner.CellResult{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: reason}}
}

// firmwareKind reports whether board firmware runs the kind's cells (artifacts.KindDef.Firmware).
func firmwareKind(kind artifacts.Kind) bool {
	k, ok := artifacts.LookupKind(kind)
	return ok && k.Firmware
}

// Failed is a failed cell, with the reason.
func Failed(reason string) runner.CellResult {
	return runner.CellResult{Cell: artifacts.Cell{Status: artifacts.StatusFailed, Error: reason}}
}

// chunk is the most iterations one BENCH asks for when the manifest sets a time budget: the
// protocol has no way to stop a BENCH early, so a budgeted cell is measured in short BENCHes.
const chunk = 10

// chunkSize is how many iterations the next BENCH of a budgeted cell asks for: the manifest's
// minimum first (with the warm-up), then as many as the time per iteration so far says fit in
// what is left of the budget, 1..chunk. So a slow cell (an SLH-DSA "s" signature runs for tens
// of seconds in an emulator) passes its budget by at most about one iteration, as the host's
// does, and a fast one still asks for chunk at a time. The budget is the runner's wall time,
// here the emulator's (or a board's) time through the serial line, not the instruction count.
func chunkSize(left, done, minIter int, elapsed, budget time.Duration) int {
	if done == 0 {
		return min(left, max(minIter, 1), chunk)
	}
	per := elapsed / time.Duration(done)
	n := chunk
	if per > 0 {
		n = int((budget - elapsed) / per)
	}
	return min(left, max(n, 1), chunk)
}

func runCell(ctx context.Context, c *wire.Conn, h wire.Hello, m *artifacts.Manifest, ref artifacts.CellRef, bb artifacts.BoardBudget, clock func() time.Duration, progress func(int)) (runner.CellResult, error) {
	fw := h.Firmware + " " + h.Version
	if why := benchSkip(h, m, ref); why != "" {
		return Skipped(why), nil
	}
	msg, msgLen, why := benchMessage(h, m)
	if why != "" {
		return Skipped(why), nil
	}
	if err := c.Seed(ctx, CellSeed(m.Spec.Seed, ref)); err != nil {
		return runner.CellResult{}, err
	}
	var (
		samples  []float64
		rounds   []int
		stackMax uint32
		firstBad *wire.Sample
		bad      int
	)
	budget := time.Duration(bb.Budget)
	start := clock()
	elapsed := func() time.Duration { return clock() - start }
	budgetReached := false
	for len(samples)+bad < m.Spec.Iterations {
		n := m.Spec.Iterations - len(samples) - bad
		warm := 0
		if len(samples)+bad == 0 {
			warm = m.Spec.Warmup
		}
		if budget > 0 {
			n = chunkSize(n, len(samples)+bad, bb.MinIterations, elapsed(), budget)
		}
		req := wire.BenchRequest{Algorithm: ref.Algorithm, Operation: ref.Operation, Iterations: n, Warmup: warm, Message: msg, MessageLen: msgLen}
		okBefore := len(samples)
		sum, err := c.Bench(ctx, req, func(s wire.Sample) {
			if !s.OK {
				bad++
				if firstBad == nil {
					s := s
					firstBad = &s
				}
				return
			}
			samples = append(samples, float64(s.Count))
			if s.Rounds > 0 {
				rounds = append(rounds, s.Rounds)
			}
			stackMax = max(stackMax, s.StackBytes)
			progress(len(samples))
		})
		var de *wire.DeviceError
		switch {
		case errors.As(err, &de) && de.Code == "unsupported":
			return Skipped(fmt.Sprintf("firmware %s refuses %s %s: %v", fw, ref.Algorithm, ref.Operation, de)), nil
		case errors.As(err, &de) && (de.Code == "setup" || de.Code == "badarg"):
			return Failed(fmt.Sprintf("the firmware could not run the benchmark: %v", de)), nil
		case err != nil:
			return runner.CellResult{Samples: samples}, err
		}
		if sum.OK != len(samples)-okBefore || sum.Fail != sum.N-sum.OK {
			return runner.CellResult{}, fmt.Errorf("%w: the firmware's summary (%d ok, %d failed) disagrees with the samples it sent (%d ok)",
				wire.ErrProtocol, sum.OK, sum.Fail, len(samples)-okBefore)
		}
		if budget > 0 && elapsed() >= budget && len(samples)+bad >= max(bb.MinIterations, 1) && len(samples)+bad < m.Spec.Iterations {
			budgetReached = true
			break
		}
	}
	if firstBad != nil {
		return Failed(fmt.Sprintf("%d of %d samples failed the firmware's output check; first: iteration %d: %s",
			bad, bad+len(samples), firstBad.Index, OrNone(firstBad.Reason))), nil
	}
	return benchResult(m, ref, samples, rounds, stackMax, budgetReached)
}

// benchSkip is why the firmware cannot run a cell ("" when it can): a kind or method it does
// not run, an algorithm or operation its HELLO does not offer.
func benchSkip(h wire.Hello, m *artifacts.Manifest, ref artifacts.CellRef) string {
	fw := h.Firmware + " " + h.Version
	switch {
	case !firmwareKind(m.Kind):
		return fmt.Sprintf("%s experiments are not implemented by the board firmware (%s)", m.Kind, fw)
	case m.Spec.Method != artifacts.MethodInProcess:
		return fmt.Sprintf("method %s needs a fresh process per operation; a board's firmware times calls in one program", m.Spec.Method)
	case !slices.Contains(h.Algorithms, ref.Algorithm):
		return fmt.Sprintf("firmware %s does not implement %s (it offers %s)", fw, ref.Algorithm, strings.Join(h.Algorithms, ", "))
	case !slices.Contains(h.Operations, ref.Operation):
		return fmt.Sprintf("firmware %s has no operation %s (it offers %s)", fw, ref.Operation, strings.Join(h.Operations, ", "))
	}
	return ""
}

// benchResult is a BENCH cell whose samples all passed the firmware's check: its sizes, its
// stack, and the signing rounds its samples carry (an error when they do not fit).
func benchResult(m *artifacts.Manifest, ref artifacts.CellRef, samples []float64, rounds []int, stackMax uint32, budgetReached bool) (runner.CellResult, error) {
	r := runner.CellResult{Samples: samples}
	r.Cell.Status = artifacts.StatusOK
	r.Cell.BudgetReached = budgetReached
	stack := int(stackMax)
	r.Cell.Memory = &artifacts.Memory{StackBytes: &stack}
	if a, ok := artifacts.LookupAlgorithm(ref.Algorithm); ok {
		r.Cell.Sizes = sizes(a, ref.Operation)
		if r.Cell.Sizes != nil && m.Kind == artifacts.KindSigBench && ref.Operation != artifacts.OpKeygen {
			r.Cell.Sizes.Message = m.Spec.MessageSize()
		}
	}
	if len(rounds) > 0 {
		if ref.Operation != artifacts.OpSign || len(rounds) != len(samples) {
			return runner.CellResult{}, fmt.Errorf("%w: %d of %d %s samples carry signing rounds", wire.ErrProtocol, len(rounds), len(samples), ref.Operation)
		}
		var err error
		if r.Cell.Rounds, err = artifacts.NewRounds(rounds); err != nil {
			return runner.CellResult{}, fmt.Errorf("%w: %v", wire.ErrProtocol, err)
		}
	}
	return r, nil
}

// benchMessage is what a signature cell's BENCH signs: the manifest's fixed text (sent with
// the request) or its message size (the firmware draws a fresh message per iteration from
// its seeded DRBG). A KEM cell signs nothing. why says why the board cannot sign it.
func benchMessage(h wire.Hello, m *artifacts.Manifest) (msg []byte, msgLen int, why string) {
	if m.Kind != artifacts.KindSigBench {
		return nil, 0, ""
	}
	if t := m.Spec.Message.Text; t != "" {
		if len(t) > wire.MaxFixedMessage {
			return nil, 0, fmt.Sprintf("the manifest's message text is %d bytes; a BENCH request carries at most %d", len(t), wire.MaxFixedMessage)
		}
		return []byte(t), 0, ""
	}
	n := m.Spec.Message.Size
	if h.MaxMessage > 0 && n > h.MaxMessage {
		return nil, 0, fmt.Sprintf("the manifest signs %d-byte messages; firmware %s %s signs at most %d bytes", n, h.Firmware, h.Version, h.MaxMessage)
	}
	return nil, n, ""
}

// sizes are the standard's object sizes for what the operation outputs. The firmware does
// not send its outputs; it checks them (a decapsulation must give back the encapsulated
// secret), which objects of any other size would fail.
func sizes(a artifacts.Algorithm, op string) *artifacts.Sizes {
	var s artifacts.Sizes
	switch op {
	case artifacts.OpKeygen:
		s = artifacts.Sizes{PublicKey: a.PublicKey, PrivateKey: a.PrivateKey}
	case artifacts.OpEncaps:
		s = artifacts.Sizes{Ciphertext: a.Ciphertext, SharedSecret: a.SharedSecret}
	case artifacts.OpDecaps:
		s = artifacts.Sizes{SharedSecret: a.SharedSecret}
	case artifacts.OpSign:
		s = artifacts.Sizes{Signature: a.Signature}
	case artifacts.OpVerify:
		s = artifacts.Sizes{}
	default:
		return nil
	}
	return &s
}
