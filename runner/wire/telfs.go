package wire

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The forward-secret telemetry handshake on a board (firmware/PROTOCOL.md, "Telemetry
// device"; firmware/TELEMETRY.md section 7): TELSK pins the gateway's ML-DSA-44 public key,
// TELRQ gives the key request to publish, TELOF hands the board the gateway's signed offer in
// chunks, TELFS checks it and encapsulates to its ephemeral key.

// Forward-secret sizes (firmware/crypto/telemetry/tel.h).
const (
	TelSigningKeySize  = 1312                    // ML-DSA-44 public key
	TelRequestSize     = 1 + 16                  // version || nonce
	TelOfferSize       = 1 + 16 + 8 + 800 + 2420 // version || nonce || expiry || ek_e || signature
	TelFSHandshakeSize = 2 + 16 + 768            // version || mode || nonce || ct
	telMaxUnix         = 1<<63 - 1               // TELFS now= bound
	telOfferReasons    = "malformed signature nonce expired"
)

// TelPinSigner hands the board the gateway's ML-DSA-44 public key in TELSK chunks and returns
// the first 8 bytes of the Ascon-Hash256 the board computed over it.
func (c *Conn) TelPinSigner(ctx context.Context, pk []byte) ([]byte, error) {
	if len(pk) != TelSigningKeySize {
		return nil, fmt.Errorf("wire: TELSK: key of %d bytes, want %d", len(pk), TelSigningKeySize)
	}
	var pkh []byte
	for off := 0; off < len(pk); off += TelChunk {
		end := min(off+TelChunk, len(pk))
		fields := []Field{{"off", strconv.Itoa(off)}, {"pk", hex.EncodeToString(pk[off:end])}}
		err := c.exchange(ctx, "TELSK", fields, func(f Frame) (bool, error) {
			if f.Type != "TELSK" {
				return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
			}
			have, err := f.Uint("have")
			if err != nil {
				return false, err
			}
			if have != uint64(end) {
				return false, fmt.Errorf("%w: the board holds %d signing-key bytes, sent %d", ErrProtocol, have, end)
			}
			if end < len(pk) {
				return true, nil
			}
			if p, err := f.Uint("pinned"); err != nil || p != 1 {
				return false, fmt.Errorf("%w: TELSK: the board did not pin the signing key", ErrProtocol)
			}
			h, _ := f.Get("pkh")
			if pkh, err = hex.DecodeString(h); err != nil || len(pkh) != 8 {
				return false, fmt.Errorf("%w: TELSK pkh=%q", ErrProtocol, h)
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return pkh, nil
}

// TelRequest starts a forward-secret handshake as device dev (psk may be empty): the board
// draws the nonce from its DRBG and returns the 17-byte request to publish.
func (c *Conn) TelRequest(ctx context.Context, dev string, psk []byte) ([]byte, error) {
	fields := []Field{{"dev", dev}}
	if len(psk) > 0 {
		fields = append(fields, Field{"psk", hex.EncodeToString(psk)})
	}
	var rq []byte
	err := c.exchange(ctx, "TELRQ", fields, func(f Frame) (bool, error) {
		if f.Type != "TELRQ" {
			return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
		}
		s, _ := f.Get("rq")
		var err error
		if rq, err = hex.DecodeString(s); err != nil || len(rq) != TelRequestSize {
			return false, fmt.Errorf("%w: TELRQ rq=%q", ErrProtocol, s)
		}
		return true, nil
	})
	return rq, err
}

// TelOffer hands the board the gateway's offer (the payload published on …/ek) in TELOF
// chunks. Any length up to TelOfferSize is sent as it is: the board judges it.
func (c *Conn) TelOffer(ctx context.Context, offer []byte) error {
	if len(offer) == 0 || len(offer) > TelOfferSize {
		return fmt.Errorf("wire: TELOF: offer of %d bytes, want 1 to %d", len(offer), TelOfferSize)
	}
	for off := 0; off < len(offer); off += TelChunk {
		end := min(off+TelChunk, len(offer))
		fields := []Field{{"off", strconv.Itoa(off)}, {"of", hex.EncodeToString(offer[off:end])}}
		err := c.exchange(ctx, "TELOF", fields, func(f Frame) (bool, error) {
			if f.Type != "TELOF" {
				return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
			}
			have, err := f.Uint("have")
			if err != nil {
				return false, err
			}
			if have != uint64(end) {
				return false, fmt.Errorf("%w: the board holds %d offer bytes, sent %d", ErrProtocol, have, end)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// TelFSHandshake is what TELFS reports. OK false is a refused offer, with its Reason
// (malformed, signature, nonce or expired) and the counts of the checks that ran.
type TelFSHandshake struct {
	OK         bool
	Reason     string
	Payload    []byte // the 786-byte handshake to publish on …/hs
	SessionID  [telSessionIDBytes]byte
	Expiry     uint64 // the offer's expiry, Unix seconds
	Count      uint64 // Verify + Accept + Encaps + KDF
	Verify     uint64 // ML-DSA-44 verification of the offer
	Accept     uint64 // nonce, expiry and ek_e modulus checks, H(ek_e)
	Encaps     uint64 // ML-KEM-512 encapsulation to ek_e
	KDF        uint64 // H(ct) and the Ascon-CXOF128 derivation
	StackBytes uint32
}

// TelForwardSecret asks the board to check the offer it holds at Unix time now and, if it
// accepts it, to open the session.
func (c *Conn) TelForwardSecret(ctx context.Context, now int64) (TelFSHandshake, error) {
	var h TelFSHandshake
	if now < 0 {
		return h, fmt.Errorf("wire: TELFS: now=%d is negative", now)
	}
	var buf []byte
	err := c.exchange(ctx, "TELFS", []Field{{"now", strconv.FormatInt(now, 10)}}, func(f Frame) (bool, error) {
		switch f.Type {
		case "TELCT":
			b, err := chunk(f, "hs", len(buf))
			if err != nil {
				return false, err
			}
			if buf = append(buf, b...); len(buf) > TelFSHandshakeSize {
				return false, fmt.Errorf("%w: more than %d bytes of handshake", ErrProtocol, TelFSHandshakeSize)
			}
			return false, nil
		case "TELFS":
			var err error
			if h, err = parseTelFS(f); err != nil {
				return false, err
			}
			if h.OK && len(buf) != TelFSHandshakeSize || !h.OK && len(buf) != 0 {
				return false, fmt.Errorf("%w: TELFS ok=%v with %d bytes of handshake", ErrProtocol, h.OK, len(buf))
			}
			h.Payload = buf
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	return h, err
}

func parseTelFS(f Frame) (TelFSHandshake, error) {
	var h TelFSHandshake
	ok, err := f.Uint("ok")
	if err != nil || ok > 1 {
		return h, fmt.Errorf("%w: TELFS ok", ErrProtocol)
	}
	h.OK = ok == 1
	for _, x := range []struct {
		k string
		p *uint64
	}{{"count", &h.Count}, {"count_verify", &h.Verify}, {"count_accept", &h.Accept}, {"count_encaps", &h.Encaps}, {"count_kdf", &h.KDF}} {
		if *x.p, err = f.Uint(x.k); err != nil {
			return h, err
		}
	}
	if h.Verify+h.Accept+h.Encaps+h.KDF != h.Count {
		return h, fmt.Errorf("%w: TELFS count %d is not the sum of its parts", ErrProtocol, h.Count)
	}
	st, err := f.Uint("stack")
	if err != nil || st > 1<<32-1 {
		return h, fmt.Errorf("%w: TELFS stack", ErrProtocol)
	}
	h.StackBytes = uint32(st)
	if !h.OK {
		h.Reason, _ = f.Get("reason")
		if !slices.Contains(strings.Fields(telOfferReasons), h.Reason) {
			return h, fmt.Errorf("%w: TELFS reason=%q", ErrProtocol, h.Reason)
		}
		return h, nil
	}
	if n, err := f.Uint("len"); err != nil || n != TelFSHandshakeSize {
		return h, fmt.Errorf("%w: TELFS len", ErrProtocol)
	}
	if h.Expiry, err = f.Uint("expiry"); err != nil || h.Expiry > telMaxUnix {
		return h, fmt.Errorf("%w: TELFS expiry", ErrProtocol)
	}
	s, _ := f.Get("sid")
	sid, err := hex.DecodeString(s)
	if err != nil || len(sid) != telSessionIDBytes {
		return h, fmt.Errorf("%w: TELFS sid=%q", ErrProtocol, s)
	}
	copy(h.SessionID[:], sid)
	return h, nil
}
