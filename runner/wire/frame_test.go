package wire

import (
	"errors"
	"fmt"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
)

func line(body string) string {
	return fmt.Sprintf("@%s*%08x", body, crc32.ChecksumIEEE([]byte(body)))
}

func TestDecode(t *testing.T) {
	good := line("7:SAMPLE:re=3 i=0 count=123 stack=4096 ok=1")
	want := Frame{Seq: 7, Type: "SAMPLE", Fields: []Field{
		{"re", "3"}, {"i", "0"}, {"count", "123"}, {"stack", "4096"}, {"ok", "1"},
	}}
	tests := []struct {
		name string
		in   string
		want Frame
		err  error
	}{
		{"frame", good, want, nil},
		{"crlf", good + "\r\n", want, nil},
		{"upper-case checksum", good[:len(good)-8] + strings.ToUpper(good[len(good)-8:]), Frame{}, ErrChecksum},
		{"noise before frame", "boot rom v1\x00\xff" + good, want, nil},
		{"empty payload", line("1:SELFTEST:"), Frame{Seq: 1, Type: "SELFTEST"}, nil},
		{"noise line", "pqrepro-fw 0.1.0 ready", Frame{}, ErrNoFrame},
		{"empty line", "", Frame{}, ErrNoFrame},
		{"flipped bit", strings.Replace(good, "count=123", "count=133", 1), Frame{}, ErrChecksum},
		{"cut frame", good[:len(good)-3], Frame{}, ErrChecksum},
		{"no checksum", "@7:SAMPLE:re=3", Frame{}, ErrChecksum},
		{"bad seq", line("x:SAMPLE:re=3"), Frame{}, ErrChecksum},
		{"bad type", line("1:sample:re=3"), Frame{}, ErrChecksum},
		{"field without value", line("1:SAMPLE:re"), Frame{}, ErrChecksum},
		{"missing payload separator", line("1:SAMPLE"), Frame{}, ErrChecksum},
		// Decode accepts only what Encode writes.
		{"leading zero in seq", line("07:SAMPLE:re=3"), Frame{}, ErrChecksum},
		{"two spaces between fields", line("1:SAMPLE:re=3  i=0"), Frame{}, ErrChecksum},
		{"trailing space", line("1:SAMPLE:re=3 "), Frame{}, ErrChecksum},
		{"tab between fields", line("1:SAMPLE:re=3\ti=0"), Frame{}, ErrChecksum},
		{"colon in value", line("1:SAMPLE:re=3:4"), Frame{}, ErrChecksum},
		{"equals in value", line("1:SAMPLE:re=3=4"), Frame{}, ErrChecksum},
		{"too long", line("1:SAMPLE:v=" + strings.Repeat("0", MaxFrameLen)), Frame{}, ErrChecksum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in))
			if !errors.Is(err, tt.err) {
				t.Fatalf("Decode(%q) error = %v, want %v", tt.in, err, tt.err)
			}
			if err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decode(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	tests := []Frame{
		{Seq: 0, Type: "HELLO"},
		{Seq: 4294967295, Type: "BENCH", Fields: []Field{{"alg", "ML-KEM-768"}, {"op", "decaps"}, {"n", "10"}}},
		{Seq: 12, Type: "SEED", Fields: []Field{{"seed", strings.Repeat("ab", 64)}}},
	}
	for _, f := range tests {
		t.Run(f.Type, func(t *testing.T) {
			b, err := Encode(f)
			if err != nil {
				t.Fatal(err)
			}
			if b[0] != '@' || b[len(b)-1] != '\n' {
				t.Fatalf("Encode = %q: want one @...\\n line", b)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, f) {
				t.Fatalf("round trip = %+v, want %+v", got, f)
			}
		})
	}
}

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name string
		f    Frame
	}{
		{"lower-case type", Frame{Type: "hello"}},
		{"space in value", Frame{Type: "X", Fields: []Field{{"a", "b c"}}}},
		{"frame char in value", Frame{Type: "X", Fields: []Field{{"a", "b*c"}}}},
		{"upper-case key", Frame{Type: "X", Fields: []Field{{"A", "b"}}}},
		{"too long", Frame{Type: "X", Fields: []Field{{"a", strings.Repeat("0", MaxFrameLen)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := Encode(tt.f); err == nil {
				t.Fatalf("Encode accepted %q", b)
			}
		})
	}
}
