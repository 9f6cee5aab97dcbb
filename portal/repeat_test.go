package portal_test

import (
	"html"
	"regexp"
	"strings"
	"testing"
)

var (
	// repeatScripts are what holds no reader's text.
	repeatScripts = regexp.MustCompile(`(?s)<script.*?</script>|<style.*?</style>|<svg.*?</svg>|<pre.*?</pre>`)
	// repeatBreaks end a piece of text a reader reads as one: a cell, a list item, a paragraph.
	repeatBreaks = regexp.MustCompile(`(?i)</?(td|th|tr|li|p|h[1-6]|div|option|dt|dd|label|legend|button|table|ul|ol|section|nav|header|footer|a)\b[^>]*>`)
	repeatTags   = regexp.MustCompile(`<[^>]*>`)
	repeatWord   = regexp.MustCompile(`^[A-Za-z][A-Za-z-]*$`)
)

// repeatedWord returns the first word a page shows twice in a row within one cell, list item
// or paragraph (such as a board's name followed by a badge with the same word), with the
// words around it; "" when there is none. Numbers may repeat.
func repeatedWord(page string) string {
	page = repeatScripts.ReplaceAllString(page, " ")
	for _, piece := range repeatBreaks.Split(page, -1) {
		w := strings.Fields(html.UnescapeString(repeatTags.ReplaceAllString(piece, " ")))
		for i := 1; i < len(w); i++ {
			if w[i] == w[i-1] && repeatWord.MatchString(w[i]) {
				return strings.Join(w[max(0, i-4):min(len(w), i+3)], " ")
			}
		}
	}
	return ""
}

// levelTwice returns where a page shows an assurance level's word twice in a row across any
// element (a board column "host" beside a badge column "host"); "" when it does not.
func levelTwice(page string) string {
	page = repeatScripts.ReplaceAllString(page, " ")
	w := strings.Fields(html.UnescapeString(repeatTags.ReplaceAllString(page, " ")))
	for i := 1; i < len(w); i++ {
		if w[i] == w[i-1] && (w[i] == "host" || w[i] == "emulated" || w[i] == "hardware") {
			return strings.Join(w[max(0, i-4):min(len(w), i+3)], " ")
		}
	}
	return ""
}

func TestRepeatedWord(t *testing.T) {
	for _, tc := range []struct{ page, want string }{
		{`<p>Run #1 on host <span class="badge level-host">host</span> <span class="badge">community</span></p>`, "Run #1 on host host community"},
		{`<td>host</td><td><span class="badge">community</span></td>`, ""},
		{`<td>host</td><td>host</td>`, ""},
		{`<p>median 12 12 µs</p>`, ""},
		{`<li>the the</li>`, "the the"},
	} {
		if got := repeatedWord(tc.page); got != tc.want {
			t.Errorf("repeatedWord(%q) = %q, want %q", tc.page, got, tc.want)
		}
	}
	if got := levelTwice(`<td>host</td><td><span class="badge">host</span></td>`); got != "host host" {
		t.Errorf("levelTwice across cells = %q", got)
	}
}
