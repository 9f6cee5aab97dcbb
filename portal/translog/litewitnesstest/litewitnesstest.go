// Package litewitnesstest starts litewitness (filippo.io/torchwood's C2SP tlog-witness, BSD-3-
// Clause), a witness nobody here wrote, for the log's tests: its own ssh-agent holding a fresh
// Ed25519 key (litewitness signs only through an agent), its SQLite database set up with
// `witnessctl add-log` and `add-key`, listening on a free loopback port.
//
// The binaries are $PQREPRO_LITEWITNESS (a folder holding litewitness and witnessctl), else
// the ones scripts/litewitness installed in the cache folder (scripts/test installs them
// there), else those on PATH; ssh-agent, ssh-add and ssh-keygen come from Debian's
// openssh-client. Without them a test is skipped, except under CI (CI set) or with
// PQREPRO_REQUIRE_LITEWITNESS=1, where it fails: such a run must not pass without the
// third-party witness.
package litewitnesstest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/internal/cachedir"
	"pqrepro/internal/lockedio"
	"pqrepro/portal/translog"
)

// Version is the version scripts/litewitness installs into the cache folder.
const Version = "v0.10.0"

// Witness is a running litewitness.
type Witness struct {
	// Name is its name (the cosignature lines' key name).
	Name string
	// URL is its tlog-witness prefix ("http://127.0.0.1:PORT"): POST URL/add-checkpoint.
	URL string
	// VKey is its Ed25519 cosignature/v1 verifier key, computed here from the SSH public key
	// and checked against the one litewitness logs at start.
	VKey string
	// Dir holds its key, agent socket and database.
	Dir string

	db, ctl string
	out     *lockedio.Buffer
}

// Binaries returns the folder holding litewitness and witnessctl, or "".
func Binaries() string {
	ok := func(dir string) bool {
		for _, b := range []string{"litewitness", "witnessctl"} {
			if st, err := os.Stat(filepath.Join(dir, b)); err != nil || !st.Mode().IsRegular() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("PQREPRO_LITEWITNESS"); d != "" && ok(d) {
		return d
	}
	if d := cachedir.Find("litewitness-" + Version); d != "" && ok(d) {
		return d
	}
	if p, err := exec.LookPath("litewitness"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p)
	}
	return ""
}

// required says whether a missing witness fails the test instead of skipping it.
func required() bool { return os.Getenv("CI") != "" || os.Getenv("PQREPRO_REQUIRE_LITEWITNESS") == "1" }

// Start runs a litewitness named name that witnesses the log whose origin and (Ed25519 note)
// verifier key are given, and stops it and its agent when the test ends.
func Start(tb testing.TB, name, logOrigin, logVKey string) *Witness {
	tb.Helper()
	bins := Binaries()
	var missing []string
	if bins == "" {
		missing = append(missing, "litewitness and witnessctl (run scripts/litewitness, or set PQREPRO_LITEWITNESS to a folder holding them)")
	}
	for _, p := range []string{"ssh-agent", "ssh-add", "ssh-keygen"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p+" (Debian's openssh-client)")
		}
	}
	if len(missing) > 0 {
		msg := "third-party witness not available: " + strings.Join(missing, "; ")
		if required() {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	// A short folder: a unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	w := &Witness{Name: name, Dir: dir, db: filepath.Join(dir, "w.db"), ctl: filepath.Join(bins, "witnessctl"), out: &lockedio.Buffer{}}
	key := filepath.Join(dir, "key")
	run(tb, "", "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "litewitness", "-f", key)
	pubLine, err := os.ReadFile(key + ".pub")
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := sshEd25519(pubLine)
	if err != nil {
		tb.Fatal(err)
	}
	w.VKey = translog.VKey(name, translog.SigCosignEd25519, pub)

	sock := filepath.Join(dir, "s")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	var agentOut lockedio.Buffer
	agent.Stdout, agent.Stderr = &agentOut, &agentOut
	if err := agent.Start(); err != nil {
		tb.Fatalf("start ssh-agent: %v", err)
	}
	tb.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	if err := waitFor(func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		tb.Fatalf("ssh-agent made no socket: %v\n%s", err, agentOut.String())
	}
	run(tb, "SSH_AUTH_SOCK="+sock, "ssh-add", "-q", key)

	w.Ctl(tb, "add-log", "-origin", logOrigin)
	w.Ctl(tb, "add-key", "-origin", logOrigin, "-key", logVKey)

	h := sha256.Sum256(pub)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		cmd := exec.Command(filepath.Join(bins, "litewitness"), "-db", w.db, "-name", name, "-key", hex.EncodeToString(h[:]),
			"-ssh-agent", sock, "-listen", addr)
		cmd.Stdout, cmd.Stderr = w.out, w.out
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start litewitness: %v", err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		lastErr = waitFor(func() bool {
			select {
			case <-exited:
				return true
			default:
			}
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		select {
		case <-exited:
			lastErr = fmt.Errorf("litewitness exited: %v", waitErr)
		default:
		}
		if lastErr == nil {
			tb.Cleanup(func() { cmd.Process.Signal(os.Interrupt); <-exited })
			w.URL = "http://" + addr
			if m := regexp.MustCompile(`vkey=(\S+)`).FindStringSubmatch(w.out.String()); m == nil || m[1] != w.VKey {
				tb.Fatalf("litewitness's verifier key is not the one computed from its SSH key %s:\n%s", w.VKey, w.out.String())
			}
			return w
		}
		cmd.Process.Kill()
		<-exited
	}
	tb.Fatalf("litewitness did not start: %v\n%s", lastErr, w.out.String())
	return nil
}

// Ctl runs witnessctl on the witness's database.
func (w *Witness) Ctl(tb testing.TB, args ...string) string {
	tb.Helper()
	full := append([]string{args[0], "-db", w.db}, args[1:]...)
	return run(tb, "", w.ctl, full...)
}

// Output is what litewitness printed so far.
func (w *Witness) Output() string { return w.out.String() }

func run(tb testing.TB, env, name string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(name, args...)
	if env != "" {
		cmd.Env = append(os.Environ(), env)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// sshEd25519 returns the key of an OpenSSH "ssh-ed25519 <base64> comment" line.
func sshEd25519(line []byte) (ed25519.PublicKey, error) {
	f := strings.Fields(string(line))
	if len(f) < 2 || f[0] != "ssh-ed25519" {
		return nil, fmt.Errorf("not an ssh-ed25519 public key: %q", line)
	}
	blob, err := base64.StdEncoding.DecodeString(f[1])
	if err != nil {
		return nil, err
	}
	// string "ssh-ed25519", string key (each a uint32 length and its bytes)
	var parts [][]byte
	for len(blob) >= 4 {
		n := binary.BigEndian.Uint32(blob)
		if uint64(len(blob)-4) < uint64(n) {
			break
		}
		parts = append(parts, blob[4:4+n])
		blob = blob[4+n:]
	}
	if len(parts) != 2 || string(parts[0]) != "ssh-ed25519" || len(parts[1]) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("malformed ssh-ed25519 key blob")
	}
	return ed25519.PublicKey(parts[1]), nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitFor polls cond for up to 20 s.
func waitFor(cond func() bool) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready within 20s")
}
