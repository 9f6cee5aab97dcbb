package logtext

import (
	"strings"
	"testing"
)

// FuzzHuman: any log (a runner's or a stranger's) reads without a panic; the reading holds no
// raw frame, and a log without a line from or to a board is left as it is.
func FuzzHuman(f *testing.F) {
	for _, name := range logs {
		raw := readLog(f, name)
		f.Add(raw[:min(len(raw), 4<<10)])
	}
	f.Add("> @3:BENCH:alg=X op=y*0a1b2c3d\n< @4:SAMPLE:v=1*00000000")
	f.Add("plain\nlines")
	f.Add("identify: < @0:HELLO:*00000000\n< ~alive\n")
	f.Fuzz(func(t *testing.T, raw string) {
		h, framed := Human(raw)
		if !framed {
			if h != raw {
				t.Fatalf("unframed log changed: %q → %q", raw, h)
			}
			return
		}
		for _, l := range strings.Split(h, "\n") {
			if Parse(l).Kind == Frame {
				t.Fatalf("raw frame %q in the reading of %q", l, raw)
			}
		}
	})
}

// FuzzBound: a bounded log is at most its head, its tail, the allowance for summary lines
// and the markers; it begins with a prefix and ends with a suffix of the log; a log that
// fits is unchanged.
func FuzzBound(f *testing.F) {
	raw := readLog(f, "host-link-trouble.log")
	f.Add(raw[:8<<10], 500, 1000, 700)
	f.Add("cell a\ncell b\nx\n", 1, 1, 1)
	f.Add("é\nß\ncell ü\n", 2, 100, 2)
	f.Fuzz(func(t *testing.T, s string, head, summary, tail int) {
		if head < 0 || summary < 0 || tail < 0 || head > 1<<20 || summary > 1<<20 || tail > 1<<20 {
			return
		}
		out, omitted := Bound(s, head, summary, tail)
		if omitted == 0 {
			if out != s {
				t.Fatalf("nothing omitted but changed: %q → %q", s, out)
			}
			return
		}
		if len(out) > head+tail+summary+200 {
			t.Fatalf("bounded to %d bytes, want at most %d+%d+%d and markers", len(out), head, tail, summary)
		}
		h, tl := HeadCut(s, head), TailCut(s, tail)
		if !strings.HasPrefix(out, s[:h]) || !strings.HasSuffix(out, s[tl:]) || omitted != int64(tl-h) {
			t.Fatalf("head %d, tail %d, omitted %d of %q: %q", h, tl, omitted, s, out)
		}
	})
}
