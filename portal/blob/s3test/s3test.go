// Package s3test starts a real S3-compatible server, versitygw serving a temporary folder, on
// a free loopback port, for the blob store's tests, the portal's and the benchmarks. The
// binary is $PQREPRO_VERSITYGW, else the one scripts/versitygw installed (scripts/test
// installs it there), else versitygw on PATH. Without it a test is skipped, except under CI
// (CI set), where it fails: a CI run must not pass without the S3 tests.
package s3test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"pqrepro/internal/cachedir"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Server is a running versitygw.
type Server struct {
	// Endpoint is host:port on loopback.
	Endpoint string
	// Root is the folder it serves; each bucket is a directory in it.
	Root string
	// AccessKey and SecretKey are the generated root credentials.
	AccessKey, SecretKey string

	mu      sync.Mutex
	buckets int
}

// VersitygwVersion is the version scripts/versitygw installs into the cache folder.
const VersitygwVersion = "v1.8.0"

// Binary returns the path of the versitygw binary, or "" when there is none: $PQREPRO_VERSITYGW,
// an older checkout's .cache/bin/versitygw, scripts/versitygw's in the cache folder
// (internal/cachedir), or one on PATH.
func Binary() string {
	if p := os.Getenv("PQREPRO_VERSITYGW"); p != "" {
		return p
	}
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, ".cache", "bin", "versitygw")
				if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
					return p
				}
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if d := cachedir.Find("versitygw-" + VersitygwVersion); d != "" {
		p := filepath.Join(d, "versitygw")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	return ""
}

// Start runs versitygw over a folder in tb.TempDir() on a free loopback port, waits until it
// accepts connections and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		msg := "versitygw not found: run scripts/test, or `go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` and set PQREPRO_VERSITYGW"
		if os.Getenv("CI") != "" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	s := &Server{Root: tb.TempDir(), AccessKey: "pqrepro" + randomHex(7), SecretKey: randomHex(20)}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		s.Endpoint = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		var out bytes.Buffer
		cmd := exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.Endpoint, "--quiet", "posix", s.Root)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start %s: %v", bin, err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		if lastErr = waitListening(s.Endpoint, exited, &waitErr); lastErr == nil {
			tb.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return s
		}
		cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%w; its output:\n%s", lastErr, out.Bytes())
	}
	tb.Fatalf("versitygw did not start: %v", lastErr)
	return nil
}

// Bucket is an empty bucket on a Server.
type Bucket struct {
	// Name is the bucket's name; Endpoint, AccessKey and SecretKey are the server's.
	Name, Endpoint, AccessKey, SecretKey string
}

// URL is the bucket as the portal's --blobs flag takes it, with a key prefix so the prefix
// handling is exercised too (the credentials go by environment).
func (b Bucket) URL() string {
	return "s3://" + b.Name + "/portal?endpoint=" + b.Endpoint + "&region=us-east-1&tls=false"
}

// Bucket creates a new, empty bucket.
func (s *Server) Bucket(tb testing.TB) Bucket {
	tb.Helper()
	s.mu.Lock()
	s.buckets++
	name := fmt.Sprintf("test-%d-%s", s.buckets, randomHex(4))
	s.mu.Unlock()
	if err := os.Mkdir(filepath.Join(s.Root, name), 0o755); err != nil {
		tb.Fatal(err)
	}
	return Bucket{Name: name, Endpoint: s.Endpoint, AccessKey: s.AccessKey, SecretKey: s.SecretKey}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits up to 20 s for addr to accept a connection, or for the process to exit.
func waitListening(addr string, exited <-chan struct{}, waitErr *error) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("versitygw exited: %v", *waitErr)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("versitygw did not listen on %s within 20s", addr)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
