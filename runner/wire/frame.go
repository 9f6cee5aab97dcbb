// Package wire is the runner side of the firmware protocol described in
// firmware/PROTOCOL.md: framed, sequence-numbered, checksummed ASCII lines
// over a serial port, a pty or a pipe. The frame grammar itself lives in
// artifacts/logtext (SplitFrame), which the portal also reads logs with.
//
// A frame is one line
//
//	@<seq>:<TYPE>:<key>=<value> <key>=<value>...*<crc32>\n
//
// where the CRC-32 (IEEE, eight hex digits) covers everything between '@'
// and '*'. Anything else on the line (boot messages, a fault report, bytes
// from before the frame started) is noise and is skipped.
package wire

import (
	"errors"
	"fmt"
	"pqrepro/artifacts/logtext"
	"strconv"
	"strings"
)

// ProtocolVersion is the protocol version this package speaks; HELLO reports
// the firmware's and Hello refuses a mismatch.
const ProtocolVersion = 2

// MaxFrameLen is the longest frame, newline included, that either side sends.
const MaxFrameLen = logtext.MaxFrameLen

var (
	// ErrNoFrame means a line holds no frame at all (noise).
	ErrNoFrame = errors.New("wire: no frame on line")
	// ErrChecksum means a line looked like a frame but failed its CRC or parse.
	ErrChecksum = errors.New("wire: corrupt frame")
	// ErrTimeout means the board stopped answering.
	ErrTimeout = errors.New("wire: board timed out")
	// ErrLost means frames were lost and the firmware no longer holds them.
	ErrLost = errors.New("wire: frames lost beyond the firmware's resend ring")
	// ErrProtocol means the board answered something this package cannot use.
	ErrProtocol = errors.New("wire: protocol error")
)

// Field is one key=value pair of a frame's payload.
type Field struct {
	Key   string
	Value string
}

// Frame is one decoded frame. Fields keep their order on the line.
type Frame struct {
	Seq    uint32
	Type   string
	Fields []Field
}

// Get returns the value of the first field named key.
func (f Frame) Get(key string) (string, bool) {
	for _, kv := range f.Fields {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// Uint returns the field named key as an unsigned decimal number.
func (f Frame) Uint(key string) (uint64, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, fmt.Errorf("%w: %s frame has no %s", ErrProtocol, f.Type, key)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s frame: %s=%q is not a number", ErrProtocol, f.Type, key, v)
	}
	return n, nil
}

// String returns the frame as it appears on the line, without the newline.
func (f Frame) String() string {
	b, err := Encode(f)
	if err != nil {
		return fmt.Sprintf("invalid frame %d:%s: %v", f.Seq, f.Type, err)
	}
	return string(b[:len(b)-1])
}

// Encode returns the frame as one line, newline included.
func Encode(f Frame) ([]byte, error) {
	if !logtext.ValidType(f.Type) {
		return nil, fmt.Errorf("wire: invalid frame type %q", f.Type)
	}
	var b strings.Builder
	for i, kv := range f.Fields {
		if !logtext.ValidKey(kv.Key) || !logtext.ValidValue(kv.Value) {
			return nil, fmt.Errorf("wire: invalid field %q=%q", kv.Key, kv.Value)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv.Key)
		b.WriteByte('=')
		b.WriteString(kv.Value)
	}
	line := logtext.FrameLine(logtext.FrameBody(f.Seq, f.Type, b.String())) + "\n"
	if len(line) > MaxFrameLen {
		return nil, fmt.Errorf("wire: frame of %d bytes exceeds %d", len(line), MaxFrameLen)
	}
	return []byte(line), nil
}

// Decode parses one line (with or without its newline). A line without '@'
// is ErrNoFrame; bytes before the last '@' are noise and ignored, which lets
// a frame be recovered when noise without a newline ran into it. A line
// whose checksum or syntax is wrong is ErrChecksum. Decode accepts exactly
// the frames Encode writes: for an accepted line, Encode of the result gives
// back the frame's bytes from '@' to the checksum.
func Decode(line []byte) (Frame, error) {
	seq, typ, fields, err := logtext.SplitFrame(strings.TrimRight(string(line), "\r\n"))
	if errors.Is(err, logtext.ErrNoFrame) {
		return Frame{}, ErrNoFrame
	}
	if err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrChecksum, err)
	}
	f := Frame{Seq: seq, Type: typ}
	if fields == "" {
		return f, nil
	}
	for _, tok := range strings.Split(fields, " ") {
		k, v, _ := strings.Cut(tok, "=")
		f.Fields = append(f.Fields, Field{Key: k, Value: v})
	}
	return f, nil
}
