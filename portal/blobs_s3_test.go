package portal_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/portal"
	"pqrepro/portal/blob"
	"pqrepro/portal/blob/s3test"
	"pqrepro/portal/database"
)

// TestFreshDatabaseBesideAFullBucketIsRefused: the folder check (a missing portal.db beside
// stored blobs) holds for a bucket too, and --init still starts fresh; a missing bucket is an
// error that says so before anything is served.
func TestFreshDatabaseBesideAFullBucketIsRefused(t *testing.T) {
	srv := s3test.Start(t)
	b := srv.Bucket(t)
	// A blob of an earlier database: versitygw serves files placed in its folder as objects.
	h := strings.Repeat("ab", 32)
	p := filepath.Join(srv.Root, b.Name, "portal", "sha256", h[:2], h)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("old bundle"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cfg := portal.DefaultConfig()
	cfg.DataDir, cfg.LocalRunner = t.TempDir(), false
	cfg.Blobs, cfg.S3Credentials = b.URL(), blob.S3Credentials{AccessKey: b.AccessKey, SecretKey: b.SecretKey}
	_, err := database.OpenPortal(context.Background(), cfg, log)
	if err == nil || !strings.Contains(err.Error(), "--init") || !strings.Contains(err.Error(), "s3://"+b.Name) {
		t.Fatalf("fresh database beside a full bucket: %v", err)
	}
	cfg.Init = true
	s, err := database.OpenPortal(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("with --init: %v", err)
	}
	s.Close()

	cfg.Blobs = strings.Replace(b.URL(), b.Name, "absent-bucket", 1)
	if _, err := database.OpenPortal(context.Background(), cfg, log); err == nil || !strings.Contains(err.Error(), `bucket "absent-bucket" does not exist`) {
		t.Fatalf("missing bucket: %v", err)
	}
}
