package wire

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// The telemetry device's requests (firmware/PROTOCOL.md, "Telemetry device"): the board
// plays the device of firmware/TELEMETRY.md; the runner carries its messages to the broker.

// TelChunk is the most bytes of binary one TELEK, TELCT or TELF frame carries.
const TelChunk = 128

// Telemetry sizes the firmware works with (firmware/crypto/telemetry/tel.h).
const (
	TelEncapKeySize   = 800
	TelHandshakeSize  = 2 + 768
	TelOverhead       = 24
	TelMaxPayload     = 4096
	TelMaxSizes       = 32
	TelMaxAD          = 128
	TelMaxIterations  = 100000
	telSessionIDBytes = 8
)

// TelPin hands the board the gateway's ML-KEM-512 encapsulation key in TELEK chunks and
// returns the first 8 bytes of the Ascon-Hash256 the board computed over it. A key the
// board's modulus check refuses is an error.
func (c *Conn) TelPin(ctx context.Context, ek []byte) ([]byte, error) {
	if len(ek) != TelEncapKeySize {
		return nil, fmt.Errorf("wire: TELEK: key of %d bytes, want %d", len(ek), TelEncapKeySize)
	}
	var ekh []byte
	for off := 0; off < len(ek); off += TelChunk {
		end := min(off+TelChunk, len(ek))
		fields := []Field{{"off", strconv.Itoa(off)}, {"ek", hex.EncodeToString(ek[off:end])}}
		err := c.exchange(ctx, "TELEK", fields, func(f Frame) (bool, error) {
			if f.Type != "TELEK" {
				return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
			}
			have, err := f.Uint("have")
			if err != nil {
				return false, err
			}
			if have != uint64(end) {
				return false, fmt.Errorf("%w: the board holds %d key bytes, sent %d", ErrProtocol, have, end)
			}
			if end < len(ek) {
				return true, nil
			}
			p, err := f.Uint("pinned")
			if err != nil {
				return false, err
			}
			if p != 1 {
				return false, fmt.Errorf("the board refuses the gateway key (ML-KEM-512 modulus check)")
			}
			h, _ := f.Get("ekh")
			if ekh, err = hex.DecodeString(h); err != nil || len(ekh) != 8 {
				return false, fmt.Errorf("%w: TELEK ekh=%q", ErrProtocol, h)
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return ekh, nil
}

// TelHandshake is what TELHS reports: the 770-byte handshake payload to publish, the
// session id the board derived, and the counts of the timed handshake.
type TelHandshake struct {
	Payload    []byte
	SessionID  [telSessionIDBytes]byte
	Count      uint64 // encapsulation + key derivation
	Encaps     uint64 // ML-KEM-512 encapsulation (with the key's modulus check)
	KDF        uint64 // Ascon-Hash256 of the ciphertext and the Ascon-CXOF128 derivation
	StackBytes uint32
}

// TelHandshake asks the board for a new session as device dev (psk may be empty).
func (c *Conn) TelHandshake(ctx context.Context, dev string, psk []byte) (TelHandshake, error) {
	var h TelHandshake
	fields := []Field{{"dev", dev}}
	if len(psk) > 0 {
		fields = append(fields, Field{"psk", hex.EncodeToString(psk)})
	}
	var buf []byte
	err := c.exchange(ctx, "TELHS", fields, func(f Frame) (bool, error) {
		switch f.Type {
		case "TELCT":
			b, err := chunk(f, "hs", len(buf))
			if err != nil {
				return false, err
			}
			if buf = append(buf, b...); len(buf) > TelHandshakeSize {
				return false, fmt.Errorf("%w: more than %d bytes of handshake", ErrProtocol, TelHandshakeSize)
			}
			return false, nil
		case "TELHS":
			var err error
			if h, err = parseTelHS(f); err != nil {
				return false, err
			}
			if len(buf) != TelHandshakeSize {
				return false, fmt.Errorf("%w: handshake of %d bytes in the chunks, want %d", ErrProtocol, len(buf), TelHandshakeSize)
			}
			h.Payload = buf
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	return h, err
}

// parseTelHS reads a TELHS frame's fields (not the payload, which the TELCT chunks carry).
func parseTelHS(f Frame) (TelHandshake, error) {
	var h TelHandshake
	n, err := f.Uint("len")
	if err != nil {
		return h, err
	}
	if n != TelHandshakeSize {
		return h, fmt.Errorf("%w: TELHS announces %d bytes, want %d", ErrProtocol, n, TelHandshakeSize)
	}
	s, _ := f.Get("sid")
	sid, err := hex.DecodeString(s)
	if err != nil || len(sid) != telSessionIDBytes {
		return h, fmt.Errorf("%w: TELHS sid=%q", ErrProtocol, s)
	}
	copy(h.SessionID[:], sid)
	for _, x := range []struct {
		k string
		p *uint64
	}{{"count", &h.Count}, {"count_encaps", &h.Encaps}, {"count_kdf", &h.KDF}} {
		if *x.p, err = f.Uint(x.k); err != nil {
			return h, err
		}
	}
	if h.Encaps+h.KDF != h.Count {
		return h, fmt.Errorf("%w: TELHS count %d is not encapsulation %d + derivation %d", ErrProtocol, h.Count, h.Encaps, h.KDF)
	}
	st, err := f.Uint("stack")
	if err != nil {
		return h, err
	}
	if st > 1<<32-1 {
		return h, fmt.Errorf("%w: TELHS stack=%d", ErrProtocol, st)
	}
	h.StackBytes = uint32(st)
	return h, nil
}

// parseTelSealed reads a TELSEALED frame (the frame's bytes came in TELF chunks before it).
func parseTelSealed(f Frame) (TelFrame, error) {
	var tf TelFrame
	vals := map[string]uint64{}
	for _, k := range []string{"i", "ctr", "size", "len", "count", "stack", "ok"} {
		v, err := f.Uint(k)
		if err != nil {
			return tf, err
		}
		vals[k] = v
	}
	if vals["i"] >= TelMaxIterations || vals["size"] > TelMaxPayload || vals["stack"] > 1<<32-1 || vals["ok"] > 1 {
		return tf, fmt.Errorf("%w: TELSEALED out of range: %v", ErrProtocol, vals)
	}
	tf.Index, tf.Counter, tf.Size = int(vals["i"]), vals["ctr"], int(vals["size"])
	tf.Count, tf.StackBytes, tf.OK = vals["count"], uint32(vals["stack"]), vals["ok"] == 1
	tf.Reason, _ = f.Get("reason")
	if tf.OK && vals["len"] != vals["size"]+TelOverhead {
		return tf, fmt.Errorf("%w: TELSEALED len=%d for %d bytes of plaintext", ErrProtocol, vals["len"], tf.Size)
	}
	h, _ := f.Get("pth")
	var err error
	if tf.PlainHash, err = hex.DecodeString(h); err != nil || len(tf.PlainHash) != 32 {
		return tf, fmt.Errorf("%w: TELSEALED pth=%q", ErrProtocol, h)
	}
	return tf, nil
}

// chunk decodes one chunk frame's data at key, which must start at offset want.
func chunk(f Frame, key string, want int) ([]byte, error) {
	off, err := f.Uint("off")
	if err != nil {
		return nil, err
	}
	if int(off) != want {
		return nil, fmt.Errorf("%w: %s chunk at offset %d, want %d", ErrProtocol, f.Type, off, want)
	}
	s, _ := f.Get(key)
	b, err := hex.DecodeString(s)
	if err != nil || len(b) > TelChunk {
		return nil, fmt.Errorf("%w: %s %s= is not at most %d bytes of hex", ErrProtocol, f.Type, key, TelChunk)
	}
	return b, nil
}

// TelFrame is one frame the board sealed (TELF chunks and their TELSEALED).
type TelFrame struct {
	Index      int
	Counter    uint64
	Size       int    // plaintext bytes
	Payload    []byte // counter || ciphertext || tag, the MQTT payload to publish
	PlainHash  []byte // Ascon-Hash256 of the plaintext, to check what the gateway delivers
	Count      uint64 // the seal, in Hello.Unit
	StackBytes uint32
	OK         bool
	Reason     string
}

// TelDone is the board's tally of a TELSEAL.
type TelDone struct {
	N, OK, Fail int
	Next        uint64 // the session's next counter
}

// TelSeal asks the board to seal n frames whose plaintexts (from its DRBG) are sizes[i %
// len(sizes)] bytes, calling fn for each frame as it arrives (in order); an error from fn
// ends the exchange with it.
func (c *Conn) TelSeal(ctx context.Context, n int, sizes []int, fn func(TelFrame) error) (TelDone, error) {
	if n < 1 || n > TelMaxIterations {
		return TelDone{}, fmt.Errorf("wire: TELSEAL: %d frames, want 1..%d", n, TelMaxIterations)
	}
	list, err := sizeList(sizes)
	if err != nil {
		return TelDone{}, fmt.Errorf("wire: TELSEAL: %w", err)
	}
	var (
		done     TelDone
		buf      []byte
		next     int
		accepted bool
	)
	err = c.exchange(ctx, "TELSEAL", []Field{{"n", strconv.Itoa(n)}, {"sizes", list}}, func(f Frame) (bool, error) {
		switch f.Type {
		case "TELSEAL":
			accepted = true
			return false, nil
		case "TELF":
			i, err := f.Uint("i")
			if err != nil {
				return false, err
			}
			if !accepted || int(i) != next {
				return false, fmt.Errorf("%w: frame chunk of %d, want %d", ErrProtocol, i, next)
			}
			b, err := chunk(f, "d", len(buf))
			if err != nil {
				return false, err
			}
			if buf = append(buf, b...); len(buf) > sizes[next%len(sizes)]+TelOverhead {
				return false, fmt.Errorf("%w: frame %d: more than %d bytes", ErrProtocol, next, sizes[next%len(sizes)]+TelOverhead)
			}
			return false, nil
		case "TELSEALED":
			tf, err := parseTelSealed(f)
			if err != nil {
				return false, err
			}
			if !accepted || tf.Index != next {
				return false, fmt.Errorf("%w: frame %d out of order (want %d)", ErrProtocol, tf.Index, next)
			}
			if tf.Size != sizes[next%len(sizes)] {
				return false, fmt.Errorf("%w: frame %d holds %d bytes, asked for %d", ErrProtocol, next, tf.Size, sizes[next%len(sizes)])
			}
			if tf.OK {
				if len(buf) != tf.Size+TelOverhead {
					return false, fmt.Errorf("%w: frame %d: %d bytes received, want %d", ErrProtocol, next, len(buf), tf.Size+TelOverhead)
				}
				tf.Payload = buf
			}
			buf, next = nil, next+1
			if fn != nil {
				if err := fn(tf); err != nil {
					return false, err
				}
			}
			return false, nil
		case "TELDONE":
			vals := map[string]uint64{}
			for _, k := range []string{"n", "ok", "fail", "next"} {
				v, err := f.Uint(k)
				if err != nil {
					return false, err
				}
				vals[k] = v
			}
			done = TelDone{N: int(vals["n"]), OK: int(vals["ok"]), Fail: int(vals["fail"]), Next: vals["next"]}
			if done.N != next || done.N != n || done.OK+done.Fail != done.N {
				return false, fmt.Errorf("%w: TELDONE counts %d frames (%d ok, %d failed), received %d of %d", ErrProtocol, done.N, done.OK, done.Fail, next, n)
			}
			return true, nil
		}
		return false, fmt.Errorf("%w: unexpected %s", ErrProtocol, f.Type)
	})
	return done, err
}

func sizeList(sizes []int) (string, error) {
	if len(sizes) < 1 || len(sizes) > TelMaxSizes {
		return "", fmt.Errorf("%d payload sizes, want 1..%d", len(sizes), TelMaxSizes)
	}
	s := make([]string, len(sizes))
	for i, n := range sizes {
		if n < 0 || n > TelMaxPayload {
			return "", fmt.Errorf("payload size %d, want 0..%d", n, TelMaxPayload)
		}
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ","), nil
}

// AEADBenchRequest asks for Iterations timed seals or opens (Op "seal" or "open") of the
// named AEAD (Ascon-AEAD128, Ascon-128a-v1.2, Ascon-128-v1.2), sample i of Sizes[i %
// len(Sizes)] bytes with ADLen bytes of associated data, after Warmup untimed ones.
type AEADBenchRequest struct {
	AEAD, Op           string
	Sizes              []int
	ADLen              int
	Iterations, Warmup int
}

// AEADBench runs req, calling fn for each sample in order (failed ones included), and
// returns the summary; Sample.Size is set from the frame.
func (c *Conn) AEADBench(ctx context.Context, req AEADBenchRequest, fn func(Sample, int)) (Summary, error) {
	list, err := sizeList(req.Sizes)
	if err != nil {
		return Summary{}, fmt.Errorf("wire: AEADBENCH: %w", err)
	}
	if req.Iterations < 1 || req.Iterations > TelMaxIterations || req.Warmup < 0 || req.Warmup > 1000 || req.ADLen < 0 || req.ADLen > TelMaxAD {
		return Summary{}, fmt.Errorf("wire: AEADBENCH: n=%d warmup=%d adlen=%d out of range", req.Iterations, req.Warmup, req.ADLen)
	}
	fields := []Field{{"aead", req.AEAD}, {"op", req.Op}, {"sizes", list}, {"adlen", strconv.Itoa(req.ADLen)},
		{"n", strconv.Itoa(req.Iterations)}, {"warmup", strconv.Itoa(req.Warmup)}}
	var sum Summary
	next, accepted := 0, false
	err = c.exchange(ctx, "AEADBENCH", fields, func(f Frame) (bool, error) {
		switch f.Type {
		case "AEADBENCH":
			accepted = true
			return false, nil
		case "SAMPLE":
			s, err := parseSample(f)
			if err != nil {
				return false, err
			}
			size, err := f.Uint("size")
			if err != nil {
				return false, err
			}
			if !accepted || s.Index != next {
				return false, fmt.Errorf("%w: sample %d out of order (want %d)", ErrProtocol, s.Index, next)
			}
			if int(size) != req.Sizes[next%len(req.Sizes)] {
				return false, fmt.Errorf("%w: sample %d is of %d bytes, asked for %d", ErrProtocol, next, size, req.Sizes[next%len(req.Sizes)])
			}
			next++
			if fn != nil {
				fn(s, int(size))
			}
			return false, nil
		case "SUMMARY":
			var err error
			if sum, err = parseSummary(f); err != nil {
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
