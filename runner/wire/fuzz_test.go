package wire

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary lines to Decode. Nothing may panic; an error is ErrNoFrame or
// ErrChecksum; and an accepted frame round-trips: Encode gives back the line's frame bytes
// exactly (from the last '@' to the checksum), and decoding those gives the same frame.
func FuzzDecode(f *testing.F) {
	for _, fr := range []Frame{
		{Seq: 0, Type: "HELLO", Fields: []Field{{"proto", "1"}, {"board", "qemu-mps2-an386"}}},
		{Seq: 4294967295, Type: "S", Fields: []Field{{"i", "12"}, {"v", "123456"}, {"ok", "1"}}},
		{Seq: 7, Type: "DONE"},
	} {
		b, err := Encode(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append([]byte("boot noise "), b...))
	}
	f.Add([]byte("@1:X:a=b*0000000G\n"))
	f.Add([]byte("@01:HELLO:*00000000"))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			if !errors.Is(err, ErrNoFrame) && !errors.Is(err, ErrChecksum) {
				t.Fatalf("Decode(%q): unexpected error kind %v", line, err)
			}
			return
		}
		enc, err := Encode(fr)
		if err != nil {
			t.Fatalf("Decode accepted %q as %+v, which Encode refuses: %v", line, fr, err)
		}
		s := strings.TrimRight(string(line), "\r\n")
		want := s[strings.LastIndexByte(s, '@'):] + "\n"
		if string(enc) != want {
			t.Fatalf("Decode(%q) = %+v re-encodes as %q; want %q", line, fr, enc, want)
		}
		again, err := Decode(enc)
		if err != nil || !reflect.DeepEqual(again, fr) {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", fr, again, err)
		}
		if !bytes.HasSuffix(enc, []byte("\n")) || len(enc) > MaxFrameLen {
			t.Fatalf("Encode wrote %q", enc)
		}
	})
}
