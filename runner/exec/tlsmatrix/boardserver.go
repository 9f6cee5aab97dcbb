package tlsmatrix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/internal/lockedio"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// The board as the TLS server (spec.tls.role: server; firmware/PROTOCOL.md "The board as the
// server"): a board whose HELLO says tls_roles=…server… over the serial line is given the
// cell's leaf certificate and key (TLSLEAF, TLSKEY, untimed, before the cell; issued from the
// scheme's CA like the client role's chains, from the manifest's seed, so that two runs send
// the same bytes), and the runner plays the client: per handshake the project's Go engine
// client (package tls13) connects to a loopback listener and the runner relays that connection
// to the board (wire.TLSServeSerial). The engine client is deterministic (its randomness a
// stream keyed by the cell's seed), checks the board's leaf under the CA, the group and the
// scheme, sends the echo line and checks it comes back. The samples are the board's counts of
// its own work per handshake (its compute segments), with its split (key exchange, signing,
// key schedule and records, rest) and each CertificateVerify's ML-DSA rejection rounds.

// boardServer is the runner's side of a server-role cell: the listener its client connects
// to, the client's configuration and what each handshake's client saw.
type boardServer struct {
	ln      net.Listener
	cfg     *tls13.Config
	echo    io.Reader // the echo lines' bytes
	results chan error
	conns   []*countingConn
	rounds  []int
}

// runServer measures the cell with the board as the server.
func (b *boardCell) runServer(ctx context.Context) (runner.CellResult, error) {
	if !b.Hello.TLSServes() {
		return device.Skipped(fmt.Sprintf("firmware %s %s plays no TLS server over the serial line (HELLO tls_roles=%v)", b.Hello.Firmware, b.Hello.Version, b.Hello.TLSRoles())), nil
	}
	ts, err := tls13.ParseSignatureScheme(b.scheme)
	if err != nil {
		return device.Failed(err.Error()), nil
	}
	if b.name = b.Options.TLSName; b.name == "" {
		b.name = DefaultTLSName
	}
	if fail := b.issueSeeded(ts); fail != "" {
		return device.Failed(fail), nil
	}
	leafFP, keyFP, fail, err := b.provisionServer(ctx)
	if fail != "" || err != nil {
		return device.Failed(fail), err
	}
	bs, err := b.startClient()
	if err != nil {
		return device.Failed(err.Error()), nil
	}
	defer bs.ln.Close()
	if err := b.Conn.Seed(ctx, device.CellSeed(b.Manifest.Spec.Seed, b.Ref)); err != nil {
		return runner.CellResult{}, err
	}
	for done := 0; done < b.Manifest.Spec.Iterations; {
		n := min(b.spec.Batch, b.Manifest.Spec.Iterations-done)
		if fail, err := b.serverBatch(ctx, bs, leafFP, keyFP, done, n); fail != "" || err != nil {
			return device.Failed(fail), err
		}
		done += n
		b.Progress(done)
	}
	return b.serverResult(bs), nil
}

// issueSeeded makes the cell's CA (the runner's CA folder's, else one from the seed) and the
// board's leaf from the seed, as startSeeded does for the client role.
func (b *boardCell) issueSeeded(ts tls13.SignatureScheme) string {
	seed := []byte(b.Manifest.Spec.Seed)
	var err error
	if b.Options.TLSCADir != "" {
		b.ca, err = tlscert.LoadOrCreateCA(b.Options.TLSCADir, ts, time.Now())
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
	return ""
}

// provisionServer pins the leaf and loads its key on the board; a refusal fails the cell.
func (b *boardCell) provisionServer(ctx context.Context) (leafFP, keyFP []byte, fail string, err error) {
	blob, err := b.chain.KeyBlob()
	if err != nil {
		return nil, nil, err.Error(), nil
	}
	refused := func(what string, err error) (string, error) {
		var de *wire.DeviceError
		var ke *wire.KeyRefusedError
		switch {
		case errors.As(err, &de):
			return fmt.Sprintf("the board refused the %s %s: %s %s", b.scheme, what, de.Code, de.Msg), nil
		case errors.As(err, &ke):
			return fmt.Sprintf("the board refused the %s %s: %s", b.scheme, what, ke.Reason), nil
		}
		return "", err
	}
	if leafFP, err = b.Conn.TLSPinLeaf(ctx, b.chain.LeafDER); err != nil {
		fail, err = refused("leaf certificate", err)
		return nil, nil, fail, err
	}
	if keyFP, err = b.Conn.TLSLoadKey(ctx, blob); err != nil {
		fail, err = refused("leaf key", err)
		return nil, nil, fail, err
	}
	return leafFP, keyFP, "", nil
}

// startClient opens the loopback listener and configures the cell's engine client: only the
// cell's group and scheme, the CA as its one root, the board's time base (the leaf's seeded
// validity), deterministic from the cell's seed.
func (b *boardCell) startClient() (*boardServer, error) {
	g, err := tls13.ParseGroup(b.group)
	if err != nil {
		return nil, err
	}
	s, err := tls13.ParseSignatureScheme(b.scheme)
	if err != nil {
		return nil, err
	}
	suite, err := tls13.ParseCipherSuite(b.spec.CipherSuite)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	seed := device.CellSeed(b.Manifest.Spec.Seed, b.Ref)
	now := b.now
	cfg := &tls13.Config{Groups: []tls13.Group{g}, SignatureSchemes: []tls13.SignatureScheme{s}, CipherSuites: []tls13.CipherSuite{suite},
		RootCAs: b.chain.Pool(), ServerName: b.name, Time: func() time.Time { return now },
		Rand: keyedStream("pqrepro tls client", seed), Deterministic: true}
	return &boardServer{ln: ln, cfg: cfg, echo: keyedStream("pqrepro tls echo", seed), results: make(chan error, wire.MaxTLSHandshakes+wire.MaxTLSWarmup)}, nil
}

// keyedStream is the ChaCha8 stream keyed by SHA-256(label || 0 || seed).
func keyedStream(label string, seed []byte) io.Reader {
	h := sha256.New()
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write(seed)
	var key [32]byte
	h.Sum(key[:0])
	return &lockedio.Reader{R: mrand.NewChaCha8(key)}
}

// accept starts the next handshake's client and returns the runner's end of its connection.
func (b *boardCell) accept(bs *boardServer, echo int) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		line := echoLine(bs.echo, echo)
		addr := bs.ln.Addr().String()
		if oc, ok := b.Options.TLSClient.(*OpenSSLClient); ok {
			go func() { bs.results <- b.opensslHandshake(ctx, oc.OpenSSL, addr, line) }()
		} else {
			go func() { bs.results <- clientHandshake(addr, bs.cfg, line) }()
		}
		if tl, ok := bs.ln.(*net.TCPListener); ok {
			_ = tl.SetDeadline(time.Now().Add(30 * time.Second))
		}
		conn, err := bs.ln.Accept()
		if err != nil {
			return nil, err
		}
		cc := &countingConn{Conn: conn}
		bs.conns = append(bs.conns, cc)
		return cc, nil
	}
}

// echoLine is n bytes of the stream made a line of hex digits ending in '\n' (none for n = 0).
func echoLine(r io.Reader, n int) []byte {
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	_, _ = io.ReadFull(r, b)
	for i := range b[:n-1] {
		b[i] = "0123456789abcdef"[b[i]&15]
	}
	b[n-1] = '\n'
	return b
}

// clientHandshake is one handshake of the engine client against addr (the runner's relay to
// the board): the cell's group and scheme negotiated, then the echo line sent and read back.
func clientHandshake(addr string, cfg *tls13.Config, line []byte) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Minute))
	c := tls13.Client(conn, cfg)
	if err := c.Handshake(); err != nil {
		return fmt.Errorf("the engine client: %w", err)
	}
	if st := c.State(); st.Group != cfg.Groups[0] || st.Scheme != cfg.SignatureSchemes[0] {
		return fmt.Errorf("the engine client negotiated %v / %v", st.Group, st.Scheme)
	}
	if len(line) == 0 {
		return nil
	}
	if _, err := c.Write(line); err != nil {
		return fmt.Errorf("the engine client's echo: %w", err)
	}
	got := make([]byte, len(line))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("the engine client's echo: read: %w", err)
	}
	if !bytes.Equal(got, line) {
		return fmt.Errorf("the echo came back as %q, sent %q", got, line)
	}
	return nil
}

// serverBatch has the board serve n handshakes (after the warm-up ones, in the first batch) in
// one TLS role=server request, each to a fresh engine client, and keeps the board's counts;
// it returns why the cell fails, or the error that broke the conversation.
func (b *boardCell) serverBatch(ctx context.Context, bs *boardServer, leafFP, keyFP []byte, done, n int) (string, error) {
	warm := 0
	if done == 0 {
		warm = min(b.Manifest.Spec.Warmup, wire.MaxTLSWarmup)
	}
	var reports []wire.Handshake
	req := wire.TLSServerRequest{Group: b.gc, Sig: b.sc, Leaf: leafFP, Key: keyFP, Iterations: n, Warmup: warm,
		Echo: b.spec.Echo, SigRnd: wire.SigRndHedged}
	bs.conns = bs.conns[:0]
	_, err := b.Conn.TLSServeSerial(ctx, req, b.accept(bs, b.spec.Echo), func(h wire.Handshake) { reports = append(reports, h) })
	if err != nil {
		var de *wire.DeviceError
		if errors.As(err, &de) {
			return fmt.Sprintf("the board refused the TLS request: %s %s", de.Code, de.Msg), nil
		}
		return "", err
	}
	errs := make([]error, 0, warm+n)
	for len(errs) < len(bs.conns) {
		select {
		case e := <-bs.results:
			errs = append(errs, e)
		case <-time.After(30 * time.Second):
			return fmt.Sprintf("the client of handshake %d did not finish", done+len(errs)-warm), nil
		}
	}
	if len(errs) != warm+n {
		return fmt.Sprintf("the runner relayed %d clients for the board's %d handshakes", len(errs), warm+n), nil
	}
	for i, e := range errs[:warm] {
		if e != nil {
			return fmt.Sprintf("warm-up handshake %d: %v", i, e), nil
		}
	}
	for i, hs := range reports {
		if fail := b.keepServed(hs, errs[warm+i], done+i); fail != "" {
			return fail, nil
		}
		bs.rounds = append(bs.rounds, hs.Rounds)
	}
	return "", nil
}

// keepServed checks one timed handshake (the board's report and the client's outcome) and
// keeps its count, split and stack; it returns why the cell fails.
func (b *boardCell) keepServed(hs wire.Handshake, clientErr error, index int) string {
	switch {
	case !hs.OK:
		alert := ""
		if hs.Alert >= 0 {
			alert = fmt.Sprintf(" (alert %d)", hs.Alert)
		}
		return fmt.Sprintf("handshake %d failed on the board: %s%s; client: %v", index, hs.Reason, alert, clientErr)
	case clientErr != nil:
		return fmt.Sprintf("handshake %d: the board reports success, the client: %v", index, clientErr)
	case hs.Rounds < 1:
		return fmt.Sprintf("handshake %d: the board reports %d signature rounds", index, hs.Rounds)
	}
	b.samples = append(b.samples, float64(hs.Count))
	if p := hs.Phases; p != nil {
		if b.boardPhases == nil {
			b.boardPhases = map[string][]float64{}
		}
		names := artifacts.BoardServerPhaseNames()
		for k, v := range []uint64{p.KeyExchange, p.CertificateVerify, p.KeyScheduleRecords, p.Rest} {
			b.boardPhases[names[k]] = append(b.boardPhases[names[k]], float64(v))
		}
	}
	b.stackMax = max(b.stackMax, hs.Stack)
	b.retry = b.retry || hs.HelloRetry
	return ""
}

// serverResult is the measured server-role cell: the board's counts, its split and rounds.
func (b *boardCell) serverResult(bs *boardServer) runner.CellResult {
	last := bs.conns[len(bs.conns)-1]
	last.mu.Lock()
	sent, received, flights := last.written, last.read, last.flights
	last.mu.Unlock()
	rounds := make([]float64, len(bs.rounds))
	for i, r := range bs.rounds {
		rounds[i] = float64(r)
	}
	unit := artifacts.Unit(b.Hello.Unit)
	res := runner.CellResult{Samples: b.samples, TLSRounds: bs.rounds}
	res.Cell = artifacts.Cell{
		Status: artifacts.StatusOK, Unit: unit,
		Counter: "the board's " + b.Hello.Counter + " summed over its own computation as the TLS server of each handshake (the ClientHello to its flight, the client's Finished; waiting for bytes and the echo excluded; the client " + b.clientName() + "; firmware/PROTOCOL.md The board as the server)",
		TLS: &artifacts.TLSCell{Group: b.group, Signature: b.scheme, CipherSuite: b.spec.CipherSuite, Stack: artifacts.StackPQRepro,
			Batch: b.spec.Batch, BytesClient: received, BytesServer: sent, Flights: flights, ChainBytes: b.chainBytes,
			HelloRetry: b.retry, Role: artifacts.TLSRoleServer, Rounds: artifacts.Summarize(rounds),
			BoardServer: artifacts.SerialTLSServer + " (board firmware " + b.Hello.Firmware + " " + b.Hello.Version + ")"},
	}
	if b.stackMax > 0 {
		s := int(b.stackMax)
		res.Cell.Memory = &artifacts.Memory{StackBytes: &s}
	}
	names := artifacts.BoardServerPhaseNames()
	if len(b.boardPhases[names[len(names)-1]]) != len(b.samples) {
		return res
	}
	for _, phase := range names {
		vals := b.boardPhases[phase]
		res.TLS = append(res.TLS, artifacts.TLSSeries{Series: phase, Side: artifacts.SideServer, Values: vals})
		res.Cell.TLS.Phases = append(res.Cell.TLS.Phases, artifacts.TLSPhase{Name: phase, Side: artifacts.SideServer, Unit: unit, Stats: artifacts.Summarize(vals)})
	}
	return res
}

// opensslHandshake is one handshake of OpenSSL's s_client against addr (the runner's relay to
// the board): only the cell's group and scheme offered, the CA its one trust anchor; the group
// and scheme it reports must be the cell's, the chain verified, and the echo line must come
// back in what it printed.
func (b *boardCell) opensslHandshake(ctx context.Context, ossl *interop.OpenSSL, addr string, line []byte) error {
	g, err := tls13.ParseGroup(b.group)
	if err != nil {
		return err
	}
	cell := interop.Cell{Group: g, Scheme: b.chain.Scheme}
	dir, err := os.MkdirTemp("", "pqrepro-sclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var send []string
	if len(line) > 0 {
		send = []string{string(line[:len(line)-1])}
	}
	rep, err := ossl.RunOpenSSLClient(ctx, cell, b.chain, b.name, addr, send, dir)
	if err != nil {
		return err
	}
	group, sigalg, _ := cell.OpenSSLNames()
	switch {
	case !rep.Verified:
		return fmt.Errorf("s_client did not verify the board's chain")
	case !strings.EqualFold(rep.Group, group) && !(g == tls13.P256 && rep.Group == "prime256v1"):
		return fmt.Errorf("s_client negotiated group %s, the cell's is %s", rep.Group, group)
	case !strings.EqualFold(strings.ReplaceAll(rep.Scheme, "_", ""), strings.ReplaceAll(sigalg, "_", "")):
		return fmt.Errorf("s_client: peer signature type %s, the cell's is %s", rep.Scheme, sigalg)
	case len(line) > 0 && !strings.Contains(rep.Output, string(line)):
		return fmt.Errorf("s_client did not receive the echo %q", line)
	}
	return nil
}

// clientName names the client that played against the board.
func (b *boardCell) clientName() string {
	if c := b.Options.TLSClient; c != nil {
		return c.Name()
	}
	return "the runner's Go engine, package tls13, seeded"
}

// OpenSSLClient is OpenSSL's s_client as the client of a board's server-role cells
// (device.RunOptions.TLSClient; run's --tls-client openssl).
type OpenSSLClient struct{ OpenSSL *interop.OpenSSL }

// Name names s_client and its version.
func (c *OpenSSLClient) Name() string { return "OpenSSL s_client (" + c.OpenSSL.Version + ")" }
