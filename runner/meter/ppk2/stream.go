package ppk2

import (
	"fmt"

	"pqrepro/runner/meter"
)

// lookahead is how many bytes after a word that does not check out the stream waits for
// before saying why: four more words.
const lookahead = 4 * WordSize

// Stream decodes the sample stream: whole words across reads, each word's counter checked
// against the one before. The words carry no checksum, so a garbled word is seen only when the
// garbling hits its counter or range bits; a garbled ADC or logic bit is not.
type Stream struct {
	buf    []byte
	expect int   // the next word's counter, -1 before the first word
	n      int64 // words accepted
	err    error
}

// NewStream returns a stream expecting its first word.
func NewStream() *Stream { return &Stream{expect: -1} }

// Words is the number of words accepted so far.
func (s *Stream) Words() int64 { return s.n }

// Feed takes the next bytes read and appends to out the words they complete, in order. At the
// first word that does not check out, once four more words follow it, it returns the words
// before it and an error naming the word and why:
//
//   - meter.ErrMalformed for a garbled word: the two words after it resume the counter;
//   - meter.ErrLost for lost words: the counter continues from the word's (the number lost is
//     known modulo 64);
//   - meter.ErrLost for lost bytes: the words line up again one to three bytes on;
//   - meter.ErrMalformed when none of these holds.
//
// The error is returned again by every later Feed.
func (s *Stream) Feed(b []byte, out []Word) ([]Word, error) {
	if s.err != nil {
		return out, s.err
	}
	s.buf = append(s.buf, b...)
	i := 0
	for len(s.buf)-i >= WordSize {
		w, err := DecodeWord(s.buf[i:])
		if err == nil && (s.expect < 0 || int(w.Counter) == s.expect) {
			out = append(out, w)
			s.expect = int(w.Counter+1) & counterMask
			s.n++
			i += WordSize
			continue
		}
		if len(s.buf)-i < WordSize+lookahead {
			break
		}
		s.err = s.classify(s.buf[i:i+WordSize+lookahead], w, err)
		break
	}
	s.buf = append(s.buf[:0], s.buf[i:]...)
	return out, s.err
}

// classify says why the word at b[0:4] does not check out, from the words after it.
func (s *Stream) classify(b []byte, w Word, werr error) error {
	at := s.n
	what := fmt.Sprintf("counter %d, expected %d", w.Counter, s.expect)
	if werr != nil {
		what = werr.Error()
	}
	if s.expect >= 0 && runs(b[WordSize:], s.expect+1, 2) {
		return fmt.Errorf("%w: word %d: %s; the words after it resume the counter: a garbled word", meter.ErrMalformed, at, what)
	}
	if werr == nil && runs(b[WordSize:], int(w.Counter)+1, 2) {
		lost := (int(w.Counter) - s.expect) & counterMask
		return fmt.Errorf("%w: word %d: %s, and the counter continues from it: %d words lost (modulo 64)", meter.ErrLost, at, what, lost)
	}
	for shift := 1; shift < WordSize; shift++ {
		if first, err := DecodeWord(b[shift:]); err == nil && runs(b[shift:], int(first.Counter), 3) {
			return fmt.Errorf("%w: word %d: %s; the words line up again %d bytes on: bytes lost", meter.ErrLost, at, what, shift)
		}
	}
	return fmt.Errorf("%w: word %d: %s, and the words after it do not line up", meter.ErrMalformed, at, what)
}

// runs reports whether b starts with n words whose counters are c, c+1, ... (mod 64).
func runs(b []byte, c, n int) bool {
	for k := range n {
		if len(b) < (k+1)*WordSize {
			return false
		}
		w, err := DecodeWord(b[k*WordSize:])
		if err != nil || int(w.Counter) != (c+k)&counterMask {
			return false
		}
	}
	return true
}
