package ppk2_test

import (
	"errors"
	"strings"
	"testing"

	"pqrepro/runner/meter"
	"pqrepro/runner/meter/ppk2"
)

func TestParseMetadata(t *testing.T) {
	want := ppk2.SimModifiers()
	got, err := ppk2.ParseMetadata(want.Text())
	if err != nil || got.R != want.R || got.O != want.O || got.S != want.S || got.I != want.I || got.HW != "simulated" || len(got.Defaulted) != 0 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// As some PPK2s send it: lower-case keys, a -nan, a zero resistance, a key not read.
	got, err = ppk2.ParseMetadata([]byte("Calibrated: 0\nr0: 1000.5\nR1: 0\nGS2: -nan\nO3: 17\nXY: 3\nHW: 9173\nEND\n"))
	def := ppk2.DefaultModifiers()
	if err != nil || got.R[0] != 1000.5 || got.R[1] != def.R[1] || got.GS[2] != def.GS[2] || got.O[3] != 17 || got.HW != "9173" ||
		!strings.Contains(strings.Join(got.Defaulted, ","), "R1,R2") || !strings.Contains(strings.Join(got.Defaulted, ","), "GS2") {
		t.Errorf("%+v, %v", got, err)
	}
	for in, want := range map[string]string{
		"R0: 1\n":                               "END line",
		"R0 1\nEND":                             `line 1 "R0 1"`,
		"R0: 1\nGI4: 1.2.3\nEND":                "GI4 is not a number",
		strings.Repeat("R0: 1\n", 1000) + "END": "more than",
	} {
		if _, err := ppk2.ParseMetadata([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.30q: %v, want %q", in, err, want)
		}
	}
}

// TestStreamSplits: the words of a stream come out whole however the reads split them.
func TestStreamSplits(t *testing.T) {
	var b []byte
	for j := range 300 {
		w := ppk2.Word{ADC: uint16(j * 53 % 16384), Range: uint8(j % 5), Counter: uint8(j % 64), Logic: uint8(j)}
		e := w.Encode()
		b = append(b, e[:]...)
	}
	for _, n := range []int{1, 3, 4, 7, 1000} {
		s := ppk2.NewStream()
		var got []ppk2.Word
		var err error
		for i := 0; i < len(b); i += n {
			got, err = s.Feed(b[i:min(i+n, len(b))], got)
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 300 || got[299].Counter != 299%64 || got[299].Logic != 299%256 || got[123].ADC != 123*53%16384 {
			t.Fatalf("reads of %d bytes: %d words, last %+v", n, len(got), got[len(got)-1])
		}
	}
}

func FuzzStream(f *testing.F) {
	var ok []byte
	for j := range 12 {
		e := ppk2.Word{ADC: uint16(j * 1000), Range: 3, Counter: uint8(j)}.Encode()
		ok = append(ok, e[:]...)
	}
	f.Add(ok, 5)
	f.Add(append(append([]byte{}, ok[:10]...), ok[12:]...), 4)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}, 1)
	f.Fuzz(func(t *testing.T, b []byte, split int) {
		if split <= 0 || split > 64 {
			split = 7
		}
		s := ppk2.NewStream()
		var words []ppk2.Word
		var err error
		for i := 0; i < len(b) && err == nil; i += split {
			words, err = s.Feed(b[i:min(i+split, len(b))], words)
		}
		if err != nil && !errors.Is(err, meter.ErrMalformed) && !errors.Is(err, meter.ErrLost) {
			t.Fatalf("error %v wraps neither ErrMalformed nor ErrLost", err)
		}
		for k := 1; k < len(words); k++ {
			if words[k].Counter != (words[k-1].Counter+1)&0x3f || words[k].Range > 4 {
				t.Fatalf("word %d %+v after %+v accepted", k, words[k], words[k-1])
			}
		}
		if int64(len(words)) != s.Words() {
			t.Fatalf("%d words returned, %d counted", len(words), s.Words())
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	m := ppk2.SimModifiers()
	f.Add(m.Text())
	f.Add([]byte("R0: -nan\nEND"))
	f.Add([]byte("Calibrated: 1\nUG4: 1e308\nEND\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ppk2.ParseMetadata(b)
		if err != nil && !errors.Is(err, meter.ErrMalformed) && !errors.Is(err, ppk2.ErrIncomplete) {
			t.Fatalf("error %v", err)
		}
		if err == nil {
			for r := range ppk2.Ranges {
				if m.R[r] == 0 {
					t.Fatalf("range %d: zero resistance kept", r)
				}
			}
		}
	})
}

func FuzzSplitCommand(f *testing.F) {
	f.Add([]byte{ppk2.CmdRegulator, 0x13, 0x88, ppk2.CmdAverageStart})
	f.Add([]byte{0x42})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			cmd, rest, ok, err := ppk2.SplitCommand(b)
			if err != nil {
				if !errors.Is(err, meter.ErrMalformed) {
					t.Fatal(err)
				}
				return
			}
			if !ok {
				return
			}
			if len(cmd)+len(rest) != len(b) || cmd[0] != b[0] {
				t.Fatalf("% x split into % x and % x", b, cmd, rest)
			}
			b = rest
		}
	})
}
