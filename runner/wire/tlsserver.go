package wire

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// The board as the TLS server over the serial line (firmware/PROTOCOL.md, "The board as the
// server"): the runner provisions its leaf certificate and key (TLSLEAF, TLSKEY), then for each
// handshake relays a client's connection to it, the client's bytes in TLSIN frames and the
// board's back from TLSO.
const (
	// MaxTLSLeaf is the longest leaf certificate (DER) a board takes.
	MaxTLSLeaf = 8192
	// MaxTLSKey is the longest key blob a board takes (an RSA-2048 key's is 902 bytes).
	MaxTLSKey = 1024
)

// Signature randomness of the board's CertificateVerify (TLS role=server sigrnd=).
const (
	// SigRndHedged: ML-DSA's rnd and ECDSA's hedge drawn from the board's DRBG.
	SigRndHedged = "hedged"
	// SigRndDet: ML-DSA's deterministic variant (rnd all zero), ECDSA's RFC 6979 nonces; a
	// PSS salt is drawn from the DRBG either way.
	SigRndDet = "det"
)

// TLSRoles is the TLS roles a board's firmware plays (HELLO tls_roles=): "client" alone when
// the field is absent and the board has a TLS client, none without one.
func (h Hello) TLSRoles() []string {
	if v, ok := h.Frame.Get("tls_roles"); ok && v != "" {
		return strings.Split(v, ",")
	}
	if v, ok := h.Frame.Get("tls_groups"); ok && v != "" {
		return []string{"client"}
	}
	return nil
}

// TLSServes reports whether the board's firmware plays the TLS server over the serial line.
func (h Hello) TLSServes() bool {
	return h.TLSIO() == "serial" && slices.Contains(h.TLSRoles(), "server")
}

// TLSPinLeaf hands the board the leaf certificate it sends as the server (DER) in TLSLEAF
// chunks, untimed, and returns the fingerprint it pinned (the first 16 bytes of the DER's
// SHA-256). A certificate the board cannot parse is an error.
func (c *Conn) TLSPinLeaf(ctx context.Context, der []byte) ([]byte, error) {
	if len(der) == 0 || len(der) > MaxTLSLeaf {
		return nil, fmt.Errorf("wire: TLSLEAF: certificate of %d bytes, want 1..%d", len(der), MaxTLSLeaf)
	}
	want := sha256.Sum256(der)
	err := c.provision(ctx, "TLSLEAF", "d", der, func(f Frame) error {
		if p, _ := f.Get("pinned"); p != "1" {
			return fmt.Errorf("the board refuses the leaf certificate (its X.509 reader cannot parse it)")
		}
		if h, _ := f.Get("leaf"); h != hex.EncodeToString(want[:16]) {
			return fmt.Errorf("%w: TLSLEAF leaf=%q, the certificate's is %x", ErrProtocol, h, want[:16])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return want[:16], nil
}

// KeyRefusedError is a board's refusal of a key blob (TLSKEY loaded=0 msg=): parse (it cannot
// read it), noleaf (no leaf pinned), mismatch (not the pinned leaf's key).
type KeyRefusedError struct{ Reason string }

func (e *KeyRefusedError) Error() string {
	return "the board refuses the leaf key: " + e.Reason
}

// TLSLoadKey hands the board its leaf's private key (the blob of tlscert.KeyBlob) in TLSKEY
// chunks, untimed, after TLSPinLeaf; it returns the fingerprint the board loaded (the first 16
// bytes of the blob's SHA-256), or a *KeyRefusedError.
func (c *Conn) TLSLoadKey(ctx context.Context, blob []byte) ([]byte, error) {
	if len(blob) < 3 || len(blob) > MaxTLSKey {
		return nil, fmt.Errorf("wire: TLSKEY: a key of %d bytes, want 3..%d", len(blob), MaxTLSKey)
	}
	want := sha256.Sum256(blob)
	err := c.provision(ctx, "TLSKEY", "d", blob, func(f Frame) error {
		if l, _ := f.Get("loaded"); l != "1" {
			msg, _ := f.Get("msg")
			return &KeyRefusedError{Reason: msg}
		}
		if h, _ := f.Get("key"); h != hex.EncodeToString(want[:16]) {
			return fmt.Errorf("%w: TLSKEY key=%q, the blob's is %x", ErrProtocol, h, want[:16])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return want[:16], nil
}

// TLSServerRequest is a TLS cell with the board as the server over the serial line.
type TLSServerRequest struct {
	Group, Sig uint16
	Leaf, Key  []byte // the fingerprints TLSPinLeaf and TLSLoadKey returned
	Iterations int
	Warmup     int
	Echo       int    // bytes of the line the client sends and the board echoes
	SigRnd     string // SigRndHedged or SigRndDet
}

// Validate checks the request before it is sent.
func (r TLSServerRequest) Validate() error {
	base := TLSRequest{Host: "serial", Port: 1, Group: r.Group, Sig: r.Sig, SNI: "server", CA: r.Leaf,
		Iterations: r.Iterations, Warmup: r.Warmup, Echo: r.Echo}
	if err := base.Validate(); err != nil {
		return err
	}
	if len(r.Key) != 16 {
		return fmt.Errorf("wire: tls: key fingerprint of %d bytes, want 16", len(r.Key))
	}
	if r.SigRnd != SigRndHedged && r.SigRnd != SigRndDet {
		return fmt.Errorf("wire: tls: sigrnd %q, want %s or %s", r.SigRnd, SigRndHedged, SigRndDet)
	}
	return nil
}

func (r TLSServerRequest) fields() []Field {
	return []Field{
		{"io", "serial"}, {"role", "server"}, {"group", strconv.Itoa(int(r.Group))}, {"sig", strconv.Itoa(int(r.Sig))},
		{"leaf", fmt.Sprintf("%x", r.Leaf)}, {"key", fmt.Sprintf("%x", r.Key)},
		{"n", strconv.Itoa(r.Iterations)}, {"warmup", strconv.Itoa(r.Warmup)}, {"echo", strconv.Itoa(r.Echo)},
		{"sigrnd", r.SigRnd},
	}
}

// TLSServeSerial runs req with the board as the server: for each handshake (warm-up ones
// included) accept returns the connection of a fresh client (the runner's own, connected over
// loopback), whose records are re-chunked by TLS record and TLSChunk into TLSIN frames, the
// board's answers written back to it; after the board's last bytes (the echo) the connection is
// closed. fn gets every timed handshake in order; the board's tally is returned.
func (c *Conn) TLSServeSerial(ctx context.Context, req TLSServerRequest, accept func(context.Context) (net.Conn, error), fn func(Handshake)) (TLSSummary, error) {
	if err := req.Validate(); err != nil {
		return TLSSummary{}, err
	}
	r := &tlsRelay{c: c, group: req.Group, sig: req.Sig, n: req.Iterations, dial: accept, fn: fn, i: -1, server: true, role: "server"}
	defer r.closeConn()
	accepted := false
	err := c.exchange(ctx, "TLS", req.fields(), func(f Frame) (bool, error) {
		if f.Type == "TLS" {
			if role, _ := f.Get("role"); role != "server" {
				return false, fmt.Errorf("%w: TLS role=server answered with role=%q", ErrProtocol, role)
			}
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
