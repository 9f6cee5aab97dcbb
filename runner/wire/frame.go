// Package wire is the runner side of the firmware protocol described in
// firmware/PROTOCOL.md: framed, sequence-numbered, checksummed ASCII lines
// over a serial port, a pty or a pipe.
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
	"hash/crc32"
	"strconv"
	"strings"
)

// ProtocolVersion is the protocol version this package speaks; HELLO reports
// the firmware's and Hello refuses a mismatch.
const ProtocolVersion = 2

// MaxFrameLen is the longest frame, newline included, that either side sends.
const MaxFrameLen = 384

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

func validType(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func validKey(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// validValue allows printable ASCII except space and the framing characters.
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '@' || c == '*' || c == '=' || c == ':' {
			return false
		}
	}
	return true
}

// Encode returns the frame as one line, newline included.
func Encode(f Frame) ([]byte, error) {
	if !validType(f.Type) {
		return nil, fmt.Errorf("wire: invalid frame type %q", f.Type)
	}
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(f.Seq), 10))
	b.WriteByte(':')
	b.WriteString(f.Type)
	b.WriteByte(':')
	for i, kv := range f.Fields {
		if !validKey(kv.Key) || !validValue(kv.Value) {
			return nil, fmt.Errorf("wire: invalid field %q=%q", kv.Key, kv.Value)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv.Key)
		b.WriteByte('=')
		b.WriteString(kv.Value)
	}
	body := b.String()
	line := fmt.Sprintf("@%s*%08x\n", body, crc32.ChecksumIEEE([]byte(body)))
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
	s := strings.TrimRight(string(line), "\r\n")
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return Frame{}, ErrNoFrame
	}
	s = s[at+1:]
	if len(s)+2 > MaxFrameLen { // '@' and the newline
		return Frame{}, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrChecksum, len(s)+2, MaxFrameLen)
	}
	star := strings.LastIndexByte(s, '*')
	if star < 0 || len(s)-star-1 != 8 {
		return Frame{}, fmt.Errorf("%w: no checksum", ErrChecksum)
	}
	sum := s[star+1:]
	if !lowerHex(sum) {
		return Frame{}, fmt.Errorf("%w: bad checksum digits", ErrChecksum)
	}
	want, _ := strconv.ParseUint(sum, 16, 32)
	body := s[:star]
	if crc32.ChecksumIEEE([]byte(body)) != uint32(want) {
		return Frame{}, fmt.Errorf("%w: checksum mismatch", ErrChecksum)
	}
	parts := strings.SplitN(body, ":", 3)
	if len(parts) != 3 {
		return Frame{}, fmt.Errorf("%w: want seq:TYPE:payload", ErrChecksum)
	}
	seq, err := strconv.ParseUint(parts[0], 10, 32)
	if err != nil || strconv.FormatUint(seq, 10) != parts[0] {
		return Frame{}, fmt.Errorf("%w: bad sequence number", ErrChecksum)
	}
	if !validType(parts[1]) {
		return Frame{}, fmt.Errorf("%w: bad type %q", ErrChecksum, parts[1])
	}
	f := Frame{Seq: uint32(seq), Type: parts[1]}
	if parts[2] == "" {
		return f, nil
	}
	for _, tok := range strings.Split(parts[2], " ") {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || !validKey(k) || !validValue(v) {
			return Frame{}, fmt.Errorf("%w: bad field %q", ErrChecksum, tok)
		}
		f.Fields = append(f.Fields, Field{Key: k, Value: v})
	}
	return f, nil
}

// lowerHex reports whether s is lower-case hexadecimal digits only, as Encode writes them.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
