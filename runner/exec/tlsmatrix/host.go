package tlsmatrix

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/trial"
	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// The tls-matrix executor on the host board (method loopback-tcp). Per cell and stack:
//
//   - the server is a child process (this binary re-run with TLSServerArg) configured with the
//     cell's group, scheme, suite and chain; the client runs in this process;
//   - every handshake is a fresh loopback TCP connection, no resumption (crypto/tls's server
//     has session tickets off); it counts only after both ends negotiated the cell's group,
//     scheme and suite and the server echoed spec.tls.echo seed-derived bytes back unchanged;
//   - with two stacks, their batches alternate within the cell (HostRun.Cell), one
//     handshake at a time;
//   - in the client role (spec.tls.role, the default) the sample is the wall time of the
//     client's Handshake call (the TCP connect and the echo are outside it), the same for both
//     stacks; in the server role (the engine only) it is the server child's own time in its
//     handshake: the engine's Stats.Handshake (from the whole first ClientHello read to the
//     client's Finished verified) less Stats.Wait (blocked reading the client's bytes), i.e.
//     its primitives and protocol work, the CertificateVerify signature included. The
//     engine's signer (Go's crypto/mldsa, crypto/ed25519, ...) reports no ML-DSA rejection
//     rounds, so a host cell records none (TLSCell.RoundsAbsent says so);
//   - CPU per batch of spec.tls.batch handshakes: the client's is this process's
//     getrusage(RUSAGE_SELF) user + system time over the batch (every thread, the garbage
//     collector included; the control exchange with the child falls outside); the server's is
//     the child's own getrusage(RUSAGE_SELF) over the same batch, reported on its control pipe;
//     each divided by the batch's handshakes;
//   - the engine's own Stats (phases on each side, bytes, flights, chain bytes) per handshake;
//     crypto/tls reports none, so its cells carry bytes counted on the client's socket and the
//     chain received, and no phases.
//
// Chains are made once per signature scheme per run (tls13/tlscert) and recorded in
// environment.json (Environment.TLS).

// HostRun is the tls-matrix executor of one run on the host board: its cells share the
// certificate chains, one per signature scheme. Safe for one cell at a time (a run's cells
// take turns).
type HostRun struct {
	// Exe is the binary the server child runs (TLSServerArg); "" means this process's.
	Exe string
	// Fault breaks every cell on purpose (tests only): "echo" changes an echoed byte,
	// "mismatch" has the server negotiate another group.
	Fault string
	// Outside is how cells reach an outside server (spec.tls.server HOST:PORT): the trust
	// anchors and the name checked; nil means the system's roots and the address's host.
	Outside *Outside

	mu     sync.Mutex
	chains map[string]*tlscert.Chain
	order  []string
	role   string // the run's spec.tls.role, as its first cell gave it
}

func (s *HostRun) chain(scheme string) (*tlscert.Chain, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.chains[scheme]; c != nil {
		return c, nil
	}
	sc, err := tls13.ParseSignatureScheme(scheme)
	if err != nil {
		return nil, err
	}
	c, err := tlscert.New(sc, tlsServerName, time.Now())
	if err != nil {
		return nil, fmt.Errorf("make the %s chain: %w", scheme, err)
	}
	if s.chains == nil {
		s.chains = map[string]*tlscert.Chain{}
	}
	s.chains[scheme] = c
	s.order = append(s.order, scheme)
	return c, nil
}

// Environment records the chains the run used, for environment.json.
func (s *HostRun) Environment() *artifacts.TLSEnvironment {
	s.mu.Lock()
	defer s.mu.Unlock()
	env := &artifacts.TLSEnvironment{
		ServerName: tlsServerName,
		ClientCPU:  "getrusage(RUSAGE_SELF) of the runner's process (user + system, all threads) over each batch, per handshake",
		ServerCPU:  "getrusage(RUSAGE_SELF) of the server's child process over each batch, reported by the child on its control pipe, per handshake",
		Latency:    "wall time of the client's Handshake call (Go monotonic clock); TCP connect and the echo excluded",
	}
	if s.role == artifacts.TLSRoleServer {
		env.Latency = serverRoleCounter
	}
	for _, name := range s.order {
		c := s.chains[name]
		env.Chains = append(env.Chains, artifacts.TLSChain{Signature: name, CA: c.CADER, Leaf: c.LeafDER})
	}
	return env
}

// Cell measures one cell with every stack of the manifest. The stacks' batches
// alternate (a batch of the engine, a batch of crypto/tls, ...), each against its own server
// child, so a burst of load on a shared machine falls on both stacks alike and their ratio
// stays fair; only one handshake runs at any time.
func (r *HostRun) Cell(ctx context.Context, c trial.Cell) (trial.Outcome, error) {
	spec := c.Manifest.Spec.TLS
	r.mu.Lock()
	r.role = artifacts.RoleOf(spec.Role)
	r.mu.Unlock()
	group, scheme, _ := strings.Cut(c.Ref.Algorithm, "+")
	runs := make([]trial.Outcome, len(spec.Stacks))
	var live []*tlsMeasure
	defer func() {
		for _, t := range live {
			if t.child != nil {
				t.child.stop()
			}
		}
	}()
	for i, stack := range spec.Stacks {
		start := r.start
		if spec.Server != "" {
			start = r.startOutside
		}
		t, skip, err := start(ctx, c, stack, group, scheme)
		switch {
		case err != nil:
			return trial.Outcome{}, err
		case skip != nil:
			runs[i] = *skip
		default:
			t.index = i
			live = append(live, t)
		}
	}
	active := slices.Clone(live)
	drop := func(t *tlsMeasure, err error) {
		runs[t.index] = trial.Outcome{Cell: trial.Failed(err.Error())}
		active = slices.DeleteFunc(active, func(a *tlsMeasure) bool { return a == t })
	}
	for _, t := range slices.Clone(active) {
		if err := t.warm(c.Manifest.Spec.Warmup); err != nil {
			if ctx.Err() != nil {
				return trial.Outcome{}, ctx.Err()
			}
			drop(t, err)
		}
	}
	n := c.Manifest.Spec.Iterations
	for done := 0; done < n && len(active) > 0; {
		// In rounds, each turn is one batch; the cell's server children stay up between
		// its turns.
		if tt := c.Plan.Turns; tt != nil && done > 0 {
			if err := tt.Yield(ctx); err != nil {
				return trial.Outcome{}, err
			}
		}
		size := min(spec.Batch, n-done)
		for _, t := range slices.Clone(active) {
			t.turns = c.Plan.Turns
			if err := t.runBatch(size); err != nil {
				if ctx.Err() != nil {
					return trial.Outcome{}, ctx.Err()
				}
				drop(t, err)
			}
		}
		done += size
		if c.Plan.Progress != nil {
			c.Plan.Progress(done)
		}
	}
	for _, t := range active {
		r, err := t.result(spec.Batch)
		if err != nil {
			drop(t, err)
			continue
		}
		runs[t.index] = r
	}
	for i, stack := range spec.Stacks {
		runs[i].Cell.Variant = artifacts.TLSStackVariant(stack)
		if c.Plan.Turns != nil && runs[i].Cell.Status == artifacts.StatusOK {
			runs[i].Cell.Block = spec.Batch
		}
	}
	meterFirstStack(ctx, c.Plan, spec.Stacks[0], active, runs)
	out := runs[0]
	out.Variants = runs[1:]
	return out, nil
}

// meterFirstStack is a cell's metered pass (the plan's Meter, after its timed batches): the
// first stack's handshakes, each with its echo on a fresh connection to the same server
// child, back to back in the load window. Both ends run on this machine, so the window's power
// is the client's and the server's; T_op is the cell's median handshake. The other stacks
// have no window of their own (power.csv holds one per cell), and a cell against an outside
// server none (that server's energy is its own).
func meterFirstStack(ctx context.Context, p trial.Plan, stack string, active []*tlsMeasure, runs []trial.Outcome) {
	if p.Meter == nil || runs[0].Cell.Status != artifacts.StatusOK || ctx.Err() != nil {
		return
	}
	var t *tlsMeasure
	for _, a := range active {
		if a.index == 0 && a.child != nil {
			t = a
		}
	}
	if t == nil {
		return
	}
	tr := trial.Trial[int, struct{}]{
		Prep: func(i int) (int, error) { return i, nil },
		Op: func(int) (struct{}, error) {
			_, _, err := t.one()
			return struct{}{}, err
		},
		Check: func(int, struct{}) error { return nil },
	}
	r := &runs[0]
	r.Power, r.LoadOps, r.PowerAbsent = trial.MeterPass(ctx, tr, p.Meter, p.MeterLoad)
	if r.Power == nil {
		r.Cell.Energy = &artifacts.Energy{Absent: "the meter's load window failed: " + r.PowerAbsent}
	}
	for i := 1; i < len(runs); i++ {
		if runs[i].Cell.Status == artifacts.StatusOK {
			runs[i].Cell.Energy = &artifacts.Energy{Absent: "the metered pass runs the cell's first stack (" + stack + ") only: power.csv holds one load window per cell"}
		}
	}
}

// start prepares one stack of a cell: its chain, client and server child. It
// returns a skipped or failed cell instead when the stack cannot run the cell, and an error
// only when the run itself broke (cancellation, no binary to re-run).
func (r *HostRun) start(ctx context.Context, c trial.Cell, stack, group, scheme string) (*tlsMeasure, *trial.Outcome, error) {
	spec := c.Manifest.Spec.TLS
	bad := func(msg string) (*tlsMeasure, *trial.Outcome, error) {
		return nil, &trial.Outcome{Cell: trial.Failed(msg)}, nil
	}
	if stack == artifacts.StackCryptoTLS {
		if _, ok := cryptoTLSCurve(group); !ok {
			return nil, &trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "crypto/tls has no " + group}}, nil
		}
	}
	chain, err := r.chain(scheme)
	if err != nil {
		return bad(err.Error())
	}
	key, err := x509.MarshalPKCS8PrivateKey(chain.Key)
	if err != nil {
		return bad("encode the leaf key: " + err.Error())
	}
	cfg := tlsCellConfig{Stack: stack, Group: group, Scheme: scheme, Suite: spec.CipherSuite, Echo: spec.Echo, Fault: r.Fault}
	client, err := newTLSClient(&cfg, chain.Pool())
	if err != nil {
		return bad(err.Error())
	}
	srvCfg := cfg
	srvCfg.Certs, srvCfg.Key = chain.Certificates(), key
	exe := r.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("find the pqrepro binary for the server child: %w", err)
		}
	}
	child, err := startTLSChild(ctx, exe, &srvCfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return bad(err.Error())
	}
	return &tlsMeasure{ctx: ctx, cfg: &cfg, client: client, child: child, addr: child.addr, role: artifacts.RoleOf(spec.Role),
		echo: trial.NewDRBG(c.Manifest.Spec.Seed, c.Ref.Algorithm+"/"+stack+"/echo")}, nil, nil
}

// startOutside prepares one stack of a cell against the outside server spec.tls.server: its
// client alone (no chain of its own, no child, no echo).
func (r *HostRun) startOutside(ctx context.Context, c trial.Cell, stack, group, scheme string) (*tlsMeasure, *trial.Outcome, error) {
	spec := c.Manifest.Spec.TLS
	if stack == artifacts.StackCryptoTLS {
		if _, ok := cryptoTLSCurve(group); !ok {
			return nil, &trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "crypto/tls has no " + group}}, nil
		}
	}
	cfg := tlsCellConfig{Stack: stack, Group: group, Scheme: scheme, Suite: spec.CipherSuite}
	var roots *x509.CertPool
	if r.Outside != nil {
		roots = r.Outside.Roots
	}
	client, err := newTLSClientFor(&cfg, roots, r.Outside.serverName(spec.Server))
	if err != nil {
		return nil, &trial.Outcome{Cell: trial.Failed(err.Error())}, nil
	}
	return &tlsMeasure{ctx: ctx, cfg: &cfg, client: client, addr: spec.Server, role: artifacts.TLSRoleClient}, nil, nil
}

// tlsMeasure runs one stack's handshakes of a cell against its child and keeps what they
// measured.
type tlsMeasure struct {
	ctx    context.Context
	cfg    *tlsCellConfig
	client *tlsClient
	child  *tlsChild // nil against an outside server
	addr   string    // where the handshakes go: the child's, or spec.tls.server
	peer   *artifacts.TLSPeer
	echo   *trial.DRBG // nil against an outside server: no echo
	index  int         // the stack's place in spec.tls.stacks
	dialed int         // connections the child has been offered
	role   string      // spec.tls.role: whose time a sample is

	srvPrev int64 // the child's CPU at the end of the previous batch
	samples []float64
	// turns is the cell's place in the run's rounds (nil when not in rounds); rounds and
	// offsets are each sample's round and start.
	turns                *trial.Turns
	rounds               []int
	offsets              []float64
	clientCPU, serverCPU []float64
	clients, servers     []tlsHandshake
	retry                bool
}

// one runs a handshake and its echo on a fresh connection.
func (t *tlsMeasure) one() (tlsHandshake, time.Duration, error) {
	if err := t.ctx.Err(); err != nil {
		return tlsHandshake{}, 0, err
	}
	var msg []byte
	if t.echo != nil {
		msg = t.echo.Bytes(t.cfg.Echo)
	}
	conn, err := dialOutside(t.ctx, t.addr, 5*time.Second)
	if err != nil {
		if t.child != nil {
			return tlsHandshake{}, 0, fmt.Errorf("connect to the server child: %w", err)
		}
		return tlsHandshake{}, 0, err
	}
	t.dialed++
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	rec, d, err := t.client.handshake(conn, msg)
	if err != nil && t.child == nil {
		err = handshakeError(t.addr, tlsHandshakeTimeout, err)
	}
	if err == nil && t.child == nil {
		if rec.leaf == nil {
			return rec, d, fmt.Errorf("handshake with %s: no server certificate", t.addr)
		}
		t.peer = Peer(t.addr, rec.leaf)
	}
	return rec, d, err
}

// fail adds the server's side of a failed handshake to the client's error.
func (t *tlsMeasure) fail(i int, err error) error {
	if t.child == nil {
		return fmt.Errorf("handshake %d: %w", i, err)
	}
	if resp, merr := t.child.mark(t.dialed); merr == nil {
		for _, h := range resp.Handshakes {
			if h.Err != "" {
				return fmt.Errorf("handshake %d: client: %w; server: %s", i, err, h.Err)
			}
		}
	}
	return fmt.Errorf("handshake %d: %w", i, err)
}

// served checks the server's records of a batch.
func served(resp tlsMarkResp, want int, cfg *tlsCellConfig) error {
	if len(resp.Handshakes) != want {
		return fmt.Errorf("the server child recorded %d connections, the client made %d", len(resp.Handshakes), want)
	}
	for _, h := range resp.Handshakes {
		if h.Err != "" {
			return fmt.Errorf("server: %s", h.Err)
		}
		if err := h.check(cfg); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	return nil
}

// warm runs the untimed warm-up handshakes (checked like the others) and takes the child's
// CPU baseline.
func (t *tlsMeasure) warm(n int) error {
	for i := range n {
		if _, _, err := t.one(); err != nil {
			return t.fail(-1-i, err)
		}
	}
	if t.child == nil {
		return nil
	}
	base, err := t.child.mark(t.dialed)
	if err != nil {
		return err
	}
	if err := served(base, n, t.cfg); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	t.srvPrev = base.CPUNs
	return nil
}

// runBatch times size handshakes and both sides' CPU over them.
func (t *tlsMeasure) runBatch(size int) error {
	c0, err := processCPU()
	if err != nil {
		return err
	}
	var samples []float64
	var clients []tlsHandshake
	var rounds []int
	var offsets []float64
	for range size {
		if t.turns != nil {
			r, off := t.turns.Now()
			rounds, offsets = append(rounds, r), append(offsets, float64(off.Nanoseconds()))
		}
		rec, d, err := t.one()
		if err != nil {
			return t.fail(len(t.samples)+len(samples), err)
		}
		samples = append(samples, float64(d.Nanoseconds()))
		clients = append(clients, rec)
	}
	c1, err := processCPU()
	if err != nil {
		return err
	}
	if t.child == nil {
		t.keep(samples, clients, rounds, offsets)
		t.clientCPU = append(t.clientCPU, float64(c1-c0)/float64(size))
		return nil
	}
	resp, err := t.child.mark(t.dialed)
	if err != nil {
		return err
	}
	if err := served(resp, size, t.cfg); err != nil {
		return err
	}
	if t.role == artifacts.TLSRoleServer {
		if samples, err = serverOwnTimes(resp.Handshakes); err != nil {
			return err
		}
	}
	t.keep(samples, clients, rounds, offsets)
	t.servers = append(t.servers, resp.Handshakes...)
	t.clientCPU = append(t.clientCPU, float64(c1-c0)/float64(size))
	t.serverCPU = append(t.serverCPU, float64(resp.CPUNs-t.srvPrev)/float64(size))
	t.srvPrev = resp.CPUNs
	return nil
}

// serverRoleCounter says what a server-role sample is.
const serverRoleCounter = "Go monotonic clock in the server child: the engine server's handshake (from the whole first ClientHello read to the client's Finished verified) less its time blocked reading the client's bytes (tls13 Stats.Handshake - Stats.Wait); fresh loopback TCP connection, no resumption"

// serverOwnTimes are a batch's server-role samples: each handshake's server time less its
// waits for the client (the engine's handshake and wait phases), in ns.
func serverOwnTimes(served []tlsHandshake) ([]float64, error) {
	out := make([]float64, len(served))
	for i, h := range served {
		hs, ok1 := h.Phases["handshake"]
		wait, ok2 := h.Phases["wait"]
		if !ok1 || !ok2 || wait > hs {
			return nil, fmt.Errorf("server role: the server reported no handshake and wait times (%v)", h.Phases)
		}
		out[i] = hs - wait
	}
	return out, nil
}

// keep adds a batch's samples and client records.
func (t *tlsMeasure) keep(samples []float64, clients []tlsHandshake, rounds []int, offsets []float64) {
	t.samples = append(t.samples, samples...)
	t.rounds, t.offsets = append(t.rounds, rounds...), append(t.offsets, offsets...)
	t.clients = append(t.clients, clients...)
	for _, c := range clients {
		t.retry = t.retry || c.Retry
	}
}

// result is the stack's cell from its batches.
func (t *tlsMeasure) result(batch int) (trial.Outcome, error) {
	if len(t.clients) == 0 {
		return trial.Outcome{}, errors.New("no handshake was timed")
	}
	last := t.clients[len(t.clients)-1]
	cell := artifacts.Cell{
		Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds,
		Counter: "Go monotonic clock around the client's Handshake call (fresh loopback TCP connection, no resumption)",
		Energy:  &artifacts.Energy{Absent: "not measured per handshake: a trial.RAPL reading covers both processes and everything else on the package"},
		TLS: &artifacts.TLSCell{Group: t.cfg.Group, Signature: t.cfg.Scheme, CipherSuite: t.cfg.Suite, Stack: t.cfg.Stack, Batch: batch, Role: artifacts.TLSRoleClient,
			BytesClient: last.Sent, BytesServer: last.Received, Flights: last.Flights, ChainBytes: last.ChainBytes, HelloRetry: t.retry},
	}
	if t.role == artifacts.TLSRoleServer {
		cell.Counter, cell.TLS.Role = serverRoleCounter, artifacts.TLSRoleServer
		if strings.HasPrefix(t.cfg.Scheme, "ML-DSA") {
			cell.TLS.RoundsAbsent = "the engine server's signer, Go's crypto/mldsa, does not report its rejection rounds"
		}
	}
	series := []artifacts.TLSSeries{
		{Series: artifacts.TLSSeriesCPU, Side: artifacts.SideClient, Values: t.clientCPU},
		{Series: artifacts.TLSSeriesCPU, Side: artifacts.SideServer, Values: t.serverCPU},
	}
	cell.TLS.ClientCPU, cell.TLS.ServerCPU = runner.Summarize(t.clientCPU), runner.Summarize(t.serverCPU)
	if t.child == nil {
		cell.Counter = "Go monotonic clock around the client's Handshake call (fresh TCP connection to " + t.addr + ", no resumption)"
		cell.Energy.Absent = "not measured per handshake: the outside server's energy is its own"
		cell.TLS.ServerCPU, cell.TLS.Server = nil, t.peer
		series = series[:1]
	}
	for _, side := range []struct {
		name string
		recs []tlsHandshake
	}{{artifacts.SideClient, t.clients}, {artifacts.SideServer, t.servers}} {
		for _, phase := range artifacts.TLSPhaseNames() {
			vals := make([]float64, 0, len(side.recs))
			for _, h := range side.recs {
				if v, ok := h.Phases[phase]; ok {
					vals = append(vals, v)
				}
			}
			if len(vals) == 0 {
				continue
			}
			if len(vals) != len(side.recs) {
				return trial.Outcome{}, errors.New("the engine reported phase " + phase + " for some handshakes only")
			}
			series = append(series, artifacts.TLSSeries{Series: phase, Side: side.name, Values: vals})
			cell.TLS.Phases = append(cell.TLS.Phases, artifacts.TLSPhase{Name: phase, Side: side.name, Stats: runner.Summarize(vals)})
		}
	}
	return trial.Outcome{Cell: cell, Samples: t.samples, TLS: series, Rounds: t.rounds, Offsets: t.offsets}, nil
}
