package mqtt

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"pqrepro/telemetry"
	"sync"
)

// Direction is which way a proxy tampers with PUBLISH packets.
type Direction int

// Directions.
const (
	ToBroker Direction = iota + 1 // client -> broker (between a device and the broker)
	ToClient                      // broker -> client (between the broker and the gateway)
)

// Adversary decides what becomes of one data-frame PUBLISH passing the proxy in its
// direction: it returns the packets to send on in its place (none drops it; the same twice
// duplicates it; a packet kept and returned from a later call reorders or replays it).
// Packets returned are sent as QoS 0; the proxy acknowledges a QoS 1 original to its sender
// itself, so the sender's flow control sees nothing. Called from one goroutine per proxy.
type Adversary func(p Publish) []Publish

// Proxy is an MQTT-aware TCP proxy in front of a broker: the broker's network, as an
// attacker who owns it. Only PUBLISH packets on data topics (".../d/...") in its direction
// are shown to the adversary; everything else passes byte for byte.
type Proxy struct {
	ln       net.Listener
	upstream string
	dir      Direction
	adv      Adversary
	max      int

	mu    sync.Mutex
	conns []net.Conn
	cut   bool
	wg    sync.WaitGroup
}

// StartProxy listens on a free loopback port and relays every connection to upstream
// (host:port), tampering in direction dir through adv.
func StartProxy(upstream string, dir Direction, adv Adversary) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, dir: dir, adv: adv, max: 1 << 20}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial instead of the broker's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes the listener and every relayed connection: to its clients the broker went away.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
}

// Close cuts and waits for the relays to end.
func (p *Proxy) Close() {
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			u.Close()
			return
		}
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		cw, uw := &lockedConn{c: c}, &lockedConn{c: u}
		p.wg.Add(2)
		// client -> broker, acks for tampered packets go back to the client
		go p.pump(bufio.NewReader(c), uw, cw, p.dir == ToBroker, c, u)
		// broker -> client, acks for tampered packets go back to the broker
		go p.pump(bufio.NewReader(u), cw, uw, p.dir == ToClient, c, u)
	}
}

type lockedConn struct {
	mu sync.Mutex
	c  net.Conn
}

func (l *lockedConn) send(pk Packet) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.c.Write(pk.Encode())
	return err
}

func (p *Proxy) pump(r *bufio.Reader, out, back *lockedConn, tamper bool, a, b net.Conn) {
	defer p.wg.Done()
	defer a.Close()
	defer b.Close()
	for {
		pk, err := ReadPacket(r, p.max)
		if err != nil {
			return
		}
		if tamper && pk.Type() == typePublish {
			pub, err := ParsePublish(pk)
			if err == nil && telemetry.IsDataTopic(pub.Topic) {
				if pub.QoS > 0 {
					if back.send(puback(pub.PacketID)) != nil {
						return
					}
				}
				for _, q := range p.adv(pub) {
					q.QoS, q.PacketID, q.Dup = 0, 0, false
					if out.send(q.Packet()) != nil {
						return
					}
				}
				continue
			}
		}
		if out.send(pk) != nil {
			return
		}
	}
}

var _ io.ByteReader = (*sliceReader)(nil)
