// Package logtext is the grammar of a run's log: the text a runner writes while it runs an
// experiment, kept in a bundle as log.txt and streamed to the portal while a job runs. It says
// which line is a protocol frame the runner wrote to a board or read from it, which line is
// one of the runner's per-cell summaries, and which is for people; and it gives the two
// readings of a log the portal shows: Human (frames condensed, the link's trouble counted)
// and Bound (a log cut to a size that keeps its head, every summary line and its tail).
//
// The lines a runner writes (runner/wire, runner/device and the board drivers):
//
//	> @<seq>:<TYPE>:<fields>*<crc32>   a frame written to the board (firmware/PROTOCOL.md)
//	< <line>                           a line read from the board: a frame, a damaged frame,
//	                                   the keep-alive "~alive" or the board's own text
//	identify: <line>                   any line said while the board was identified
//	cell <alg> <op>...: <status> ...   a cell's outcome                 ┐
//	link: ...                          the line's counters              │ summary lines: a
//	self-test: ...                     the board's known-answer tests   │ bounded log keeps
//	budget: ...                        a budgeted run's plan            │ every one of them
//	board: ...                         a board restarted mid-run        ┘
//	anything else                      the runner's own text
//
// The package imports only the standard library, so the runner and the portal both use it.
package logtext

import (
	"strings"
)

// Kind says what a log line is.
type Kind uint8

const (
	// Runner is the runner's own text (a header, a driver's note).
	Runner Kind = iota
	// Summary is one of the runner's per-cell summary lines (SummaryPrefixes).
	Summary
	// Frame is a valid protocol frame written to the board or read from it.
	Frame
	// Damaged is a line read from the board that holds '@' but is no valid frame: a frame
	// corrupted or cut on the line (the link counts it as corrupt).
	Damaged
	// KeepAlive is the board's keep-alive line (it starts "~alive").
	KeepAlive
	// BoardText is any other line on the wire: the board's boot banner, a fault report, noise.
	BoardText
)

// SummaryPrefixes start the runner's per-cell summary lines.
var SummaryPrefixes = []string{"cell ", "link: ", "self-test: ", "budget: ", "board: "}

// Prefixes of the lines on the wire, and of what was said while the board was identified.
const (
	ReadPrefix     = "< "
	WritePrefix    = "> "
	IdentifyPrefix = "identify: "
	// KeepAliveLine is what a busy board may send instead of a frame (firmware/PROTOCOL.md).
	KeepAliveLine = "~alive"
)

// Line is one classified log line.
type Line struct {
	Kind Kind
	// Identify is true when the line carried IdentifyPrefix.
	Identify bool
	// Dir is '<' for a line read from the board, '>' for one written to it, 0 otherwise.
	Dir byte
	// Text is the line without its prefixes ("identify: ", "< ", "> ").
	Text string
	// Seq, Type and Fields are a Frame's sequence number, type and payload ("k=v k=v").
	Seq    uint32
	Type   string
	Fields string
}

// Parse classifies one line (without its newline).
func Parse(line string) Line {
	var l Line
	if rest, ok := strings.CutPrefix(line, IdentifyPrefix); ok {
		l.Identify, line = true, rest
	}
	switch {
	case strings.HasPrefix(line, ReadPrefix):
		l.Dir = '<'
	case strings.HasPrefix(line, WritePrefix):
		l.Dir = '>'
	default:
		l.Text = line
		if !l.Identify && isSummary(line) {
			l.Kind = Summary
		}
		return l
	}
	l.Text = line[2:]
	if l.Dir == '<' && strings.HasPrefix(l.Text, KeepAliveLine) {
		// As the link reads it: a line that starts as a keep-alive is one, whatever follows.
		l.Kind = KeepAlive
		return l
	}
	seq, typ, fields, err := SplitFrame(l.Text)
	switch {
	case err == nil:
		l.Kind, l.Seq, l.Type, l.Fields = Frame, seq, typ, fields
	case l.Dir == '<' && err != ErrNoFrame:
		l.Kind = Damaged
	default:
		l.Kind = BoardText
	}
	return l
}

// IsSummary reports whether line (without its newline) is a per-cell summary line.
func IsSummary(line string) bool { return Parse(line).Kind == Summary }

func isSummary(line string) bool {
	for _, p := range SummaryPrefixes {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// Field returns the value of the first field key of a frame's payload.
func (l Line) Field(key string) (string, bool) {
	for _, kv := range strings.Split(l.Fields, " ") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
