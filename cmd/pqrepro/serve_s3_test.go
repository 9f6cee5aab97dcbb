package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"pqrepro/portal"
	"pqrepro/portal/blob/s3test"
	"pqrepro/portal/portaltest"
)

// TestServeWithS3Blobs configures serve as an operator would (PQREPRO_BLOBS and the key pair
// in the environment), opens the portal on that configuration against a real S3 server
// (versitygw), publishes a bundle and reads it back: the bundle lives in the bucket, not in
// the data folder.
func TestServeWithS3Blobs(t *testing.T) {
	srv := s3test.Start(t)
	b := srv.Bucket(t)
	t.Setenv("PQREPRO_BLOBS", b.URL())
	t.Setenv("PQREPRO_S3_ACCESS_KEY", b.AccessKey)
	t.Setenv("PQREPRO_S3_SECRET_KEY", b.SecretKey)
	cfg, _, err := serveConfig([]string{"--no-local-runner"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Blobs != b.URL() || cfg.S3Credentials.AccessKey != b.AccessKey {
		t.Fatalf("blobs %q, access key %q from the environment", cfg.Blobs, cfg.S3Credentials.AccessKey)
	}
	if loc := cfg.BlobsLocation(); strings.Contains(loc, b.SecretKey) || !strings.HasPrefix(loc, "s3://"+b.Name+"/portal") {
		t.Errorf("blobs location %q", loc)
	}
	p := portaltest.Start(t, func(c *portal.Config) { c.Blobs, c.S3Credentials = cfg.Blobs, cfg.S3Credentials })
	tok, err := p.Server.CreateAccount(context.Background(), "lab member", "submitter")
	if err != nil {
		t.Fatal(err)
	}
	bundle, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	code, out, errOut := pq(t, "submit", bundle, "--portal", p.URL, "--token", tok, "--register-keys", "--keys", keys)
	m := regexp.MustCompile(`published as run (\d+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	resp, err := http.Get(fmt.Sprintf("%s/runs/%s/bundle.tar.gz", p.URL, m[1]))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want, _ := os.ReadFile(bundle)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Fatalf("bundle download: %s, %d bytes, want the %d submitted", resp.Status, len(got), len(want))
	}
	// versitygw keeps each object as a file under ROOT/BUCKET/KEY.
	inBucket, _ := filepath.Glob(filepath.Join(srv.Root, b.Name, "portal", "sha256", "*", "*"))
	if len(inBucket) != 1 {
		t.Errorf("blobs in the bucket: %v, want the one bundle", inBucket)
	}
	local, _ := filepath.Glob(filepath.Join(p.Config.DataDir, "blobs", "sha256", "*", "*"))
	if len(local) != 0 {
		t.Errorf("blobs in the data folder although the bucket is configured: %v", local)
	}
}

func TestServeConfigBlobs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--blobs", "s3://bucket?endpoint=127.0.0.1:7070&tls=maybe"}, nil, "parameter tls"},
		{[]string{"--blobs", "/srv/blobs"}, nil, "blobs: want s3://"},
		{[]string{"--blobs", "s3://bucket?endpoint=127.0.0.1:7070&tls=false"}, map[string]string{"PQREPRO_S3_ACCESS_KEY": "only-half"}, "PQREPRO_S3_SECRET_KEY"},
		{nil, map[string]string{"PQREPRO_BLOBS": "s3://bucket?colour=blue"}, `unknown parameter "colour"`},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		_, _, err := serveConfig(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want an error naming %q", tc.args, tc.env, err, tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}
