package wire

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options tune a Conn. The zero value is usable.
type Options struct {
	// Log receives every raw line read from the board, prefixed "< ", and
	// every line written, prefixed "> ", as they happen, so the log is
	// complete even when an exchange fails. Nil discards.
	Log io.Writer
	// RetryInterval is how long an exchange waits without a valid frame
	// before it repeats its request (nothing heard yet) or asks the board
	// to resend what it may have missed. Default 1s.
	RetryInterval time.Duration
	// SilenceTimeout ends an exchange with ErrTimeout when no valid frame
	// has arrived for this long, even if ctx has no deadline. Default 30s;
	// raise it for operations that take longer per iteration.
	SilenceTimeout time.Duration
}

// Conn is the runner's end of one firmware conversation. It is not safe for
// concurrent use: one exchange (Hello, Seed, Bench, SelfTest) at a time.
type Conn struct {
	rw    io.ReadWriter
	opts  Options
	lines chan []byte
	done  chan struct{}

	logMu     sync.Mutex
	closeOnce sync.Once

	readErrMu sync.Mutex
	readErr   error

	seq    uint32 // last request sequence number used
	synced bool   // expect is valid
	expect uint32 // next frame sequence number wanted from the board

	boardMaxLine int // the board's max_line from HELLO; 0 until known
}

// overflowRetries is how many times a request that fits the board's max_line is sent
// again after the board answered ERROR code=overflow (the line ran together with noise
// or another line); after that, or at once for a request longer than max_line, the
// ERROR is the answer.
const overflowRetries = 2

// NewConn starts reading rw in a goroutine. The goroutine ends when a read
// from rw fails; closing the port (or calling Close, which closes rw when it
// is an io.Closer) ends it.
func NewConn(rw io.ReadWriter, opts Options) *Conn {
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = time.Second
	}
	if opts.SilenceTimeout <= 0 {
		opts.SilenceTimeout = 30 * time.Second
	}
	c := &Conn{rw: rw, opts: opts, lines: make(chan []byte, 256), done: make(chan struct{})}
	go c.readLoop()
	return c
}

// Close stops the reader and closes the underlying port if it is an io.Closer.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	if cl, ok := c.rw.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// maxLine bounds what the reader keeps of one line; longer noise is cut.
const maxLine = 8192

func (c *Conn) readLoop() {
	defer close(c.lines)
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
			line = nil
			c.log("< ", l)
			select {
			case c.lines <- []byte(l):
			case <-c.done:
				return
			}
		}
		if err != nil {
			c.readErrMu.Lock()
			c.readErr = err
			c.readErrMu.Unlock()
			return
		}
	}
}

func (c *Conn) log(prefix, line string) {
	if c.opts.Log == nil {
		return
	}
	c.logMu.Lock()
	defer c.logMu.Unlock()
	io.WriteString(c.opts.Log, prefix+line+"\n")
}

func (c *Conn) send(f Frame) error {
	b, err := Encode(f)
	if err != nil {
		return err
	}
	c.log("> ", string(b[:len(b)-1]))
	if _, err := c.rw.Write(b); err != nil {
		return fmt.Errorf("wire: write %s: %w", f.Type, err)
	}
	return nil
}

func (c *Conn) lostReader() error {
	c.readErrMu.Lock()
	defer c.readErrMu.Unlock()
	if c.readErr == nil || errors.Is(c.readErr, io.EOF) {
		return fmt.Errorf("wire: board closed the line: %w", io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("wire: read: %w", c.readErr)
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

// exchange sends one request and feeds every in-order frame answering it
// to handle until handle reports done or an error. It repeats the request
// when nothing answers it, asks for missing or corrupt frames with RESEND,
// drops duplicates and frames of earlier exchanges, and gives up on ctx or
// after SilenceTimeout without a valid frame.
func (c *Conn) exchange(ctx context.Context, typ string, fields []Field, handle func(Frame) (bool, error)) error {
	c.seq++
	req := Frame{Seq: c.seq, Type: typ, Fields: fields}
	reqSeq := strconv.FormatUint(uint64(req.Seq), 10)
	if err := c.send(req); err != nil {
		return err
	}
	overflows := 0
	retry := time.NewTimer(c.opts.RetryInterval)
	defer retry.Stop()
	lastHeard := time.Now()
	answered := false // a frame of this exchange has arrived
	var resentFor uint32
	var resentAt time.Time

	askResend := func() error {
		if !c.synced {
			return nil
		}
		if resentFor == c.expect && time.Since(resentAt) < c.opts.RetryInterval {
			return nil
		}
		resentFor, resentAt = c.expect, time.Now()
		c.seq++
		return c.send(Frame{Seq: c.seq, Type: "RESEND", Fields: []Field{{"from", strconv.FormatUint(uint64(c.expect), 10)}}})
	}

	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w: %w", typ, ErrTimeout, ctx.Err())
		case <-retry.C:
			if time.Since(lastHeard) >= c.opts.SilenceTimeout {
				return fmt.Errorf("%s: %w: nothing valid for %v", typ, ErrTimeout, c.opts.SilenceTimeout)
			}
			var err error
			if !answered {
				err = c.send(req) // the firmware replays, never re-runs, a repeated request
			} else {
				resentFor = c.expect + 1 // force a fresh RESEND
				err = askResend()
			}
			if err != nil {
				return err
			}
			retry.Reset(c.opts.RetryInterval)
		case line, ok := <-c.lines:
			if !ok {
				return c.lostReader()
			}
			f, err := Decode(line)
			if errors.Is(err, ErrNoFrame) {
				continue
			}
			if err != nil {
				if err := askResend(); err != nil {
					return err
				}
				continue
			}
			if !c.synced {
				// Only the answer to our HELLO tells where the board's count stands.
				if re, _ := f.Get("re"); f.Type != "HELLO" || re != reqSeq {
					continue
				}
				c.synced, c.expect = true, f.Seq
			}
			if f.Seq < c.expect {
				continue // a duplicate
			}
			if f.Seq > c.expect {
				if code, _ := f.Get("code"); f.Type == "ERROR" && code == "gone" {
					return fmt.Errorf("%s: %w (wanted frame %d)", typ, ErrLost, c.expect)
				}
				if err := askResend(); err != nil {
					return err
				}
				continue
			}
			c.expect++
			lastHeard = time.Now()
			retry.Reset(c.opts.RetryInterval)
			re, _ := f.Get("re")
			if re != reqSeq {
				code, _ := f.Get("code")
				switch {
				case f.Type == "ERROR" && code == "badframe" && !answered:
					// The board could not read our request: send it again.
					if err := c.send(req); err != nil {
						return err
					}
				case f.Type == "ERROR" && code == "gone":
					return fmt.Errorf("%s: %w", typ, ErrLost)
				}
				continue // a frame of an earlier exchange
			}
			if code, _ := f.Get("code"); f.Type == "ERROR" && code == "overflow" && !answered {
				// The board read a line longer than its max_line that started with this
				// request's number. A request that fits was run together with something
				// else on the line: send it again, a few times.
				b, err := Encode(req)
				if err != nil {
					return err
				}
				if (c.boardMaxLine == 0 || len(b) <= c.boardMaxLine) && overflows < overflowRetries {
					overflows++
					if err := c.send(req); err != nil {
						return err
					}
					continue
				}
				msg, _ := f.Get("msg")
				return fmt.Errorf("%s: request of %d bytes, board max_line %d: %w", typ, len(b), c.boardMaxLine, &DeviceError{Code: code, Msg: msg})
			}
			answered = true
			if f.Type == "ERROR" {
				code, _ := f.Get("code")
				msg, _ := f.Get("msg")
				return fmt.Errorf("%s: %w", typ, &DeviceError{Code: code, Msg: msg})
			}
			done, err := handle(f)
			if err != nil {
				return fmt.Errorf("%s: %w", typ, err)
			}
			if done {
				return nil
			}
		}
	}
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
