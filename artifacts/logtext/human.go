package logtext

import (
	"fmt"
	"strings"
)

// Human turns a log into the lines a person reads. The runner's lines stay as they are. A
// request reads "→ TYPE fields" and an answer "← TYPE fields", without sequence numbers and
// checksums; a run of answers of one type (SAMPLE, RESULT, HANDSHAKE...) is one line
// "← N TYPE frames"; the board's own text reads "← text". What the link did to recover lost
// or damaged lines (RESEND requests, requests sent again, answers the board sent again, its
// ERROR badframe/overflow, damaged lines, keep-alives) is not shown line by line but counted,
// in one "link, in the frames above: ..." line before the next line of the runner. Lines said while the board was
// identified keep their "identify: " prefix. framed is false when the log holds no frame and
// no line from the board (a host run's log, already human); human is then raw itself.
func Human(raw string) (human string, framed bool) {
	if raw == "" {
		return "", false
	}
	var h humanizer
	lines := strings.Split(raw, "\n")
	for i, line := range lines {
		if i == len(lines)-1 && line == "" {
			break // the newline that ends the log
		}
		h.add(Parse(line))
	}
	h.flush()
	if !h.framed {
		return raw, false
	}
	out := strings.Join(h.out, "\n")
	if strings.HasSuffix(raw, "\n") {
		out += "\n"
	}
	return out, true
}

// Trouble counts what the link did to recover lost or damaged lines, as the log shows it.
type Trouble struct {
	Resends     int // RESEND requests written
	Repeats     int // requests written again with the sequence number of the one before
	Again       int // frames read again (a sequence number the board had already sent)
	BoardErrors int // ERROR code=badframe or code=overflow read from the board
	Damaged     int // damaged lines read (a frame corrupted or cut on the line)
	KeepAlives  int // keep-alive lines read
}

// Any reports whether anything was counted.
func (t Trouble) Any() bool { return t != Trouble{} }

// String is the counts as words, the zero ones left out.
func (t Trouble) String() string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(t.Resends, "RESEND", "RESEND")
	add(t.Repeats, "request sent again", "requests sent again")
	add(t.Again, "frame received again", "frames received again")
	add(t.BoardErrors, "ERROR badframe/overflow from the board", "ERROR badframe/overflow from the board")
	add(t.Damaged, "damaged line", "damaged lines")
	add(t.KeepAlives, "keep-alive", "keep-alives")
	return strings.Join(parts, ", ")
}

// Count is the link's Trouble over a whole log.
func Count(raw string) Trouble {
	var h humanizer
	for _, line := range strings.Split(raw, "\n") {
		h.add(Parse(line))
	}
	return h.total
}

// humanizer keeps the state of Human across lines: the run of answers being counted, the
// trouble since the runner's last line, and what a session (one conversation, from the
// runner's first request on) has seen so far.
type humanizer struct {
	out    []string
	framed bool

	runType     string // the type of the run of answers being counted
	runN        int
	runIdentify bool

	trouble, total Trouble
	troubleID      bool // the trouble was counted while identifying

	seen     map[uint32]bool // sequence numbers the board sent in this session
	lastReq  uint32
	anyReq   bool
	identify bool // the current session is the identification's
}

func (h *humanizer) emit(identify bool, s string) {
	if identify {
		s = IdentifyPrefix + s
	}
	h.out = append(h.out, s)
}

func (h *humanizer) flush() {
	h.endRun()
	if h.trouble.Any() {
		h.emit(h.troubleID, "link, in the frames above: "+h.trouble.String())
		h.trouble = Trouble{}
	}
}

func (h *humanizer) count(l Line, f func(*Trouble)) {
	if !h.trouble.Any() {
		h.troubleID = l.Identify
	}
	f(&h.trouble)
	f(&h.total)
}

func (h *humanizer) add(l Line) {
	if l.Dir == 0 {
		h.flush()
		h.emit(l.Identify, l.Text)
		return
	}
	h.framed = true
	if l.Identify != h.identify {
		// The identification and the run are separate conversations.
		h.identify, h.seen, h.anyReq = l.Identify, nil, false
	}
	switch l.Kind {
	case Frame:
		if l.Dir == '>' {
			h.request(l)
		} else {
			h.answer(l)
		}
	case Damaged:
		h.count(l, func(t *Trouble) { t.Damaged++ })
	case KeepAlive:
		h.count(l, func(t *Trouble) { t.KeepAlives++ })
	default:
		h.endRun()
		arrow := "← "
		if l.Dir == '>' {
			arrow = "→ "
		}
		h.emit(l.Identify, strings.TrimRight(arrow+l.Text, " "))
	}
}

func (h *humanizer) request(l Line) {
	switch {
	case l.Type == "RESEND":
		h.count(l, func(t *Trouble) { t.Resends++ })
		return
	case l.Seq == 1 || !h.anyReq || l.Seq < h.lastReq:
		// A runner numbers its requests from 1 in every conversation: a new one begins (a new
		// emulator, a reset board), and what the board sent before no longer counts.
		h.seen = nil
	case l.Seq == h.lastReq:
		h.count(l, func(t *Trouble) { t.Repeats++ })
		return
	}
	h.lastReq, h.anyReq = l.Seq, true
	h.endRun()
	h.emit(l.Identify, strings.TrimRight("→ "+l.Type+" "+l.Fields, " "))
}

func (h *humanizer) answer(l Line) {
	if h.seen[l.Seq] {
		h.count(l, func(t *Trouble) { t.Again++ })
		return
	}
	if h.seen == nil {
		h.seen = map[uint32]bool{}
	}
	h.seen[l.Seq] = true
	if l.Type == "ERROR" {
		if code, _ := l.Field("code"); code == "badframe" || code == "overflow" {
			h.count(l, func(t *Trouble) { t.BoardErrors++ })
			return
		}
		h.endRun()
		h.emit(l.Identify, strings.TrimRight("← "+l.Type+" "+l.Fields, " "))
		return
	}
	if h.runN > 0 && h.runType == l.Type && h.runIdentify == l.Identify {
		if h.runN == 1 {
			h.out = h.out[:len(h.out)-1] // the first of the run, shown alone so far
		}
		h.runN++
		return
	}
	h.endRun()
	h.runType, h.runN, h.runIdentify = l.Type, 1, l.Identify
	h.emit(l.Identify, strings.TrimRight("← "+l.Type+" "+l.Fields, " "))
}

// endRun closes the run of answers being counted (not the trouble: that waits for the
// runner's next line). A run of one stays shown as the frame it was.
func (h *humanizer) endRun() {
	if h.runN > 1 {
		h.emit(h.runIdentify, fmt.Sprintf("← %d %s frames", h.runN, h.runType))
	}
	h.runType, h.runN = "", 0
}
