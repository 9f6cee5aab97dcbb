package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"pqrepro/internal/lockedio"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fault decides what the far side receives for one line: nil drops it, and
// it may return the line changed or extra lines around it.
// hostAlgs is the host build's algorithm list, in the firmware's table order.
const hostAlgs = "ML-KEM-512,ML-KEM-768,ML-KEM-1024,ML-DSA-44,ML-DSA-65,ML-DSA-87," +
	"SLH-DSA-SHA2-128s,SLH-DSA-SHA2-128f,SLH-DSA-SHA2-192s,SLH-DSA-SHA2-192f,SLH-DSA-SHA2-256s,SLH-DSA-SHA2-256f," +
	"SLH-DSA-SHAKE-128s,SLH-DSA-SHAKE-128f,SLH-DSA-SHAKE-192s,SLH-DSA-SHAKE-192f,SLH-DSA-SHAKE-256s,SLH-DSA-SHAKE-256f"

type fault func(line string) []string

// faultLine carries lines from src to dst through f. It is the "cable"
// between the runner and the real firmware in these tests.
func faultLine(dst io.WriteCloser, src io.Reader, f fault) {
	defer dst.Close()
	r := bufio.NewReader(src)
	for {
		l, err := r.ReadString('\n')
		if l != "" {
			out := []string{l}
			if f != nil {
				out = f(strings.TrimSuffix(l, "\n"))
				for i := range out {
					out[i] += "\n"
				}
			}
			for _, o := range out {
				if _, werr := io.WriteString(dst, o); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// firstTime applies f only to the first transmission of each frame, so
// that the frames the firmware sends again get through.
func firstTime(f func(seq int, line string) []string) fault {
	var mu sync.Mutex
	seen := map[int]bool{}
	return func(line string) []string {
		fr, err := Decode([]byte(line))
		if err != nil {
			return []string{line}
		}
		mu.Lock()
		defer mu.Unlock()
		if seen[int(fr.Seq)] {
			return []string{line}
		}
		seen[int(fr.Seq)] = true
		return f(int(fr.Seq), line)
	}
}

func corrupt(line string) string {
	b := []byte(line)
	i := strings.IndexByte(line, ':') + 2
	b[i] ^= 0x20
	return string(b)
}

// logBuffer is a goroutine-safe log sink.
type logBuffer = lockedio.Buffer

type rw struct {
	io.Reader
	io.Writer
}

// startHost runs the host firmware with toBoard and fromBoard faults on the
// two directions of the line and returns a Conn to it.
func startHost(t *testing.T, toBoard, fromBoard fault, opts Options) (*Conn, *logBuffer) {
	t.Helper()
	cmd := exec.Command(hostFirmware(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	go faultLine(stdin, reqR, toBoard)
	go faultLine(respW, stdout, fromBoard)
	log := &logBuffer{}
	opts.Log = log
	c := NewConn(rw{respR, reqW}, opts)
	t.Cleanup(func() {
		reqW.Close()
		respR.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("conversation:\n%s", log.String())
		}
	})
	return c, log
}

func TestConnHostFirmware(t *testing.T) {
	noise := func(line string) []string {
		return []string{"\x00\xffboot noise", "@@ no frame here", "garbage without newline " + line, "* 12345678"}
	}
	tests := []struct {
		name      string
		toBoard   fault
		fromBoard fault
		wantLog   string // must appear in the log
	}{
		{name: "clean"},
		{name: "noise", fromBoard: noise, wantLog: "< @@ no frame here"},
		{name: "corrupt every third frame", fromBoard: firstTime(func(seq int, line string) []string {
			if seq%3 == 0 {
				return []string{corrupt(line)}
			}
			return []string{line}
		}), wantLog: "RESEND"},
		{name: "drop every fourth frame", fromBoard: firstTime(func(seq int, line string) []string {
			if seq%4 == 1 {
				return nil
			}
			return []string{line}
		}), wantLog: "RESEND"},
		{name: "drop the last frame of each answer", fromBoard: firstTime(func(seq int, line string) []string {
			if strings.Contains(line, ":SUMMARY:") || strings.Contains(line, ":SELFTEST:") || strings.Contains(line, ":SEED:") {
				return nil
			}
			return []string{line}
		}), wantLog: "RESEND"},
		{name: "corrupt every request once", toBoard: firstTime(func(seq int, line string) []string {
			if strings.Contains(line, ":RESEND:") {
				return []string{line}
			}
			return []string{corrupt(line)}
		}), wantLog: "code=badframe"},
	}
	var refStack []uint32
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, log := startHost(t, tt.toBoard, tt.fromBoard, Options{RetryInterval: 200 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			h, err := c.Hello(ctx)
			if err != nil {
				t.Fatalf("Hello: %v", err)
			}
			if h.Board != "host" || h.Unit != "ns" || h.Proto != ProtocolVersion || len(h.BuildID) != 40 {
				t.Fatalf("Hello = %+v", h)
			}
			// HELLO counts the algorithms; ALGS lists them, the signature schemes over two frames.
			if strings.Join(h.Algorithms, ",") != hostAlgs || h.NumAlgs != 18 || h.Kinds["ML-KEM-768"] != "kem" ||
				h.Kinds["SLH-DSA-SHAKE-256f"] != "sig" || h.Kinds["ML-DSA-44"] != "sig" ||
				strings.Join(h.Operations, ",") != "keygen,encaps,decaps,sign,verify" || h.MaxMessage != 4096 {
				t.Fatalf("algorithms = %v (%v, nalgs=%d)", h.Algorithms, h.Kinds, h.NumAlgs)
			}
			if err := c.Seed(ctx, []byte("pqrepro test seed")); err != nil {
				t.Fatalf("Seed: %v", err)
			}
			st, err := c.SelfTestFull(ctx)
			if err != nil {
				t.Fatalf("SelfTest: %v", err)
			}
			// The host build embeds every ACVP ML-KEM and ML-DSA vector: ML-KEM 75 keyGen, 75
			// encapsulation, 30 decapsulation, 60 key checks; ML-DSA 75 keyGen and the
			// 45 deterministic sigGen and 45 sigVer tests of pure ML-DSA; 126 hash vectors;
			// and of SLH-DSA, as on the boards, 1 keyGen and 2 sigVer tests per set and 1
			// sigGen test of SHAKE-128f and SHA2-256f (12 + 24 + 2; 26 groups); and every record of
			// the six Ascon KAT files (3 × 1,089 + 2 × 1,025 + 1,089 = 6,406; 6 groups); and the
			// Wycheproof ML-KEM and ML-DSA vectors the firmware's API can express (per ML-KEM set
			// 153 keyGen+decaps, 241/245/249 encaps, 5 decaps; ML-DSA sigVer 180, 210, 241:
			// 1,840 in 12 groups).
			if st.Fail != 0 || st.Pass != 569+6406+1840 || len(st.Groups) != 56+6+12 || !strings.HasSuffix(st.Source, "+wycheproof") {
				t.Fatalf("SelfTest = %+v", st)
			}
			wp := 0
			for _, g := range st.Groups {
				if strings.HasPrefix(g.Function, "wycheproof-") {
					wp += g.Pass
				}
			}
			if wp != 1840 {
				t.Fatalf("Wycheproof groups passed %d vectors, want 1840", wp)
			}
			var samples []Sample
			sum, err := c.Bench(ctx, BenchRequest{Algorithm: "ML-KEM-512", Operation: "decaps", Iterations: 6, Warmup: 1},
				func(s Sample) { samples = append(samples, s) })
			if err != nil {
				t.Fatalf("Bench: %v", err)
			}
			if len(samples) != 6 || sum.N != 6 || sum.OK != 6 || sum.Fail != 0 {
				t.Fatalf("Bench: %d samples, summary %+v", len(samples), sum)
			}
			var stacks []uint32
			for i, s := range samples {
				if s.Index != i || !s.OK || s.Count == 0 || s.StackBytes < 1024 || s.StackBytes > 64*1024 {
					t.Fatalf("sample %d = %+v", i, s)
				}
				stacks = append(stacks, s.StackBytes)
			}
			// Stack use is deterministic, so it must not depend on the line's faults.
			if refStack == nil {
				refStack = stacks
			} else if !equalU32(stacks, refStack) {
				t.Fatalf("stack high-water marks %v differ from the clean run's %v", stacks, refStack)
			}
			if tt.wantLog != "" && !strings.Contains(log.String(), tt.wantLog) {
				t.Fatalf("log lacks %q", tt.wantLog)
			}
		})
	}
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestConnSilence(t *testing.T) {
	tests := []struct {
		name     string
		deadline time.Duration // 0: no ctx deadline, rely on SilenceTimeout
		silence  time.Duration
	}{
		{"context deadline", 1500 * time.Millisecond, time.Minute},
		{"silence timeout", 0, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mute atomic.Bool
			c, log := startHost(t, nil, func(line string) []string {
				if mute.Load() {
					return nil
				}
				return []string{line}
			}, Options{RetryInterval: 200 * time.Millisecond, SilenceTimeout: tt.silence})
			ctx := context.Background()
			if _, err := c.Hello(ctx); err != nil {
				t.Fatalf("Hello: %v", err)
			}
			mute.Store(true) // the board goes silent
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			start := time.Now()
			_, err := c.Bench(ctx, BenchRequest{Algorithm: "ML-KEM-768", Operation: "keygen", Iterations: 2}, nil)
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("Bench on a silent board: err = %v, want ErrTimeout", err)
			}
			// It gives up rather than hanging (the bound is loose: a busy host is slow).
			if el := time.Since(start); el > time.Minute {
				t.Fatalf("gave up after %v", el)
			}
			// The runner kept asking, and the log kept what was said.
			if !strings.Contains(log.String(), "> @") || strings.Count(log.String(), ":RESEND:")+strings.Count(log.String(), ":BENCH:") < 3 {
				t.Fatalf("log does not show the retries:\n%s", log.String())
			}
		})
	}
}

func TestConnDeviceErrors(t *testing.T) {
	c, _ := startHost(t, nil, nil, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		req  BenchRequest
		code string
	}{
		{BenchRequest{Algorithm: "ML-KEM-999", Operation: "keygen", Iterations: 1}, "unsupported"},
		{BenchRequest{Algorithm: "ML-KEM-768", Operation: "sign", Iterations: 1}, "unsupported"},
	}
	for _, tt := range tests {
		t.Run(tt.req.Algorithm+"/"+tt.req.Operation, func(t *testing.T) {
			_, err := c.Bench(ctx, tt.req, nil)
			var de *DeviceError
			if !errors.As(err, &de) || de.Code != tt.code {
				t.Fatalf("err = %v, want firmware error %s", err, tt.code)
			}
		})
	}
	// The conversation goes on after an error.
	if _, err := c.Bench(ctx, BenchRequest{Algorithm: "ML-KEM-768", Operation: "encaps", Iterations: 1}, nil); err != nil {
		t.Fatalf("Bench after errors: %v", err)
	}
	if err := (BenchRequest{Algorithm: "ML-KEM-768", Operation: "keygen", Iterations: 0}).Validate(); err == nil {
		t.Fatal("Validate accepted 0 iterations")
	}
	if err := c.Seed(ctx, make([]byte, MaxSeedLen+1)); err == nil {
		t.Fatal("Seed accepted an over-long seed")
	}
}

// TestConnSignatures runs signature BENCHes on the host firmware: every sign sample carries
// its rejection rounds, a fixed and a drawn message both work, the same seed gives the same
// rounds, and a corrupted signature (the fault=sig hook) fails every sample, never counts.
func TestConnSignatures(t *testing.T) {
	c, _ := startHost(t, nil, nil, Options{RetryInterval: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatalf("Hello: %v", err)
	}
	bench := func(req BenchRequest) ([]Sample, Summary) {
		t.Helper()
		var got []Sample
		sum, err := c.Bench(ctx, req, func(s Sample) { got = append(got, s) })
		if err != nil {
			t.Fatalf("Bench %+v: %v", req, err)
		}
		return got, sum
	}
	rounds := func(msg []byte, msglen int) []int {
		if err := c.Seed(ctx, []byte("signatures")); err != nil {
			t.Fatal(err)
		}
		got, sum := bench(BenchRequest{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 12, Warmup: 1, Message: msg, MessageLen: msglen})
		if sum.OK != 12 {
			t.Fatalf("sign: summary %+v", sum)
		}
		var r []int
		for _, s := range got {
			if !s.OK || s.Rounds < 1 || s.StackBytes < 1024 {
				t.Fatalf("sign sample %+v", s)
			}
			r = append(r, s.Rounds)
		}
		return r
	}
	fixed := rounds([]byte("Test message for ML-DSA benchmark"), 0)
	if again := rounds([]byte("Test message for ML-DSA benchmark"), 0); fmt.Sprint(again) != fmt.Sprint(fixed) {
		t.Fatalf("rounds differ for the same seed: %v, %v", fixed, again)
	}
	drawn := rounds(nil, 64)
	// Deterministic signing of one fixed message with one key gives the same signature, so
	// the same rounds (and, on the host, no failure) every time.
	det, sum := bench(BenchRequest{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 5, Message: []byte("fixed"), Deterministic: true})
	if sum.OK != 5 {
		t.Fatalf("deterministic sign: %+v", sum)
	}
	for _, s := range det {
		if s.Rounds != det[0].Rounds {
			t.Fatalf("deterministic signatures of one message took different rounds: %+v", det)
		}
	}
	t.Logf("ML-DSA-44 sign rounds: fixed message %v, drawn messages %v", fixed, drawn)
	// The longest fixed message fits one request frame.
	if _, sum := bench(BenchRequest{Algorithm: "ML-DSA-44", Operation: "verify", Iterations: 1, Message: bytes.Repeat([]byte{0xa5}, MaxFixedMessage)}); sum.OK != 1 {
		t.Fatalf("verify of a %d-byte message: %+v", MaxFixedMessage, sum)
	}
	for _, op := range []string{"keygen", "verify"} {
		got, sum := bench(BenchRequest{Algorithm: "ML-DSA-65", Operation: op, Iterations: 3, MessageLen: 33})
		if sum.OK != 3 || got[0].Rounds != 0 {
			t.Fatalf("%s: %+v %+v", op, sum, got)
		}
	}
	for _, op := range []string{"keygen", "sign", "verify"} {
		got, sum := bench(BenchRequest{Algorithm: "ML-DSA-87", Operation: op, Iterations: 2, MessageLen: 33, Fault: "sig"})
		want := map[string]string{"keygen": "check-verify", "sign": "verify", "verify": "verify"}[op]
		if sum.OK != 0 || sum.Fail != 2 || got[0].OK || got[0].Reason != want {
			t.Fatalf("%s with a corrupted signature: %+v %+v, want reason %s", op, sum, got, want)
		}
	}
	// A KEM operation on a signature scheme, and a signature BENCH without a message.
	for _, req := range []BenchRequest{
		{Algorithm: "ML-DSA-44", Operation: "encaps", Iterations: 1, MessageLen: 1},
		{Algorithm: "ML-KEM-512", Operation: "sign", Iterations: 1},
		{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 1},
		{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 1, MessageLen: 4097},
	} {
		var de *DeviceError
		if _, err := c.Bench(ctx, req, nil); !errors.As(err, &de) {
			t.Errorf("Bench %+v: %v, want a device error", req, err)
		}
	}
}

func TestBenchRequestValidate(t *testing.T) {
	for _, r := range []BenchRequest{
		{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 1, Message: []byte("x"), MessageLen: 1},
		{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 1, Message: make([]byte, MaxFixedMessage+1)},
		{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 1, MessageLen: -1},
		{Algorithm: "ML-DSA-44", Operation: "sign", Iterations: 1, MessageLen: 1, Fault: "other"},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("Validate(%+v) accepted it", r)
		}
	}
}

// TestConnOverflowingRequest: a request line longer than the firmware's max_line (here: the
// runner's frame with noise run into it before its newline) is answered with ERROR
// code=overflow re=<its seq>. The runner sends a request that fits once more; when every
// transmission overflows, the ERROR is the answer, long before the silence timeout.
func TestConnOverflowingRequest(t *testing.T) {
	pad := strings.Repeat("x", 400)
	seedOnly := func(always bool) fault {
		var mu sync.Mutex
		sent := 0
		return func(line string) []string {
			if !strings.Contains(line, ":SEED:") {
				return []string{line}
			}
			mu.Lock()
			defer mu.Unlock()
			sent++
			if always || sent == 1 {
				return []string{line + pad}
			}
			return []string{line}
		}
	}
	t.Run("once", func(t *testing.T) {
		c, log := startHost(t, seedOnly(false), nil, Options{RetryInterval: 200 * time.Millisecond, SilenceTimeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.Hello(ctx); err != nil {
			t.Fatalf("Hello: %v", err)
		}
		if err := c.Seed(ctx, []byte("overflow")); err != nil {
			t.Fatalf("Seed: %v", err)
		}
		// Hello is request 1, ALGS 2, SEED 3.
		if !strings.Contains(log.String(), ":ERROR:re=3 code=overflow msg=line*") {
			t.Fatalf("log lacks the overflow ERROR for request 3")
		}
	})
	t.Run("always", func(t *testing.T) {
		c, log := startHost(t, seedOnly(true), nil, Options{RetryInterval: 200 * time.Millisecond, SilenceTimeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.Hello(ctx); err != nil {
			t.Fatalf("Hello: %v", err)
		}
		err := c.Seed(ctx, []byte("overflow"))
		var de *DeviceError
		if !errors.As(err, &de) || de.Code != "overflow" || errors.Is(err, ErrTimeout) {
			t.Fatalf("Seed = %v, want the board's overflow ERROR", err)
		}
		if n := strings.Count(log.String(), ":ERROR:re=3 code=overflow"); n != overflowRetries+1 {
			t.Fatalf("%d overflow ERRORs for request 3, want %d", n, overflowRetries+1)
		}
		// The firmware is still in step: the next request is answered.
		if err := c.Seed(ctx, []byte("after")); err == nil {
			t.Fatal("Seed after: the cable pads every SEED, want the overflow again")
		}
		if _, err := c.SelfTest(ctx); err != nil {
			t.Fatalf("SelfTest after the overflows: %v", err)
		}
	})
}

// TestLogAbbreviatesHex: a frame's long hex field is logged as its length and a digest; short
// fields (a build id, a checksum) and the frame's other fields are logged as they are.
func TestLogAbbreviatesHex(t *testing.T) {
	chunk := strings.Repeat("0a1b", 64) // 128 bytes
	line := "@7:TLSIN:i=0 off=128 d=" + chunk + " end=1*deadbeef"
	got := abbreviateHex(line)
	if !strings.HasPrefix(got, "@7:TLSIN:i=0 off=128 d=<128 bytes sha256:") || !strings.HasSuffix(got, "> end=1*deadbeef") || strings.Contains(got, chunk) {
		t.Fatalf("%q", got)
	}
	short := "@0:HELLO:re=0 build_id=816cac9c8c7faa1b7c8ba30555baea19312e2244 impl_src=9ae715eee9771b0e06ac3f40461d3d15af54b723f6869699e047e157ac7e1af4 board=qemu*0d5b8676"
	if abbreviateHex(short) != short {
		t.Fatalf("a HELLO line changed: %q", abbreviateHex(short))
	}
}
