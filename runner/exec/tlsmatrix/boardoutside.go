package tlsmatrix

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	"pqrepro/tls13"
)

// A board's client against an outside server (spec.tls.server HOST:PORT; run's --tls-server):
// only a board whose client speaks over the serial line, the runner relaying its records to
// the address. The board is given the CA of --tls-ca whose key is of the cell's signature
// algorithm (a board pins one trust anchor) and checks the leaf for --tls-servername (default
// the address's host). The runner learns who answered from one handshake of its own engine
// client before the cell (the board's handshakes are encrypted end to end, so the relay cannot
// see the leaf); the bytes and flights of each handshake are the relay's count of what it
// carried. No echo (an outside server speaks no echo protocol) and no server CPU or phases
// (they are the server's own). Counts against an outside server need not repeat: its random
// choices are its own.

// startOutside prepares a cell against the outside server; it returns why the cell fails when
// it cannot run.
func (b *boardCell) startOutside(ctx context.Context, ts tls13.SignatureScheme) string {
	o := b.Options.TLSOutside
	addr := b.spec.Server
	if o == nil || len(o.CAs) == 0 {
		return fmt.Sprintf("spec.tls.server %s: a board has no system roots; give the CA the server's chain leads to (--tls-ca FILE)", addr)
	}
	var ca *x509.Certificate
	for _, c := range o.CAs {
		if c.IsCA && KeyAlgorithm(c.PublicKey) == b.scheme {
			ca = c
			break
		}
	}
	if ca == nil {
		return fmt.Sprintf("no CA with an %s key among the %d of --tls-ca: the board checks the leaf's signature with the one CA it is given", b.scheme, len(o.CAs))
	}
	b.outsideCA, b.name = ca, (&Outside{ServerName: o.ServerName}).serverName(addr)
	g, err := tls13.ParseGroup(b.group)
	if err != nil {
		return err.Error()
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	probe, err := Probe(ctx, ProbeConfig{Addr: addr, Group: g, Scheme: ts, Roots: pool, ServerName: b.name, Timeout: 10 * time.Second})
	if err != nil {
		return "the runner's own handshake with the outside server, to learn who answers: " + err.Error()
	}
	b.peer = probe.Peer
	for _, c := range probe.State.PeerCertificates {
		b.chainBytes += len(c.Raw)
	}
	b.now = time.Now()
	return ""
}

// record is what the relay saw of one handshake, as a TLSServed: the bytes are the whole
// connection's (handshake and close), from the server's side.
func (c *countingConn) record(b *boardCell) TLSServed {
	c.mu.Lock()
	defer c.mu.Unlock()
	return TLSServed{Remote: b.spec.Server, Group: b.group, Scheme: b.scheme, Suite: b.spec.CipherSuite,
		Sent: c.read, Received: c.written, Flights: c.flights}
}

// dialOutsideCounted opens the next handshake's connection to the outside server and keeps
// its counter.
func (b *boardCell) dialOutsideCounted(ctx context.Context) (net.Conn, error) {
	conn, err := dialOutside(ctx, b.spec.Server, 5*time.Second)
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: conn}
	b.relayed = append(b.relayed, cc)
	return cc, nil
}
