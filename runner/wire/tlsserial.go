package wire

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// TLS over the serial line (firmware/PROTOCOL.md, "TLS over the serial line"): a board whose
// HELLO says tls_io=serial has no network; its client's records travel in frames and the runner
// relays them to a TCP connection it opens to the cell's server.
const (
	// TLSChunk is the most bytes of binary one TLSCA, TLSO or TLSIN frame carries on a board
	// whose frames are under 512 bytes (HELLO max_line); TLSChunkWide on one of 512 or more.
	TLSChunk     = 128
	TLSChunkWide = 224
	// MaxTLSCA is the longest CA certificate (DER) a board takes.
	MaxTLSCA = 8192
	// MaxTLSFlight is the most server bytes a board buffers before it works on them.
	MaxTLSFlight = 32768
	// tlsRecordMax is the longest TLS record a relay passes on (RFC 8446 section 5.2).
	tlsRecordMax = 5 + 1<<14 + 256
)

// tlsChunk is the most binary bytes per TLS frame this board takes and sends: TLSChunkWide
// once its HELLO says its frames reach 512 bytes (firmware/core/tlsreq.c sizes its own the
// same way), else TLSChunk.
func (c *Conn) tlsChunk() int {
	if c != nil && c.boardMaxLine >= 512 {
		return TLSChunkWide
	}
	return TLSChunk
}

// TLSIO is the transport a board's TLS client uses (HELLO tls_io=): "serial" for records over
// this line, "net" (also when absent) for the board's own network.
func (h Hello) TLSIO() string {
	if v, ok := h.Frame.Get("tls_io"); ok && v != "" {
		return v
	}
	return "net"
}

// TLSPinCA hands the board its trust anchor (a CA certificate's DER) in TLSCA chunks, untimed,
// and returns the fingerprint it pinned (the first 16 bytes of the DER's SHA-256), which a TLS
// request's CA names. A certificate the board cannot parse, or a different fingerprint, is an error.
func (c *Conn) TLSPinCA(ctx context.Context, der []byte) ([]byte, error) {
	if len(der) == 0 || len(der) > MaxTLSCA {
		return nil, fmt.Errorf("wire: TLSCA: certificate of %d bytes, want 1..%d", len(der), MaxTLSCA)
	}
	want := sha256.Sum256(der)
	err := c.provision(ctx, "TLSCA", "ca", der, func(f Frame) error {
		if p, _ := f.Get("pinned"); p != "1" {
			return fmt.Errorf("the board refuses the CA certificate (its X.509 reader cannot parse it)")
		}
		if h, _ := f.Get("ca"); h != hex.EncodeToString(want[:16]) {
			return fmt.Errorf("%w: TLSCA ca=%q, the certificate's is %x", ErrProtocol, h, want[:16])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return want[:16], nil
}

// provision sends data to the board in typ chunks (off= total= field=<hex>), each acknowledged
// with the bytes the board holds; last checks the answer to the last chunk.
func (c *Conn) provision(ctx context.Context, typ, field string, data []byte, last func(Frame) error) error {
	chunk := c.tlsChunk()
	for off := 0; off < len(data); off += chunk {
		end := min(off+chunk, len(data))
		fields := []Field{{"off", strconv.Itoa(off)}, {"total", strconv.Itoa(len(data))}, {field, hex.EncodeToString(data[off:end])}}
		err := c.exchange(ctx, typ, fields, func(f Frame) (bool, error) {
			if f.Type != typ {
				return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
			}
			have, err := f.Uint("have")
			if err != nil {
				return false, err
			}
			if have != uint64(end) {
				return false, fmt.Errorf("%w: the board holds %d bytes of %s, sent %d", ErrProtocol, have, typ, end)
			}
			if end < len(data) {
				return true, nil
			}
			return true, last(f)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// TLSSerialRequest is a TLS request over the serial line: no host or port (the runner relays),
// the Unix time the board checks the certificates at.
type TLSSerialRequest struct {
	Group, Sig uint16
	SNI        string
	CA         []byte // the fingerprint TLSPinCA returned
	Iterations int
	Warmup     int
	Echo       int
	Now        time.Time
}

// Validate checks the request before it is sent.
func (r TLSSerialRequest) Validate() error {
	base := TLSRequest{Host: "serial", Port: 1, Group: r.Group, Sig: r.Sig, SNI: r.SNI, CA: r.CA,
		Iterations: r.Iterations, Warmup: r.Warmup, Echo: r.Echo}
	if err := base.Validate(); err != nil {
		return err
	}
	if r.Now.Unix() <= 0 {
		return fmt.Errorf("wire: tls: now %v is before 1970", r.Now)
	}
	return nil
}

func (r TLSSerialRequest) fields() []Field {
	return []Field{
		{"io", "serial"}, {"group", strconv.Itoa(int(r.Group))}, {"sig", strconv.Itoa(int(r.Sig))},
		{"sni", r.SNI}, {"ca", fmt.Sprintf("%x", r.CA)},
		{"n", strconv.Itoa(r.Iterations)}, {"warmup", strconv.Itoa(r.Warmup)}, {"echo", strconv.Itoa(r.Echo)},
		{"now", strconv.FormatInt(r.Now.Unix(), 10)},
	}
}

// TLSPhases is a board's split of one handshake's count (HANDSHAKE count_*), in Hello.Unit.
type TLSPhases struct {
	KeyExchange        uint64 // ML-KEM key generation and decapsulation
	Chain              uint64 // the trust anchor and the leaf parsed, the leaf checked (its signature included)
	CertificateVerify  uint64 // CertificateVerify's ML-DSA verification
	KeyScheduleRecords uint64 // HKDF, HMAC, AES-GCM key setup, sealing and opening
	Rest               uint64 // the count minus the four: parsing, transcript hashing, copying
}

// tlsRelay carries one TLS io=serial request's records between the board and the server.
type tlsRelay struct {
	c      *Conn
	group  uint16 // the cell's: every ok report must have negotiated them
	sig    uint16
	n      int // the timed handshakes asked for
	dial   func(context.Context) (net.Conn, error)
	fn     func(Handshake)
	conn   net.Conn
	br     *bufio.Reader
	i      int    // the handshake being relayed, warm-up ones included
	out    []byte // the board's bytes of the current TLSO run
	want   string // the last TLSOUT's want=
	final  bool   // the current TLSIN is the last chunk (end=1): more frames follow its ack
	next   int    // timed handshakes reported so far
	sum    TLSSummary
	done   bool
	relErr error // the server connection's failure, reported with the handshake
	server bool  // the board is the server: the relayed connections come from the client
	role   string
}

// TLSSerial runs req on a board whose client speaks over the serial line: each handshake's
// records are relayed to a fresh connection from dial (the cell's server), the server's bytes
// re-chunked by TLS record and TLSChunk and buffered on the board before it works on them. fn
// gets every timed handshake in order; the board's tally is returned.
func (c *Conn) TLSSerial(ctx context.Context, req TLSSerialRequest, dial func(context.Context) (net.Conn, error), fn func(Handshake)) (TLSSummary, error) {
	if err := req.Validate(); err != nil {
		return TLSSummary{}, err
	}
	r := &tlsRelay{c: c, group: req.Group, sig: req.Sig, n: req.Iterations, dial: dial, fn: fn, i: -1, role: "client"}
	defer r.closeConn()
	accepted := false
	err := c.exchange(ctx, "TLS", req.fields(), func(f Frame) (bool, error) {
		if f.Type == "TLS" {
			accepted = true
			return false, nil
		}
		if !accepted {
			return false, fmt.Errorf("%w: %s before TLS", ErrProtocol, f.Type)
		}
		return r.frame(ctx, f)
	})
	for err == nil && !r.done {
		err = r.feedFlight(ctx)
	}
	return r.sum, err
}

func (r *tlsRelay) closeConn() {
	if r.conn != nil {
		_ = r.conn.Close()
		r.conn, r.br = nil, nil
	}
}

// frame handles one frame answering TLS or TLSIN; true when the exchange is over (the board
// waits for the server's bytes, or the request is done).
func (r *tlsRelay) frame(ctx context.Context, f Frame) (bool, error) {
	switch f.Type {
	case "TLSIN":
		return !r.final, nil
	case "TLSO":
		return false, r.tlso(ctx, f)
	case "TLSOUT":
		return r.tlsout(ctx, f)
	case "HANDSHAKE":
		return false, r.handshake(f)
	case "TLSDONE":
		return true, r.tlsdone(f)
	}
	return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
}

// tlso collects a chunk of the board's bytes; the first of a new handshake opens its connection.
func (r *tlsRelay) tlso(ctx context.Context, f Frame) error {
	i, err := f.Uint("i")
	if err != nil {
		return err
	}
	off, err := f.Uint("off")
	if err != nil {
		return err
	}
	if int(i) != r.i && off != 0 {
		return fmt.Errorf("%w: TLSO i=%d off=%d, relaying handshake %d", ErrProtocol, i, off, r.i)
	}
	if err := r.enter(ctx, "TLSO", i); err != nil {
		return err
	}
	if off != uint64(len(r.out)) {
		return fmt.Errorf("%w: TLSO off=%d, have %d", ErrProtocol, off, len(r.out))
	}
	d, _ := f.Get("d")
	b, err := hex.DecodeString(d)
	if err != nil || len(b) == 0 || len(b) > r.c.tlsChunk() {
		return fmt.Errorf("%w: TLSO d= is not 1..%d bytes of hex", ErrProtocol, r.c.tlsChunk())
	}
	if len(r.out)+len(b) > MaxTLSFlight {
		return fmt.Errorf("%w: the board's bytes exceed %d", ErrProtocol, MaxTLSFlight)
	}
	r.out = append(r.out, b...)
	return nil
}

// enter opens handshake i's connection when the board's frame (typ) is the first of it: i
// must then follow the handshake relayed so far.
func (r *tlsRelay) enter(ctx context.Context, typ string, i uint64) error {
	if int(i) == r.i {
		return nil
	}
	if int(i) != r.i+1 {
		return fmt.Errorf("%w: %s i=%d, relaying handshake %d", ErrProtocol, typ, i, r.i)
	}
	r.closeConn()
	r.i, r.relErr = int(i), nil
	conn, err := r.dial(ctx)
	if err != nil {
		return fmt.Errorf("wire: tls: the cell's %s: %w", r.peer(), err)
	}
	r.conn, r.br = conn, bufio.NewReaderSize(conn, tlsRecordMax)
	return nil
}

// peer names the other end of the relayed connections.
func (r *tlsRelay) peer() string {
	if r.server {
		return "client"
	}
	return "server"
}

// tlsout passes the board's bytes to the peer; true when the board now waits for its bytes.
// With the board as the server a handshake's first frame is TLSOUT len=0 want=flight.
func (r *tlsRelay) tlsout(ctx context.Context, f Frame) (bool, error) {
	n, err := f.Uint("len")
	if err != nil {
		return false, err
	}
	i, err := f.Uint("i")
	if err != nil {
		return false, err
	}
	if err := r.enter(ctx, "TLSOUT", i); err != nil {
		return false, err
	}
	if n != uint64(len(r.out)) {
		return false, fmt.Errorf("%w: TLSOUT len=%d, received %d bytes", ErrProtocol, n, len(r.out))
	}
	if len(r.out) > 0 && r.conn != nil && r.relErr == nil {
		if _, err := r.conn.Write(r.out); err != nil {
			r.relErr = err
		}
	}
	r.out = r.out[:0]
	r.want, _ = f.Get("want")
	switch r.want {
	case "flight", "echo":
		return true, nil
	case "none":
		r.closeConn()
		return false, nil
	}
	return false, fmt.Errorf("%w: TLSOUT want=%q", ErrProtocol, r.want)
}

func (r *tlsRelay) handshake(f Frame) error {
	h, err := parseHandshakeUnit(f, false)
	if err != nil {
		return err
	}
	if h.Index != r.next {
		return fmt.Errorf("%w: handshake %d out of order (want %d)", ErrProtocol, h.Index, r.next)
	}
	r.next++
	if h.Role != r.role {
		return fmt.Errorf("%w: HANDSHAKE %d role=%s in a %s cell", ErrProtocol, h.Index, h.Role, r.role)
	}
	if h.OK && (h.Group != r.group || h.Sig != r.sig) {
		h.OK, h.Reason = false, fmt.Sprintf("negotiated group %d and scheme %#04x, asked for %d and %#04x", h.Group, h.Sig, r.group, r.sig)
	}
	if r.fn != nil {
		r.fn(h)
	}
	return nil
}

func (r *tlsRelay) tlsdone(f Frame) error {
	vals := map[string]uint64{}
	for _, k := range []string{"n", "ok", "fail"} {
		v, err := f.Uint(k)
		if err != nil {
			return err
		}
		vals[k] = v
	}
	r.sum = TLSSummary{N: int(vals["n"]), OK: int(vals["ok"]), Fail: int(vals["fail"])}
	r.done = true
	if r.sum.N != r.next || r.sum.N != r.n || r.sum.OK+r.sum.Fail != r.sum.N {
		return fmt.Errorf("%w: TLSDONE counts %d handshakes (%d ok, %d failed), received %d of %d", ErrProtocol, r.sum.N, r.sum.OK, r.sum.Fail, r.next, r.n)
	}
	return nil
}

// feedFlight reads the server's next flight (whole records until none follows within
// flightPause) and hands it to the board in TLSIN frames: each record in chunks of at most
// TLSChunk bytes, whatever TCP delivered, end=1 on the last. A server that sends nothing
// (closed, or failed) is reported to the board as an empty close: the board's report follows.
func (r *tlsRelay) feedFlight(ctx context.Context) error {
	if r.conn == nil {
		return fmt.Errorf("%w: the board waits for the server's bytes with no connection open", ErrProtocol)
	}
	recs, err := readFlight(r.conn, r.br)
	if len(recs) == 0 {
		return fmt.Errorf("wire: tls: handshake %d: the %s sent nothing the board waits for (%s): %w", r.i, r.peer(), r.want, err)
	}
	var chunks [][]byte
	size := r.c.tlsChunk()
	for _, rec := range recs {
		for o := 0; o < len(rec); o += size {
			chunks = append(chunks, rec[o:min(o+size, len(rec))])
		}
	}
	off := 0
	for k, ch := range chunks {
		r.final = k == len(chunks)-1
		fields := []Field{{"i", strconv.Itoa(r.i)}, {"off", strconv.Itoa(off)}, {"d", hex.EncodeToString(ch)}}
		if r.final {
			fields = append(fields, Field{"end", "1"})
		}
		if off+len(ch) > MaxTLSFlight {
			return fmt.Errorf("wire: tls: handshake %d: the %s's flight exceeds %d bytes", r.i, r.peer(), MaxTLSFlight)
		}
		if err := r.c.exchange(ctx, "TLSIN", fields, func(f Frame) (bool, error) { return r.frame(ctx, f) }); err != nil {
			return err
		}
		off += len(ch)
	}
	return nil
}

// flightPause is how long the relay waits after a whole record for another of the same flight.
// The servers a board meets write a flight in one socket write (the engine's Conn.flush;
// OpenSSL's handshake write buffer), so the rest of a flight is in the socket's buffer when its
// first record arrives and a short pause loses nothing; a flight that a slow server splits
// anyway costs the board one more compute segment (it answers want=flight and gets the rest),
// never a failed handshake. It was 300 ms: two of them were most of a handshake's wall time.
const flightPause = 25 * time.Millisecond

// readFlight reads whole TLS records until none begins within flightPause (the first within
// 30 s); the records read and, when it stopped on anything but the pause, why. Once a record
// has begun, the rest of it gets 30 s: on a loaded machine TCP may deliver a record in pieces
// further apart than the pause, and a record cut there would be lost to the board.
func readFlight(conn net.Conn, br *bufio.Reader) ([][]byte, error) {
	var recs [][]byte
	for {
		wait := 30 * time.Second
		if len(recs) > 0 {
			wait = flightPause
		}
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && len(recs) > 0 {
				return recs, nil
			}
			return recs, err
		}
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		rec, err := readRecord(br)
		if err != nil {
			return recs, err
		}
		recs = append(recs, rec)
	}
}

// readRecord reads one TLS record: its 5-byte header and the length it gives.
func readRecord(br *bufio.Reader) ([]byte, error) {
	hdr, err := br.Peek(5)
	if err != nil {
		return nil, err
	}
	n := 5 + (int(hdr[3])<<8 | int(hdr[4]))
	if n > tlsRecordMax {
		return nil, fmt.Errorf("wire: tls: a record of %d bytes from the server", n)
	}
	rec := make([]byte, n)
	if _, err := io.ReadFull(br, rec); err != nil {
		return nil, err
	}
	return rec, nil
}
