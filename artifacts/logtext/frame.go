package logtext

import (
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// The frame grammar of the firmware protocol (firmware/PROTOCOL.md), the one home of it: the
// runner's serial line (runner/wire) decodes and encodes with it, and the log's reading
// (Parse) classifies lines with it. A frame is one line
//
//	@<seq>:<TYPE>:<key>=<value> <key>=<value>...*<crc32>
//
// where the CRC-32 (IEEE, eight lower-case hex digits) covers everything between '@' and '*';
// bytes before the last '@' are noise.

// MaxFrameLen is the longest frame, newline included (firmware/PROTOCOL.md).
const MaxFrameLen = 512

// ErrNoFrame means a line holds no '@', so no frame at all.
var ErrNoFrame = errors.New("no frame on line")

// SplitFrame splits the frame on line s (without its newline): the text after its last '@'
// must be a whole frame of the grammar. It returns ErrNoFrame for a line without '@', and an
// error saying what is wrong for one that holds '@' but no valid frame. fields is the payload
// as written ("k=v k=v"), every key and value valid.
func SplitFrame(s string) (seq uint32, typ, fields string, err error) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return 0, "", "", ErrNoFrame
	}
	s = s[at+1:]
	if len(s)+2 > MaxFrameLen { // '@' and the newline
		return 0, "", "", fmt.Errorf("frame of %d bytes exceeds %d", len(s)+2, MaxFrameLen)
	}
	star := strings.LastIndexByte(s, '*')
	if star < 0 || len(s)-star-1 != 8 {
		return 0, "", "", errors.New("no checksum")
	}
	sum := s[star+1:]
	if !lowerHex(sum) {
		return 0, "", "", errors.New("bad checksum digits")
	}
	want, _ := strconv.ParseUint(sum, 16, 32)
	body := s[:star]
	if crc32.ChecksumIEEE([]byte(body)) != uint32(want) {
		return 0, "", "", errors.New("checksum mismatch")
	}
	parts := strings.SplitN(body, ":", 3)
	if len(parts) != 3 {
		return 0, "", "", errors.New("want seq:TYPE:payload")
	}
	n, perr := strconv.ParseUint(parts[0], 10, 32)
	if perr != nil || strconv.FormatUint(n, 10) != parts[0] {
		return 0, "", "", errors.New("bad sequence number")
	}
	if !ValidType(parts[1]) {
		return 0, "", "", fmt.Errorf("bad type %q", parts[1])
	}
	if parts[2] != "" {
		for _, tok := range strings.Split(parts[2], " ") {
			k, v, found := strings.Cut(tok, "=")
			if !found || !ValidKey(k) || !ValidValue(v) {
				return 0, "", "", fmt.Errorf("bad field %q", tok)
			}
		}
	}
	return uint32(n), parts[1], parts[2], nil
}

// FrameBody is a frame's text between '@' and '*' (the part its checksum covers); it does not
// check the parts.
func FrameBody(seq uint32, typ, fields string) string {
	return strconv.FormatUint(uint64(seq), 10) + ":" + typ + ":" + fields
}

// FrameLine is the frame with body as the line carries it, without the newline.
func FrameLine(body string) string {
	return fmt.Sprintf("@%s*%08x", body, crc32.ChecksumIEEE([]byte(body)))
}

// ValidType reports whether s is a frame type: upper-case letters, at least one.
func ValidType(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// ValidKey reports whether s is a field key: lower-case letters, digits and '_', at least one.
func ValidKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ValidValue reports whether s is a field value: printable ASCII except space and the framing
// characters '@', '*', '=' and ':' (possibly empty).
func ValidValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '@' || c == '*' || c == '=' || c == ':' {
			return false
		}
	}
	return true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
