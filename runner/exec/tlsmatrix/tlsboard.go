package tlsmatrix

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/tls13/tlscert"
)

// TLSServed is the engine server's record of one connection a board (or any client) made: what
// was negotiated, the server side's phases (ns, artifacts.TLSPhaseNames), its wire bytes, and
// why it failed, if it did (the handshake, the negotiated cell, the echo, or the connection's
// deadline).
type TLSServed struct {
	// Remote is the client's address.
	Remote               string
	Group, Scheme, Suite string
	HelloRetry           bool
	Phases               map[string]float64
	Sent, Received       int // the server's handshake bytes written and read
	Flights              int
	Err                  string
}

// TLSBoardServer is pqrepro's engine as the TLS server a board's client connects to (a real
// Pico W or ESP32 on the lab's network, or OpenSSL's s_client playing one): one cell, each
// connection a full handshake followed by an echo of Echo bytes, within the connection's
// deadline. Ordered (a board cell's server) it serves one connection at a time, so its
// records come in the order the board made its handshakes and the CPU of a batch is the
// batch's alone; concurrent (tls-serve) a silent or broken client delays nobody else.
type TLSBoardServer struct {
	ln     net.Listener
	srv    *tlsServer
	opt    TLSBoardOptions
	served chan TLSServed
	wg     sync.WaitGroup
}

// TLSBoardCell is the cell a TLSBoardServer serves.
type TLSBoardCell struct {
	Group, Scheme, Suite string // artifacts.TLSGroups / TLSSignatures / TLSCipherSuites names
	Echo                 int    // bytes the client sends after the handshake and reads back
	// Seed, when set, makes the server deterministic (its random choices drawn from a stream
	// keyed by the seed, ML-DSA signing deterministic): with a seeded leaf and an ordered
	// server, a deterministic client sees the same bytes run after run.
	Seed []byte
}

// TLSBoardOptions says how a TLSBoardServer serves its connections.
type TLSBoardOptions struct {
	// Concurrent serves every connection at once (up to MaxConns) instead of one at a time.
	Concurrent bool
	// ConnTimeout bounds one connection, accept to the echo's last byte (default 30 s: a
	// slow board's largest handshake takes a few seconds). A client that sends nothing, stops
	// mid-record or vanishes mid-handshake is dropped at its deadline and recorded as failed.
	ConnTimeout time.Duration
	// MaxConns bounds the connections served at once when Concurrent (default 64); more wait
	// to be accepted.
	MaxConns int
}

// StartTLSBoardServer listens on listen (host:port; port 0 picks one) and serves the cell with
// chain's leaf, one connection at a time. Served connections are read with Next.
func StartTLSBoardServer(listen string, cell TLSBoardCell, chain *tlscert.Chain) (*TLSBoardServer, error) {
	return StartTLSBoardServerWith(listen, cell, chain, TLSBoardOptions{})
}

// StartTLSBoardServerWith is StartTLSBoardServer with options.
func StartTLSBoardServerWith(listen string, cell TLSBoardCell, chain *tlscert.Chain, opt TLSBoardOptions) (*TLSBoardServer, error) {
	if opt.ConnTimeout <= 0 {
		opt.ConnTimeout = tlsHandshakeTimeout
	}
	if opt.MaxConns <= 0 {
		opt.MaxConns = 64
	}
	key, err := x509.MarshalPKCS8PrivateKey(chain.Key)
	if err != nil {
		return nil, fmt.Errorf("encode the leaf key: %w", err)
	}
	srv, err := newTLSServer(&tlsCellConfig{Stack: artifacts.StackPQRepro, Group: cell.Group, Scheme: cell.Scheme, Suite: cell.Suite,
		Echo: cell.Echo, Certs: chain.Certificates(), Key: key, Seed: cell.Seed})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("tls server: %w", err)
	}
	s := &TLSBoardServer{ln: ln, srv: srv, opt: opt, served: make(chan TLSServed, 64)}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

func (s *TLSBoardServer) loop() {
	var conns sync.WaitGroup
	defer s.wg.Done()
	defer close(s.served)
	defer conns.Wait()
	slots := make(chan struct{}, s.opt.MaxConns)
	for {
		if s.opt.Concurrent {
			slots <- struct{}{}
		}
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		if !s.opt.Concurrent {
			s.served <- s.serveOne(conn)
			continue
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer func() { <-slots }()
			s.served <- s.serveOne(conn)
		}()
	}
}

// serveOne serves conn within the connection deadline and closes it.
func (s *TLSBoardServer) serveOne(conn net.Conn) TLSServed {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(s.opt.ConnTimeout))
	r := s.srv.serve(conn)
	return TLSServed{Remote: conn.RemoteAddr().String(), Group: r.Group, Scheme: r.Scheme, Suite: r.Suite, HelloRetry: r.Retry, Phases: r.Phases,
		Sent: r.Sent, Received: r.Received, Flights: r.Flights, Err: r.Err}
}

// Addr is where the server listens.
func (s *TLSBoardServer) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// ErrServerClosed is returned by Next once the server is closed and every record was read.
var ErrServerClosed = errors.New("tls server closed")

// Next waits for the record of the next connection served (ordered: in the order of the
// connections; concurrent: in the order they finished).
func (s *TLSBoardServer) Next(ctx context.Context) (TLSServed, error) {
	select {
	case r, ok := <-s.served:
		if !ok {
			return TLSServed{}, ErrServerClosed
		}
		return r, nil
	case <-ctx.Done():
		return TLSServed{}, ctx.Err()
	}
}

// Close stops listening; connections being served finish first (each within its deadline).
func (s *TLSBoardServer) Close() error {
	err := s.ln.Close()
	go func() {
		for range s.served { // let the loop finish the connections in flight
		}
	}()
	s.wg.Wait()
	return err
}
