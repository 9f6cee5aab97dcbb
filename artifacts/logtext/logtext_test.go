package logtext

import (
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden human readings under testdata")

// The logs under testdata were written by the runner, not by hand:
//
//   - qemu-mps2-an386-mlkem.log: `pqrepro run paper001/mlkem --board qemu-mps2-an386
//     --iterations 5` (the firmware from firmware/build, copied to /tmp/fw), its bundle's log.txt;
//   - host-link-trouble.log: `go test ./runner -run TestLogTextFollowsTheLink -capture-log
//     FILE`, six cells on the host firmware over a line that damages and drops frames.
var logs = []string{"qemu-mps2-an386-mlkem.log", "host-link-trouble.log"}

func readLog(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		line     string
		kind     Kind
		dir      byte
		identify bool
		typ      string
	}{
		{"> @1:HELLO:*4ae130f7", Frame, '>', false, "HELLO"},
		{"identify: > @1:HELLO:*4ae130f7", Frame, '>', true, "HELLO"},
		{"< @105:SEED:re=16 len=32*67b9bfc9", Frame, '<', false, "SEED"},
		{"< noise before @105:SEED:re=16 len=32*67b9bfc9", Frame, '<', false, "SEED"},
		{"< @105:SEEd:re=16 len=32*67b9bfc9", Damaged, '<', false, ""},
		{"< @105:SEED:re=16 len=32*67b9bfc", Damaged, '<', false, ""},
		{"< @105:SEED:re=16 len=32", Damaged, '<', false, ""},
		{"< ~alive", KeepAlive, '<', false, ""},
		{"< pqrepro-fw 0.1.0 ready", BoardText, '<', false, ""},
		{"identify: < pqrepro-fw 0.1.0 ready", BoardText, '<', true, ""},
		{"cell ML-KEM-512 keygen: ok n=3 in 28ms ", Summary, 0, false, ""},
		{"link: cell ML-KEM-512 keygen: 24 frames (0 duplicates), 3 corrupt", Summary, 0, false, ""},
		{"self-test: 255 vectors passed, 0 failed in 62 groups", Summary, 0, false, ""},
		{"budget: 9 cells of at most 1m0s each on qemu-mps2-an386", Summary, 0, false, ""},
		{"board: restarting it for the remaining cells (restart 1 of at most 3)", Summary, 0, false, ""},
		{"board says: qemu-mps2-an386 cortex-m4", Runner, 0, false, ""},
		{"identify: cell x", Runner, 0, true, ""},
		{"qemu: pid 17145 stopped: quit over QMP (exit status 0)", Runner, 0, false, ""},
		{"", Runner, 0, false, ""},
	} {
		l := Parse(c.line)
		if l.Kind != c.kind || l.Dir != c.dir || l.Identify != c.identify || l.Type != c.typ {
			t.Errorf("Parse(%q) = %+v, want kind %d dir %q identify %v type %q", c.line, l, c.kind, c.dir, c.identify, c.typ)
		}
	}
	l := Parse("< @119:SAMPLE:re=21 i=0 count=2086840 stack=6744 ok=1*50fe7bc4")
	if v, ok := l.Field("count"); !ok || v != "2086840" || l.Seq != 119 {
		t.Errorf("SAMPLE frame: %+v, count %q", l, v)
	}
}

// TestHumanReadsRealLogs: each runner-written log under testdata reads as its golden human
// lines; those hold no raw or damaged frame, every summary line and runner line of the raw
// log, and far fewer lines.
func TestHumanReadsRealLogs(t *testing.T) {
	for _, name := range logs {
		t.Run(name, func(t *testing.T) {
			raw := readLog(t, name)
			human, framed := Human(raw)
			if !framed {
				t.Fatal("read as a log without frames")
			}
			golden := filepath.Join("testdata", strings.TrimSuffix(name, ".log")+".human")
			if *update {
				if err := os.WriteFile(golden, []byte(human), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if human != string(want) {
				t.Errorf("human reading differs from %s (go test -update rewrites it):\n%s", golden, human)
			}
			hl := strings.Split(human, "\n")
			for _, l := range hl {
				if k := Parse(l).Kind; k == Frame || k == Damaged {
					t.Errorf("human reading keeps a raw line %q", l)
				}
			}
			frames := 0
			for _, l := range strings.Split(raw, "\n") {
				p := Parse(l)
				if p.Kind == Frame {
					frames++
				}
				if p.Dir == 0 && !strings.Contains(human, l) {
					t.Errorf("human reading lacks the runner's line %q", l)
				}
			}
			if frames < 100 || len(hl)*2 > strings.Count(raw, "\n") {
				t.Errorf("%d human lines for %d raw lines (%d frames)", len(hl), strings.Count(raw, "\n"), frames)
			}
		})
	}
}

// linkLine matches the counters the QEMU driver and the tests write at the end of a run.
var linkLine = regexp.MustCompile(`(?m)^link: (\d+) frames \((\d+) duplicates\), (\d+) corrupt, (\d+) gaps, (\d+) requests, (\d+) repeated, (\d+) RESEND, (\d+) board errors \(badframe/overflow\), (\d+) keep-alives$`)

// TestCountMatchesTheLinkCounters: what Count finds in a real log is what the link counted
// while it wrote it (its last "link:" line).
func TestCountMatchesTheLinkCounters(t *testing.T) {
	for _, name := range logs {
		raw := readLog(t, name)
		m := linkLine.FindAllStringSubmatch(raw, -1)
		if len(m) == 0 {
			t.Fatalf("%s: no link counters", name)
		}
		n := func(i int) int { v, _ := strconv.Atoi(m[len(m)-1][i]); return v }
		dups, corrupt, gaps, repeats, resends, boardErrs, keepAlives := n(2), n(3), n(4), n(6), n(7), n(8), n(9)
		got := Count(raw)
		want := Trouble{Resends: resends, Repeats: repeats, Again: gaps + dups, BoardErrors: boardErrs, Damaged: corrupt, KeepAlives: keepAlives}
		if got != want {
			t.Errorf("%s: counted %+v, the link counted %+v", name, got, want)
		}
		if name == "host-link-trouble.log" && (got.Resends == 0 || got.Damaged == 0 || got.BoardErrors == 0) {
			t.Errorf("%s: no trouble counted: %+v", name, got)
		}
	}
}

func TestHumanWithoutFrames(t *testing.T) {
	for _, raw := range []string{"", "host run\ncell ok", "pqrepro dev: paper001/mlkem on host\ncell ML-KEM-512 keygen: ok n=3\n"} {
		if h, framed := Human(raw); framed || h != raw {
			t.Errorf("Human(%q) = %q, %v; a log without frames stays as it is", raw, h, framed)
		}
	}
	// A run of one answer is shown; a run of several is counted; ERROR is never folded.
	raw := "> @3:BENCH:alg=X op=y*" + crc("3:BENCH:alg=X op=y") + "\n" +
		"< @7:SAMPLE:re=3 i=0*" + crc("7:SAMPLE:re=3 i=0") + "\n" +
		"< @8:ERROR:re=3 code=busy*" + crc("8:ERROR:re=3 code=busy") + "\n" +
		"< @9:ERROR:re=3 code=busy*" + crc("9:ERROR:re=3 code=busy") + "\n" +
		"< ~alive\n" +
		"cell X y: ok n=1\n"
	want := "→ BENCH alg=X op=y\n← SAMPLE re=3 i=0\n← ERROR re=3 code=busy\n← ERROR re=3 code=busy\nlink, in the frames above: 1 keep-alive\ncell X y: ok n=1\n"
	if h, _ := Human(raw); h != want {
		t.Errorf("Human:\n%s\nwant:\n%s", h, want)
	}
}

// TestBoundKeepsEverySummaryLine: a real log cut to a head and a tail keeps its head and tail
// at line ends and every summary line of the middle after the marker; a small summary
// allowance keeps the earliest and counts the rest; a log that fits is unchanged.
func TestBoundKeepsEverySummaryLine(t *testing.T) {
	for _, name := range logs {
		raw := readLog(t, name)
		var summaries []string
		for _, l := range strings.Split(raw, "\n") {
			if IsSummary(l) {
				summaries = append(summaries, l+"\n")
			}
		}
		if out, n := Bound(raw, len(raw), 0, 0); out != raw || n != 0 {
			t.Errorf("%s: a log that fits was changed", name)
		}
		for _, size := range []int{256, 1 << 10, 3 << 10} {
			out, omitted := Bound(raw, size, 1<<20, size)
			h, tl := HeadCut(raw, size), TailCut(raw, size)
			if !strings.HasPrefix(out, raw[:h]) || !strings.HasSuffix(out, raw[tl:]) || omitted != int64(tl-h) {
				t.Fatalf("%s/%d: head %d tail %d omitted %d", name, size, h, tl, omitted)
			}
			if raw[h-1] != '\n' || raw[tl-1] != '\n' {
				t.Errorf("%s/%d: not cut at line ends", name, size)
			}
			for _, l := range summaries {
				if !strings.Contains(out, l) {
					t.Errorf("%s/%d: lost %q", name, size, l)
				}
			}
			if !strings.Contains(out, "bytes dropped; the ") {
				t.Errorf("%s/%d: no marker", name, size)
			}
		}
		out, _ := Bound(raw, 256, len(summaries[0])+len(summaries[1]), 256)
		if !strings.Contains(out, summaries[0]+summaries[1]) || !strings.Contains(out, "more summary lines dropped") || len(out) > 2<<10 {
			t.Errorf("%s: a small summary allowance:\n%s", name, out)
		}
	}
}

func crc(body string) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(body))) }
