package tlsmatrix

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/internal/lockedio"
	"pqrepro/tls13"
)

// tlsServerName is the host name every matrix chain's leaf is issued for and the client checks.
const tlsServerName = "matrix.pqrepro.test"

// tlsCellConfig is one tls-matrix cell as both ends configure it: the client in the runner
// and the server in its child process get the same one (the child over its control pipe).
type tlsCellConfig struct {
	Stack  string `json:"stack"`
	Group  string `json:"group"`
	Scheme string `json:"scheme"`
	Suite  string `json:"suite"`
	Echo   int    `json:"echo"`
	// Certs is the server's chain (leaf first) and Key the leaf's PKCS #8 key (server only).
	Certs [][]byte `json:"certs,omitempty"`
	Key   []byte   `json:"key,omitempty"`
	// Fault breaks one end on purpose, for tests only: "echo" (the server echoes a changed
	// byte) or "mismatch" (the server also accepts another group, which the client offers
	// first).
	Fault string `json:"fault,omitempty"`
	// Seed, when set, makes the engine server deterministic (tls13.Config.Deterministic): its
	// randomness is a ChaCha8 stream keyed by SHA-256 of the seed, continuing from one
	// connection to the next, so an ordered server's bytes repeat exactly run after run.
	Seed []byte `json:"seed,omitempty"`
}

// tlsEngineNames resolves the cell's names with the engine's parsers.
func (c *tlsCellConfig) engineNames() (tls13.Group, tls13.SignatureScheme, tls13.CipherSuite, error) {
	g, err := tls13.ParseGroup(c.Group)
	if err != nil {
		return 0, 0, 0, err
	}
	s, err := tls13.ParseSignatureScheme(c.Scheme)
	if err != nil {
		return 0, 0, 0, err
	}
	cs, err := tls13.ParseCipherSuite(c.Suite)
	if err != nil {
		return 0, 0, 0, err
	}
	return g, s, cs, nil
}

// faultGroup is the other group a "mismatch" fault makes both ends accept.
func faultGroup(g tls13.Group) tls13.Group {
	if g == tls13.X25519 {
		return tls13.P256
	}
	return tls13.X25519
}

// cryptoTLSCurve maps a matrix group to crypto/tls's CurveID; ok is false when crypto/tls
// does not have it.
func cryptoTLSCurve(name string) (tls.CurveID, bool) {
	switch name {
	case "ML-KEM-1024":
		return tls.MLKEM1024, true
	case "X25519":
		return tls.X25519, true
	case "P-256":
		return tls.CurveP256, true
	case "X25519MLKEM768":
		return tls.X25519MLKEM768, true
	case "SecP256r1MLKEM768":
		return tls.SecP256r1MLKEM768, true
	case "SecP384r1MLKEM1024":
		return tls.SecP384r1MLKEM1024, true
	}
	return 0, false
}

// tlsHandshake is one side's record of one handshake: what it negotiated and measured.
type tlsHandshake struct {
	Group  string `json:"group"`
	Scheme string `json:"scheme"`
	Suite  string `json:"suite"`
	Retry  bool   `json:"retry"`
	// Phases are ns per phase (artifacts.TLSPhaseNames) on this side; engine only.
	Phases map[string]float64 `json:"phases,omitempty"`
	// Sent and Received are the handshake's wire bytes on this side.
	Sent       int `json:"sent"`
	Received   int `json:"received"`
	Flights    int `json:"flights"`
	ChainBytes int `json:"chainBytes"`
	// Err says why the handshake (or its echo) failed on this side; empty when it worked.
	Err string `json:"err,omitempty"`
	// leaf is the server's leaf as the client received it (client only).
	leaf *x509.Certificate
}

// check compares what was negotiated with the cell.
func (h *tlsHandshake) check(c *tlsCellConfig) error {
	if h.Group != c.Group || h.Scheme != c.Scheme || h.Suite != c.Suite {
		return fmt.Errorf("negotiated %s / %s / %s, the cell is %s / %s / %s", h.Group, h.Scheme, h.Suite, c.Group, c.Scheme, c.Suite)
	}
	return nil
}

// enginePhases lists one side's phases from the engine's Stats.
func enginePhases(st tls13.Stats, side string) map[string]float64 {
	ns := func(d time.Duration) float64 { return float64(d.Nanoseconds()) }
	p := map[string]float64{
		"handshake": ns(st.Handshake), "key-schedule": ns(st.KeySchedule), "record-layer": ns(st.RecordLayer),
		"primitive": ns(st.Primitive), "wait": ns(st.Wait), "protocol": ns(st.Protocol),
	}
	if side == artifacts.SideClient {
		p["key-share"], p["decapsulate"], p["verify"], p["chain-verify"] = ns(st.KeyShare), ns(st.Decapsulate), ns(st.Verify), ns(st.ChainVerify)
	} else {
		p["encapsulate"], p["sign"] = ns(st.Encapsulate), ns(st.Sign)
	}
	return p
}

// countingConn counts the bytes read and written through a connection, and its flights (a
// flight is a run of writes or of reads: the direction changed).
type countingConn struct {
	net.Conn
	mu            sync.Mutex
	read, written int
	flights, last int // last: 1 after a write, 2 after a read
}

func (c *countingConn) count(dir, n int, total *int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if dir != c.last {
		c.flights, c.last = c.flights+1, dir
	}
	*total += n
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.count(2, n, &c.read)
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.count(1, n, &c.written)
	return n, err
}

// tlsClient is the client end of one cell, built once and used for every handshake.
type tlsClient struct {
	cfg    *tlsCellConfig
	engine *tls13.Config
	std    *tls.Config
}

func newTLSClient(cfg *tlsCellConfig, roots *x509.CertPool) (*tlsClient, error) {
	return newTLSClientFor(cfg, roots, tlsServerName)
}

// newTLSClientFor is the client of a cell checking serverName.
func newTLSClientFor(cfg *tlsCellConfig, roots *x509.CertPool, tlsServerName string) (*tlsClient, error) {
	c := &tlsClient{cfg: cfg}
	switch cfg.Stack {
	case artifacts.StackPQRepro:
		g, s, cs, err := cfg.engineNames()
		if err != nil {
			return nil, err
		}
		groups := []tls13.Group{g}
		if cfg.Fault == "mismatch" {
			groups = []tls13.Group{faultGroup(g), g}
		}
		c.engine = &tls13.Config{Groups: groups, KeyShares: groups[:1], SignatureSchemes: []tls13.SignatureScheme{s},
			CipherSuites: []tls13.CipherSuite{cs}, RootCAs: roots, ServerName: tlsServerName}
	case artifacts.StackCryptoTLS:
		curve, ok := cryptoTLSCurve(cfg.Group)
		if !ok {
			return nil, fmt.Errorf("crypto/tls has no %s", cfg.Group)
		}
		c.std = &tls.Config{RootCAs: roots, ServerName: tlsServerName, MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13,
			CurvePreferences: []tls.CurveID{curve}}
	default:
		return nil, fmt.Errorf("unknown stack %q", cfg.Stack)
	}
	return c, nil
}

// handshake runs one full handshake on conn, then the echo of msg, and returns the client's
// record and the wall time of the handshake alone (the echo is untimed). An error is the
// handshake's or the echo's failure.
func (c *tlsClient) handshake(conn net.Conn, msg []byte) (tlsHandshake, time.Duration, error) {
	var rec tlsHandshake
	var d time.Duration
	var tc interface {
		io.ReadWriter
		Close() error
	}
	if c.engine != nil {
		ec := tls13.Client(conn, c.engine)
		t0 := time.Now()
		err := ec.Handshake()
		d = time.Since(t0)
		if err != nil {
			ec.Close()
			return rec, d, fmt.Errorf("handshake: %w", err)
		}
		st, stats := ec.State(), ec.Stats()
		rec = tlsHandshake{Group: st.Group.String(), Scheme: st.Scheme.String(), Suite: st.CipherSuite.String(), Retry: st.HelloRetry,
			Phases: enginePhases(stats, artifacts.SideClient), Sent: stats.BytesSent, Received: stats.BytesReceived,
			Flights: len(stats.Flights), ChainBytes: stats.ChainBytes}
		if len(st.PeerCertificates) > 0 {
			rec.leaf = st.PeerCertificates[0]
		}
		tc = ec
	} else {
		cc := &countingConn{Conn: conn}
		sc := tls.Client(cc, c.std)
		t0 := time.Now()
		err := sc.Handshake()
		d = time.Since(t0)
		if err != nil {
			sc.Close()
			return rec, d, fmt.Errorf("handshake: %w", err)
		}
		rec, err = stdRecord(sc.ConnectionState(), c.cfg.Suite)
		if err != nil {
			sc.Close()
			return rec, d, err
		}
		rec.Sent, rec.Received = cc.written, cc.read
		rec.leaf = sc.ConnectionState().PeerCertificates[0]
		tc = sc
	}
	defer tc.Close()
	if err := rec.check(c.cfg); err != nil {
		return rec, d, err
	}
	if msg == nil {
		return rec, d, nil // an outside server: no echo
	}
	if _, err := tc.Write(msg); err != nil {
		return rec, d, fmt.Errorf("echo: write: %w", err)
	}
	back := make([]byte, len(msg))
	if _, err := io.ReadFull(tc, back); err != nil {
		return rec, d, fmt.Errorf("echo: read: %w", err)
	}
	if !bytes.Equal(back, msg) {
		return rec, d, errors.New("echo: the server sent back other bytes than the client sent")
	}
	return rec, d, nil
}

// stdRecord is a crypto/tls handshake's record. crypto/tls does not say which scheme signed
// CertificateVerify: it is the one the leaf's key fixes (tls13.SchemeForKey; for RSA keys
// rsa_pss_rsae_sha256, the first RSA scheme both ends of Go prefer), and the chain bytes are
// the DER certificates received.
func stdRecord(cs tls.ConnectionState, suite string) (tlsHandshake, error) {
	rec := tlsHandshake{Retry: cs.HelloRetryRequest, Suite: tls.CipherSuiteName(cs.CipherSuite)}
	rec.Group = cs.CurveID.String()
	if g := tls13.Group(cs.CurveID); slices.Contains(tls13.Groups(), g) {
		rec.Group = g.String()
	}
	if len(cs.PeerCertificates) == 0 {
		return rec, errors.New("crypto/tls: no server certificate")
	}
	s, err := tls13.SchemeForKey(cs.PeerCertificates[0].PublicKey)
	if err != nil {
		return rec, fmt.Errorf("crypto/tls: leaf key: %w", err)
	}
	rec.Scheme = s.String()
	for _, c := range cs.PeerCertificates {
		rec.ChainBytes += len(c.Raw)
	}
	return rec, nil
}

// tlsServer is the server end of one cell (in the child process).
type tlsServer struct {
	cfg    *tlsCellConfig
	engine *tls13.Config
	std    *tls.Config
}

func newTLSServer(cfg *tlsCellConfig) (*tlsServer, error) {
	s := &tlsServer{cfg: cfg}
	key, err := x509.ParsePKCS8PrivateKey(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("parse the leaf key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the leaf key (%T) cannot sign", key)
	}
	switch cfg.Stack {
	case artifacts.StackPQRepro:
		g, sc, cs, err := cfg.engineNames()
		if err != nil {
			return nil, err
		}
		groups := []tls13.Group{g}
		if cfg.Fault == "mismatch" {
			groups = append(groups, faultGroup(g))
		}
		s.engine = &tls13.Config{Groups: groups, SignatureSchemes: []tls13.SignatureScheme{sc}, CipherSuites: []tls13.CipherSuite{cs},
			Certificates: cfg.Certs, PrivateKey: signer}
		if cfg.Seed != nil {
			s.engine.Rand, s.engine.Deterministic = seededStream(cfg.Seed), true
		}
	case artifacts.StackCryptoTLS:
		curve, ok := cryptoTLSCurve(cfg.Group)
		if !ok {
			return nil, fmt.Errorf("crypto/tls has no %s", cfg.Group)
		}
		s.std = &tls.Config{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, CurvePreferences: []tls.CurveID{curve},
			SessionTicketsDisabled: true, Certificates: []tls.Certificate{{Certificate: cfg.Certs, PrivateKey: signer}}}
	default:
		return nil, fmt.Errorf("unknown stack %q", cfg.Stack)
	}
	return s, nil
}

// serve runs one connection: the handshake, the check of what was negotiated, and the echo.
func (s *tlsServer) serve(conn net.Conn) tlsHandshake {
	var rec tlsHandshake
	var tc interface {
		io.ReadWriter
		Close() error
	}
	if s.engine != nil {
		ec := tls13.Server(conn, s.engine)
		if err := ec.Handshake(); err != nil {
			ec.Close()
			return tlsHandshake{Err: "handshake: " + err.Error()}
		}
		st, stats := ec.State(), ec.Stats()
		rec = tlsHandshake{Group: st.Group.String(), Scheme: st.Scheme.String(), Suite: st.CipherSuite.String(), Retry: st.HelloRetry,
			Phases: enginePhases(stats, artifacts.SideServer), Sent: stats.BytesSent, Received: stats.BytesReceived, Flights: len(stats.Flights)}
		tc = ec
	} else {
		sc := tls.Server(conn, s.std)
		if err := sc.Handshake(); err != nil {
			sc.Close()
			return tlsHandshake{Err: "handshake: " + err.Error()}
		}
		cs := sc.ConnectionState()
		rec = tlsHandshake{Group: s.cfg.Group, Scheme: s.cfg.Scheme, Suite: tls.CipherSuiteName(cs.CipherSuite), Retry: cs.HelloRetryRequest}
		if curve, _ := cryptoTLSCurve(s.cfg.Group); cs.CurveID != curve {
			rec.Group = cs.CurveID.String()
			if g := tls13.Group(cs.CurveID); slices.Contains(tls13.Groups(), g) {
				rec.Group = g.String()
			}
		}
		tc = sc
	}
	defer tc.Close()
	if err := rec.check(s.cfg); err != nil {
		rec.Err = err.Error()
		return rec
	}
	buf := make([]byte, s.cfg.Echo)
	if _, err := io.ReadFull(tc, buf); err != nil {
		rec.Err = "echo: read: " + err.Error()
		return rec
	}
	if s.cfg.Fault == "echo" {
		buf[0] ^= 1
	}
	if _, err := tc.Write(buf); err != nil {
		rec.Err = "echo: write: " + err.Error()
	}
	return rec
}

// seededStream is the ChaCha8 stream keyed by SHA-256("pqrepro tls server" || 0 || seed).
func seededStream(seed []byte) io.Reader {
	h := sha256.New()
	h.Write([]byte("pqrepro tls server\x00"))
	h.Write(seed)
	var key [32]byte
	h.Sum(key[:0])
	return &lockedio.Reader{R: mrand.NewChaCha8(key)}
}
