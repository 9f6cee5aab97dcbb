package artifacts

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for name, wantErr := range map[string]string{
		"lab runner 1":            "",
		"Pico W (bench 2)":        "",
		"Łódź lab — ML-KEM":       "",
		"日本の研究室":                  "",
		"":                        "empty",
		"   ":                     "empty",
		"evil\u202Egnp.exe":       "U+202E",
		"a\u200Bb":                "U+200B",
		"a\u200Db":                "U+200D",
		"\uFEFFbom":               "U+FEFF",
		"tab\there":               "U+0009",
		"line\nbreak":             "U+000A",
		"nb\u00A0space":           "U+00A0",
		"sep\u2028line":           "U+2028",
		"iso\u2066late\u2069":     "U+2066",
		"priv\uE000ate":           "U+E000",
		"bad\xffutf8":             "UTF-8",
		strings.Repeat("x", 101):  "at most 100",
		"ctrl\x1b[31mred":         "U+001B",
		"mongolian\u180Evowel":    "U+180E",
		"word\u2060joiner":        "U+2060",
		"soft\u00ADhyphen":        "U+00AD",
		"interlinear\uFFF9anchor": "U+FFF9",
		"lrm\u200Emark":           "U+200E",
	} {
		err := CheckName("runner name", name, 100)
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("%q refused: %v", name, err)
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("%q: %v, want an error naming %q", name, err, wantErr)
		}
	}
}
