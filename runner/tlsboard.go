package runner

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"

	"pqrepro/artifacts"
	"pqrepro/tls13/tlscert"
)

// TLSServed is the engine server's record of one connection a board (or any client) made: what
// was negotiated, the server side's phases (ns, artifacts.TLSPhaseNames), its wire bytes, and
// why it failed, if it did (the handshake, the negotiated cell, or the echo).
type TLSServed struct {
	Group, Scheme, Suite string
	HelloRetry           bool
	Phases               map[string]float64
	Sent, Received       int // the server's handshake bytes written and read
	Flights              int
	Err                  string
}

// TLSBoardServer is pqrepro's engine as the TLS server a board's client connects to (a real
// Pico W or ESP32 on the lab's network, or OpenSSL's s_client playing one): one cell, one
// connection at a time, each a full handshake followed by an echo of Echo bytes.
type TLSBoardServer struct {
	ln     net.Listener
	srv    *tlsServer
	served chan TLSServed
	wg     sync.WaitGroup
}

// TLSBoardCell is the cell a TLSBoardServer serves.
type TLSBoardCell struct {
	Group, Scheme, Suite string // artifacts.TLSGroups / TLSSignatures / TLSCipherSuites names
	Echo                 int    // bytes the client sends after the handshake and reads back
}

// StartTLSBoardServer listens on listen (host:port; port 0 picks one) and serves the cell with
// chain's leaf. Served connections are read with Next.
func StartTLSBoardServer(listen string, cell TLSBoardCell, chain *tlscert.Chain) (*TLSBoardServer, error) {
	key, err := x509.MarshalPKCS8PrivateKey(chain.Key)
	if err != nil {
		return nil, fmt.Errorf("encode the leaf key: %w", err)
	}
	srv, err := newTLSServer(&tlsCellConfig{Stack: artifacts.StackPQRepro, Group: cell.Group, Scheme: cell.Scheme, Suite: cell.Suite,
		Echo: cell.Echo, Certs: chain.Certificates(), Key: key})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("tls server: %w", err)
	}
	s := &TLSBoardServer{ln: ln, srv: srv, served: make(chan TLSServed, 64)}
	s.wg.Add(1)
	go s.loop()
	return s, nil
}

func (s *TLSBoardServer) loop() {
	defer s.wg.Done()
	defer close(s.served)
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		r := s.srv.serve(conn)
		s.served <- TLSServed{Group: r.Group, Scheme: r.Scheme, Suite: r.Suite, HelloRetry: r.Retry, Phases: r.Phases,
			Sent: r.Sent, Received: r.Received, Flights: r.Flights, Err: r.Err}
	}
}

// Addr is where the server listens.
func (s *TLSBoardServer) Addr() *net.TCPAddr { return s.ln.Addr().(*net.TCPAddr) }

// ErrServerClosed is returned by Next once the server is closed and every record was read.
var ErrServerClosed = errors.New("tls server closed")

// Next waits for the record of the next connection served.
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

// Close stops listening; a connection being served finishes first.
func (s *TLSBoardServer) Close() error {
	err := s.ln.Close()
	go func() {
		for range s.served { // let the loop finish a connection in flight
		}
	}()
	s.wg.Wait()
	return err
}
