package portal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/portal/portaltest"
)

// TestTemporariesSweptWhileServing: the temporary an upload killed mid-way left in the blob
// folder is removed by the running portal's sweep (every minute) once older than any upload
// can be (read + write timeout + a minute), not only at the next start; a recent one stays.
func TestTemporariesSweptWhileServing(t *testing.T) {
	p := portaltest.Start(t, nil)
	tmp := filepath.Join(p.Config.DataDir, "blobs", "tmp")
	old, fresh := filepath.Join(tmp, "put-killed"), filepath.Join(tmp, "put-recent")
	for _, f := range []string{old, fresh} {
		if err := os.WriteFile(f, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	age := p.Config.ReadTimeout + p.Config.WriteTimeout + time.Minute
	ago := time.Now().Add(-age - time.Minute)
	os.Chtimes(old, ago, ago)
	if n := p.Server.SweepTemporaries(context.Background()); n != 1 {
		t.Fatalf("swept %d temporaries, want 1", n)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Error("the abandoned temporary is still there")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a recent temporary (an upload that may be in progress) was removed: %v", err)
	}
}
