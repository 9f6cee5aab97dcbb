package blob

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"pqrepro/portal/blob/s3test"
)

func openS3Bucket(t testing.TB, srv *s3test.Server) *S3 {
	b := srv.Bucket(t)
	cfg, err := ParseS3URL(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccessKey, cfg.SecretKey = b.AccessKey, b.SecretKey
	s, err := OpenS3(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keys lists the keys under the store's prefix + sub.
func (s *S3) keys(t testing.TB, sub string) []string {
	var out []string
	for o := range s.client.ListObjects(context.Background(), s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.cfg.Prefix + sub, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("list %s: %v", sub, o.Err)
		}
		out = append(out, o.Key)
	}
	return out
}

// uploads lists the keys of incomplete multipart uploads under the store's tmp/.
func (s *S3) uploads(t testing.TB) []string {
	var out []string
	for up := range s.client.ListIncompleteUploads(context.Background(), s.cfg.Bucket, s.cfg.Prefix+"tmp/", true) {
		if up.Err != nil {
			t.Fatalf("list uploads: %v", up.Err)
		}
		out = append(out, "upload of "+up.Key)
	}
	return out
}

func TestSuiteS3(t *testing.T) {
	srv := s3test.Start(t)
	runSuite(t, func(t *testing.T) suiteStore {
		s := openS3Bucket(t, srv)
		return suiteStore{Store: s, Files: s,
			blobs: func() []string { return s.keys(t, "sha256/") },
			temps: func() []string { return append(s.keys(t, "tmp/"), s.uploads(t)...) }}
	})
	t.Run("sweep of temporaries", func(t *testing.T) {
		s := openS3Bucket(t, srv)
		ctx := context.Background()
		if _, err := s.client.PutObject(ctx, s.cfg.Bucket, s.cfg.Prefix+"tmp/put-abandoned", bytes.NewReader([]byte("x")), 1, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		// What a process killed in the middle of a long Put leaves: a multipart upload begun.
		core := minio.Core{Client: s.client}
		if _, err := core.NewMultipartUpload(ctx, s.cfg.Bucket, s.cfg.Prefix+"tmp/put-killed", minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
		if n, err := s.SweepTemporaries(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
			t.Fatalf("sweep with an hour's cutoff removed %d (%v), want 0: the uploads are recent", n, err)
		}
		if n, err := s.SweepTemporaries(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
			t.Fatalf("sweep removed %d (%v), want 2", n, err)
		}
		if got := s.keys(t, "tmp/"); len(got) != 0 {
			t.Errorf("left after the sweep: %v", got)
		}
		for up := range s.client.ListIncompleteUploads(ctx, s.cfg.Bucket, s.cfg.Prefix+"tmp/", true) {
			t.Errorf("upload left after the sweep: %+v", up)
		}
	})
	t.Run("two portals on one bucket", func(t *testing.T) {
		b := srv.Bucket(t)
		cfg, _ := ParseS3URL(b.URL())
		cfg.AccessKey, cfg.SecretKey = b.AccessKey, b.SecretKey
		ctx := context.Background()
		one, err := OpenS3(ctx, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		two, err := OpenS3(ctx, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		data := pattern(12345)
		d, _, err := one.Put(ctx, bytes.NewReader(data), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if got := readBlob(t, two, d); !bytes.Equal(got, data) {
			t.Fatalf("the other replica read %d bytes", len(got))
		}
		if err := two.WriteFile(ctx, "checkpoint", []byte("size 1")); err != nil {
			t.Fatal(err)
		}
		if err := one.WriteFile(ctx, "checkpoint", []byte("size 2")); err != nil {
			t.Fatal(err)
		}
		if got, err := two.ReadFile(ctx, "checkpoint"); err != nil || string(got) != "size 2" {
			t.Fatalf("the other replica read %q %v, want the newer checkpoint", got, err)
		}
	})
	t.Run("has blobs", func(t *testing.T) {
		s := openS3Bucket(t, srv)
		ctx := context.Background()
		if err := s.WriteFile(ctx, "checkpoint", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if has, err := s.HasBlobs(ctx); err != nil || has {
			t.Fatalf("empty store: HasBlobs %v %v", has, err)
		}
		if _, _, err := s.Put(ctx, strings.NewReader("x"), 10); err != nil {
			t.Fatal(err)
		}
		if has, err := s.HasBlobs(ctx); err != nil || !has {
			t.Fatalf("after a put: HasBlobs %v %v", has, err)
		}
	})
	t.Run("start checks", func(t *testing.T) {
		b := srv.Bucket(t)
		cfg, _ := ParseS3URL(b.URL())
		cfg.AccessKey, cfg.SecretKey = b.AccessKey, b.SecretKey
		for _, tc := range []struct {
			name string
			mod  func(*S3Config)
			want string
		}{
			{"missing bucket", func(c *S3Config) { c.Bucket = "no-such-bucket" }, `bucket "no-such-bucket" does not exist`},
			{"wrong secret", func(c *S3Config) { c.SecretKey = "wrong" }, "check PQREPRO_S3_ACCESS_KEY"},
			{"nothing listening", func(c *S3Config) { c.Endpoint = "127.0.0.1:1" }, "check the endpoint"},
		} {
			c := cfg
			tc.mod(&c)
			_, err := OpenS3(context.Background(), c, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), c.SecretKey) {
				t.Errorf("%s: the error shows the secret: %v", tc.name, err)
			}
		}
	})
}

func TestParseS3URL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want S3Config
		err  string
	}{
		{url: "s3://bucket", want: S3Config{Bucket: "bucket", TLS: true}},
		{url: "s3://my.bucket/a/b/?endpoint=127.0.0.1:7070&region=eu-west-3&tls=false",
			want: S3Config{Bucket: "my.bucket", Prefix: "a/b/", Endpoint: "127.0.0.1:7070", Region: "eu-west-3"}},
		{url: "http://bucket", err: "scheme"},
		{url: "s3://AB", err: "bucket"},
		{url: "s3://bucket/../x", err: "prefix"},
		{url: "s3://key:secret@bucket", err: "credentials do not belong"},
		{url: "s3://bucket?secret_key=x", err: "parameter secret_key"},
		{url: "s3://bucket?endpoint=nohost", err: "parameter endpoint"},
		{url: "s3://bucket?endpoint=h:99999", err: "parameter endpoint"},
		{url: "s3://bucket?tls=maybe", err: "parameter tls"},
		{url: "s3://bucket?tls=false", err: "needs an endpoint"},
		{url: "s3://bucket?region=Us_East", err: "parameter region"},
		{url: "s3://bucket?colour=blue", err: `unknown parameter "colour"`},
		{url: "s3://bucket?tls=true&tls=false", err: "given 2 times"},
	} {
		got, err := ParseS3URL(tc.url)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseS3URL(%q) = %v, want an error naming %q", tc.url, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseS3URL(%q) = %+v, %v; want %+v", tc.url, got, err, tc.want)
		}
		if again, err := ParseS3URL(got.String()); err != nil || again != got {
			t.Errorf("String() %q does not parse back: %+v %v", got.String(), again, err)
		}
	}
}

func TestS3CredentialsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := S3CredentialsFromEnv(env(map[string]string{"PQREPRO_S3_ACCESS_KEY": "a", "PQREPRO_S3_SECRET_KEY": "s", "AWS_ACCESS_KEY_ID": "x"}))
	if err != nil || c.AccessKey != "a" || c.SecretKey != "s" {
		t.Errorf("pqrepro names: %+v %v", c, err)
	}
	if c, err := S3CredentialsFromEnv(env(map[string]string{"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_SESSION_TOKEN": "t"})); err != nil || c.AccessKey != "x" || c.SecretKey != "y" || c.SessionToken != "t" {
		t.Errorf("AWS names: %+v %v", c, err)
	}
	if _, err := S3CredentialsFromEnv(env(map[string]string{"PQREPRO_S3_ACCESS_KEY": "a"})); err == nil || !strings.Contains(err.Error(), "PQREPRO_S3_SECRET_KEY") {
		t.Errorf("half a key pair: %v", err)
	}
}

func FuzzParseS3URL(f *testing.F) {
	for _, s := range []string{"s3://bucket", "s3://b.c/p?endpoint=127.0.0.1:7070&region=us-east-1&tls=false", "s3://u:p@b", "s3://bucket/%2e%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseS3URL(s)
		if err != nil {
			return
		}
		again, err := ParseS3URL(c.String())
		if err != nil || again != c {
			t.Fatalf("%q parsed to %+v, whose String %q parses to %+v, %v", s, c, c.String(), again, err)
		}
		if c.AccessKey != "" || c.SecretKey != "" {
			t.Fatalf("credentials taken from the URL %q", s)
		}
	})
}
