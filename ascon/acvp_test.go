package ascon

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// acvpDir holds NIST's ACVP vectors, relative to this package's directory.
var acvpDir = filepath.Join("..", "..", "shared", "test-vectors", "acvp")

// hexBytes is an ACVP hex field.
type hexBytes []byte

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := hex.DecodeString(s)
	*h = v
	return err
}

// acvpCase is every field the Ascon ACVP prompts and expected results use;
// all lengths are in bits.
type acvpCase struct {
	TcID       int      `json:"tcId"`
	Key        hexBytes `json:"key"`
	SecondKey  hexBytes `json:"secondKey"`
	Nonce      hexBytes `json:"nonce"`
	AD         hexBytes `json:"ad"`
	PT         hexBytes `json:"pt"`
	CT         hexBytes `json:"ct"`
	Tag        hexBytes `json:"tag"`
	PayloadLen int      `json:"payloadLen"`
	ADLen      int      `json:"adLen"`
	TagLen     int      `json:"tagLen"`
	Msg        hexBytes `json:"msg"`
	Len        int      `json:"len"`
	OutLen     int      `json:"outLen"`
	CS         hexBytes `json:"cs"`
	CSLen      int      `json:"csLen"`
	MD         hexBytes `json:"md"`
	TestPassed *bool    `json:"testPassed"`
}

type acvpFile struct {
	TestGroups []struct {
		TgID                 int        `json:"tgId"`
		Direction            string     `json:"direction"`
		SupportsNonceMasking bool       `json:"supportsNonceMasking"`
		Tests                []acvpCase `json:"tests"`
	} `json:"testGroups"`
}

// acvpGroup is one prompt group with each test's expected result beside it.
type acvpGroup struct {
	direction string
	masking   bool
	tests     [][2]acvpCase // prompt, expected
}

func loadACVP(t *testing.T, dir string) []acvpGroup {
	t.Helper()
	read := func(name string) acvpFile {
		p := filepath.Join(acvpDir, dir, name)
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Skipf("ACVP vectors not available: %v", err)
		}
		var f acvpFile
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("parse %s: %v", p, err)
		}
		return f
	}
	prompt, expected := read("prompt.json"), read("expectedResults.json")
	want := map[int]acvpCase{}
	for _, g := range expected.TestGroups {
		for _, tc := range g.Tests {
			want[tc.TcID] = tc
		}
	}
	var groups []acvpGroup
	for _, g := range prompt.TestGroups {
		ag := acvpGroup{direction: g.Direction, masking: g.SupportsNonceMasking}
		for _, tc := range g.Tests {
			exp, ok := want[tc.TcID]
			if !ok {
				t.Fatalf("%s: tcId %d has no expected result", dir, tc.TcID)
			}
			ag.tests = append(ag.tests, [2]acvpCase{tc, exp})
		}
		groups = append(groups, ag)
	}
	return groups
}

// whole reports whether every bit length is a whole number of bytes.
func whole(lens ...int) bool {
	for _, n := range lens {
		if n%8 != 0 {
			return false
		}
	}
	return true
}

// acvpCount tallies the cases per group kind, split into those with whole-byte
// lengths (what the public API can express) and those with bit lengths.
type acvpCount map[string]*[2]int

func (c acvpCount) add(kind string, byteAligned bool) {
	if c[kind] == nil {
		c[kind] = new([2]int)
	}
	if byteAligned {
		c[kind][0]++
	} else {
		c[kind][1]++
	}
}

func (c acvpCount) String() string {
	s := ""
	for k, v := range c {
		s += fmt.Sprintf(" %s: %d whole-byte + %d bit-length;", k, v[0], v[1])
	}
	return s
}

// TestACVPAEAD128 runs every ACVP Ascon-AEAD128 case, with and without nonce
// masking, at every tag length. Whole-byte cases go through the public API
// (Seal/Open, NewAEAD128WithTagSize where the tag is whole bytes); the others
// through the same code on bit lengths.
func TestACVPAEAD128(t *testing.T) {
	count := acvpCount{}
	for _, g := range loadACVP(t, "Ascon-AEAD128-SP800-232") {
		for _, pair := range g.tests {
			tc, exp := pair[0], pair[1]
			key := tc.Key
			if g.masking {
				if len(tc.SecondKey) != 16 {
					t.Fatalf("tcId %d: masking group without a 16-byte secondKey", tc.TcID)
				}
				key = append(bytes.Clone(tc.Key), tc.SecondKey...)
			}
			a, err := NewAEAD128(key)
			if err != nil {
				t.Fatalf("tcId %d: %v", tc.TcID, err)
			}
			aligned := whole(tc.PayloadLen, tc.ADLen)
			public := aligned && whole(tc.TagLen)
			kind := fmt.Sprintf("%s masking=%v", g.direction, g.masking)
			count.add(kind, aligned)
			if public {
				if a, err = NewAEAD128WithTagSize(key, tc.TagLen/8); err != nil {
					t.Fatalf("tcId %d: %v", tc.TcID, err)
				}
			}
			switch g.direction {
			case "encrypt":
				var got []byte
				if public {
					got = a.Seal(nil, tc.Nonce, tc.PT, tc.AD)
				} else {
					got = a.seal(nil, tc.Nonce, tc.PT, tc.PayloadLen, tc.AD, tc.ADLen, tc.TagLen)
				}
				if want := append(bytes.Clone(exp.CT), exp.Tag...); !bytes.Equal(got, want) {
					t.Errorf("tcId %d (%s, pt %d ad %d tag %d bits): got %X, want %X", tc.TcID, kind, tc.PayloadLen, tc.ADLen, tc.TagLen, got, want)
				}
			case "decrypt":
				var got []byte
				if public {
					got, err = a.Open(nil, tc.Nonce, append(bytes.Clone(tc.CT), tc.Tag...), tc.AD)
				} else {
					got, err = a.open(nil, tc.Nonce, tc.CT, tc.PayloadLen, tc.Tag, tc.TagLen, tc.AD, tc.ADLen)
				}
				if exp.TestPassed == nil {
					t.Fatalf("tcId %d: no testPassed", tc.TcID)
				}
				switch {
				case *exp.TestPassed && (err != nil || !bytes.Equal(got, exp.PT)):
					t.Errorf("tcId %d (%s): Open = %X, %v; want %X", tc.TcID, kind, got, err, exp.PT)
				case !*exp.TestPassed && (err != ErrOpen || got != nil):
					t.Errorf("tcId %d (%s): forged case opened: %X, %v", tc.TcID, kind, got, err)
				}
			default:
				t.Fatalf("tcId %d: unknown direction %q", tc.TcID, g.direction)
			}
		}
	}
	t.Logf("ACVP Ascon-AEAD128:%s", count)
	if n := len(count); n != 4 {
		t.Fatalf("%d kinds of AEAD group, want 4", n)
	}
}

// TestACVPHash runs every ACVP Hash256, XOF128 and CXOF128 case; whole-byte
// ones through the public API.
func TestACVPHash(t *testing.T) {
	for _, c := range []struct {
		dir string
		sum func(tc acvpCase) []byte
	}{
		{"Ascon-Hash256-SP800-232", func(tc acvpCase) []byte {
			if whole(tc.Len) {
				s := Sum256(tc.Msg)
				return s[:]
			}
			return NewHash256().sp.sumBits(tc.Msg, tc.Len, 256)
		}},
		{"Ascon-XOF128-SP800-232", func(tc acvpCase) []byte {
			if whole(tc.Len, tc.OutLen) {
				x := NewXOF128()
				x.Write(tc.Msg)
				out := make([]byte, tc.OutLen/8)
				x.Read(out)
				return out
			}
			return NewXOF128().sp.sumBits(tc.Msg, tc.Len, tc.OutLen)
		}},
		{"Ascon-CXOF128-SP800-232", func(tc acvpCase) []byte {
			if whole(tc.Len, tc.OutLen, tc.CSLen) {
				x, err := NewCXOF128(tc.CS)
				if err != nil {
					return nil
				}
				x.Write(tc.Msg)
				out := make([]byte, tc.OutLen/8)
				x.Read(out)
				return out
			}
			return newCXOFBits(tc.CS, tc.CSLen).sp.sumBits(tc.Msg, tc.Len, tc.OutLen)
		}},
	} {
		t.Run(c.dir, func(t *testing.T) {
			count := acvpCount{}
			for _, g := range loadACVP(t, c.dir) {
				for _, pair := range g.tests {
					tc, exp := pair[0], pair[1]
					count.add("AFT", whole(tc.Len, tc.OutLen, tc.CSLen))
					if got := c.sum(tc); !bytes.Equal(got, exp.MD) {
						t.Errorf("tcId %d (len %d out %d cs %d bits): got %X, want %X", tc.TcID, tc.Len, tc.OutLen, tc.CSLen, got, exp.MD)
					}
				}
			}
			t.Logf("ACVP %s:%s", c.dir, count)
		})
	}
}
