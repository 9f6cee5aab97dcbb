// Package pgtest gives tests a real PostgreSQL: one throwaway cluster per test binary, started
// on first use on a free loopback port, and a fresh database for every DSN call.
//
// The server's binaries are those of PQREPRO_PG_BIN, else the highest version in
// /usr/lib/postgresql/<v>/bin (Debian's postgresql package; scripts/test installs it). initdb
// and pg_ctl refuse to run as root, so as root the cluster's folder is given to the postgres
// user and both run through `runuser -u postgres --`. The cluster trusts loopback connections
// and runs with fsync, synchronous_commit and full_page_writes off: a test database is thrown
// away, so durability is traded for speed (never do this to a real portal's database).
//
// With PQREPRO_POSTGRES_DSN set (a server whose role may CREATE DATABASE) no cluster is
// started and the databases are made there.
//
// When PostgreSQL cannot start a test is skipped with the reason, except when
// PQREPRO_REQUIRE_POSTGRES=1 (scripts/test sets it), where it fails: a CI run must not pass
// without the PostgreSQL tests.
//
// A package that uses pgtest must stop the cluster when its tests end, from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// cluster is the test binary's PostgreSQL.
type cluster struct {
	// admin is the DSN of the maintenance database ("postgres") the databases are made from.
	admin string
	// dir holds the data folder, the socket and the server log; "" for PQREPRO_POSTGRES_DSN.
	dir, bin, data, logFile string
	asPostgres              bool
	// Started is how long initdb and the start took (zero for PQREPRO_POSTGRES_DSN).
	started time.Duration
}

var (
	once    sync.Once
	shared  *cluster
	initErr error
	stopped bool
	mu      sync.Mutex
)

// Required reports whether a test must fail, not skip, when PostgreSQL cannot start.
func Required() bool { return os.Getenv("PQREPRO_REQUIRE_POSTGRES") == "1" }

// BinDir returns the folder of PostgreSQL's server binaries: PQREPRO_PG_BIN, else the
// highest version's /usr/lib/postgresql/<v>/bin holding initdb; "" when there is none.
func BinDir() string {
	if p := os.Getenv("PQREPRO_PG_BIN"); p != "" {
		return p
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	best, bestV := "", -1
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(d))))
		if err == nil && v > bestV {
			best, bestV = filepath.Dir(d), v
		}
	}
	return best
}

// DSN creates a fresh, empty database and returns its postgres:// DSN; the database is
// dropped when the test ends.
func DSN(t testing.TB) string {
	t.Helper()
	c, err := get()
	if err != nil {
		if Required() {
			t.Fatalf("PostgreSQL (required by PQREPRO_REQUIRE_POSTGRES=1): %v", err)
		}
		t.Skipf("PostgreSQL not available: %v", err)
	}
	name := "t_" + randomHex(8)
	// A hang guard, not a measure: CREATE DATABASE waits for a checkpoint, which a loaded
	// machine running many tests' databases at once can hold for well over 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("create test database %s: %v%s", name, err, c.logTail())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// FORCE ends connections a test left open (PostgreSQL 13 and later).
		if err := c.exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(c.admin)
	if err != nil {
		t.Fatalf("test database DSN: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// StartupTime is how long the shared cluster took to initialise and start (zero before it
// started or when PQREPRO_POSTGRES_DSN names the server).
func StartupTime() time.Duration {
	mu.Lock()
	defer mu.Unlock()
	if shared == nil {
		return 0
	}
	return shared.started
}

// Main runs the package's tests, then stops the cluster if one was started, and exits with
// the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Stop stops the shared cluster and removes its folder; DSN fails afterwards.
func Stop() error {
	mu.Lock()
	defer mu.Unlock()
	stopped = true
	c := shared
	shared = nil
	if c == nil || c.dir == "" {
		return nil
	}
	_, err := c.run(30*time.Second, filepath.Join(c.bin, "pg_ctl"), "-D", c.data, "-m", "immediate", "-w", "stop")
	if err != nil {
		return fmt.Errorf("stop the test cluster: %w%s", err, c.logTail())
	}
	return os.RemoveAll(c.dir)
}

func get() (*cluster, error) {
	once.Do(func() {
		c, err := start()
		mu.Lock()
		shared, initErr = c, err
		if stopped && c != nil && c.dir != "" {
			initErr = errors.New("the test cluster was stopped")
		}
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	if initErr != nil {
		return nil, initErr
	}
	if shared == nil {
		return nil, errors.New("the test cluster was stopped (pgtest.Main ended the tests)")
	}
	return shared, nil
}

func start() (*cluster, error) {
	if dsn := os.Getenv("PQREPRO_POSTGRES_DSN"); dsn != "" {
		c := &cluster{admin: dsn}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.exec(ctx, `SELECT 1`); err != nil {
			return nil, fmt.Errorf("PQREPRO_POSTGRES_DSN: %w", err)
		}
		return c, nil
	}
	bin := BinDir()
	if bin == "" {
		return nil, errors.New("no PostgreSQL server binaries: install Debian's postgresql (scripts/test does), or set PQREPRO_PG_BIN to the folder holding initdb and pg_ctl, or PQREPRO_POSTGRES_DSN to a server")
	}
	t0 := time.Now()
	dir, err := os.MkdirTemp("", "pqrepro-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("test cluster folder: %w", err)
	}
	c := &cluster{dir: dir, bin: bin, data: filepath.Join(dir, "data"), logFile: filepath.Join(dir, "server.log"), asPostgres: os.Geteuid() == 0}
	if c.asPostgres {
		if err := chownToPostgres(dir); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	// initdb: C collation, so text sorts by bytes as in SQLite, and lower() folds ASCII only,
	// as SQLite's does.
	if _, err := c.run(60*time.Second, filepath.Join(bin, "initdb"), "-D", c.data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		opts := strings.Join([]string{
			"-c listen_addresses=127.0.0.1", "-p " + strconv.Itoa(port), "-c unix_socket_directories=" + dir,
			"-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=200",
		}, " ")
		_, err = c.run(60*time.Second, filepath.Join(bin, "pg_ctl"), "-D", c.data, "-l", c.logFile, "-o", opts, "-w", "-t", "50", "start")
		if err == nil {
			c.admin = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err = c.exec(ctx, `SELECT 1`)
			cancel()
			if err == nil {
				c.started = time.Since(t0)
				return c, nil
			}
			c.run(30*time.Second, filepath.Join(bin, "pg_ctl"), "-D", c.data, "-m", "immediate", "-w", "stop")
		}
		lastErr = fmt.Errorf("pg_ctl start on port %d: %w%s", port, err, c.logTail())
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// run runs a server program, through runuser as the postgres user when the test runs as root.
func (c *cluster) run(timeout time.Duration, prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	name := prog
	if c.asPostgres {
		args = append([]string{"-u", "postgres", "--", prog}, args...)
		name = "runuser"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.Bytes(), fmt.Errorf("%s: %w; its output:\n%s", filepath.Base(prog), err, lastLines(out.Bytes(), 20))
	}
	return out.Bytes(), nil
}

// exec runs one statement on the maintenance database.
func (c *cluster) exec(ctx context.Context, stmt string) error {
	db, err := sql.Open("pgx", c.admin)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// logTail is the end of the server log, for error messages ("" when there is none).
func (c *cluster) logTail() string {
	if c.logFile == "" {
		return ""
	}
	b, err := os.ReadFile(c.logFile)
	if err != nil || len(b) == 0 {
		return ""
	}
	return "\nlast lines of the server log " + c.logFile + ":\n" + lastLines(b, 20)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// chownToPostgres gives dir to the postgres user (initdb as root refuses to run).
func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, PostgreSQL must run as the postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("give %s to the postgres user: %w", dir, err)
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
