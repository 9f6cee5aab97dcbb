package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"reflect"
	"slices"
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

// FuzzParseAlgs feeds arbitrary HELLO and ALG lines to their parsers: nothing may panic, and
// an accepted ALG frame adds only non-empty names of kind kem or sig, each once.
func FuzzParseAlgs(f *testing.F) {
	f.Add([]byte("@1:HELLO:re=1 proto=2 board=host counter=c unit=ns nalgs=18*00000000"))
	f.Add([]byte("@3:ALG:re=2 kind=sig algs=ML-DSA-44,SLH-DSA-SHA2-128s*00000000"))
	f.Add([]byte("@3:ALG:re=2 kind=kem algs=A,,A*00000000"))
	f.Add([]byte("@3:ALG:re=2 kind=kem impl=pqrepro-fw impl_ver=0.1.0 impl_src=9ae715eee9771b0e06ac3f40461d3d15af54b723f6869699e047e157ac7e1af4 algs=ML-KEM-512*00000000"))
	f.Add([]byte("@3:ALG:re=2 kind=kem impl=x impl_commit=abcdef0 impl_src=00 algs=ML-KEM-512*00000000"))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			s := string(line)
			i := strings.LastIndexByte(s, '*')
			if i < 0 {
				return
			}
			fixed, err2 := fixCRC(s[:i])
			if err2 != nil {
				return
			}
			if fr, err = Decode([]byte(fixed)); err != nil {
				return
			}
		}
		if h, err := parseHello(fr); err == nil && (h.NumAlgs < 0 || h.NumAlgs > maxAlgs) {
			t.Fatalf("parseHello accepted nalgs=%d", h.NumAlgs)
		}
		var h Hello
		if err := h.addAlgs(fr); err != nil {
			return
		}
		seen := map[string]bool{}
		for _, a := range h.Algorithms {
			if a == "" || seen[a] || (h.Kinds[a] != "kem" && h.Kinds[a] != "sig") {
				t.Fatalf("addAlgs(%q) gave %v %v", line, h.Algorithms, h.Kinds)
			}
			seen[a] = true
			if im, ok := h.Implementations[a]; ok {
				if ai := im.Artifact(); ai.Validate() != nil {
					t.Fatalf("addAlgs(%q) accepted implementation %+v: %v", line, im, ai.Validate())
				}
			}
		}
	})
}

// FuzzParseSample feeds arbitrary SAMPLE lines to the sample parser: nothing may panic, and an
// accepted sample's rounds are 0 (absent) or within 1..2^20.
func FuzzParseSample(f *testing.F) {
	f.Add([]byte("@8:SAMPLE:re=4 i=0 count=3109320 stack=12504 rounds=1 ok=1*00000000"))
	f.Add([]byte("@8:SAMPLE:re=4 i=1 count=2 stack=3 ok=0 reason=verify*00000000"))
	f.Add([]byte("@8:SAMPLE:re=4 i=1 count=2 stack=3 rounds=0 ok=1*00000000"))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			// Checksums are rarely right by chance: parse the fields of any well-formed body.
			s := string(line)
			i := strings.LastIndexByte(s, '*')
			if i < 0 {
				return
			}
			fixed, err2 := fixCRC(s[:i])
			if err2 != nil {
				return
			}
			if fr, err = Decode([]byte(fixed)); err != nil {
				return
			}
		}
		s, err := parseSample(fr)
		if err == nil && (s.Rounds < 0 || s.Rounds > 1<<20) {
			t.Fatalf("parseSample(%q) = %+v", line, s)
		}
	})
}

// fixCRC gives the line body (up to '*') its right checksum.
func fixCRC(body string) (string, error) {
	at := strings.LastIndexByte(body, '@')
	if at < 0 {
		return "", ErrNoFrame
	}
	return fmt.Sprintf("%s*%08x\n", body[at:], crc32.ChecksumIEEE([]byte(body[at+1:]))), nil
}

// FuzzParseHandshake feeds arbitrary HANDSHAKE lines to the report parser: nothing may panic, and
// an accepted report is in range (an ok one has a time and codepoints, a failed one a reason).
func FuzzParseHandshake(f *testing.F) {
	f.Add([]byte("@9:HANDSHAKE:re=5 i=0 us=181234 count=24000000 heap=41200 stack=5120 group=512 sig=2308 ok=1*00000000"))
	f.Add([]byte("@9:HANDSHAKE:re=5 i=3 ok=0 reason=alert alert=51*00000000"))
	f.Add([]byte("@9:HANDSHAKE:re=5 i=3 us=0 ok=1 group=512 sig=2308*00000000"))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			s := string(line)
			i := strings.LastIndexByte(s, '*')
			if i < 0 {
				return
			}
			fixed, err2 := fixCRC(s[:i])
			if err2 != nil {
				return
			}
			if fr, err = Decode([]byte(fixed)); err != nil {
				return
			}
		}
		h, err := parseHandshake(fr)
		if err != nil {
			return
		}
		if h.Index < 0 || h.Index >= MaxTLSHandshakes || (h.OK && h.Micros == 0) || (!h.OK && h.Reason == "") || h.Alert < -1 || h.Alert > 255 {
			t.Fatalf("parseHandshake(%q) = %+v", line, h)
		}
	})
}

// FuzzParseTel feeds arbitrary lines to the telemetry device's frame parsers (TELHS,
// TELSEALED, the TELCT/TELF chunks): nothing may panic, and what they accept is in range.
func FuzzParseTel(f *testing.F) {
	for _, fr := range []Frame{
		{Seq: 9, Type: "TELHS", Fields: []Field{{"re", "5"}, {"sid", "0011223344556677"}, {"len", "770"}, {"count", "858400"}, {"count_encaps", "686960"}, {"count_kdf", "171440"}, {"stack", "3296"}, {"ok", "1"}}},
		{Seq: 10, Type: "TELSEALED", Fields: []Field{{"re", "6"}, {"i", "0"}, {"ctr", "0"}, {"size", "16"}, {"len", "40"}, {"pth", strings.Repeat("ab", 32)}, {"count", "10320"}, {"stack", "504"}, {"ok", "1"}}},
		{Seq: 11, Type: "TELF", Fields: []Field{{"re", "6"}, {"i", "0"}, {"off", "0"}, {"d", strings.Repeat("00", 40)}}},
	} {
		b, err := Encode(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			return
		}
		if h, err := parseTelHS(fr); err == nil && h.Encaps+h.KDF != h.Count {
			t.Fatalf("parseTelHS accepted %+v", h)
		}
		if tf, err := parseTelSealed(fr); err == nil && (len(tf.PlainHash) != 32 || tf.Size > TelMaxPayload || tf.Index >= TelMaxIterations) {
			t.Fatalf("parseTelSealed accepted %+v", tf)
		}
		for _, key := range []string{"d", "hs"} {
			if b, err := chunk(fr, key, 0); err == nil && len(b) > TelChunk {
				t.Fatalf("chunk accepted %d bytes", len(b))
			}
		}
	})
}

// FuzzParseTelFS feeds arbitrary lines to the forward-secret handshake's TELFS parser: nothing
// may panic, and what it accepts is in range (its counts add up; a refusal names one of the
// board's reasons; an acceptance has its session id and an expiry below 2^63).
func FuzzParseTelFS(f *testing.F) {
	for _, fr := range []Frame{
		{Seq: 55, Type: "TELFS", Fields: []Field{{"re", "34"}, {"sid", "0011223344556677"}, {"len", "786"}, {"expiry", "1790000060"},
			{"count", "3404760"}, {"count_verify", "2394400"}, {"count_accept", "151680"}, {"count_encaps", "686880"}, {"count_kdf", "171800"}, {"stack", "9608"}, {"ok", "1"}}},
		{Seq: 56, Type: "TELFS", Fields: []Field{{"re", "35"}, {"count", "2394400"}, {"count_verify", "2394400"}, {"count_accept", "0"},
			{"count_encaps", "0"}, {"count_kdf", "0"}, {"stack", "9608"}, {"ok", "0"}, {"reason", "signature"}}},
	} {
		b, err := Encode(fr)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			return
		}
		h, err := parseTelFS(fr)
		if err != nil {
			return
		}
		if h.Verify+h.Accept+h.Encaps+h.KDF != h.Count || h.OK && (h.Expiry > telMaxUnix || h.Reason != "") ||
			!h.OK && !slices.Contains(strings.Fields(telOfferReasons), h.Reason) {
			t.Fatalf("parseTelFS accepted %+v", h)
		}
	})
}

// FuzzParseSerialHandshake feeds arbitrary lines to the TLS io=serial HANDSHAKE parser (us=
// optional, the phase split): nothing may panic, and what it accepts is in range.
func FuzzParseSerialHandshake(f *testing.F) {
	f.Add([]byte("@9:HANDSHAKE:re=5 i=0 count=23259000 count_kex=1500840 count_chain=2493600 count_cv=2310640 count_ksrec=16196000 count_rest=757920 segments=2 stack=9272 group=512 sig=2308 ok=1*00000000"))
	f.Add([]byte("@9:HANDSHAKE:re=5 i=0 count=20081920 count_kex=1 count_chain=2 count_cv=0 count_ksrec=3 count_rest=4 segments=2 stack=8952 group=512 sig=0 ok=0 reason=handshake alert=48*00000000"))
	f.Add([]byte("@9:HANDSHAKE:re=5 i=0 count_kex=1 ok=1 group=512 sig=2308*00000000"))
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := Decode(line)
		if err != nil {
			s := string(line)
			i := strings.LastIndexByte(s, '*')
			if i < 0 {
				return
			}
			if fixed, err2 := fixCRC(s[:i]); err2 != nil {
				return
			} else if fr, err = Decode([]byte(fixed)); err != nil {
				return
			}
		}
		h, err := parseHandshakeUnit(fr, false)
		if err != nil {
			return
		}
		if h.Index < 0 || h.Index >= MaxTLSHandshakes || (h.OK && h.Micros == 0 && h.Count == 0) || (!h.OK && h.Reason == "") || h.Alert < -1 || h.Alert > 255 || h.Segments < 0 {
			t.Fatalf("parseHandshakeUnit(%q) = %+v", line, h)
		}
	})
}

// FuzzTLSRelayFrame feeds arbitrary frames to the serial relay's handler (TLSO, TLSOUT,
// HANDSHAKE, TLSDONE as a board could send them): nothing may panic and the bytes it holds
// never exceed what TLSO frames can carry.
func FuzzTLSRelayFrame(f *testing.F) {
	f.Add([]byte("@1:TLSO:re=1 i=0 off=0 d=16030100*00000000"), []byte("@2:TLSOUT:re=1 i=0 len=4 want=flight*00000000"))
	f.Add([]byte("@1:TLSO:re=1 i=1 off=0 d=00*00000000"), []byte("@2:TLSDONE:re=1 n=1 ok=1 fail=0*00000000"))
	f.Add([]byte("@1:TLSOUT:re=1 i=0 len=0 want=none*00000000"), []byte("@2:HANDSHAKE:re=1 i=0 count=5 ok=1 group=512 sig=2308*00000000"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r := &tlsRelay{group: 512, sig: 0x0904, n: 1, role: "client", i: -1,
			dial: func(context.Context) (net.Conn, error) {
				c1, c2 := net.Pipe()
				go io.Copy(io.Discard, c2)
				return c1, nil
			}}
		defer r.closeConn()
		for _, line := range [][]byte{a, b} {
			s := string(line)
			if i := strings.LastIndexByte(s, '*'); i >= 0 {
				s = s[:i]
			}
			fixed, err := fixCRC(s)
			if err != nil {
				continue
			}
			fr, err := Decode([]byte(fixed))
			if err != nil {
				continue
			}
			if _, err := r.frame(context.Background(), fr); err != nil {
				return
			}
			if len(r.out) > MaxTLSFlight {
				t.Fatalf("relay holds %d bytes", len(r.out))
			}
		}
	})
}
