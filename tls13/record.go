package tls13

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Record content types (RFC 8446 §5.1).
const (
	recordChangeCipherSpec uint8 = 20
	recordAlert            uint8 = 21
	recordHandshake        uint8 = 22
	recordApplicationData  uint8 = 23
)

const (
	recordHeaderLen  = 5
	maxPlaintext     = 1 << 14
	maxCiphertext    = maxPlaintext + 256
	maxHandshakeSize = 1 << 18 // a certificate chain of ML-DSA-87 certificates fits many times
	aeadOverhead     = 16
)

// fill makes sure rbuf[rpos:rend] holds at least n bytes, reading from the socket.
func (c *Conn) fill(n int) error {
	if c.rend-c.rpos >= n {
		return nil
	}
	if c.rbuf == nil {
		c.rbuf = make([]byte, 2*(recordHeaderLen+maxCiphertext))
	}
	if c.rpos+n > len(c.rbuf) {
		c.rend = copy(c.rbuf, c.rbuf[c.rpos:c.rend])
		c.rpos = 0
	}
	for c.rend-c.rpos < n {
		var t0 time.Time
		if c.timing {
			t0 = time.Now()
		}
		m, err := c.conn.Read(c.rbuf[c.rend:])
		if c.timing {
			c.stats.Wait += time.Since(t0)
		}
		c.rend += m
		if c.rend-c.rpos >= n {
			break
		}
		if err != nil {
			if err == io.EOF {
				if c.rend == c.rpos {
					return ioError{fmt.Errorf("connection closed by the peer: %w", io.ErrUnexpectedEOF)}
				}
				return ioError{fmt.Errorf("connection closed inside a record: %w", io.ErrUnexpectedEOF)}
			}
			return ioError{fmt.Errorf("read: %w", err)}
		}
	}
	return nil
}

// readRecord reads and, once keys are set, decrypts one record. It returns the (inner) content
// type and the plaintext, which stays valid until the next readRecord. ChangeCipherSpec records
// during the handshake are skipped; a received alert is returned as an error (io.EOF for
// close_notify).
func (c *Conn) readRecord() (uint8, []byte, error) {
	for {
		if err := c.fill(recordHeaderLen); err != nil {
			return 0, nil, err
		}
		hdr := c.rbuf[c.rpos : c.rpos+recordHeaderLen]
		typ := hdr[0]
		n := int(hdr[3])<<8 | int(hdr[4])
		if n > maxCiphertext || (c.in.aead == nil && n > maxPlaintext) {
			return 0, nil, &alertCause{AlertRecordOverflow, fmt.Errorf("record of %d bytes", n)}
		}
		if err := c.fill(recordHeaderLen + n); err != nil {
			return 0, nil, err
		}
		hdr = c.rbuf[c.rpos : c.rpos+recordHeaderLen]
		payload := c.rbuf[c.rpos+recordHeaderLen : c.rpos+recordHeaderLen+n]
		c.rpos += recordHeaderLen + n
		if c.timing {
			c.stats.BytesReceived += recordHeaderLen + n
			c.flight(c.isClient).Bytes += recordHeaderLen + n
		}
		if typ == recordChangeCipherSpec {
			if !c.hsDone && n == 1 && payload[0] == 1 {
				if c.timing {
					f := c.flight(c.isClient)
					f.Messages = append(f.Messages, "ChangeCipherSpec")
				}
				continue
			}
			return 0, nil, &alertCause{AlertUnexpectedMessage, errors.New("ChangeCipherSpec record not allowed here")}
		}
		if c.in.aead != nil {
			if typ != recordApplicationData {
				if typ == recordAlert && n == 2 {
					// A peer that failed before it could read our keys may still send a plaintext alert.
					return 0, nil, c.alertReceived(payload)
				}
				return 0, nil, &alertCause{AlertUnexpectedMessage, fmt.Errorf("plaintext record of type %d after keys were set", typ)}
			}
			if n < aeadOverhead+1 {
				return 0, nil, &alertCause{AlertBadRecordMAC, errors.New("encrypted record too short")}
			}
			nonce := c.in.setNonce()
			var t0 time.Time
			if c.timing {
				t0 = time.Now()
			}
			pt, err := c.in.aead.Open(payload[:0], nonce, payload, hdr)
			if c.timing {
				c.stats.RecordLayer += time.Since(t0)
			}
			if err != nil {
				return 0, nil, &alertCause{AlertBadRecordMAC, errors.New("record authentication failed")}
			}
			c.in.seq++
			if len(pt) > maxPlaintext+1 {
				return 0, nil, &alertCause{AlertRecordOverflow, fmt.Errorf("plaintext of %d bytes", len(pt))}
			}
			i := len(pt) - 1
			for i >= 0 && pt[i] == 0 {
				i--
			}
			if i < 0 {
				return 0, nil, &alertCause{AlertUnexpectedMessage, errors.New("encrypted record with no content type")}
			}
			typ, payload = pt[i], pt[:i]
		} else if typ == recordApplicationData {
			return 0, nil, &alertCause{AlertUnexpectedMessage, errors.New("application data before keys were set")}
		}
		switch typ {
		case recordAlert:
			return 0, nil, c.alertReceived(payload)
		case recordHandshake:
			if len(payload) == 0 {
				return 0, nil, &alertCause{AlertUnexpectedMessage, errors.New("empty handshake record")}
			}
		case recordApplicationData:
			if len(payload) == 0 {
				continue // zero-length application data is allowed and carries nothing
			}
		default:
			return 0, nil, &alertCause{AlertUnexpectedMessage, fmt.Errorf("record of unknown type %d", typ)}
		}
		return typ, payload, nil
	}
}

func (c *Conn) alertReceived(p []byte) error {
	if len(p) != 2 {
		return &alertCause{AlertDecodeError, errors.New("malformed alert")}
	}
	if Alert(p[1]) == AlertCloseNotify {
		if !c.hsDone {
			return &AlertError{Alert: AlertCloseNotify, Remote: true}
		}
		return io.EOF
	}
	return &AlertError{Alert: Alert(p[1]), Remote: true}
}

// nextMessage takes one whole handshake message (header included) off hsBuf; ok is false when
// more bytes are needed. The returned slice stays valid until hsBuf is next appended to.
func (c *Conn) nextMessage() ([]byte, bool, error) {
	if len(c.hsBuf) < 4 {
		return nil, false, nil
	}
	n := int(c.hsBuf[1])<<16 | int(c.hsBuf[2])<<8 | int(c.hsBuf[3])
	if n > maxHandshakeSize {
		return nil, false, &alertCause{AlertDecodeError, fmt.Errorf("%s of %d bytes exceeds %d", messageName(c.hsBuf[0]), n, maxHandshakeSize)}
	}
	if len(c.hsBuf) < 4+n {
		return nil, false, nil
	}
	msg := c.hsBuf[: 4+n : 4+n]
	c.hsBuf = c.hsBuf[4+n:]
	if len(c.hsBuf) == 0 {
		c.hsBuf = c.hsBuf[:0:0] // let the next append start a fresh buffer: msg stays intact
	}
	return msg, true, nil
}

// readHandshake returns the next handshake message during the handshake, reading records as
// needed. Application data during the handshake is unexpected_message.
func (c *Conn) readHandshake() ([]byte, error) {
	for {
		msg, ok, err := c.nextMessage()
		if err != nil {
			return nil, err
		}
		if ok {
			if c.timing {
				f := c.flight(c.isClient)
				f.Messages = append(f.Messages, flightName(msg))
			}
			return msg, nil
		}
		typ, data, err := c.readRecord()
		if err != nil {
			return nil, err
		}
		if typ != recordHandshake {
			return nil, &alertCause{AlertUnexpectedMessage, fmt.Errorf("record type %d during the handshake", typ)}
		}
		c.hsBuf = append(c.hsBuf, data...)
	}
}

// expect reads the next handshake message and checks its type (unexpected_message otherwise).
func (c *Conn) expect(typ uint8) ([]byte, error) {
	msg, err := c.readHandshake()
	if err != nil {
		return nil, err
	}
	if msg[0] != typ {
		return nil, &alertCause{AlertUnexpectedMessage, fmt.Errorf("got %s, want %s", messageName(msg[0]), messageName(typ))}
	}
	return msg, nil
}

// flight returns the current flight sent by the server (fromServer) or the client,
// starting a new one when the direction changes.
func (c *Conn) flight(fromServer bool) *Flight {
	from := "client"
	if fromServer {
		from = "server"
	}
	if n := len(c.stats.Flights); n > 0 && c.stats.Flights[n-1].From == from {
		return &c.stats.Flights[n-1]
	}
	c.stats.Flights = append(c.stats.Flights, Flight{From: from})
	return &c.stats.Flights[len(c.stats.Flights)-1]
}

// writeRecord appends data as records of type typ to wbuf (fragmenting at 2^14 bytes,
// encrypting once out keys are set).
func (c *Conn) writeRecord(typ uint8, data []byte) {
	for first := true; first || len(data) > 0; first = false {
		n := min(len(data), maxPlaintext)
		frag := data[:n]
		data = data[n:]
		start := len(c.wbuf)
		if c.out.aead == nil {
			c.wbuf = append(c.wbuf, typ, 3, 3, byte(n>>8), byte(n))
			c.wbuf = append(c.wbuf, frag...)
		} else {
			l := n + 1 + c.out.aead.Overhead()
			if cap(c.wbuf)-len(c.wbuf) < recordHeaderLen+l {
				nb := make([]byte, len(c.wbuf), 2*cap(c.wbuf)+recordHeaderLen+l)
				copy(nb, c.wbuf)
				c.wbuf = nb
			}
			c.wbuf = append(c.wbuf, recordApplicationData, 3, 3, byte(l>>8), byte(l))
			pt := len(c.wbuf)
			c.wbuf = append(c.wbuf, frag...)
			c.wbuf = append(c.wbuf, typ)
			nonce := c.out.setNonce()
			var t0 time.Time
			if c.timing {
				t0 = time.Now()
			}
			sealed := c.out.aead.Seal(c.wbuf[pt:pt], nonce, c.wbuf[pt:], c.wbuf[start:pt])
			if c.timing {
				c.stats.RecordLayer += time.Since(t0)
			}
			c.wbuf = c.wbuf[:pt+len(sealed)]
			c.out.seq++
		}
		if c.timing {
			w := len(c.wbuf) - start
			c.stats.BytesSent += w
			c.flight(!c.isClient).Bytes += w
		}
	}
}

// writeHandshake queues a handshake message (and lets a test hook alter it); it goes out with
// the next flushHandshake, key change or flush.
func (c *Conn) writeHandshake(msg []byte) {
	if c.cfg.hooks != nil && c.cfg.hooks.message != nil {
		if msg = c.cfg.hooks.message(msg); msg == nil {
			return
		}
	}
	if c.timing && len(msg) > 0 {
		c.drainCCS()
		f := c.flight(!c.isClient)
		f.Messages = append(f.Messages, flightName(msg))
	}
	c.hsOut = append(c.hsOut, msg...)
}

// flightName names a whole handshake message for Flight.Messages: its type's name, with a
// HelloRetryRequest told apart from a ServerHello.
func flightName(msg []byte) string {
	if msg[0] == typeServerHello && len(msg) >= 38 && string(msg[6:38]) == string(helloRetryRandom) {
		return "HelloRetryRequest"
	}
	return messageName(msg[0])
}

// flushHandshake turns the queued handshake messages into records: messages sent under the
// same keys share records (up to 2^14 bytes each).
func (c *Conn) flushHandshake() {
	if len(c.hsOut) > 0 {
		c.writeRecord(recordHandshake, c.hsOut)
		c.hsOut = c.hsOut[:0]
	}
}

// drainCCS consumes ChangeCipherSpec records the peer sent at the end of its last flight that
// are already buffered, so that they count in that flight rather than in its next one.
func (c *Conn) drainCCS() {
	for c.rend-c.rpos >= 6 && c.rbuf[c.rpos] == recordChangeCipherSpec &&
		c.rbuf[c.rpos+3] == 0 && c.rbuf[c.rpos+4] == 1 && c.rbuf[c.rpos+5] == 1 {
		c.rpos += 6
		c.stats.BytesReceived += 6
		f := c.flight(c.isClient)
		f.Bytes += 6
		f.Messages = append(f.Messages, "ChangeCipherSpec")
	}
}

// flush writes everything queued in one socket write.
func (c *Conn) flush() error {
	c.flushHandshake()
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.conn.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if err != nil {
		return ioError{fmt.Errorf("write: %w", err)}
	}
	return nil
}

// setKey installs the traffic keys of secret on h. For the read side, pending handshake bytes
// would span the key change: unexpected_message.
func (c *Conn) setKey(h *halfConn, secret []byte) error {
	if h == &c.in && len(c.hsBuf) > 0 {
		return &alertCause{AlertUnexpectedMessage, errors.New("handshake message spans a key change")}
	}
	if h == &c.out {
		c.flushHandshake()
	}
	var t0 time.Time
	if c.timing {
		t0 = time.Now()
	}
	aead, iv, err := c.suite.trafficKeys(secret)
	if c.timing {
		c.stats.KeySchedule += time.Since(t0)
	}
	if err != nil {
		return fmt.Errorf("traffic keys: %w", err)
	}
	h.aead = aead
	copy(h.iv[:], iv)
	h.seq = 0
	return nil
}
