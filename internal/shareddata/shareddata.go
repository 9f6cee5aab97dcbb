// Package shareddata finds the shared reference data and test vectors that sit next to the
// repository (../shared from its root) for tests. A worktree may sit deeper than the main
// checkout, so every ancestor of the working directory is tried in turn.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the path of shared/<rel...> found beside the working directory or one of its
// ancestors, or skips the test naming what is missing.
func Dir(t testing.TB, rel ...string) string {
	t.Helper()
	if d, ok := Find(rel...); ok {
		return d
	}
	t.Skipf("shared/%s not found beside the repository or any parent", filepath.Join(rel...))
	return ""
}

// Find returns the path of shared/<rel...> beside the working directory or one of its
// ancestors, and whether it exists.
func Find(rel ...string) (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(append([]string{d, "shared"}, rel...)...)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}
