package logtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// lineSlack is how far back (or forward) a cut looks for a line end before it settles for a
// UTF-8 boundary inside a line.
const lineSlack = 4 << 10

// Marker is the line that stands where n bytes of a log were left out, kept of them the
// summary lines that follow it (none when kept is 0). It begins with a newline when the text
// before it does not end in one (atLineStart false).
func Marker(n int64, kept int, atLineStart bool) string {
	lead := "\n"
	if atLineStart {
		lead = ""
	}
	switch kept {
	case 0:
		return fmt.Sprintf("%s… %d bytes dropped …\n", lead, n)
	case 1:
		return fmt.Sprintf("%s… %d bytes dropped; the summary line among them follows …\n", lead, n)
	}
	return fmt.Sprintf("%s… %d bytes dropped; the %d summary lines among them follow …\n", lead, n, kept)
}

// MoreMarker is the line after kept summary lines when n more did not fit.
func MoreMarker(n int) string {
	return fmt.Sprintf("… %d more summary lines dropped …\n", n)
}

// HeadCut returns where a head of at most n bytes of s ends: just after the last newline in
// s[:n] when one is within the last few KiB, else the largest UTF-8 boundary ≤ n.
func HeadCut(s string, n int) int {
	n = min(max(n, 0), len(s))
	if n == len(s) {
		return n
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= 0 && n-(i+1) <= lineSlack {
		return i + 1
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// TailCut returns where a tail of at most n bytes of s begins: at the start of the first line
// that begins in s[len(s)-n:] when one does within the first few KiB, else the smallest UTF-8
// boundary ≥ len(s)-n. A tail that is all of s begins at 0.
func TailCut(s string, n int) int {
	start := len(s) - min(max(n, 0), len(s))
	if start == 0 || s[start-1] == '\n' {
		return start
	}
	if i := strings.IndexByte(s[start:], '\n'); i >= 0 && i < lineSlack && start+i+1 <= len(s) {
		return start + i + 1
	}
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return start
}

// Summaries returns the summary lines (newline included) of s that are whole lines in it: a
// first line is whole only when atLineStart, and the last only when it ends in a newline.
// Each comes with its offset in s.
func Summaries(s string, atLineStart bool) (lines []string, offsets []int) {
	pos := 0
	for pos < len(s) {
		nl := strings.IndexByte(s[pos:], '\n')
		if nl < 0 {
			break
		}
		line := s[pos : pos+nl]
		if (pos > 0 || atLineStart) && IsSummary(line) {
			lines, offsets = append(lines, line+"\n"), append(offsets, pos)
		}
		pos += nl + 1
	}
	return lines, offsets
}

// KeepSummaries joins summary lines up to max bytes (the earliest first) and says how many
// were kept; a MoreMarker follows them when some did not fit.
func KeepSummaries(lines []string, max int) (text string, kept int) {
	var b strings.Builder
	for _, l := range lines {
		if b.Len()+len(l) > max {
			break
		}
		b.WriteString(l)
		kept++
	}
	if kept < len(lines) {
		b.WriteString(MoreMarker(len(lines) - kept))
	}
	return b.String(), kept
}

// Bound returns s when it is at most head+tail bytes. Else it returns the first head bytes
// of s and its last tail bytes (each cut at a line end where one is near, see HeadCut and
// TailCut), and between them a Marker followed by every summary line of the part left out,
// the earliest first up to summary bytes of them. omitted counts the bytes of s in neither
// the head nor the tail (the summary lines shown among them included).
func Bound(s string, head, summary, tail int) (out string, omitted int64) {
	if len(s) <= head+tail {
		return s, 0
	}
	h := HeadCut(s, head)
	t := max(TailCut(s, tail), h)
	if t == h {
		return s, 0
	}
	lines, _ := Summaries(s[h:t], h == 0 || s[h-1] == '\n')
	kept, n := KeepSummaries(lines, summary)
	omitted = int64(t - h)
	return s[:h] + Marker(omitted, n, h == 0 || s[h-1] == '\n') + kept + s[t:], omitted
}
