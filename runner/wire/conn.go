package wire

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options tune a Conn. The zero value is usable.
type Options struct {
	// Log receives every raw line read from the board, prefixed "< ", and
	// every line written, prefixed "> ", as they happen, so the log is
	// complete even when an exchange fails. Nil discards.
	Log io.Writer
	// RetryInterval is how often an exchange looks at a silent board, and the first wait
	// before it repeats its request (nothing heard yet) or asks the board to resend what it
	// may have missed; each further retry of the same silence waits twice as long, up to
	// MaxRetryInterval, so a board busy with one long operation is not flooded with requests
	// it cannot read until it is done. Default 1s.
	RetryInterval time.Duration
	// SilenceTimeout ends an exchange with ErrTimeout when the board has been silent this
	// long. Without Activity it is wall time without a valid frame (a real board; its
	// keep-alive lines count as heard). With Activity it is only the time the board was idle
	// (not working, not paused, not waiting for a CPU) without answering: an emulator
	// starved by a busy host or stopped by a signal is not silent. Default 30s.
	SilenceTimeout time.Duration
	// Activity, when set, reports the board's own progress, seen from outside the
	// conversation (an emulator's CPU time and scheduling state). Liveness then follows
	// the board instead of the wall clock: a working board is never timed out by silence
	// (WorkLimit bounds it), an idle one is asked again, and a board that is gone (the
	// emulator exited) ends the exchange at once with ErrGone.
	Activity func() (Activity, error)
	// WorkLimit, with Activity, is the most work (Activity.Work) the board may do without
	// a valid frame before the exchange ends with ErrTimeout: the longest single operation
	// plus margin. Default 5m; Conn.SetWorkLimit changes it per cell.
	WorkLimit time.Duration
}

// MaxRetryInterval caps the back-off between retries of one silence.
const MaxRetryInterval = 30 * time.Second

// Activity is a snapshot of a board's progress taken outside the conversation.
type Activity struct {
	// Work is how much the board has worked so far (an emulator's CPU time); it only grows.
	Work time.Duration
	// Paused means the board is stopped from outside (an emulator under SIGSTOP): its
	// silence is not its own and is not counted.
	Paused bool
	// Runnable means the board wants to run (an emulator thread is running or waiting for
	// a CPU): a starved board is working, only slowly.
	Runnable bool
}

// LinkStats counts what happened on the line, for the log and for tests of the link under
// load. A healthy link has only Frames and Requests.
type LinkStats struct {
	Frames       int // valid frames received, duplicates included
	Duplicates   int // valid frames received again (answers to a RESEND that were not missed)
	Corrupt      int // lines that looked like a frame but failed their CRC or syntax
	Gaps         int // frames that arrived ahead of one missing
	Requests     int // requests sent, retries excluded
	Repeats      int // a request sent again because nothing answered it
	Resends      int // RESEND requests sent
	BoardErrors  int // ERROR frames of the board about our lines: badframe, overflow
	KeepAlives   int // keep-alive lines heard
	SlowestFrame time.Duration
}

// Bad is the number of events that mean bytes were lost or damaged on the line.
func (s LinkStats) Bad() int { return s.Corrupt + s.Gaps + s.BoardErrors }

// String is one log line.
func (s LinkStats) String() string {
	return fmt.Sprintf("%d frames (%d duplicates), %d corrupt, %d gaps, %d requests, %d repeated, %d RESEND, %d board errors (badframe/overflow), %d keep-alives",
		s.Frames, s.Duplicates, s.Corrupt, s.Gaps, s.Requests, s.Repeats, s.Resends, s.BoardErrors, s.KeepAlives)
}

// ErrWorkLimit means the board worked past Options.WorkLimit without a frame: one operation
// ran longer than it may. It comes wrapped with ErrTimeout.
var ErrWorkLimit = errors.New("wire: operation limit passed")

// ErrGone means the board is no longer there (the emulator exited); nothing will answer.
var ErrGone = errors.New("wire: board gone")

// Conn is the runner's end of one firmware conversation. It is not safe for
// concurrent use: one exchange (Hello, Seed, Bench, SelfTest) at a time.
type Conn struct {
	rw   io.ReadWriter
	opts Options
	in   *lineQueue
	done chan struct{}

	logMu     sync.Mutex
	closeOnce sync.Once

	seq    uint32 // last request sequence number used
	synced bool   // expect is valid
	expect uint32 // next frame sequence number wanted from the board

	boardMaxLine int // the board's max_line from HELLO; 0 until known
	workLimit    time.Duration

	statsMu sync.Mutex
	stats   LinkStats
}

// overflowRetries is how many times a request that fits the board's max_line is sent
// again after the board answered ERROR code=overflow (the line ran together with noise
// or another line); after that, or at once for a request longer than max_line, the
// ERROR is the answer.
const overflowRetries = 2

// NewConn starts reading rw in a goroutine. The goroutine ends when a read
// from rw fails; closing the port (or calling Close, which closes rw when it
// is an io.Closer) ends it. The reader never waits for the exchange: what the
// board sends is taken off the port at once (a pty or a UART driver that fills
// up drops bytes) and queued, up to maxQueued bytes.
func NewConn(rw io.ReadWriter, opts Options) *Conn {
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = time.Second
	}
	if opts.SilenceTimeout <= 0 {
		opts.SilenceTimeout = 30 * time.Second
	}
	if opts.WorkLimit <= 0 {
		opts.WorkLimit = 5 * time.Minute
	}
	c := &Conn{rw: rw, opts: opts, in: newLineQueue(), done: make(chan struct{}), workLimit: opts.WorkLimit}
	go c.readLoop()
	return c
}

// SetWorkLimit sets the most work the board may do without a valid frame (see
// Options.WorkLimit) for the exchanges that follow; without Activity it raises the wall
// silence limit instead, to at least d. 0 restores the options' limits.
func (c *Conn) SetWorkLimit(d time.Duration) {
	if d <= 0 {
		d = c.opts.WorkLimit
	}
	c.workLimit = d
}

// WorkLimit is the limit SetWorkLimit set (or the options' default).
func (c *Conn) WorkLimit() time.Duration { return c.workLimit }

// Stats returns the line's counters so far.
func (c *Conn) Stats() LinkStats {
	c.statsMu.Lock()
	defer c.statsMu.Unlock()
	return c.stats
}

func (c *Conn) count(f func(*LinkStats)) {
	c.statsMu.Lock()
	f(&c.stats)
	c.statsMu.Unlock()
}

// Close stops the reader and closes the underlying port if it is an io.Closer.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	c.in.close(nil)
	if cl, ok := c.rw.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// maxLine bounds what the reader keeps of one line; longer noise is cut.
const maxLine = 8192

// KeepAlive is the line a board may send while one operation runs for long, so that a
// runner without another view of the board (a real board on a UART) knows it is working.
// It is not a frame: it carries no sequence number and is never re-sent.
const KeepAlive = "~alive"

func (c *Conn) readLoop() {
	r := bufio.NewReaderSize(c.rw, 4096)
	var line []byte
	for {
		b, err := r.ReadSlice('\n')
		if len(line)+len(b) <= maxLine {
			line = append(line, b...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		// A complete line, or what came before a read error (noise or a cut frame).
		if len(line) > 0 {
			l := strings.TrimRight(string(line), "\r\n")
			line = line[:0]
			c.log("< ", l)
			c.in.push(l)
		}
		if err != nil {
			c.in.close(err)
			return
		}
	}
}

func (c *Conn) log(prefix, line string) {
	if c.opts.Log == nil {
		return
	}
	line = abbreviateHex(line)
	c.logMu.Lock()
	defer c.logMu.Unlock()
	io.WriteString(c.opts.Log, prefix+line+"\n")
}

// longHex is a frame field whose value is a long run of hex: a chunk of a TLS record, a CA
// certificate or a telemetry frame.
var longHex = regexp.MustCompile(`([ :][a-z_]+=)([0-9a-f]{96,})\b`)

// abbreviateHex shortens, for the log only, every field value of 96 or more hex digits to its
// length and the first 8 hex digits of its SHA-256 ("d=<128 bytes sha256:1a2b3c4d>"): a TLS
// handshake moves about a hundred 128-byte chunks over the line, and the log keeps each
// frame's type, sequence, offsets and acknowledgements, which is what a failed run is read
// for. The frames themselves are unchanged.
func abbreviateHex(line string) string {
	if len(line) < 120 {
		return line
	}
	return longHex.ReplaceAllStringFunc(line, func(m string) string {
		sub := longHex.FindStringSubmatch(m)
		sum := sha256.Sum256([]byte(sub[2]))
		return fmt.Sprintf("%s<%d bytes sha256:%x>", sub[1], len(sub[2])/2, sum[:4])
	})
}

func (c *Conn) send(f Frame) error {
	b, err := Encode(f)
	if err != nil {
		return err
	}
	c.log("> ", string(b[:len(b)-1]))
	if _, err := c.rw.Write(b); err != nil {
		if errors.Is(err, syscall.EPIPE) {
			// Nothing reads the line any more: the board's process has exited.
			return fmt.Errorf("wire: write %s: %w: %w", f.Type, ErrGone, err)
		}
		return fmt.Errorf("wire: write %s: %w", f.Type, err)
	}
	return nil
}

func (c *Conn) lostReader(readErr error) error {
	if readErr == nil || errors.Is(readErr, io.EOF) {
		return fmt.Errorf("wire: board closed the line: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("wire: read: %w", readErr)
}

// maxQueued bounds the bytes read from the board and not yet taken by an exchange; past
// it the oldest lines are dropped (and counted as a gap by the sequence numbers).
const maxQueued = 16 << 20

// lineQueue holds the lines the reader took off the port until an exchange takes them. It
// never blocks the reader.
type lineQueue struct {
	mu     sync.Mutex
	lines  []string
	bytes  int
	closed bool
	err    error
	ready  chan struct{} // has a token while lines are waiting or the queue is closed
}

func newLineQueue() *lineQueue { return &lineQueue{ready: make(chan struct{}, 1)} }

func (q *lineQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *lineQueue) push(l string) {
	q.mu.Lock()
	q.lines = append(q.lines, l)
	q.bytes += len(l)
	for q.bytes > maxQueued && len(q.lines) > 1 {
		q.bytes -= len(q.lines[0])
		q.lines = q.lines[1:]
	}
	q.mu.Unlock()
	q.signal()
}

func (q *lineQueue) close(err error) {
	q.mu.Lock()
	if !q.closed {
		q.closed, q.err = true, err
	}
	q.mu.Unlock()
	q.signal()
}

// pop returns the oldest line; ok false when none is waiting. closed reports a queue that
// is empty and will stay so, with the read error that closed it.
func (q *lineQueue) pop() (line string, ok, closed bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.lines) > 0 {
		line = q.lines[0]
		q.lines[0] = ""
		q.lines = q.lines[1:]
		q.bytes -= len(line)
		if len(q.lines) > 0 {
			q.signal()
		}
		return line, true, false, nil
	}
	if q.closed {
		q.signal()
		return "", false, true, q.err
	}
	return "", false, false, nil
}

// DeviceError is an ERROR frame the firmware sent in answer to a request.
type DeviceError struct {
	Code string // badarg, unsupported, unknown, busy, setup, gone, overflow, badframe
	Msg  string
}

func (e *DeviceError) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("firmware error %s (%s)", e.Code, e.Msg)
	}
	return "firmware error " + e.Code
}

// silence follows one exchange's quiet spells: when to ask the board again and when to give
// up. Without Options.Activity it counts wall time since the last valid frame; with it, only
// the time the board was idle, and the work it did without a frame.
type silence struct {
	c                *Conn
	lastHeard        time.Time
	lastTick         time.Time
	nextRetry        time.Time
	backoff          time.Duration
	lastWork, workAt time.Duration // Activity.Work at the last tick and at the last frame heard
	idle             time.Duration
	probed           bool
}

func newSilence(c *Conn, now time.Time) *silence {
	s := &silence{c: c, lastTick: now}
	s.heard(now)
	return s
}

// heard restarts the silence: a valid frame or a keep-alive arrived.
func (s *silence) heard(now time.Time) {
	s.lastHeard = now
	s.backoff = s.c.opts.RetryInterval
	s.nextRetry = now.Add(s.backoff)
	s.idle = 0
	s.workAt = s.lastWork
}

// retryDue reports whether the back-off has passed, and starts the next, longer one.
func (s *silence) retryDue(now time.Time) bool {
	if now.Before(s.nextRetry) {
		return false
	}
	s.backoff = min(2*s.backoff, max(MaxRetryInterval, s.c.opts.RetryInterval))
	s.nextRetry = now.Add(s.backoff)
	return true
}

// tick looks at the board at a retry tick: retry says to ask again (the request or a
// RESEND); an error ends the exchange.
func (s *silence) tick(typ string, now time.Time) (retry bool, err error) {
	elapsed := now.Sub(s.lastTick)
	s.lastTick = now
	c := s.c
	if c.opts.Activity == nil {
		limit := c.opts.SilenceTimeout
		if c.workLimit != c.opts.WorkLimit {
			limit = max(limit, c.workLimit)
		}
		if now.Sub(s.lastHeard) >= limit {
			return false, fmt.Errorf("%s: %w: nothing valid for %v", typ, ErrTimeout, limit)
		}
		return s.retryDue(now), nil
	}
	a, err := c.opts.Activity()
	if err != nil {
		return false, fmt.Errorf("%s: %w: %v", typ, ErrGone, err)
	}
	if !s.probed {
		// The first look: work before it is not this silence's.
		s.probed, s.lastWork, s.workAt = true, a.Work, a.Work
		return false, nil
	}
	worked := a.Work - s.lastWork
	s.lastWork = a.Work
	if a.Work-s.workAt >= c.workLimit {
		return false, fmt.Errorf("%s: %w (%w): the board worked %v without a valid frame (its limit for one operation is %v)",
			typ, ErrTimeout, ErrWorkLimit, (a.Work - s.workAt).Round(time.Millisecond), c.workLimit)
	}
	// Working (5 % of a CPU or more since the last tick, or a thread wanting a CPU) or
	// stopped from outside: the silence is not the board's, so nothing is sent to it (it
	// reads its line only between operations) and no idle time is counted.
	if a.Paused || a.Runnable || worked*20 >= elapsed {
		s.idle = 0
		s.nextRetry = now.Add(s.backoff)
		return false, nil
	}
	s.idle += elapsed
	if s.idle >= c.opts.SilenceTimeout {
		return false, fmt.Errorf("%s: %w: the board was idle for %v without answering (nothing valid for %v)",
			typ, ErrTimeout, s.idle.Round(time.Millisecond), now.Sub(s.lastHeard).Round(time.Millisecond))
	}
	return s.retryDue(now), nil
}

// exchange sends one request and feeds every in-order frame answering it
// to handle until handle reports done or an error. It repeats the request
// when nothing answers it, asks for missing or corrupt frames with RESEND,
// drops duplicates and frames of earlier exchanges, and gives up on ctx, when
// the board is gone, or when it stays silent (see Options).
func (c *Conn) exchange(ctx context.Context, typ string, fields []Field, handle func(Frame) (bool, error)) error {
	c.seq++
	x := &exchange{c: c, typ: typ, req: Frame{Seq: c.seq, Type: typ, Fields: fields}}
	x.reqSeq = strconv.FormatUint(uint64(x.req.Seq), 10)
	c.count(func(s *LinkStats) { s.Requests++ })
	if err := c.send(x.req); err != nil {
		return err
	}
	x.tick = time.NewTicker(c.opts.RetryInterval)
	defer x.tick.Stop()
	x.sil = newSilence(c, time.Now())
	for {
		raw, ok, closed, readErr := c.in.pop()
		if !ok {
			if closed {
				return c.lostReader(readErr)
			}
			if err := x.wait(ctx); err != nil {
				return err
			}
			continue
		}
		f, ok, err := x.next(raw)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if done, err := x.answer(f, handle); err != nil || done {
			return err
		}
	}
}

// exchange is one request and the frames that answer it, as exchange runs it.
type exchange struct {
	c         *Conn
	typ       string
	req       Frame
	reqSeq    string
	overflows int
	tick      *time.Ticker
	sil       *silence
	answered  bool // a frame of this exchange has arrived
	resentFor uint32
	resentAt  time.Time
}

// askResend asks the board to send its frames again from the one expected (at most once a
// retry interval for the same frame).
func (x *exchange) askResend() error {
	c := x.c
	if !c.synced {
		return nil
	}
	if x.resentFor == c.expect && time.Since(x.resentAt) < c.opts.RetryInterval {
		return nil
	}
	x.resentFor, x.resentAt = c.expect, time.Now()
	c.seq++
	c.count(func(s *LinkStats) { s.Resends++ })
	return c.send(Frame{Seq: c.seq, Type: "RESEND", Fields: []Field{{"from", strconv.FormatUint(uint64(c.expect), 10)}}})
}

// repeat sends the request again: the firmware replays, never re-runs, a repeated request.
func (x *exchange) repeat() error {
	x.c.count(func(s *LinkStats) { s.Repeats++ })
	return x.c.send(x.req)
}

// wait waits for a line, the retry tick (repeating the request, or asking for a resend, when
// the board has been silent) or ctx's end.
func (x *exchange) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("%s: %w: %w", x.typ, ErrTimeout, ctx.Err())
	case now := <-x.tick.C:
		retry, err := x.sil.tick(x.typ, now)
		if err != nil || !retry {
			return err
		}
		if !x.answered {
			return x.repeat()
		}
		x.resentFor = x.c.expect + 1 // force a fresh RESEND
		return x.askResend()
	case <-x.c.in.ready:
	}
	return nil
}

// next decodes a line and keeps the count: it returns the next frame in order, or ok false
// for a keep-alive, a corrupt or duplicate frame, a gap (asking for a resend) or, before the
// link is synced, any frame but the answer to our HELLO.
func (x *exchange) next(raw string) (f Frame, ok bool, err error) {
	c := x.c
	if strings.HasPrefix(raw, KeepAlive) {
		c.count(func(s *LinkStats) { s.KeepAlives++ })
		x.sil.heard(time.Now())
		return f, false, nil
	}
	f, err = Decode([]byte(raw))
	if errors.Is(err, ErrNoFrame) {
		return f, false, nil
	}
	if err != nil {
		c.count(func(s *LinkStats) { s.Corrupt++ })
		return f, false, x.askResend()
	}
	c.count(func(s *LinkStats) { s.Frames++ })
	if !c.synced {
		// Only the answer to our HELLO tells where the board's count stands.
		if re, _ := f.Get("re"); f.Type != "HELLO" || re != x.reqSeq {
			return f, false, nil
		}
		c.synced, c.expect = true, f.Seq
	}
	if f.Seq < c.expect {
		c.count(func(s *LinkStats) { s.Duplicates++ })
		return f, false, nil
	}
	if f.Seq > c.expect {
		if code, _ := f.Get("code"); f.Type == "ERROR" && code == "gone" {
			return f, false, fmt.Errorf("%s: %w (wanted frame %d)", x.typ, ErrLost, c.expect)
		}
		c.count(func(s *LinkStats) { s.Gaps++ })
		return f, false, x.askResend()
	}
	c.expect++
	now := time.Now()
	if d := now.Sub(x.sil.lastHeard); d > c.Stats().SlowestFrame {
		c.count(func(s *LinkStats) { s.SlowestFrame = d })
	}
	x.sil.heard(now)
	if code, _ := f.Get("code"); f.Type == "ERROR" && (code == "badframe" || code == "overflow") {
		c.count(func(s *LinkStats) { s.BoardErrors++ })
	}
	return f, true, nil
}

// answer takes the next frame in order: a frame of an earlier exchange is skipped (a board
// that could not read our request gets it again), an overflow of this request repeats it a few
// times, an ERROR ends the exchange, and every other frame goes to handle.
func (x *exchange) answer(f Frame, handle func(Frame) (bool, error)) (bool, error) {
	code, _ := f.Get("code")
	if re, _ := f.Get("re"); re != x.reqSeq {
		switch {
		case f.Type == "ERROR" && code == "badframe" && !x.answered:
			// The board could not read our request: send it again.
			return false, x.repeat()
		case f.Type == "ERROR" && code == "gone":
			return false, fmt.Errorf("%s: %w", x.typ, ErrLost)
		}
		return false, nil // a frame of an earlier exchange
	}
	if f.Type == "ERROR" && code == "overflow" && !x.answered {
		// The board read a line longer than its max_line that started with this
		// request's number. A request that fits was run together with something
		// else on the line: send it again, a few times.
		b, err := Encode(x.req)
		if err != nil {
			return false, err
		}
		if (x.c.boardMaxLine == 0 || len(b) <= x.c.boardMaxLine) && x.overflows < overflowRetries {
			x.overflows++
			return false, x.repeat()
		}
		msg, _ := f.Get("msg")
		return false, fmt.Errorf("%s: request of %d bytes, board max_line %d: %w", x.typ, len(b), x.c.boardMaxLine, &DeviceError{Code: code, Msg: msg})
	}
	x.answered = true
	if f.Type == "ERROR" {
		msg, _ := f.Get("msg")
		return false, fmt.Errorf("%s: %w", x.typ, &DeviceError{Code: code, Msg: msg})
	}
	done, err := handle(f)
	if err != nil {
		return false, fmt.Errorf("%s: %w", x.typ, err)
	}
	return done, nil
}

// Hello asks the board who it is (HELLO), then for its algorithms (ALGS). It is the first call
// on a Conn; HELLO is repeated until the board answers (bytes sent before a port is opened are
// lost, so the firmware answers HELLO rather than only announcing itself).
func (c *Conn) Hello(ctx context.Context) (Hello, error) {
	var h Hello
	c.synced = false
	err := c.exchange(ctx, "HELLO", nil, func(f Frame) (bool, error) {
		if f.Type != "HELLO" {
			return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
		}
		var err error
		h, err = parseHello(f)
		return true, err
	})
	if err != nil {
		return Hello{}, err
	}
	c.boardMaxLine = h.MaxLine
	if h.Proto != ProtocolVersion {
		return h, fmt.Errorf("%w: firmware speaks protocol %d, runner %d", ErrProtocol, h.Proto, ProtocolVersion)
	}
	// The algorithm list does not fit HELLO's frame: ALGS sends it in as many frames as it needs.
	frames := 0
	err = c.exchange(ctx, "ALGS", nil, func(f Frame) (bool, error) {
		switch f.Type {
		case "ALG":
			frames++
			return false, h.addAlgs(f)
		case "ALGS":
			n, err := f.Uint("n")
			if err != nil {
				return false, err
			}
			nf, err := f.Uint("frames")
			if err != nil {
				return false, err
			}
			if int(nf) != frames || int(n) != len(h.Algorithms) || int(n) != h.NumAlgs {
				return false, fmt.Errorf("%w: ALGS counts %d algorithms in %d frames, received %d in %d (HELLO nalgs=%d)",
					ErrProtocol, n, nf, len(h.Algorithms), frames, h.NumAlgs)
			}
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	if err != nil {
		return Hello{}, err
	}
	return h, nil
}

// MaxSeedLen is the longest seed the firmware accepts.
const MaxSeedLen = 64

// Seed restarts the firmware's deterministic random generator (SHAKE256 of
// the seed), so the same seed and command sequence repeat a run exactly.
func (c *Conn) Seed(ctx context.Context, seed []byte) error {
	if len(seed) == 0 || len(seed) > MaxSeedLen {
		return fmt.Errorf("wire: seed of %d bytes, want 1..%d", len(seed), MaxSeedLen)
	}
	return c.exchange(ctx, "SEED", []Field{{"seed", hex.EncodeToString(seed)}}, func(f Frame) (bool, error) {
		if f.Type != "SEED" {
			return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
		}
		n, err := f.Uint("len")
		if err != nil {
			return false, err
		}
		if n != uint64(len(seed)) {
			return false, fmt.Errorf("%w: firmware took %d seed bytes of %d", ErrProtocol, n, len(seed))
		}
		return true, nil
	})
}

// Bench runs req on the board, calling fn for every timed iteration in
// order, and returns the firmware's summary. Every sample the board sends
// is passed on, failed ones included (OK false, with the reason).
func (c *Conn) Bench(ctx context.Context, req BenchRequest, fn func(Sample)) (Summary, error) {
	if err := req.Validate(); err != nil {
		return Summary{}, err
	}
	var sum Summary
	next := 0
	accepted := false
	err := c.exchange(ctx, "BENCH", req.fields(), func(f Frame) (bool, error) {
		switch f.Type {
		case "BENCH":
			accepted = true
			return false, nil
		case "SAMPLE":
			s, err := parseSample(f)
			if err != nil {
				return false, err
			}
			if !accepted || s.Index != next {
				return false, fmt.Errorf("%w: sample %d out of order (want %d)", ErrProtocol, s.Index, next)
			}
			next++
			if fn != nil {
				fn(s)
			}
			return false, nil
		case "SUMMARY":
			var err error
			sum, err = parseSummary(f)
			if err != nil {
				return false, err
			}
			if sum.N != next || sum.N != req.Iterations {
				return false, fmt.Errorf("%w: summary counts %d samples, received %d of %d", ErrProtocol, sum.N, next, req.Iterations)
			}
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	return sum, err
}

// SelfTest runs the firmware's embedded known-answer vectors, but for its slow groups (the
// SLH-DSA "s" sets' keyGen and the SLH-DSA sigGen tests), which it reports as skipped.
func (c *Conn) SelfTest(ctx context.Context) (SelfTestResult, error) {
	return c.selfTest(ctx, nil)
}

// SelfTestFull runs every embedded known-answer vector (SELFTEST full=1): on an emulated board
// the SLH-DSA groups add tens of seconds.
func (c *Conn) SelfTestFull(ctx context.Context) (SelfTestResult, error) {
	return c.selfTest(ctx, []Field{{"full", "1"}})
}

func (c *Conn) selfTest(ctx context.Context, fields []Field) (SelfTestResult, error) {
	var res SelfTestResult
	err := c.exchange(ctx, "SELFTEST", fields, func(f Frame) (bool, error) {
		switch f.Type {
		case "RESULT":
			g, err := parseGroup(f)
			if err != nil {
				return false, err
			}
			res.Groups = append(res.Groups, g)
			return false, nil
		case "SELFTEST":
			pass, err := f.Uint("pass")
			if err != nil {
				return false, err
			}
			fail, err := f.Uint("fail")
			if err != nil {
				return false, err
			}
			res.Pass, res.Fail = int(pass), int(fail)
			res.Source, _ = f.Get("source")
			sp, sf := 0, 0
			for _, g := range res.Groups {
				sp += g.Pass
				sf += g.Fail
			}
			if sp != res.Pass || sf != res.Fail {
				return false, fmt.Errorf("%w: self-test totals %d/%d disagree with its groups %d/%d", ErrProtocol, res.Pass, res.Fail, sp, sf)
			}
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	return res, err
}
