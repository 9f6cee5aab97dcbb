package portal

import "testing"

// TestSafeNext: only a path on this site survives; what a browser would read as another site
// (a tab or newline it drops, a backslash it reads as "/", a scheme, "//") becomes "/".
func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"/runs/3":                  "/runs/3",
		"/compare?a=1&b=2#x":       "/compare?a=1&b=2#x",
		"/%09/evil.example":        "/%09/evil.example", // still encoded: a path here
		"/\t/evil.example":         "/",                 // what the form decodes %09 to
		"/\n/evil.example":         "/",
		"/\r/evil.example":         "/",
		"/ /evil.example":          "/",
		"//evil.example":           "/",
		"/\\evil.example":          "/",
		"\\\\evil.example":         "/",
		"https://evil.example/":    "/",
		"javascript:alert(1)":      "/",
		"/%2F/evil.example":        "/",
		"":                         "/",
		"/\u2028/evil.example":     "/",
		"/\x7f/evil.example":       "/",
		"/admin?next=//evil.x":     "/admin?next=//evil.x",
		"/\u3000/evil.example":     "/",
		"/\ufeff//evil.example":    "/",
		"/\u0000/evil.example":     "/",
		"/\x1b/evil.example":       "/",
		"/..//evil.example":        "/..//evil.example", // a path on this site, however odd
		"/%5C%5Cevil.example/path": "/%5C%5Cevil.example/path",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}
