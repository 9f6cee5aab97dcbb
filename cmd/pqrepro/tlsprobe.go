package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/exec/tlsmatrix"
	"pqrepro/runner/host"
	"pqrepro/runner/qemu"
	"pqrepro/tls13"
	"pqrepro/tls13/interop"
)

// maxCAFile bounds a --ca / --tls-ca PEM file.
const maxCAFile = 1 << 20

// readCAFile reads a PEM file of CA certificates, at most maxCAFile bytes.
func readCAFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, fmt.Errorf("CA file %s: %w", path, err)
	}
	if len(data) > maxCAFile {
		return nil, fmt.Errorf("CA file %s: more than %d bytes", path, maxCAFile)
	}
	return data, nil
}

// loadCAFile reads a PEM file of one or more CA certificates into a pool.
func loadCAFile(path string) (*x509.CertPool, error) {
	data, err := readCAFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// loadCACerts reads a PEM file's certificates, each parsed (a board is given one of them);
// a block that is not a certificate, or one that does not parse, is refused with its place.
func loadCACerts(path string) ([]*x509.Certificate, error) {
	data, err := readCAFile(path)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for n := 1; ; n++ {
		var blk *pem.Block
		if blk, data = pem.Decode(data); blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("CA file %s: PEM block %d is a %s, not a CERTIFICATE", path, n, blk.Type)
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("CA file %s: certificate %d: %w", path, n, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return out, nil
}

// tlsServerOpts are run's --tls-server, --tls-ca and --tls-servername.
type tlsServerOpts struct {
	server, ca, name, client *string
}

func tlsServerFlags(fs *flag.FlagSet) *tlsServerOpts {
	return &tlsServerOpts{
		server: fs.String("tls-server", "", "tls-matrix: the server host cells handshake with, engine or HOST:PORT (overrides spec.tls.server; changes the manifest's identity)"),
		ca:     fs.String("tls-ca", "", "tls-matrix against an outside server: PEM file of the CA(s) its chain must lead to (default: the system's roots)"),
		name:   fs.String("tls-servername", "", "tls-matrix against an outside server: the name its leaf must carry, sent as SNI (default: the host of HOST:PORT)"),
		client: fs.String("tls-client", "", "tls-matrix in the server role on an emulated board: the client the runner plays, engine (the default) or openssl (s_client of the OpenSSL 3.5 root that "+interop.OpenSSLRootEnv+" names, else .cache/trixie-openssl)"),
	}
}

// useClient gives an emulated board's server-role cells OpenSSL's s_client as their client
// (--tls-client openssl).
func (o *tlsServerOpts) useClient(ctx context.Context, b runner.Board, m *artifacts.Manifest) error {
	switch *o.client {
	case "", "engine":
		return nil
	case "openssl":
	default:
		return usageError{fmt.Sprintf("--tls-client %q: engine or openssl", *o.client)}
	}
	if m.Spec.TLS == nil || artifacts.RoleOf(m.Spec.TLS.Role) != artifacts.TLSRoleServer {
		return usageError{"--tls-client applies to a tls-matrix in the server role (spec.tls.role: server)"}
	}
	q, ok := b.(*qemu.QEMU)
	if !ok {
		return usageError{"--tls-client openssl: only an emulated board plays the server; the host's server role measures the engine against the engine"}
	}
	ossl, err := interop.FindOpenSSL(ctx)
	if err != nil {
		return fmt.Errorf("--tls-client openssl: %w", err)
	}
	q.TLSClient = &tlsmatrix.OpenSSLClient{OpenSSL: ossl}
	return nil
}

// apply sets spec.tls.server from --tls-server and validates the manifest again.
func (o *tlsServerOpts) apply(m *artifacts.Manifest) error {
	if *o.server == "" {
		return nil
	}
	if m.Spec.TLS == nil {
		return usageError{fmt.Sprintf("--tls-server: %s is a %s, not a %s", m.Ref(), m.Kind, artifacts.KindTLSMatrix)}
	}
	v, err := artifacts.ParseTLSServer(*o.server)
	if err != nil {
		return usageError{"--tls-server: " + err.Error()}
	}
	m.Spec.TLS.Server = v
	return m.Validate()
}

// use gives the host board the outside server's trust anchors and name; only the host board
// runs against an outside server.
func (o *tlsServerOpts) use(b runner.Board, m *artifacts.Manifest) error {
	outside := m.Spec.TLS != nil && m.Spec.TLS.Server != ""
	if !outside {
		if *o.ca != "" || *o.name != "" {
			return usageError{"--tls-ca and --tls-servername apply only to a tls-matrix against an outside server (--tls-server HOST:PORT)"}
		}
		return nil
	}
	if q, ok := b.(*qemu.QEMU); ok {
		// An emulated board's client speaks over the serial line; the runner relays its
		// records to the server. It has no system roots: it is given one CA of the file.
		if *o.ca == "" {
			return usageError{fmt.Sprintf("spec.tls.server %s on %s: a board has no system roots; --tls-ca FILE names the CA the server's chain leads to", m.Spec.TLS.Server, q.Class)}
		}
		cas, err := loadCACerts(*o.ca)
		if err != nil {
			return err
		}
		q.TLSOutside = &device.TLSOutside{CAs: cas, ServerName: *o.name}
		return nil
	}
	h, ok := b.(*host.Host)
	if !ok {
		return usageError{fmt.Sprintf("spec.tls.server %s: only the host board and the emulated boards run a tls-matrix against an outside server", m.Spec.TLS.Server)}
	}
	out := &tlsmatrix.Outside{ServerName: *o.name}
	if *o.ca != "" {
		pool, err := loadCAFile(*o.ca)
		if err != nil {
			return err
		}
		out.Roots = pool
	}
	h.TLSOutside = out
	return nil
}

// cmdTLSProbe handshakes with any TLS 1.3 server as the engine's client, n times, and prints
// what was negotiated, who answered and the engine's own phase timings.
func cmdTLSProbe(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tls-probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	group := fs.String("group", "", "key-exchange group ("+strings.Join(tlsGroupNames(), ", ")+")")
	sig := fs.String("sig", "", "signature scheme ("+strings.Join(tlsSigNames(), ", ")+")")
	ca := fs.String("ca", "", "PEM file of the CA(s) the server's chain must lead to")
	name := fs.String("servername", "", "name the leaf must carry, sent as SNI (default: HOST)")
	suite := fs.String("suite", "TLS_AES_128_GCM_SHA256", "cipher suite ("+strings.Join(artifacts.TLSCipherSuites(), ", ")+")")
	n := fs.Int("n", 1, "handshakes, each on a fresh connection")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on the connect and, separately, on each handshake")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usageError{"tls-probe: want one HOST:PORT"}
	case *ca == "":
		return usageError{"tls-probe: --ca FILE is required (the CA the server's chain must lead to)"}
	case *n < 1 || *n > artifacts.MaxSamplesPerCell:
		return usageError{fmt.Sprintf("--n %d: want 1 to %d", *n, artifacts.MaxSamplesPerCell)}
	case *timeout <= 0:
		return usageError{"--timeout must be positive"}
	}
	addr, err := artifacts.ParseTLSServer(pos[0])
	if err != nil || addr == "" {
		return usageError{fmt.Sprintf("tls-probe: %q is not HOST:PORT", pos[0])}
	}
	cfg, err := probeConfig(addr, *group, *sig, *suite)
	if err != nil {
		return err
	}
	if cfg.Roots, err = loadCAFile(*ca); err != nil {
		return err
	}
	cfg.ServerName, cfg.Timeout = *name, *timeout
	var results []*tlsmatrix.ProbeResult
	for i := range *n {
		r, err := tlsmatrix.Probe(ctx, cfg)
		if err != nil {
			if i > 0 {
				return fmt.Errorf("handshake %d of %d: %w", i+1, *n, err)
			}
			return err
		}
		results = append(results, r)
	}
	printProbe(stdout, addr, results)
	return nil
}

// probeConfig resolves tls-probe's names.
func probeConfig(addr, group, sig, suite string) (tlsmatrix.ProbeConfig, error) {
	cfg := tlsmatrix.ProbeConfig{Addr: addr}
	var err error
	if !slices.Contains(tlsGroupNames(), group) {
		return cfg, usageError{fmt.Sprintf("--group %q: want one of %s", group, strings.Join(tlsGroupNames(), ", "))}
	}
	if !slices.Contains(tlsSigNames(), sig) {
		return cfg, usageError{fmt.Sprintf("--sig %q: want one of %s", sig, strings.Join(tlsSigNames(), ", "))}
	}
	if cfg.Group, err = tls13.ParseGroup(group); err != nil {
		return cfg, usageError{"--group: " + err.Error()}
	}
	if cfg.Scheme, err = tls13.ParseSignatureScheme(sig); err != nil {
		return cfg, usageError{"--sig: " + err.Error()}
	}
	if cfg.Suite, err = tls13.ParseCipherSuite(suite); err != nil {
		return cfg, usageError{"--suite: " + err.Error()}
	}
	return cfg, nil
}

// probePhases are the client's phases tls-probe prints, in order, with how each is read.
var probePhases = []struct {
	name string
	of   func(r *tlsmatrix.ProbeResult) time.Duration
}{
	{"connect (TCP)", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Connect }},
	{"handshake (call)", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Total }},
	{"handshake (engine)", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.Handshake }},
	{"key-share", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.KeyShare }},
	{"decapsulate", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.Decapsulate }},
	{"verify", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.Verify }},
	{"chain-verify", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.ChainVerify }},
	{"key-schedule", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.KeySchedule }},
	{"record-layer", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.RecordLayer }},
	{"wait (peer + network)", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.Wait }},
	{"protocol", func(r *tlsmatrix.ProbeResult) time.Duration { return r.Stats.Protocol }},
}

// printProbe prints the last handshake's parameters and peer and each phase's median, min
// and max over the handshakes.
func printProbe(w io.Writer, addr string, rs []*tlsmatrix.ProbeResult) {
	last := rs[len(rs)-1]
	st, p := last.State, last.Peer
	fmt.Fprintf(w, "server      %s\n", addr)
	fmt.Fprintf(w, "negotiated  group %s, signature %s, cipher suite %s, hello retry %t\n", st.Group, st.Scheme, st.CipherSuite, st.HelloRetry)
	fmt.Fprintf(w, "peer leaf   subject %q, SAN %s, key %s\n", p.Subject, strings.Join(p.SANs, ", "), p.KeyAlgorithm)
	fmt.Fprintf(w, "            issuer %q, %s\n", p.Issuer, p.Leaf)
	fmt.Fprintf(w, "wire        %d bytes sent, %d received, %d flights, chain %d bytes\n", last.Stats.BytesSent, last.Stats.BytesReceived, len(last.Stats.Flights), last.Stats.ChainBytes)
	fmt.Fprintf(w, "\ntimings over %d handshake(s), the engine's own clock (wall time per phase)\n", len(rs))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tMEDIAN\tMIN\tMAX")
	for _, ph := range probePhases {
		vals := make([]float64, len(rs))
		for i, r := range rs {
			vals[i] = float64(ph.of(r).Nanoseconds())
		}
		s := artifacts.Summarize(vals)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ph.name, artifacts.FormatNanoseconds(s.Median), artifacts.FormatNanoseconds(s.Min), artifacts.FormatNanoseconds(s.Max))
	}
	tw.Flush()
}
