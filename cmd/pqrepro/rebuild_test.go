package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRebuildCommand: pqrepro rebuild opens a portal's data directory, re-derives what is
// older than this build's report version, and says how many runs it rebuilt.
func TestRebuildCommand(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"rebuild", "--data", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "rebuilt 0 run(s) to report version") {
		t.Errorf("output %q", out.String())
	}
	if code := run(context.Background(), []string{"rebuild", "--data", dir, "extra"}, &out, &errb); code != 2 {
		t.Errorf("an unexpected argument: exit %d, want 2", code)
	}
}
