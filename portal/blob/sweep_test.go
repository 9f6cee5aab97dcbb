package blob

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFSSweepTemporaries: what a killed upload left in tmp/ is removed once older than the
// cutoff; a temporary of an upload that may still be in progress stays.
func TestFSSweepTemporaries(t *testing.T) {
	s, err := OpenFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(s.Dir, "tmp", "put-killed")
	fresh := filepath.Join(s.Dir, "tmp", "put-in-progress")
	for _, f := range []string{old, fresh} {
		if err := os.WriteFile(f, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ago := time.Now().Add(-10 * time.Minute)
	os.Chtimes(old, ago, ago)
	n, err := s.SweepTemporaries(context.Background(), time.Now().Add(-5*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("sweep removed %d (%v), want 1", n, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Error("the old temporary is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("the fresh temporary was removed: %v", err)
	}
}
