package tlsmatrix

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/mldsa"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"pqrepro/artifacts"
	"pqrepro/tls13"
)

// The engine as the client of an outside server: spec.tls.server HOST:PORT (or run's
// --tls-server) sends a host cell's handshakes there instead of to the engine's own server
// child, and tls-probe runs a few of them by hand. Against an outside server:
//
//   - the client is the cell's stack as always, trusting Outside.Roots (the system's when nil)
//     and checking Outside.ServerName (default: the address's host);
//   - a handshake counts once the client negotiated the cell's group, scheme and suite; no echo
//     is sent (an outside server speaks no echo protocol), the connection is closed with
//     close_notify;
//   - the server's CPU and phases are its own and absent from the cell; the cell records who
//     answered (artifacts.TLSPeer: the address, the leaf's subject, SANs, issuer, key algorithm
//     and digest).

// Outside is how a run's host cells reach an outside server.
type Outside struct {
	// Roots are the trust anchors for the outside server's chain; nil means the system's.
	Roots *x509.CertPool
	// ServerName is checked against the leaf and sent as SNI; "" means the host of the
	// address.
	ServerName string
}

// serverName is the name the client checks for addr.
func (o *Outside) serverName(addr string) string {
	if o != nil && o.ServerName != "" {
		return o.ServerName
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// Peer is the identity of the server that answered at addr, from its leaf certificate.
func Peer(addr string, leaf *x509.Certificate) *artifacts.TLSPeer {
	p := &artifacts.TLSPeer{Address: addr, Subject: leaf.Subject.String(), Issuer: leaf.Issuer.String(),
		KeyAlgorithm: KeyAlgorithm(leaf.PublicKey), Leaf: artifacts.Digest(leaf.Raw)}
	p.SANs = append(p.SANs, leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		p.SANs = append(p.SANs, ip.String())
	}
	return p
}

// KeyAlgorithm names a leaf's public key: ML-DSA-44/65/87, Ed25519, ECDSA P-256 (the curve),
// RSA-2048 (the modulus bits), else its Go type.
func KeyAlgorithm(pub any) string {
	switch k := pub.(type) {
	case *mldsa.PublicKey:
		return k.Parameters().String()
	case ed25519.PublicKey:
		return "Ed25519"
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA-%d", k.N.BitLen())
	}
	return fmt.Sprintf("%T", pub)
}

// DialError is a failure to reach the server, told apart from a handshake's failure.
type DialError struct {
	Addr string
	Err  error
}

func (e *DialError) Error() string {
	switch {
	case isTimeout(e.Err):
		return fmt.Sprintf("connect to %s: timed out (%v)", e.Addr, e.Err)
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connect to %s: connection refused: nothing listens there", e.Addr)
	}
	return fmt.Sprintf("connect to %s: unreachable: %v", e.Addr, e.Err)
}

func (e *DialError) Unwrap() error { return e.Err }

// isTimeout reports whether err is a deadline's, however wrapped.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// dialOutside connects to addr within timeout (and ctx).
func dialOutside(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, &DialError{Addr: addr, Err: err}
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return conn, nil
}

// handshakeError says why a handshake with an outside server failed: a timeout, an alert
// received (named) or sent (with the local reason; unknown_ca when the chain is not trusted
// by the given roots).
func handshakeError(addr string, timeout time.Duration, err error) error {
	var ae *tls13.AlertError
	switch {
	case errors.As(err, &ae) && ae.Remote:
		return fmt.Errorf("handshake with %s: the server sent alert %s", addr, ae.Alert)
	case errors.As(err, &ae) && ae.Alert == tls13.AlertUnknownCA:
		return fmt.Errorf("handshake with %s: certificate not trusted by the given CA: %v", addr, ae.Err)
	case errors.As(err, &ae):
		return fmt.Errorf("handshake with %s: %v", addr, err)
	case isTimeout(err):
		return fmt.Errorf("handshake with %s: timed out after %v", addr, timeout)
	}
	return fmt.Errorf("handshake with %s: %w", addr, err)
}

// ProbeConfig is one tls-probe: the engine as client of Addr with one group and scheme.
type ProbeConfig struct {
	Addr   string
	Group  tls13.Group
	Scheme tls13.SignatureScheme
	// Suite is the one suite offered (0: TLS_AES_128_GCM_SHA256).
	Suite      tls13.CipherSuite
	Roots      *x509.CertPool
	ServerName string // "" : the address's host
	// Timeout bounds the dial and, separately, the handshake.
	Timeout time.Duration
}

// ProbeResult is one handshake of a probe: what was negotiated, who answered, and the
// engine's own timings.
type ProbeResult struct {
	State tls13.State
	Stats tls13.Stats
	Peer  *artifacts.TLSPeer
	// Connect is the TCP connect's wall time, Total the handshake call's.
	Connect, Total time.Duration
}

// Probe runs one full handshake with the engine as client and closes the connection.
func Probe(ctx context.Context, p ProbeConfig) (*ProbeResult, error) {
	if p.Timeout <= 0 {
		p.Timeout = tlsHandshakeTimeout
	}
	suite := p.Suite
	if suite == 0 {
		suite = tls13.TLS_AES_128_GCM_SHA256
	}
	name := (&Outside{ServerName: p.ServerName}).serverName(p.Addr)
	cfg := &tls13.Config{Groups: []tls13.Group{p.Group}, SignatureSchemes: []tls13.SignatureScheme{p.Scheme},
		CipherSuites: []tls13.CipherSuite{suite}, RootCAs: p.Roots, ServerName: name}
	t0 := time.Now()
	conn, err := dialOutside(ctx, p.Addr, p.Timeout)
	if err != nil {
		return nil, err
	}
	connect := time.Since(t0)
	defer conn.Close()
	deadline := time.Now().Add(p.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c := tls13.Client(conn, cfg)
	t1 := time.Now()
	err = c.Handshake()
	total := time.Since(t1)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, handshakeError(p.Addr, p.Timeout, err)
	}
	defer c.Close()
	st := c.State()
	if len(st.PeerCertificates) == 0 {
		return nil, fmt.Errorf("handshake with %s: no server certificate", p.Addr)
	}
	return &ProbeResult{State: st, Stats: c.Stats(), Peer: Peer(p.Addr, st.PeerCertificates[0]), Connect: connect, Total: total}, nil
}
