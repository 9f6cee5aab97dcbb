package tlsmatrix

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// DefaultTLSName is the server name a board is told to check when device.RunOptions.TLSName
// is empty.
const DefaultTLSName = "pqrepro.test"

// tlsCodepoints resolves a matrix cell's group and scheme names to their TLS codepoints.
func tlsCodepoints(group, scheme string) (g, s uint16, ok bool) {
	tg, gok := artifacts.LookupTLSGroup(group)
	i := slices.IndexFunc(artifacts.TLSSignatures(), func(x artifacts.TLSSignature) bool { return x.Name == scheme })
	if !gok || i < 0 {
		return 0, 0, false
	}
	return tg.Codepoint, artifacts.TLSSignatures()[i].Codepoint, true
}

// Board is the device layer's tls-matrix executor (device.Executor): it measures one cell with
// the board's own TLS client against pqrepro's engine as the server, which the runner starts for
// the cell (firmware/PROTOCOL.md, TLS), or against an outside server (boardoutside.go). On a
// board with its own network the samples are its handshake times (µs); on a board whose client
// speaks over the serial line they are its instruction counts, with its phase split, and
// everything they depend on follows from the manifest's seed (startSeeded). The server's phases,
// bytes and CPU are the engine's; one TLS request per CPU batch, so the server's CPU is read
// around each batch.
func Board(ctx context.Context, dc device.Cell) (runner.CellResult, error) {
	b := &boardCell{Cell: dc, spec: dc.Manifest.Spec.TLS}
	b.group, b.scheme, _ = strings.Cut(dc.Ref.Algorithm, "+")
	if skip, err := b.offered(); skip != nil || err != nil {
		return *skip, err
	}
	if artifacts.RoleOf(b.spec.Role) == artifacts.TLSRoleServer {
		// The board as the server, the runner playing the client (boardserver.go).
		return b.runServer(ctx)
	}
	if b.spec.Server != "" && !b.serial {
		// A board on its own network would connect to the engine the runner starts for the
		// cell; a cell measured against another server would be recorded as the engine's.
		return device.Failed("spec.tls.server " + b.spec.Server + ": only a board whose client speaks over the serial line (HELLO tls_io=serial) runs against an outside server"), nil
	}
	if fail := b.start(ctx); fail != "" {
		return device.Failed(fail), nil
	}
	if b.srv != nil {
		defer b.srv.Close()
	}
	if b.serial {
		// The trust anchor over the line, untimed, before the cell (PROTOCOL.md, TLSCA).
		if _, err := dc.Conn.TLSPinCA(ctx, b.caDER()); err != nil {
			var de *wire.DeviceError
			if errors.As(err, &de) {
				return device.Failed(fmt.Sprintf("the board refused the %s CA: %s %s", b.scheme, de.Code, de.Msg)), nil
			}
			return runner.CellResult{}, err
		}
	}
	if err := dc.Conn.Seed(ctx, device.CellSeed(dc.Manifest.Spec.Seed, dc.Ref)); err != nil {
		return runner.CellResult{}, err
	}
	for done := 0; done < dc.Manifest.Spec.Iterations; {
		n := min(b.spec.Batch, dc.Manifest.Spec.Iterations-done)
		if fail, err := b.batch(ctx, done, n); fail != "" || err != nil {
			return device.Failed(fail), err
		}
		done += n
		dc.Progress(done)
	}
	return b.result(), nil
}

// boardCell is one tls-matrix cell on a board: the cell's group and scheme with their
// codepoints, the engine server it connects to, and what the batches so far measured.
type boardCell struct {
	device.Cell
	spec          *artifacts.TLSSpec
	group, scheme string
	gc, sc        uint16
	ca            *tlscert.CA
	chain         *tlscert.Chain
	name, host    string
	now           time.Time       // the time the board checks the leaf's validity at
	srv           *TLSBoardServer // nil against an outside server
	// Against an outside server: the CA the board is given, who answered (from the runner's
	// own handshake), the chain's bytes, and the relay's count of each connection.
	outsideCA  *x509.Certificate
	peer       *artifacts.TLSPeer
	chainBytes int
	relayed    []*countingConn

	samples, serverCPU []float64
	// boardPhases are the board's own split of each timed handshake's count, by
	// artifacts.BoardPhaseNames (serial only; nil when the board reports none).
	boardPhases       map[string][]float64
	served            []TLSServed
	heapMax, stackMax uint32
	retry             bool
	// serial: the board's client speaks over the serial line (HELLO tls_io=serial), the
	// project's C client: samples are its instruction counts, the runner relays its records.
	serial bool
}

// offered skips (or fails) a cell the board's TLS client or the runner cannot run; it returns
// nil, nil when it can run.
func (b *boardCell) offered() (*runner.CellResult, error) {
	r := func(c runner.CellResult) (*runner.CellResult, error) { return &c, nil }
	var ok bool
	b.serial = b.Hello.TLSIO() == "serial"
	b.gc, b.sc, ok = tlsCodepoints(b.group, b.scheme)
	if !ok {
		return r(device.Failed("unknown TLS cell " + b.Ref.Algorithm))
	}
	groups, sigs, err := b.Hello.TLSGroups()
	if err != nil {
		return &runner.CellResult{}, err
	}
	fw := b.Hello.Firmware + " " + b.Hello.Version
	switch {
	case len(groups) == 0:
		return r(device.Skipped(fmt.Sprintf("firmware %s has no TLS client (HELLO offers no tls_groups)", fw)))
	case !slices.Contains(groups, b.gc):
		return r(device.Skipped(fmt.Sprintf("the board's TLS client does not offer %s (group %d)", b.group, b.gc)))
	case !slices.Contains(sigs, b.sc):
		return r(device.Skipped(fmt.Sprintf("the board's TLS client does not accept %s (scheme %#04x)", b.scheme, b.sc)))
	case b.Options.TLSCADir == "" && !b.serial && b.spec.Server == "":
		return r(device.Skipped("the runner has no TLS CA folder configured, so no CA a board could have pinned"))
	}
	return nil, nil
}

// start loads the scheme's CA, issues the server's chain and starts the engine server; it
// returns why the cell fails when it cannot.
func (b *boardCell) start(ctx context.Context) string {
	opt := b.Options
	ts, err := tls13.ParseSignatureScheme(b.scheme)
	if err != nil {
		return err.Error()
	}
	if b.spec.Server != "" {
		return b.startOutside(ctx, ts)
	}
	b.name = opt.TLSName
	if b.name == "" {
		b.name = DefaultTLSName
	}
	if b.serial {
		return b.startSeeded(ts)
	}
	if b.ca, err = tlscert.LoadOrCreateCA(opt.TLSCADir, ts, time.Now()); err != nil {
		return "the " + b.scheme + " CA: " + err.Error()
	}
	if b.chain, err = b.ca.Issue(b.name, time.Now()); err != nil {
		return err.Error()
	}
	b.now, b.chainBytes = time.Now(), len(b.chain.LeafDER)
	return b.listen(nil)
}

// startSeeded starts the cell of a board whose client speaks over the serial line: everything
// its instruction count depends on is a function of the manifest's seed — the CA (the runner's
// CA folder's when it has one, else one made from the seed: the board is given it over the
// line before the cell), the leaf (issued from the seed, with the CA's validity), the time the
// board checks validity at, and the server's random choices — so that two runs of the cell
// give the same counts (issue: identical samples.csv).
func (b *boardCell) startSeeded(ts tls13.SignatureScheme) string {
	opt, seed := b.Options, []byte(b.Manifest.Spec.Seed)
	var err error
	if opt.TLSCADir != "" {
		b.ca, err = tlscert.LoadOrCreateCA(opt.TLSCADir, ts, time.Now())
	} else {
		b.ca, err = tlscert.NewSeededCA(ts, seed)
	}
	if err != nil {
		return "the " + b.scheme + " CA: " + err.Error()
	}
	if b.chain, err = b.ca.IssueSeeded(b.name, seed); err != nil {
		return err.Error()
	}
	b.now, b.chainBytes = b.chain.SeededNow(), len(b.chain.LeafDER)
	return b.listen(device.CellSeed(b.Manifest.Spec.Seed, b.Ref))
}

// listen starts the engine server for the cell (deterministic when seed is set).
func (b *boardCell) listen(seed []byte) string {
	opt := b.Options
	listen := opt.TLSListen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	var err error
	b.srv, err = StartTLSBoardServer(listen, TLSBoardCell{Group: b.group, Scheme: b.scheme, Suite: b.spec.CipherSuite, Echo: b.spec.Echo, Seed: seed}, b.chain)
	if err != nil {
		return err.Error()
	}
	b.host = opt.TLSHost
	if b.host == "" {
		b.host = b.srv.Addr().IP.String()
	}
	return ""
}

// batch has the board make n handshakes (after the warm-up ones, in the first batch) in one
// TLS request and matches each to the server's record of it; it returns why the cell fails, or
// the error that broke the conversation.
func (b *boardCell) batch(ctx context.Context, done, n int) (string, error) {
	warm := 0
	if done == 0 {
		warm = min(b.Manifest.Spec.Warmup, wire.MaxTLSWarmup)
	}
	cpu0 := cpuSoFar()
	reports, err := b.request(ctx, warm, n)
	if err != nil {
		var de *wire.DeviceError
		if errors.As(err, &de) {
			return fmt.Sprintf("the board refused the TLS request: %s %s", de.Code, de.Msg), nil
		}
		return "", err
	}
	cpu := cpuSoFar() - cpu0
	recs, fail := b.records(ctx, warm+n)
	if fail != "" {
		return fail, nil
	}
	for i, hs := range reports {
		r := recs[warm+i]
		switch {
		case !hs.OK:
			alert := ""
			if hs.Alert >= 0 {
				alert = fmt.Sprintf(" (alert %d)", hs.Alert)
			}
			return fmt.Sprintf("handshake %d failed on the board: %s%s; server: %s", done+i, hs.Reason, alert, device.OrNone(r.Err)), nil
		case r.Err != "":
			return fmt.Sprintf("handshake %d: the board reports success, the server: %s", done+i, r.Err), nil
		case r.Group != b.group || r.Scheme != b.scheme || r.Suite != b.spec.CipherSuite:
			return fmt.Sprintf("handshake %d negotiated %s / %s / %s, the cell is %s / %s / %s", done+i, r.Group, r.Scheme, r.Suite, b.group, b.scheme, b.spec.CipherSuite), nil
		}
		if b.serial {
			b.samples = append(b.samples, float64(hs.Count))
			b.addPhases(hs.Phases)
		} else {
			b.samples = append(b.samples, float64(hs.Micros))
		}
		b.served = append(b.served, r)
		b.heapMax, b.stackMax = max(b.heapMax, hs.Heap), max(b.stackMax, hs.Stack)
		b.retry = b.retry || r.HelloRetry
	}
	if b.srv != nil {
		b.serverCPU = append(b.serverCPU, float64(cpu.Nanoseconds())/float64(n))
	}
	return "", nil
}

// records is the server side's record of the k connections of the last request, the warm-up
// ones first: the engine server's own, or against an outside server the relay's count of what
// it carried. It returns why the cell fails when they cannot be had.
func (b *boardCell) records(ctx context.Context, k int) ([]TLSServed, string) {
	recs := make([]TLSServed, 0, k)
	if b.srv == nil {
		if len(b.relayed) != k {
			return nil, fmt.Sprintf("the relay opened %d connections to %s for the board's %d handshakes", len(b.relayed), b.spec.Server, k)
		}
		for _, c := range b.relayed {
			recs = append(recs, c.record(b))
		}
		b.relayed = nil
		return recs, ""
	}
	for len(recs) < k {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := b.srv.Next(wctx)
		cancel()
		if err != nil {
			return nil, fmt.Sprintf("the server saw %d of the board's %d connections: %v", len(recs), k, err)
		}
		recs = append(recs, r)
	}
	return recs, ""
}

// caDER is the trust anchor the board is given: the outside server's CA, or the cell's.
func (b *boardCell) caDER() []byte {
	if b.outsideCA != nil {
		return b.outsideCA.Raw
	}
	return b.ca.DER
}

// echo is the bytes the board echoes after each handshake: none against an outside server.
func (b *boardCell) echo() int {
	if b.srv == nil {
		return 0
	}
	return b.spec.Echo
}

// request sends one TLS request for warm + n handshakes and returns the board's reports: over
// the serial line (the runner relays each handshake to the cell's server) or by the board's
// own network.
func (b *boardCell) request(ctx context.Context, warm, n int) ([]wire.Handshake, error) {
	var reports []wire.Handshake
	add := func(hs wire.Handshake) { reports = append(reports, hs) }
	if b.serial {
		dial := b.dialOutsideCounted
		if b.srv != nil {
			addr := b.srv.Addr().String()
			dial = func(ctx context.Context) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", addr)
			}
		}
		fp := sha256.Sum256(b.caDER())
		req := wire.TLSSerialRequest{Group: b.gc, Sig: b.sc, SNI: b.name, CA: fp[:16],
			Iterations: n, Warmup: warm, Echo: b.echo(), Now: b.now}
		_, err := b.Conn.TLSSerial(ctx, req, dial, add)
		return reports, err
	}
	req := wire.TLSRequest{Host: b.host, Port: b.srv.Addr().Port, Group: b.gc, Sig: b.sc, SNI: b.name, CA: b.ca.Fingerprint(),
		Iterations: n, Warmup: warm, Echo: b.spec.Echo}
	_, err := b.Conn.TLS(ctx, req, add)
	return reports, err
}

// result is the measured cell: the board's handshake times, the server's CPU per batch and
// its phases per handshake.
func (b *boardCell) result() runner.CellResult {
	spec, served := b.spec, b.served
	last := served[len(served)-1]
	res := runner.CellResult{Samples: b.samples}
	res.Cell = artifacts.Cell{
		Status: artifacts.StatusOK, Unit: artifacts.UnitMicroseconds,
		Counter: "the board's own microsecond timer around its handshake (connect excluded; firmware/PROTOCOL.md TLS)",
		TLS: &artifacts.TLSCell{Group: b.group, Signature: b.scheme, CipherSuite: spec.CipherSuite, Stack: artifacts.StackPQRepro,
			Batch: spec.Batch, BytesClient: last.Received, BytesServer: last.Sent,
			Flights: last.Flights, ChainBytes: b.chainBytes, HelloRetry: b.retry, Server: b.peer, Role: artifacts.TLSRoleClient,
			Client: "board firmware " + b.Hello.Firmware + " " + b.Hello.Version + tlsClientName(b.Hello)},
	}
	if b.serial {
		// The project's C client (firmware/crypto/tls13), never wolfSSL: its own instruction
		// counts over its compute segments (PROTOCOL.md, "TLS over the serial line").
		res.Cell.Unit = artifacts.Unit(b.Hello.Unit)
		res.Cell.Counter = "the board's " + b.Hello.Counter + " summed over its own computation of each handshake (ClientHello, then the server's flight buffered on the board; waiting for bytes excluded; firmware/PROTOCOL.md TLS over the serial line)"
		res.Cell.TLS.Client = SerialClient + " (board firmware " + b.Hello.Firmware + " " + b.Hello.Version + ")"
	}
	if b.stackMax > 0 || b.heapMax > 0 {
		res.Cell.Memory = &artifacts.Memory{}
		if b.stackMax > 0 {
			s := int(b.stackMax)
			res.Cell.Memory.StackBytes = &s
		}
		if b.heapMax > 0 {
			hp := int(b.heapMax)
			res.Cell.Memory.PeakHeapBytes = &hp
		}
	}
	if b.srv != nil && !b.serial {
		// Over the serial line the runner's process also relays the board's frames, which
		// costs more CPU than the engine's side of a handshake: that process's CPU is not the
		// server's, so a serial board's cell records none (the server's phases remain).
		res.Cell.TLS.ServerCPU = artifacts.Summarize(b.serverCPU)
		res.TLS = []artifacts.TLSSeries{{Series: artifacts.TLSSeriesCPU, Side: artifacts.SideServer, Values: b.serverCPU}}
	}
	if b.serial && len(b.boardPhases["rest"]) == len(b.samples) {
		for _, phase := range artifacts.BoardPhaseNames() {
			vals := b.boardPhases[phase]
			res.TLS = append(res.TLS, artifacts.TLSSeries{Series: phase, Side: artifacts.SideClient, Values: vals})
			res.Cell.TLS.Phases = append(res.Cell.TLS.Phases, artifacts.TLSPhase{Name: phase, Side: artifacts.SideClient, Unit: res.Cell.Unit, Stats: artifacts.Summarize(vals)})
		}
	}
	for _, phase := range artifacts.TLSPhaseNames() {
		vals := make([]float64, 0, len(served))
		for _, r := range served {
			if v, ok := r.Phases[phase]; ok {
				vals = append(vals, v)
			}
		}
		if len(vals) != len(served) {
			continue // a phase the server side does not have
		}
		res.TLS = append(res.TLS, artifacts.TLSSeries{Series: phase, Side: artifacts.SideServer, Values: vals})
		res.Cell.TLS.Phases = append(res.Cell.TLS.Phases, artifacts.TLSPhase{Name: phase, Side: artifacts.SideServer, Stats: artifacts.Summarize(vals)})
	}
	return res
}

// addPhases keeps the board's split of one timed handshake's count (all five phases, or none
// when the board reports no split).
func (b *boardCell) addPhases(p *wire.TLSPhases) {
	if p == nil {
		return
	}
	if b.boardPhases == nil {
		b.boardPhases = map[string][]float64{}
	}
	for name, v := range map[string]uint64{"key-exchange": p.KeyExchange, "chain-verify": p.Chain, "verify": p.CertificateVerify,
		"key-schedule-records": p.KeyScheduleRecords, "rest": p.Rest} {
		b.boardPhases[name] = append(b.boardPhases[name], float64(v))
	}
}

// SerialClient names the TLS client of a board whose HELLO says tls_io=serial.
const SerialClient = artifacts.SerialTLSClient

// tlsClientName is the board's TLS library as its HELLO names it (tls=), if it does.
func tlsClientName(h wire.Hello) string {
	if v, ok := h.Frame.Get("tls"); ok && v != "" {
		return ", " + v
	}
	return ""
}

// cpuSoFar is the runner process's user + system CPU so far (processCPU; 0 when it cannot be
// read): the engine server runs in it, so over a TLS request to a board on its own network it
// is the server's CPU for the batch plus the runner's reading of the board's reports, which is
// small beside a handshake. (Over the serial line the relay's work is not small: no CPU is
// recorded then.)
func cpuSoFar() time.Duration {
	ns, err := processCPU()
	if err != nil {
		return 0
	}
	return time.Duration(ns)
}
