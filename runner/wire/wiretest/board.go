// Package wiretest plays the firmware's side of the protocol for requests no firmware built here
// can answer: a board's TLS client (a real Pico W or ESP32 with wolfSSL) cannot exist on this
// machine. Board speaks real frames over a real byte stream (a pipe or a pty) and answers
// HELLO, ALGS and RESEND itself; every other request goes to a handler, which does the real work
// (for TLS, a real TLS client such as OpenSSL's s_client) and sends the answers. It is a test
// fixture only: it never stands in for firmware the project builds.
package wiretest

import (
	"bufio"
	"io"
	"strconv"
	"sync"

	"pqrepro/runner/wire"
)

// Handler answers one request. send writes a frame answering it (re= is added).
type Handler func(req wire.Frame, send func(typ string, fields ...wire.Field) error) error

// Board is a scripted board on one byte stream.
type Board struct {
	// Hello are the HELLO frame's fields after re= (proto=2, board=wiretest, counter=time_us,
	// unit=us and nalgs=0 are added when absent).
	Hello   []wire.Field
	Handler Handler

	mu   sync.Mutex
	w    io.Writer
	seq  uint32
	sent [][]byte // every frame sent, for RESEND
}

// Serve reads requests from r and writes answers to w until r ends.
func (b *Board) Serve(r io.Reader, w io.Writer) error {
	b.w = w
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, wire.MaxFrameLen), wire.MaxFrameLen*4)
	seen := map[uint32]bool{}
	for sc.Scan() {
		f, err := wire.Decode(sc.Bytes())
		if err != nil {
			continue
		}
		re := strconv.FormatUint(uint64(f.Seq), 10)
		send := func(typ string, fields ...wire.Field) error {
			return b.send(typ, append([]wire.Field{{Key: "re", Value: re}}, fields...))
		}
		switch f.Type {
		case "RESEND":
			from, err := f.Uint("from")
			if err != nil {
				continue
			}
			b.mu.Lock()
			for i := int(from); i >= 0 && i < len(b.sent); i++ {
				b.w.Write(b.sent[i])
			}
			b.mu.Unlock()
			continue
		}
		if seen[f.Seq] {
			continue // a repeated request is never re-run
		}
		seen[f.Seq] = true
		switch f.Type {
		case "HELLO":
			fields := b.Hello
			if _, ok := (wire.Frame{Fields: fields}).Get("proto"); !ok {
				fields = append([]wire.Field{{Key: "proto", Value: strconv.Itoa(wire.ProtocolVersion)}}, fields...)
			}
			for _, d := range []wire.Field{{Key: "board", Value: "wiretest"}, {Key: "counter", Value: "time_us"}, {Key: "unit", Value: "us"}, {Key: "nalgs", Value: "0"}} {
				if _, ok := (wire.Frame{Fields: fields}).Get(d.Key); !ok {
					fields = append(fields, d)
				}
			}
			err = send("HELLO", fields...)
		case "ALGS":
			err = send("ALGS", wire.Field{Key: "n", Value: "0"}, wire.Field{Key: "frames", Value: "0"})
		default:
			if b.Handler == nil {
				err = send("ERROR", wire.Field{Key: "code", Value: "unknown"})
			} else {
				err = b.Handler(f, send)
			}
		}
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

func (b *Board) send(typ string, fields []wire.Field) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	line, err := wire.Encode(wire.Frame{Seq: b.seq, Type: typ, Fields: fields})
	if err != nil {
		return err
	}
	b.seq++
	b.sent = append(b.sent, line)
	_, err = b.w.Write(line)
	return err
}
