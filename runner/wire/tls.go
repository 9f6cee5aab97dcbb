package wire

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Limits of a TLS request (firmware/PROTOCOL.md, "TLS").
const (
	MaxTLSHandshakes = 1000 // n
	MaxTLSWarmup     = 100
	MaxTLSEcho       = 1024 // bytes of application data echoed after each handshake
	maxTLSName       = 64   // host and sni
)

// TLSRequest tells a board's TLS client where to connect and with what: one group and one
// signature scheme (TLS codepoints), the name to check, the fingerprint of the CA it must
// have pinned, and how many full handshakes to make.
type TLSRequest struct {
	Host  string // IPv4 address or DNS name of the server (no ':' on the wire, so no IPv6 literal)
	Port  int
	Group uint16 // NamedGroup, e.g. 512 for ML-KEM-512
	Sig   uint16 // SignatureScheme, e.g. 0x0904 for ML-DSA-44
	SNI   string // server name sent and checked against the leaf
	// CA is the first 16 bytes of the SHA-256 of the CA certificate's DER the board must have
	// pinned; a board pinning another CA refuses the request (ERROR code=badarg msg=ca).
	CA         []byte
	Iterations int // timed handshakes, 1..MaxTLSHandshakes
	Warmup     int // untimed handshakes first, 0..MaxTLSWarmup
	Echo       int // bytes echoed after each handshake before it counts, 0..MaxTLSEcho
}

func validName(s string) bool {
	if s == "" || len(s) > maxTLSName {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Validate checks the request before it is sent.
func (r TLSRequest) Validate() error {
	switch {
	case !validName(r.Host):
		return fmt.Errorf("wire: tls: host %q is not an IPv4 address or DNS name of at most %d characters", r.Host, maxTLSName)
	case r.Port < 1 || r.Port > 65535:
		return fmt.Errorf("wire: tls: port %d out of 1..65535", r.Port)
	case r.Group == 0 || r.Sig == 0:
		return fmt.Errorf("wire: tls: group and signature scheme are required")
	case !validName(r.SNI):
		return fmt.Errorf("wire: tls: sni %q is not a DNS name of at most %d characters", r.SNI, maxTLSName)
	case len(r.CA) != 16:
		return fmt.Errorf("wire: tls: CA fingerprint is %d bytes, want 16", len(r.CA))
	case r.Iterations < 1 || r.Iterations > MaxTLSHandshakes:
		return fmt.Errorf("wire: tls: handshakes %d out of 1..%d", r.Iterations, MaxTLSHandshakes)
	case r.Warmup < 0 || r.Warmup > MaxTLSWarmup:
		return fmt.Errorf("wire: tls: warmup %d out of 0..%d", r.Warmup, MaxTLSWarmup)
	case r.Echo < 0 || r.Echo > MaxTLSEcho:
		return fmt.Errorf("wire: tls: echo %d out of 0..%d", r.Echo, MaxTLSEcho)
	}
	return nil
}

func (r TLSRequest) fields() []Field {
	return []Field{
		{"host", r.Host}, {"port", strconv.Itoa(r.Port)},
		{"group", strconv.Itoa(int(r.Group))}, {"sig", strconv.Itoa(int(r.Sig))},
		{"sni", r.SNI}, {"ca", fmt.Sprintf("%x", r.CA)},
		{"n", strconv.Itoa(r.Iterations)}, {"warmup", strconv.Itoa(r.Warmup)}, {"echo", strconv.Itoa(r.Echo)},
	}
}

// Handshake is the board's report of one timed handshake.
type Handshake struct {
	Index int
	// Micros is the board's own wall time of the handshake in µs (connect excluded: from the
	// first ClientHello byte to the handshake's end), from its microsecond timer.
	Micros uint64
	// Count is the board's counter over the same interval, in Hello.Unit (cycles on a real
	// core's cycle counter); 0 when it has none.
	Count uint64
	Heap  uint32 // peak heap of the TLS stack during the handshake, bytes; 0 when not measured
	Stack uint32 // stack high-water mark, bytes; 0 when not measured
	// Group and Sig are what the board's stack negotiated (codepoints); they must be the request's.
	Group, Sig uint16
	OK         bool
	// Reason, when !OK: connect, handshake, alert, verify, echo, timeout, memory.
	Reason string
	Alert  int // the TLS alert sent or received, when Reason is alert; -1 when none
	// Phases is the board's split of Count (TLS io=serial: count_kex= ... count_rest=); nil
	// when the board does not report one.
	Phases *TLSPhases
	// Segments is how many compute segments Count sums (TLS io=serial); 0 when not reported.
	Segments int
	// Role is the board's side of the handshake (HANDSHAKE role=, "client" when absent).
	Role string
	// Rounds is, with the board as the server, the ML-DSA rejection rounds of its
	// CertificateVerify signature (1 for the other schemes); 0 when not reported.
	Rounds int
	// HelloRetry: the board as the server answered the first ClientHello with a
	// HelloRetryRequest (HANDSHAKE hrr=1).
	HelloRetry bool
}

// TLSSummary is the board's own tally of a TLS request.
type TLSSummary struct {
	N, OK, Fail int
}

func uint16Field(f Frame, k string) (uint16, error) {
	v, err := f.Uint(k)
	if err != nil {
		return 0, err
	}
	if v > 0xffff {
		return 0, fmt.Errorf("%w: %s=%d is not a 16-bit codepoint", ErrProtocol, k, v)
	}
	return uint16(v), nil
}

func parseHandshake(f Frame) (Handshake, error) { return parseHandshakeUnit(f, true) }

// parseHandshakeUnit parses a HANDSHAKE report; requireMicros says whether a successful one
// must carry us= (TLS io=serial counts instructions and may omit it; it must then carry count=).
func parseHandshakeUnit(f Frame, requireMicros bool) (Handshake, error) {
	h := Handshake{Alert: -1}
	i, err := f.Uint("i")
	if err != nil {
		return h, err
	}
	if i >= MaxTLSHandshakes {
		return h, fmt.Errorf("%w: HANDSHAKE i=%d", ErrProtocol, i)
	}
	h.Index = int(i)
	ok, err := f.Uint("ok")
	if err != nil {
		return h, err
	}
	h.OK = ok == 1
	opt := func(k string) (uint64, error) {
		if _, has := f.Get(k); !has {
			return 0, nil
		}
		return f.Uint(k)
	}
	if h.Micros, err = opt("us"); err != nil {
		return h, err
	}
	if h.Count, err = opt("count"); err != nil {
		return h, err
	}
	for _, m := range []struct {
		k string
		p *uint32
	}{{"heap", &h.Heap}, {"stack", &h.Stack}} {
		v, err := opt(m.k)
		if err != nil {
			return h, err
		}
		if v > 1<<32-1 {
			return h, fmt.Errorf("%w: HANDSHAKE %s=%d", ErrProtocol, m.k, v)
		}
		*m.p = uint32(v)
	}
	if h.Phases, h.Segments, err = parsePhases(f); err != nil {
		return h, err
	}
	if err = parseRole(f, &h); err != nil {
		return h, err
	}
	if h.OK {
		if h.Micros == 0 && (requireMicros || h.Count == 0) {
			return h, fmt.Errorf("%w: HANDSHAKE %d ok without us=", ErrProtocol, h.Index)
		}
		if h.Group, err = uint16Field(f, "group"); err != nil {
			return h, err
		}
		if h.Sig, err = uint16Field(f, "sig"); err != nil {
			return h, err
		}
		return h, nil
	}
	h.Reason, _ = f.Get("reason")
	if h.Reason == "" {
		return h, fmt.Errorf("%w: HANDSHAKE %d failed without a reason", ErrProtocol, h.Index)
	}
	if _, has := f.Get("alert"); has {
		a, err := f.Uint("alert")
		if err != nil || a > 255 {
			return h, fmt.Errorf("%w: HANDSHAKE %d alert is not 0..255", ErrProtocol, h.Index)
		}
		h.Alert = int(a)
	}
	return h, nil
}

// TLS asks the board to make req's handshakes against the server it names, calling fn for every
// timed handshake in order, and returns the board's tally. A report whose negotiated group or
// scheme differs from the request's is passed on as failed (Reason "negotiated").
func (c *Conn) TLS(ctx context.Context, req TLSRequest, fn func(Handshake)) (TLSSummary, error) {
	if err := req.Validate(); err != nil {
		return TLSSummary{}, err
	}
	var sum TLSSummary
	next, accepted := 0, false
	err := c.exchange(ctx, "TLS", req.fields(), func(f Frame) (bool, error) {
		switch f.Type {
		case "TLS":
			accepted = true
			return false, nil
		case "HANDSHAKE":
			h, err := parseHandshake(f)
			if err != nil {
				return false, err
			}
			if !accepted || h.Index != next {
				return false, fmt.Errorf("%w: handshake %d out of order (want %d)", ErrProtocol, h.Index, next)
			}
			next++
			if h.OK && (h.Group != req.Group || h.Sig != req.Sig) {
				h.OK, h.Reason = false, fmt.Sprintf("negotiated group %d and scheme %#04x, asked for %d and %#04x", h.Group, h.Sig, req.Group, req.Sig)
			}
			if fn != nil {
				fn(h)
			}
			return false, nil
		case "TLSDONE":
			vals := map[string]uint64{}
			for _, k := range []string{"n", "ok", "fail"} {
				v, err := f.Uint(k)
				if err != nil {
					return false, err
				}
				vals[k] = v
			}
			sum = TLSSummary{N: int(vals["n"]), OK: int(vals["ok"]), Fail: int(vals["fail"])}
			if sum.N != next || sum.N != req.Iterations || sum.OK+sum.Fail != sum.N {
				return false, fmt.Errorf("%w: TLSDONE counts %d handshakes (%d ok, %d failed), received %d of %d", ErrProtocol, sum.N, sum.OK, sum.Fail, next, req.Iterations)
			}
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	return sum, err
}

// TLSGroups reports the TLS groups and signature schemes a board's firmware offers as a client
// (HELLO tls_groups= and tls_sigs=, decimal codepoints); both empty when it has no TLS client.
func (h Hello) TLSGroups() (groups, sigs []uint16, err error) {
	parse := func(k string) ([]uint16, error) {
		v, ok := h.Frame.Get(k)
		if !ok || v == "" {
			return nil, nil
		}
		var out []uint16
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(s, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("%w: HELLO %s=%q: %q is not a codepoint", ErrProtocol, k, v, s)
			}
			out = append(out, uint16(n))
		}
		return out, nil
	}
	if groups, err = parse("tls_groups"); err != nil {
		return nil, nil, err
	}
	if sigs, err = parse("tls_sigs"); err != nil {
		return nil, nil, err
	}
	return groups, sigs, nil
}

// parsePhases reads a HANDSHAKE's optional phase split (count_kex, count_chain, count_cv,
// count_ksrec, count_rest, all or none) and segments=.
func parsePhases(f Frame) (*TLSPhases, int, error) {
	segs := 0
	if _, has := f.Get("segments"); has {
		v, err := f.Uint("segments")
		if err != nil || v > 1<<20 {
			return nil, 0, fmt.Errorf("%w: HANDSHAKE segments", ErrProtocol)
		}
		segs = int(v)
	}
	if _, has := f.Get("count_kex"); !has {
		return nil, segs, nil
	}
	var p TLSPhases
	for _, m := range []struct {
		k string
		v *uint64
	}{{"count_kex", &p.KeyExchange}, {"count_chain", &p.Chain}, {"count_cv", &p.CertificateVerify},
		{"count_ksrec", &p.KeyScheduleRecords}, {"count_rest", &p.Rest}} {
		v, err := f.Uint(m.k)
		if err != nil {
			return nil, 0, err
		}
		*m.v = v
	}
	return &p, segs, nil
}

// parseRole reads a HANDSHAKE's role= (default client) and, with the board as the server, its
// rounds= and hrr=.
func parseRole(f Frame, h *Handshake) error {
	h.Role = "client"
	if v, ok := f.Get("role"); ok {
		if v != "client" && v != "server" {
			return fmt.Errorf("%w: HANDSHAKE role=%q", ErrProtocol, v)
		}
		h.Role = v
	}
	if _, has := f.Get("rounds"); has {
		v, err := f.Uint("rounds")
		if err != nil || v > 1<<20 {
			return fmt.Errorf("%w: HANDSHAKE rounds", ErrProtocol)
		}
		h.Rounds = int(v)
	}
	if v, has := f.Get("hrr"); has {
		if v != "0" && v != "1" {
			return fmt.Errorf("%w: HANDSHAKE hrr=%q", ErrProtocol, v)
		}
		h.HelloRetry = v == "1"
	}
	return nil
}
