package wire

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/artifacts/logtext"
)

// Hello is the board's description of itself, as its firmware reports it.
type Hello struct {
	Proto    int    // protocol version
	Firmware string // firmware name, e.g. "pqrepro-fw"
	Version  string // firmware version
	// BuildID is the linker's build-id of the running image (hex). The
	// build's metadata.json maps it to the ELF's SHA-256.
	BuildID string
	Board   string // port name, e.g. "qemu-riscv32-virt"
	Chip    string // core, e.g. "cortex-m4"
	ClockHz uint64 // nominal core clock; 0 when the board reports none
	// Counter and Unit say what a sample's Count is: e.g. minstret counting
	// instructions. Emulated instruction counts are not cycles.
	Counter    string
	Unit       string
	Resolution uint64 // the counter advances in steps of this many units
	Stack      string // how stack use is measured ("paint")
	RNG        string // the firmware's random source, e.g. "shake256-drbg"
	Seeded     bool   // whether SEED has been called since boot
	// Algorithms is every algorithm BENCH and SELFTEST know, from the ALGS answer that Conn.Hello
	// asks for after HELLO (HELLO itself carries only their number, nalgs); Kinds maps each to
	// "kem" or "sig".
	Algorithms []string
	Kinds      map[string]string
	// Implementations maps an algorithm to the implementation the image links, from the ALG
	// frames' impl=, impl_ver= and impl_src= (firmware/PROTOCOL.md, Implementation table);
	// algorithms listed without them have no entry.
	Implementations map[string]Implementation
	NumAlgs         int // HELLO nalgs
	Operations      []string
	// MaxMessage is the longest message a signature BENCH signs (HELLO max_msg); 0 when the
	// firmware does not say (it then has no signature schemes).
	MaxMessage int
	MaxLine    int
	Frame      Frame // the HELLO frame as received
}

func parseHello(f Frame) (Hello, error) {
	h := Hello{Frame: f}
	get := func(k string) string { v, _ := f.Get(k); return v }
	num := func(k string, required bool) (uint64, error) {
		if _, ok := f.Get(k); !ok && !required {
			return 0, nil
		}
		return f.Uint(k)
	}
	p, err := num("proto", true)
	if err != nil {
		return h, err
	}
	h.Proto = int(p)
	h.Firmware, h.Version, h.BuildID = get("fw"), get("ver"), get("build_id")
	h.Board, h.Chip = get("board"), get("chip")
	if h.ClockHz, err = num("clock_hz", false); err != nil {
		return h, err
	}
	h.Counter, h.Unit = get("counter"), get("unit")
	if h.Resolution, err = num("resolution", false); err != nil {
		return h, err
	}
	h.Stack, h.RNG = get("stack"), get("rng")
	h.Seeded = get("seeded") == "1"
	na, err := num("nalgs", true)
	if err != nil {
		return h, err
	}
	if na > maxAlgs {
		return h, fmt.Errorf("%w: HELLO nalgs=%d, more than %d", ErrProtocol, na, maxAlgs)
	}
	h.NumAlgs = int(na)
	if o := get("ops"); o != "" {
		h.Operations = strings.Split(o, ",")
	}
	mm, err := num("max_msg", false)
	if err != nil {
		return h, err
	}
	h.MaxMessage = int(mm)
	ml, err := num("max_line", false)
	if err != nil {
		return h, err
	}
	h.MaxLine = int(ml)
	if h.Board == "" || h.Counter == "" || h.Unit == "" {
		return h, fmt.Errorf("%w: HELLO lacks board, counter or unit", ErrProtocol)
	}
	return h, nil
}

// maxAlgs bounds HELLO's nalgs, so a corrupt count cannot make the runner wait for frames
// that never come.
const maxAlgs = 1000

// Implementation is one line of the firmware's implementation table as ALG reports it.
type Implementation struct {
	// Name and Version (or Commit) name the implementation; Source is the hex SHA-256 of its
	// sources.
	Name, Version, Commit, Source string
}

// Artifact is the implementation as a cell records it.
func (im Implementation) Artifact() artifacts.Implementation {
	return artifacts.Implementation{Name: im.Name, Version: im.Version, Commit: im.Commit, Digest: artifacts.DigestOfHex(im.Source), DigestOf: artifacts.DigestSource}
}

var (
	implTokenRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9+._-]{0,63}$`)
	implCommitRE = regexp.MustCompile(`^[0-9a-f]{7,64}$`)
	implSourceRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// frameImplementation reads an ALG frame's implementation fields (impl=, impl_ver= or
// impl_commit=, impl_src=): ok false when the frame has none, an error when they are partial
// or malformed.
func frameImplementation(f Frame) (im Implementation, ok bool, err error) {
	name, hasName := f.Get("impl")
	ver, hasVer := f.Get("impl_ver")
	commit, hasCommit := f.Get("impl_commit")
	src, hasSrc := f.Get("impl_src")
	if !hasName && !hasVer && !hasCommit && !hasSrc {
		return im, false, nil
	}
	if !implTokenRE.MatchString(name) || !implSourceRE.MatchString(src) {
		return im, false, fmt.Errorf("%w: ALG impl=%.70q impl_src=%.70q: want a name and 64 hex digits", ErrProtocol, name, src)
	}
	im.Name, im.Source = name, src
	switch {
	case hasVer && !hasCommit && implTokenRE.MatchString(ver):
		im.Version = ver
	case hasCommit && !hasVer && implCommitRE.MatchString(commit):
		im.Commit = commit
	default:
		return im, false, fmt.Errorf("%w: ALG impl_ver=%.70q impl_commit=%.70q: want a version or a commit (hex), one of them", ErrProtocol, ver, commit)
	}
	return im, true, nil
}

// addAlgs adds one ALG frame's names (and their implementation, when the frame has one) to h.
func (h *Hello) addAlgs(f Frame) error {
	kind, _ := f.Get("kind")
	list, _ := f.Get("algs")
	if kind != "kem" && kind != "sig" {
		return fmt.Errorf("%w: ALG kind %q", ErrProtocol, kind)
	}
	if list == "" {
		return fmt.Errorf("%w: ALG without algs", ErrProtocol)
	}
	im, hasImpl, err := frameImplementation(f)
	if err != nil {
		return err
	}
	if h.Kinds == nil {
		h.Kinds = map[string]string{}
	}
	if hasImpl && h.Implementations == nil {
		h.Implementations = map[string]Implementation{}
	}
	for _, a := range strings.Split(list, ",") {
		if a == "" {
			return fmt.Errorf("%w: ALG lists an empty name", ErrProtocol)
		}
		if _, dup := h.Kinds[a]; dup {
			return fmt.Errorf("%w: ALG lists %s twice", ErrProtocol, a)
		}
		h.Kinds[a] = kind
		h.Algorithms = append(h.Algorithms, a)
		if hasImpl {
			h.Implementations[a] = im
		}
	}
	return nil
}

// MaxFixedMessage is the longest fixed message (BenchRequest.Message) a BENCH request can
// carry: it travels as hex, and the request must fit in one frame.
const MaxFixedMessage = 128

// BenchRequest asks the firmware to time one operation.
type BenchRequest struct {
	Algorithm  string // as listed in Hello.Algorithms, e.g. "ML-KEM-768"
	Operation  string // keygen, encaps, decaps (KEMs) or keygen, sign, verify (signatures)
	Iterations int    // timed iterations, 1..100000
	Warmup     int    // untimed iterations first, 0..1000
	// Signature schemes sign either a fixed Message (sent as msg=, at most MaxFixedMessage
	// bytes) or, when Message is nil, a fresh MessageLen-byte message the firmware draws from
	// its DRBG for every iteration (msglen=). KEM requests leave both zero.
	Message    []byte
	MessageLen int
	// Deterministic asks for deterministic signing (det=1); the default is hedged signing
	// with rnd from the firmware's DRBG.
	Deterministic bool
	// Fault is a test hook (fault=sig): the firmware corrupts each signature before it checks
	// it, so every sample must come back failed. Never set in a measurement.
	Fault string
	// Hash asks for the hashing pass (hash=1): the firmware redirects its SHA-3 and SHA-2
	// functions to counting copies for the duration of each call, and every sample carries
	// Hash and HashCalls. Its counts include the counting copies' overhead: they are never
	// timed samples. A firmware that cannot run the pass answers ERROR unsupported.
	Hash bool
}

// Signature reports whether the request is for a signature scheme's BENCH (it carries a
// message).
func (r BenchRequest) Signature() bool { return r.Message != nil || r.MessageLen > 0 }

// Validate checks the request before it is sent.
func (r BenchRequest) Validate() error {
	if r.Algorithm == "" || !logtext.ValidValue(r.Algorithm) {
		return fmt.Errorf("wire: bench: invalid algorithm %q", r.Algorithm)
	}
	if r.Operation == "" || !logtext.ValidValue(r.Operation) {
		return fmt.Errorf("wire: bench: invalid operation %q", r.Operation)
	}
	if r.Iterations < 1 || r.Iterations > 100000 {
		return fmt.Errorf("wire: bench: iterations %d out of 1..100000", r.Iterations)
	}
	if r.Warmup < 0 || r.Warmup > 1000 {
		return fmt.Errorf("wire: bench: warmup %d out of 0..1000", r.Warmup)
	}
	if r.Message != nil && r.MessageLen != 0 {
		return fmt.Errorf("wire: bench: both a fixed message and a message length")
	}
	if len(r.Message) > MaxFixedMessage {
		return fmt.Errorf("wire: bench: fixed message of %d bytes, more than %d", len(r.Message), MaxFixedMessage)
	}
	if r.MessageLen < 0 {
		return fmt.Errorf("wire: bench: message length %d is negative", r.MessageLen)
	}
	if r.Fault != "" && r.Fault != "sig" {
		return fmt.Errorf("wire: bench: unknown fault %q", r.Fault)
	}
	return nil
}

// fields are the request's BENCH fields.
func (r BenchRequest) fields() []Field {
	f := []Field{
		{"alg", r.Algorithm}, {"op", r.Operation},
		{"n", strconv.Itoa(r.Iterations)}, {"warmup", strconv.Itoa(r.Warmup)},
	}
	switch {
	case r.Message != nil:
		f = append(f, Field{"msg", hex.EncodeToString(r.Message)})
	case r.MessageLen > 0:
		f = append(f, Field{"msglen", strconv.Itoa(r.MessageLen)})
	}
	if r.Deterministic {
		f = append(f, Field{"det", "1"})
	}
	if r.Fault != "" {
		f = append(f, Field{"fault", r.Fault})
	}
	if r.Hash {
		f = append(f, Field{"hash", "1"})
	}
	return f
}

// Sample is one timed iteration. The firmware checks every operation's
// output before reporting it (decapsulation must give back the secret that
// encapsulation produced); a failed check is OK=false with a Reason.
type Sample struct {
	Index      int    // 0-based among timed iterations
	Count      uint64 // counter difference across the one call, in Hello.Unit
	StackBytes uint32 // stack high-water mark of the call, from painting
	// Rounds is the number of rejection-sampling rounds of the signature a sign sample
	// made (1 or more); 0 for every other operation.
	Rounds int
	// HasHash is set in the hashing pass (BenchRequest.Hash): Hash is the counter's advance
	// inside the firmware's hash functions during the call (Count's unit), HashCalls the
	// outermost calls into them (each read of a coarse counter is off by up to one step).
	HasHash   bool
	Hash      uint64
	HashCalls uint64
	OK        bool
	// Reason, when !OK: rc, mismatch, check-encaps, check-decaps, setup (KEMs); rc, verify,
	// check-sign, check-verify, setup (signatures).
	Reason string
}

func parseSample(f Frame) (Sample, error) {
	var s Sample
	i, err := f.Uint("i")
	if err != nil {
		return s, err
	}
	s.Index = int(i)
	if s.Count, err = f.Uint("count"); err != nil {
		return s, err
	}
	st, err := f.Uint("stack")
	if err != nil {
		return s, err
	}
	s.StackBytes = uint32(st)
	if _, has := f.Get("rounds"); has {
		r, err := f.Uint("rounds")
		if err != nil {
			return s, err
		}
		if r == 0 || r > 1<<20 {
			return s, fmt.Errorf("%w: sample %d: rounds=%d", ErrProtocol, s.Index, r)
		}
		s.Rounds = int(r)
	}
	if err := parseSampleHash(f, &s); err != nil {
		return s, err
	}
	ok, err := f.Uint("ok")
	if err != nil {
		return s, err
	}
	s.OK = ok == 1
	s.Reason, _ = f.Get("reason")
	return s, nil
}

// parseSampleHash reads a hashing-pass sample's hash= and hcalls= (both or neither). On a
// coarse counter the hashed part may read up to HashCalls steps more than the call.
func parseSampleHash(f Frame, s *Sample) error {
	_, hasH := f.Get("hash")
	_, hasC := f.Get("hcalls")
	if !hasH && !hasC {
		return nil
	}
	if !hasH || !hasC {
		return fmt.Errorf("%w: sample %d: hash= and hcalls= come together", ErrProtocol, s.Index)
	}
	var err error
	if s.Hash, err = f.Uint("hash"); err != nil {
		return err
	}
	if s.HashCalls, err = f.Uint("hcalls"); err != nil {
		return err
	}
	s.HasHash = true
	return nil
}

// Summary is the firmware's own tally of a BENCH; the runner computes its
// statistics from the samples, this is a cross-check.
type Summary struct {
	N, OK, Fail int
	Min, Max    uint64 // over successful samples; 0 when none succeeded
	StackMax    uint32
}

func parseSummary(f Frame) (Summary, error) {
	var s Summary
	vals := map[string]uint64{}
	for _, k := range []string{"n", "ok", "fail"} {
		v, err := f.Uint(k)
		if err != nil {
			return s, err
		}
		vals[k] = v
	}
	s.N, s.OK, s.Fail = int(vals["n"]), int(vals["ok"]), int(vals["fail"])
	if s.OK > 0 {
		var err error
		if s.Min, err = f.Uint("min"); err != nil {
			return s, err
		}
		if s.Max, err = f.Uint("max"); err != nil {
			return s, err
		}
		st, err := f.Uint("stack_max")
		if err != nil {
			return s, err
		}
		s.StackMax = uint32(st)
	}
	return s, nil
}

// SelfTestGroup is the outcome of one group of known-answer vectors.
type SelfTestGroup struct {
	Algorithm string // e.g. "ML-KEM-768", "SHA3-256"
	Function  string // ACVP function (keyGen, encapsulation, ...) or "hash"
	Pass      int
	Fail      int
	FirstFail string // ACVP tcId (or index) of the first failure, when Fail > 0
	// Skipped is how many vectors of the group the firmware holds but did not run (the slow
	// SLH-DSA groups of a SELFTEST without full=1); Pass and Fail are then 0.
	Skipped int
}

// SelfTestResult is the outcome of SELFTEST.
type SelfTestResult struct {
	Pass, Fail int
	Source     string // where the embedded vectors came from
	Groups     []SelfTestGroup
}

func parseGroup(f Frame) (SelfTestGroup, error) {
	var g SelfTestGroup
	g.Algorithm, _ = f.Get("alg")
	g.Function, _ = f.Get("fn")
	p, err := f.Uint("pass")
	if err != nil {
		return g, err
	}
	fl, err := f.Uint("fail")
	if err != nil {
		return g, err
	}
	g.Pass, g.Fail = int(p), int(fl)
	if _, ok := f.Get("skipped"); ok {
		sk, err := f.Uint("skipped")
		if err != nil {
			return g, err
		}
		if sk == 0 || g.Pass != 0 || g.Fail != 0 || sk > 1<<20 {
			return g, fmt.Errorf("%w: RESULT skipped=%d with pass=%d fail=%d", ErrProtocol, sk, g.Pass, g.Fail)
		}
		g.Skipped = int(sk)
	}
	if g.Fail > 0 {
		ff, _ := f.Get("first_fail")
		g.FirstFail = ff
	}
	return g, nil
}

// String formats a group as "ML-KEM-768/keyGen 4/4" ("... skipped 1" for a skipped one).
func (g SelfTestGroup) String() string {
	if g.Skipped > 0 {
		return g.Algorithm + "/" + g.Function + " skipped " + strconv.Itoa(g.Skipped)
	}
	return g.Algorithm + "/" + g.Function + " " + strconv.Itoa(g.Pass) + "/" + strconv.Itoa(g.Pass+g.Fail)
}
