package artifacts

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is a character a name must not carry because a reader cannot see
// it or it changes how the text around it reads: control characters, format characters (the
// bidirectional overrides and isolates such as U+202E, zero-width spaces and joiners, the byte
// order mark), line and paragraph separators, private-use and surrogate code points, and every
// space other than U+0020.
func Hidden(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r == utf8.RuneError, unicode.IsSpace(r):
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp)
}

// CheckName checks a name people will read (a runner's, a board's, an account's, a key's
// label): valid UTF-8, at most max bytes, not blank, and no Hidden character. what names the
// field in the error.
func CheckName(what, name string, max int) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("%s is empty", what)
	case len(name) > max:
		return fmt.Errorf("%s is %d bytes, at most %d", what, len(name), max)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for i, r := range name {
		if Hidden(r) {
			return fmt.Errorf("%s has the invisible or direction-changing character U+%04X at byte %d: names must read as they are", what, r, i)
		}
	}
	return nil
}
