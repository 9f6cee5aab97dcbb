package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"pqrepro/artifacts"
	"pqrepro/portal/fault"
)

// S3Config names a bucket (and a key prefix in it) on an S3-compatible server. It is written
// as a URL, s3://BUCKET[/PREFIX]?endpoint=HOST:PORT&region=R&tls=BOOL (ParseS3URL); the
// credentials never appear in it: they come from the environment (S3CredentialsFromEnv).
type S3Config struct {
	// Bucket is the bucket's name.
	Bucket string
	// Prefix is prepended to every key ("" or ending in "/"): blobs live under
	// PREFIX/sha256/<2 hex>/<64 hex>, named objects under PREFIX/files/NAME, uploads in
	// progress under PREFIX/tmp/.
	Prefix string
	// Endpoint is the server's host:port; empty means AWS's regional endpoint.
	Endpoint string
	// Region is the bucket's region ("us-east-1" when empty).
	Region string
	// TLS is false only for a server on a trusted network (a loopback test server).
	TLS bool
	// S3Credentials sign requests; they come from the environment, never from the URL.
	S3Credentials
}

// S3Credentials are an S3 key pair.
type S3Credentials struct {
	// AccessKey and SecretKey sign requests; both empty means anonymous access.
	AccessKey, SecretKey string
	// SessionToken goes with temporary credentials.
	SessionToken string
}

// String is the configuration as a URL, without credentials: safe to log or print.
func (c S3Config) String() string {
	q := url.Values{}
	if c.Endpoint != "" {
		q.Set("endpoint", c.Endpoint)
	}
	if c.Region != "" {
		q.Set("region", c.Region)
	}
	q.Set("tls", strconv.FormatBool(c.TLS))
	u := url.URL{Scheme: "s3", Host: c.Bucket, Path: "/" + strings.TrimSuffix(c.Prefix, "/"), RawQuery: q.Encode()}
	if c.Prefix == "" {
		u.Path = ""
	}
	return u.String()
}

// IsS3URL reports whether s names an S3 store (begins with "s3://") rather than a folder.
func IsS3URL(s string) bool { return strings.HasPrefix(s, "s3://") }

// ParseS3URL parses s3://BUCKET[/PREFIX]?endpoint=HOST:PORT&region=R&tls=BOOL. Every problem
// names the part of the URL it is about; credentials in the URL are refused, since a URL ends
// up in logs and process listings.
func ParseS3URL(raw string) (S3Config, error) {
	var c S3Config
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the whole URL; say only what is wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return c, fmt.Errorf("blob store URL: %w", err)
	}
	if u.Scheme != "s3" {
		return c, fmt.Errorf("blob store URL: scheme %q is not s3 (want s3://BUCKET/PREFIX?endpoint=HOST:PORT)", u.Scheme)
	}
	if u.User != nil {
		return c, errors.New("blob store URL: credentials do not belong in the URL; set PQREPRO_S3_ACCESS_KEY and PQREPRO_S3_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	c.Bucket = u.Host
	if !validBucket(c.Bucket) {
		return c, fmt.Errorf("blob store URL: bucket %q is not a valid bucket name (3-63 lowercase letters, digits, '.' and '-')", c.Bucket)
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if !ValidName(p) {
			return c, fmt.Errorf("blob store URL: prefix %q: elements must be letters, digits, '.', '_' or '-'", p)
		}
		c.Prefix = p + "/"
	}
	c.TLS = true
	q := u.Query()
	for k, vs := range q {
		if len(vs) != 1 {
			return c, fmt.Errorf("blob store URL: parameter %s is given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "endpoint":
			host, port, err := net.SplitHostPort(v)
			if err != nil || host == "" || strings.ContainsAny(v, "/@?#") {
				return c, fmt.Errorf("blob store URL: parameter endpoint %q is not HOST:PORT", v)
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return c, fmt.Errorf("blob store URL: parameter endpoint %q has no valid port", v)
			}
			c.Endpoint = v
		case "region":
			if v == "" || len(v) > 64 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
				return c, fmt.Errorf("blob store URL: parameter region %q is not a region name", v)
			}
			c.Region = v
		case "tls":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return c, fmt.Errorf("blob store URL: parameter tls %q is not true or false", v)
			}
			c.TLS = b
		case "access_key", "secret_key", "accesskey", "secretkey", "password", "token", "session_token":
			return c, fmt.Errorf("blob store URL: parameter %s: credentials do not belong in the URL; set PQREPRO_S3_ACCESS_KEY and PQREPRO_S3_SECRET_KEY", k)
		default:
			return c, fmt.Errorf("blob store URL: unknown parameter %q (known: endpoint, region, tls)", k)
		}
	}
	if c.Endpoint == "" && !c.TLS {
		return c, errors.New("blob store URL: parameter tls=false needs an endpoint")
	}
	return c, nil
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 || strings.Contains(b, "..") {
		return false
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || (ch == '.' || ch == '-') && i > 0 && i < len(b)-1
		if !ok {
			return false
		}
	}
	return true
}

// S3CredentialsFromEnv reads credentials through getenv: PQREPRO_S3_ACCESS_KEY and
// PQREPRO_S3_SECRET_KEY, else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.
// One key without the other is an error naming the missing variable.
func S3CredentialsFromEnv(getenv func(string) string) (S3Credentials, error) {
	var c S3Credentials
	a, s := getenv("PQREPRO_S3_ACCESS_KEY"), getenv("PQREPRO_S3_SECRET_KEY")
	names := [2]string{"PQREPRO_S3_ACCESS_KEY", "PQREPRO_S3_SECRET_KEY"}
	if a == "" && s == "" {
		a, s = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
		names = [2]string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
		c.SessionToken = getenv("AWS_SESSION_TOKEN")
	}
	switch {
	case a != "" && s == "":
		return S3Credentials{}, fmt.Errorf("%s is set but %s is not", names[0], names[1])
	case a == "" && s != "":
		return S3Credentials{}, fmt.Errorf("%s is set but %s is not", names[1], names[0])
	}
	c.AccessKey, c.SecretKey = a, s
	return c, nil
}

// S3 stores blobs and named objects in a bucket of an S3-compatible server. Put uploads into
// PREFIX/tmp/ while hashing and server-side copies to PREFIX/sha256/… once the digest is
// known, so a reader never sees a partial blob; an interrupted upload leaves at most a
// temporary object (or an incomplete multipart upload) that no row refers to, which
// SweepTemporaries removes once it is an hour old (OpenS3 runs it). It is safe for concurrent
// use, and by several portal processes on one bucket.
type S3 struct {
	client *minio.Client
	cfg    S3Config
	log    *slog.Logger
}

var (
	_ Store = (*S3)(nil)
	_ Files = (*S3)(nil)
)

// The server-side copy that publishes a blob is one CopyObject, which S3 allows up to 5 GiB:
// far above the portal's limits (bundles at most 256 MiB).

// s3PartSize is how much of a Put is buffered: a stream no longer goes up as one PUT, a
// longer one as a multipart upload of parts this size (so at most 10,000 × 8 MiB).
const s3PartSize = 8 << 20

// tmpMaxAge is how old a temporary object must be before a sweep removes it: older than any
// upload in progress.
const tmpMaxAge = time.Hour

// OpenS3 connects to the bucket, checks that it exists and is writable (an error says what to
// do), and sweeps temporaries older than an hour. log may be nil.
func OpenS3(ctx context.Context, cfg S3Config, log *slog.Logger) (*S3, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	var creds *credentials.Credentials
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
	} else {
		creds = credentials.New(&credentials.Static{}) // anonymous
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	// A named server gets path-style requests (what S3-compatible servers all accept); AWS
	// gets virtual-hosted ones where the bucket's name allows.
	lookup := minio.BucketLookupPath
	if cfg.Endpoint == "" {
		lookup = minio.BucketLookupAuto
	}
	cl, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: cfg.TLS, Region: region, BucketLookup: lookup})
	if err != nil {
		return nil, fmt.Errorf("blob store %s: %w", cfg, err)
	}
	s := &S3{client: cl, cfg: cfg, log: log}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if n, err := s.SweepTemporaries(ctx, time.Now().Add(-tmpMaxAge)); err != nil {
		log.Warn("sweep of temporary blob uploads failed", "store", cfg.String(), "err", err)
	} else if n > 0 {
		log.Info("removed abandoned temporary blob uploads", "store", cfg.String(), "count", n)
	}
	return s, nil
}

// check makes sure the bucket exists and a probe object can be written and removed.
func (s *S3) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := s.client.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("blob store %s: cannot reach the bucket (%s)", s.cfg, s3Hint(err))
	}
	if !ok {
		return fmt.Errorf("blob store %s: bucket %q does not exist: create it on the server (for example `aws s3 mb s3://%s`) or name another", s.cfg, s.cfg.Bucket, s.cfg.Bucket)
	}
	probe := s.cfg.Prefix + "tmp/probe-" + randomHex()
	if _, err := s.client.PutObject(ctx, s.cfg.Bucket, probe, bytes.NewReader([]byte("pqrepro write check\n")), 20, minio.PutObjectOptions{}); err != nil {
		return fmt.Errorf("blob store %s: bucket %q is not writable (%s)", s.cfg, s.cfg.Bucket, s3Hint(err))
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, probe, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("blob store %s: cannot delete from bucket %q (%s); the portal removes its temporary uploads", s.cfg, s.cfg.Bucket, s3Hint(err))
	}
	return nil
}

// s3Hint describes a server's refusal with what to check.
func s3Hint(err error) string {
	r := minio.ToErrorResponse(err)
	switch r.Code {
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
		return fmt.Sprintf("%s: %s; check PQREPRO_S3_ACCESS_KEY and PQREPRO_S3_SECRET_KEY and the key's permissions on the bucket", r.Code, r.Message)
	case "":
		return err.Error() + "; check the endpoint and tls parameters and that the server is running"
	}
	return fmt.Sprintf("%s: %s", r.Code, r.Message)
}

func randomHex() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *S3) blobKey(digest string) (string, error) {
	if !ValidDigest(digest) {
		return "", fault.New(fault.Invalid, "malformed digest %q", digest)
	}
	h := strings.TrimPrefix(digest, artifacts.DigestPrefix)
	return s.cfg.Prefix + "sha256/" + h[:2] + "/" + h, nil
}

func isNotFound(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.Code == "NoSuchKey" || r.Code == "NotFound" || r.StatusCode == http.StatusNotFound && r.Code != "NoSuchBucket"
}

// limitedReader passes at most max bytes and fails with a fault.TooLarge error on more, so
// an upload stops there.
type limitedReader struct {
	r   io.Reader
	n   int64 // bytes read so far
	max int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, fault.New(fault.TooLarge, "upload is larger than the limit of %d bytes", l.max)
	}
	if allowed := l.max - l.n; allowed < int64(len(p)) {
		p = p[:allowed+1] // one byte past the limit tells a longer stream from one at it
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		return n, fault.New(fault.TooLarge, "upload is larger than the limit of %d bytes", l.max)
	}
	return n, err
}

// Put implements Store.
func (s *S3) Put(ctx context.Context, r io.Reader, max int64) (string, int64, error) {
	if max < 0 {
		return "", 0, fault.New(fault.Invalid, "negative upload limit %d", max)
	}
	h := sha256.New()
	lr := &limitedReader{r: r, max: max}
	src := io.TeeReader(lr, h)
	// A stream that fits one part goes up as one PUT of known size; a longer one as a
	// multipart upload that continues from the bytes already read.
	bufLen := int64(s3PartSize)
	if max < bufLen {
		bufLen = max + 1
	}
	first := make([]byte, bufLen)
	n, err := io.ReadFull(src, first)
	size := int64(-1)
	var body io.Reader
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		size, body = int64(n), bytes.NewReader(first[:n])
	case err != nil:
		return "", 0, fmt.Errorf("store blob: %w", err)
	default:
		body = io.MultiReader(bytes.NewReader(first), src)
	}
	tmp := s.cfg.Prefix + "tmp/put-" + randomHex()
	_, err = s.client.PutObject(ctx, s.cfg.Bucket, tmp, body, size, minio.PutObjectOptions{PartSize: s3PartSize, ContentType: "application/octet-stream"})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		s.discard(tmp, size < 0)
		if fault.Is(err, fault.TooLarge) || ctx.Err() != nil {
			return "", 0, fmt.Errorf("store blob: %w", errors.Join(err, ctx.Err()))
		}
		return "", 0, fmt.Errorf("store blob in %s: %w", s.cfg, err)
	}
	defer s.discard(tmp, false)
	digest := artifacts.DigestOfSum(h.Sum(nil))
	dst, _ := s.blobKey(digest)
	// The same content may already be there (or be copied there concurrently: the copies are
	// identical, and S3 replaces an object as a whole).
	if st, err := s.client.StatObject(ctx, s.cfg.Bucket, dst, minio.StatObjectOptions{}); err == nil && st.Size == lr.n {
		return digest, lr.n, nil
	}
	_, err = s.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: s.cfg.Bucket, Object: dst},
		minio.CopySrcOptions{Bucket: s.cfg.Bucket, Object: tmp})
	if err != nil {
		return "", 0, fmt.Errorf("store blob %s in %s: %w", digest, s.cfg, err)
	}
	return digest, lr.n, nil
}

// discard removes a temporary object, and an incomplete multipart upload of it when
// multipart (minio-go aborts a failed one itself; this is the second try), on a context of its own (the request's may be what was cancelled). What it
// cannot remove, SweepTemporaries will.
func (s *S3) discard(key string, multipart bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if multipart {
		if err := s.client.RemoveIncompleteUpload(ctx, s.cfg.Bucket, key); err != nil && !isNotFound(err) {
			s.log.Warn("could not abort a temporary blob upload; the temporaries' sweep will", "key", key, "err", err)
		}
	}
	if err := s.client.RemoveObject(ctx, s.cfg.Bucket, key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		s.log.Warn("could not remove a temporary blob; the temporaries' sweep will", "key", key, "err", err)
	}
}

// HasBlobs reports whether the store holds at least one blob (the portal refuses to start a
// fresh database beside a bucket of an earlier one).
func (s *S3) HasBlobs(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o, ok := <-s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.cfg.Prefix + "sha256/", Recursive: true, MaxKeys: 1})
	if ok && o.Err != nil {
		return false, fmt.Errorf("list blobs in %s: %w", s.cfg, o.Err)
	}
	return ok, nil
}

// SweepTemporaries removes temporary objects and incomplete multipart uploads under
// PREFIX/tmp/ last modified before cutoff, and returns how many it removed. Run it with a
// cutoff older than any upload in progress (OpenS3 uses an hour).
func (s *S3) SweepTemporaries(ctx context.Context, cutoff time.Time) (int, error) {
	n := 0
	prefix := s.cfg.Prefix + "tmp/"
	for obj := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return n, fmt.Errorf("list temporaries in %s: %w", s.cfg, obj.Err)
		}
		if obj.LastModified.Before(cutoff) {
			if err := s.client.RemoveObject(ctx, s.cfg.Bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
				return n, fmt.Errorf("remove temporary %s: %w", obj.Key, err)
			}
			n++
		}
	}
	for up := range s.client.ListIncompleteUploads(ctx, s.cfg.Bucket, prefix, true) {
		if up.Err != nil {
			// Not every server lists multipart uploads; the objects above are the main part.
			return n, fmt.Errorf("list incomplete uploads in %s: %w", s.cfg, up.Err)
		}
		if up.Initiated.Before(cutoff) {
			if err := s.client.RemoveIncompleteUpload(ctx, s.cfg.Bucket, up.Key); err != nil && !isNotFound(err) {
				return n, fmt.Errorf("abort upload of %s: %w", up.Key, err)
			}
			n++
		}
	}
	return n, nil
}

// Open implements Store. The caller closes the reader.
func (s *S3) Open(ctx context.Context, digest string) (io.ReadCloser, error) {
	key, err := s.blobKey(digest)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err == nil {
		_, err = obj.Stat() // GetObject is lazy: this is where a missing key shows
	}
	if err != nil {
		if obj != nil {
			obj.Close()
		}
		if isNotFound(err) {
			return nil, fault.Wrap(fault.NotFound, err, "blob %s not found", digest)
		}
		return nil, fmt.Errorf("open blob %s in %s: %w", digest, s.cfg, err)
	}
	return obj, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, digest string) (int64, error) {
	key, err := s.blobKey(digest)
	if err != nil {
		return 0, err
	}
	st, err := s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	if isNotFound(err) {
		return 0, fault.Wrap(fault.NotFound, err, "blob %s not found", digest)
	}
	if err != nil {
		return 0, fmt.Errorf("stat blob %s in %s: %w", digest, s.cfg, err)
	}
	return st.Size, nil
}

func (s *S3) fileKey(name string) (string, error) {
	if !ValidName(name) {
		return "", fault.New(fault.Invalid, "malformed object name %q", name)
	}
	return s.cfg.Prefix + "files/" + name, nil
}

// WriteFile implements Files: one PUT, which S3 applies to the object as a whole.
func (s *S3) WriteFile(ctx context.Context, name string, data []byte) error {
	key, err := s.fileKey(name)
	if err != nil {
		return err
	}
	if _, err := s.client.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: "application/octet-stream", DisableMultipart: true}); err != nil {
		return fmt.Errorf("write %s in %s: %w", name, s.cfg, err)
	}
	return nil
}

// ReadFile implements Files.
func (s *S3) ReadFile(ctx context.Context, name string) ([]byte, error) {
	key, err := s.fileKey(name)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.cfg.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", name, s.cfg, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if isNotFound(err) {
		return nil, fault.Wrap(fault.NotFound, err, "object %s not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s in %s: %w", name, s.cfg, err)
	}
	return b, nil
}

// RemoveFiles implements Files: the objects listed under dir/, removed one by one.
func (s *S3) RemoveFiles(ctx context.Context, dir string) (int, error) {
	key, err := s.fileKey(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for obj := range s.client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: key + "/", Recursive: true}) {
		if obj.Err != nil {
			return n, fmt.Errorf("list %s in %s: %w", dir, s.cfg, obj.Err)
		}
		if err := s.client.RemoveObject(ctx, s.cfg.Bucket, obj.Key, minio.RemoveObjectOptions{}); err != nil {
			return n, fmt.Errorf("remove %s in %s: %w", obj.Key, s.cfg, err)
		}
		n++
	}
	return n, nil
}
