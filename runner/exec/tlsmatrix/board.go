package tlsmatrix

import (
	"context"
	"errors"
	"fmt"
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

// Board is the device layer's tls-matrix executor (device.Executor): it measures one cell with the board's own TLS client against pqrepro's
// engine as the server, which the runner starts for the cell (firmware/PROTOCOL.md, TLS). The
// samples are the board's own handshake times (µs); the server's phases, bytes and CPU are the
// engine's. One TLS request per CPU batch, so the server's CPU is read around each batch.
func Board(ctx context.Context, dc device.Cell) (runner.CellResult, error) {
	c, h, m, ref, opt, progress := dc.Conn, dc.Hello, dc.Manifest, dc.Ref, dc.Options, dc.Progress
	spec := m.Spec.TLS
	group, scheme, _ := strings.Cut(ref.Algorithm, "+")
	gc, sc, ok := tlsCodepoints(group, scheme)
	if !ok {
		return device.Failed("unknown TLS cell " + ref.Algorithm), nil
	}
	groups, sigs, err := h.TLSGroups()
	if err != nil {
		return runner.CellResult{}, err
	}
	fw := h.Firmware + " " + h.Version
	switch {
	case len(groups) == 0:
		return device.Skipped(fmt.Sprintf("firmware %s has no TLS client (HELLO offers no tls_groups)", fw)), nil
	case !slices.Contains(groups, gc):
		return device.Skipped(fmt.Sprintf("the board's TLS client does not offer %s (group %d)", group, gc)), nil
	case !slices.Contains(sigs, sc):
		return device.Skipped(fmt.Sprintf("the board's TLS client does not accept %s (scheme %#04x)", scheme, sc)), nil
	case opt.TLSCADir == "":
		return device.Skipped("the runner has no TLS CA folder configured, so no CA a board could have pinned"), nil
	}
	ts, err := tls13.ParseSignatureScheme(scheme)
	if err != nil {
		return device.Failed(err.Error()), nil
	}
	ca, err := tlscert.LoadOrCreateCA(opt.TLSCADir, ts, time.Now())
	if err != nil {
		return device.Failed("the " + scheme + " CA: " + err.Error()), nil
	}
	name := opt.TLSName
	if name == "" {
		name = DefaultTLSName
	}
	chain, err := ca.Issue(name, time.Now())
	if err != nil {
		return device.Failed(err.Error()), nil
	}
	listen := opt.TLSListen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	srv, err := StartTLSBoardServer(listen, TLSBoardCell{Group: group, Scheme: scheme, Suite: spec.CipherSuite, Echo: spec.Echo}, chain)
	if err != nil {
		return device.Failed(err.Error()), nil
	}
	defer srv.Close()
	host := opt.TLSHost
	if host == "" {
		host = srv.Addr().IP.String()
	}
	if err := c.Seed(ctx, device.CellSeed(m.Spec.Seed, ref)); err != nil {
		return runner.CellResult{}, err
	}

	var (
		samples, serverCPU []float64
		served             []TLSServed
		heapMax, stackMax  uint32
		retry              bool
	)
	for done := 0; done < m.Spec.Iterations; {
		n := min(spec.Batch, m.Spec.Iterations-done)
		warm := 0
		if done == 0 {
			warm = min(m.Spec.Warmup, wire.MaxTLSWarmup)
		}
		req := wire.TLSRequest{Host: host, Port: srv.Addr().Port, Group: gc, Sig: sc, SNI: name, CA: ca.Fingerprint(),
			Iterations: n, Warmup: warm, Echo: spec.Echo}
		cpu0 := cpuSoFar()
		var reports []wire.Handshake
		if _, err := c.TLS(ctx, req, func(hs wire.Handshake) { reports = append(reports, hs) }); err != nil {
			var de *wire.DeviceError
			if errors.As(err, &de) {
				return device.Failed(fmt.Sprintf("the board refused the TLS request: %s %s", de.Code, de.Msg)), nil
			}
			return runner.CellResult{}, err
		}
		cpu := cpuSoFar() - cpu0
		// The server saw every connection the board made: the warm-up ones first.
		recs := make([]TLSServed, 0, warm+n)
		for len(recs) < warm+n {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			r, err := srv.Next(wctx)
			cancel()
			if err != nil {
				return device.Failed(fmt.Sprintf("the server saw %d of the board's %d connections: %v", len(recs), warm+n, err)), nil
			}
			recs = append(recs, r)
		}
		for i, hs := range reports {
			r := recs[warm+i]
			switch {
			case !hs.OK:
				alert := ""
				if hs.Alert >= 0 {
					alert = fmt.Sprintf(" (alert %d)", hs.Alert)
				}
				return device.Failed(fmt.Sprintf("handshake %d failed on the board: %s%s; server: %s", done+i, hs.Reason, alert, device.OrNone(r.Err))), nil
			case r.Err != "":
				return device.Failed(fmt.Sprintf("handshake %d: the board reports success, the server: %s", done+i, r.Err)), nil
			case r.Group != group || r.Scheme != scheme || r.Suite != spec.CipherSuite:
				return device.Failed(fmt.Sprintf("handshake %d negotiated %s / %s / %s, the cell is %s / %s / %s", done+i, r.Group, r.Scheme, r.Suite, group, scheme, spec.CipherSuite)), nil
			}
			samples = append(samples, float64(hs.Micros))
			served = append(served, r)
			heapMax, stackMax = max(heapMax, hs.Heap), max(stackMax, hs.Stack)
			retry = retry || r.HelloRetry
		}
		serverCPU = append(serverCPU, float64(cpu.Nanoseconds())/float64(n))
		done += n
		progress(done)
	}
	last := served[len(served)-1]
	res := runner.CellResult{Samples: samples}
	res.Cell = artifacts.Cell{
		Status: artifacts.StatusOK, Unit: artifacts.UnitMicroseconds,
		Counter: "the board's own microsecond timer around its handshake (connect excluded; firmware/PROTOCOL.md TLS)",
		TLS: &artifacts.TLSCell{Group: group, Signature: scheme, CipherSuite: spec.CipherSuite, Stack: artifacts.StackPQRepro,
			Batch: spec.Batch, ServerCPU: runner.Summarize(serverCPU), BytesClient: last.Received, BytesServer: last.Sent,
			Flights: last.Flights, ChainBytes: len(chain.LeafDER), HelloRetry: retry, Client: "board firmware " + fw + tlsClientName(h)},
	}
	if stackMax > 0 || heapMax > 0 {
		res.Cell.Memory = &artifacts.Memory{}
		if stackMax > 0 {
			s := int(stackMax)
			res.Cell.Memory.StackBytes = &s
		}
		if heapMax > 0 {
			hp := int(heapMax)
			res.Cell.Memory.PeakHeapBytes = &hp
		}
	}
	res.TLS = []artifacts.TLSSeries{{Series: artifacts.TLSSeriesCPU, Side: artifacts.SideServer, Values: serverCPU}}
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
		res.Cell.TLS.Phases = append(res.Cell.TLS.Phases, artifacts.TLSPhase{Name: phase, Side: artifacts.SideServer, Stats: runner.Summarize(vals)})
	}
	return res, nil
}

// tlsClientName is the board's TLS library as its HELLO names it (tls=), if it does.
func tlsClientName(h wire.Hello) string {
	if v, ok := h.Frame.Get("tls"); ok && v != "" {
		return ", " + v
	}
	return ""
}

// cpuSoFar is the runner process's user + system CPU so far (processCPU; 0 when it cannot be
// read): the engine server runs in it, so over a TLS request it is the server's CPU for the
// batch plus the runner's serial-line reading, which is small beside a handshake (stated in
// the cell).
func cpuSoFar() time.Duration {
	ns, err := processCPU()
	if err != nil {
		return 0
	}
	return time.Duration(ns)
}
