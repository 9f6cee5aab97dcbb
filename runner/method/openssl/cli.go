// Package openssl is the openssl-cli timing method: it resolves and checks an OpenSSL 3.5
// command line (Resolve, Probe), runs a manifest's cells as the papers' openssl commands, one
// process per command (CLI.Run), and checks every output they write with Go's and circl's own
// parsers before its time counts.
package openssl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"pqrepro/artifacts/protocol"
	"pqrepro/internal/osroot"
	"pqrepro/runner"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"pqrepro/artifacts"
)

// Config says which openssl command line the openssl-cli method runs: a binary (Path,
// or "openssl" on PATH when both fields are empty), or the openssl inside a root directory
// such as the Debian 13 root scripts/openssl-root makes (Root). A root's openssl is executed
// through the root's own dynamic loader with --library-path, never through chroot, so nothing
// but the loader stands between the timer and the command.
type Config struct {
	// Path is an openssl binary; empty means "openssl" on PATH (unless Root is set).
	Path string
	// Root is a root directory holding usr/bin/openssl, its libraries and its loader.
	Root string
}

// Minimum OpenSSL version for openssl-cli: 3.5 has ML-KEM, ML-DSA and SLH-DSA built in.
const minOpenSSLMajor, minOpenSSLMinor = 3, 5

// ErrTooOld is returned (wrapped) when the openssl found is older than 3.5.
var ErrTooOld = errors.New("openssl is older than 3.5")

// CLI is an openssl command line resolved and checked by Resolve: how to invoke it
// and what it said it is. It is safe for concurrent use (it only starts processes).
type CLI struct {
	// Version is the first line `openssl version` printed.
	Version string
	// Invocation is the argv prefix every command runs with; Env the variables added to the
	// runner's environment for it.
	Invocation []string
	Env        []string
	// root is the root directory, "" for a plain binary.
	root string
}

// Version is a parsed `openssl version` line.
type Version struct {
	Major, Minor, Patch int
}

var (
	opensslVersionRE = regexp.MustCompile(`^OpenSSL (\d{1,4})\.(\d{1,4})\.(\d{1,4})`)
	opensslLibraryRE = regexp.MustCompile(`\(Library: OpenSSL (\d{1,4})\.(\d{1,4})\.(\d{1,4})`)
)

// ParseVersion reads the output of `openssl version`, e.g. "OpenSSL 3.5.9 29 Sep 2026
// (Library: OpenSSL 3.5.9 29 Sep 2026)". When the line names the library's version too, that
// one is returned: the library does the cryptography. LibreSSL and other forks are refused.
func ParseVersion(out string) (Version, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	line = strings.TrimSpace(line)
	m := opensslVersionRE.FindStringSubmatch(line)
	if m == nil {
		return Version{}, fmt.Errorf("not an OpenSSL version line: %q", clip(line, 80))
	}
	if lib := opensslLibraryRE.FindStringSubmatch(line); lib != nil {
		m = lib
	}
	var v [3]int
	for i := range v {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return Version{}, fmt.Errorf("version %q: %w", clip(line, 80), err)
		}
		v[i] = n
	}
	return Version{Major: v[0], Minor: v[1], Patch: v[2]}, nil
}

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// opensslHowTo is what an operator without OpenSSL 3.5 is told to do.
const opensslHowTo = "openssl-cli needs OpenSSL 3.5 or later (ML-KEM, ML-DSA and SLH-DSA built in); Debian 12 has 3.0: run scripts/openssl-root to make a Debian 13 root (about 1 minute, 220 MB) and pass --openssl-root with the path it prints, or give --openssl PATH"

// Resolve finds the configured openssl, runs `openssl version` and refuses anything
// older than 3.5 with an error naming the version found (wrapping ErrTooOld).
func Resolve(ctx context.Context, cfg Config) (*CLI, error) {
	o := &CLI{}
	switch {
	case cfg.Root != "":
		root, err := filepath.Abs(cfg.Root)
		if err != nil {
			return nil, fmt.Errorf("openssl root %s: %w", cfg.Root, err)
		}
		bin := filepath.Join(root, "usr", "bin", "openssl")
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("openssl root %s has no usr/bin/openssl (make one with scripts/openssl-root %s): %w", root, cfg.Root, err)
		}
		loader, err := osroot.Loader(root, bin)
		if err != nil {
			return nil, err
		}
		libs, triplet, err := rootLibraryPath(root)
		if err != nil {
			return nil, err
		}
		o.root = root
		o.Invocation = []string{loader, "--library-path", libs, bin}
		o.Env = []string{
			"OPENSSL_MODULES=" + filepath.Join(root, "usr", "lib", triplet, "ossl-modules"),
			"OPENSSL_CONF=" + filepath.Join(root, "etc", "ssl", "openssl.cnf"),
		}
	default:
		name := cfg.Path
		if name == "" {
			name = "openssl"
		}
		bin, err := exec.LookPath(name)
		if err != nil {
			return nil, fmt.Errorf("find openssl %q: %w; %s", name, err, opensslHowTo)
		}
		if abs, err := filepath.Abs(bin); err == nil {
			bin = abs
		}
		o.Invocation = []string{bin}
	}
	out, stderr, err := o.output(ctx, "", "version")
	if err != nil {
		return nil, fmt.Errorf("run %s version: %w: %s", strings.Join(o.Invocation, " "), err, clip(stderr, 400))
	}
	o.Version, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
	v, err := ParseVersion(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(o.Invocation, " "), err)
	}
	if !v.AtLeast(minOpenSSLMajor, minOpenSSLMinor) {
		return nil, fmt.Errorf("%s is %q: %w; %s", o.Invocation[len(o.Invocation)-1], o.Version, ErrTooOld, opensslHowTo)
	}
	return o, nil
}

// rootLibraryPath is the --library-path of a Debian root: usr/lib/<triplet> and lib/<triplet>
// for the triplet whose folder holds libcrypto.so.3.
func rootLibraryPath(root string) (libs, triplet string, err error) {
	m, _ := filepath.Glob(filepath.Join(root, "usr", "lib", "*", "libcrypto.so.3"))
	if len(m) == 0 {
		return "", "", fmt.Errorf("openssl root %s: no usr/lib/<triplet>/libcrypto.so.3", root)
	}
	triplet = filepath.Base(filepath.Dir(m[0]))
	return filepath.Join(root, "usr", "lib", triplet) + ":" + filepath.Join(root, "lib", triplet), triplet, nil
}

// command is one openssl invocation with args, run in dir.
func (o *CLI) command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	argv := append(slices.Clone(o.Invocation), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), o.Env...)
	return cmd
}

// output runs openssl args and returns stdout and stderr.
func (o *CLI) output(ctx context.Context, dir string, args ...string) (string, string, error) {
	cmd := o.command(ctx, dir, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), strings.TrimSpace(stderr.String()), err
}

// Capabilities says what this openssl lets a runner run.
func (o *CLI) Capabilities() protocol.Capabilities {
	return protocol.Capabilities{OpenSSL: o.Version, OpenSSLUsable: true}
}

// Probe resolves cfg and reports the runner's capabilities: a usable openssl, or the
// version found (if any) and why it does not qualify.
func Probe(ctx context.Context, cfg Config) protocol.Capabilities {
	o, err := Resolve(ctx, cfg)
	if err != nil {
		c := protocol.Capabilities{OpenSSLReason: err.Error()}
		if errors.Is(err, ErrTooOld) {
			c.OpenSSL = opensslVersionIn(err.Error())
		}
		return c
	}
	return o.Capabilities()
}

func opensslVersionIn(s string) string {
	_, after, ok := strings.Cut(s, `"OpenSSL `)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return "OpenSSL " + v
}

// ParseProviders reads `openssl list -providers` output into one line per provider:
// "default: OpenSSL Default Provider 3.5.9 (active)".
func ParseProviders(out string) []string {
	var provs []string
	var cur, name, version, status string
	flush := func() {
		if cur == "" {
			return
		}
		s := cur
		if name != "" {
			s += ": " + name
		}
		if version != "" {
			s += " " + version
		}
		if status != "" {
			s += " (" + status + ")"
		}
		provs = append(provs, s)
		cur, name, version, status = "", "", "", ""
	}
	for line := range strings.SplitSeq(out, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed == "Providers:" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		k, v, kv := strings.Cut(trimmed, ":")
		switch {
		case indent <= 2 && !kv:
			flush()
			cur = clip(trimmed, 64)
		case cur != "" && kv:
			switch strings.TrimSpace(k) {
			case "name":
				name = clip(strings.TrimSpace(v), 80)
			case "version":
				version = clip(strings.TrimSpace(v), 32)
			case "status":
				status = clip(strings.TrimSpace(v), 32)
			}
		}
	}
	flush()
	return provs
}

// Info describes the openssl for environment.json: version, providers, the invocation and,
// for a root, the loader's own overhead (see measureLoaderOverhead).
func (o *CLI) Info(ctx context.Context) artifacts.OpenSSLInfo {
	info := artifacts.OpenSSLInfo{Version: o.Version, Invocation: slices.Clone(o.Invocation), Env: slices.Clone(o.Env)}
	if d, err := fileDigest(o.Invocation[len(o.Invocation)-1]); err == nil {
		info.BinaryDigest = d
	}
	if out, _, err := o.output(ctx, "", "list", "-providers"); err == nil {
		info.Providers = ParseProviders(out)
	}
	if o.root != "" {
		info.LoaderOverheadNs, info.LoaderOverheadMethod = o.measureLoaderOverhead(ctx)
	}
	return info
}

// fileDigest is "sha256:<hex>" of the file at path (a command name is looked up in PATH).
func fileDigest(path string) (string, error) {
	if !strings.ContainsRune(path, os.PathSeparator) {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", err
		}
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, 1<<30)); err != nil {
		return "", err
	}
	return artifacts.DigestOfSum(h.Sum(nil)), nil
}

// loaderSamples is how many runs each side of the loader-overhead comparison gets.
const loaderSamples = 31

// measureLoaderOverhead measures the median wall time the loader invocation adds to one
// command. When the root's openssl also runs when the kernel executes it directly (its
// PT_INTERP exists on the host and works with the root's libraries), it compares `openssl
// version` both ways. Otherwise (the usual case: the host's loader at that path is a
// different glibc's) it compares the root's loader running the root's usr/bin/true with the
// host's /usr/bin/true executed by the kernel, and says so. Runs alternate between the two
// sides; the first pair is discarded. It returns 0 and the reason when neither works.
func (o *CLI) measureLoaderOverhead(ctx context.Context) (float64, string) {
	loader, libs, bin := o.Invocation[0], o.Invocation[2], o.Invocation[3]
	direct := exec.CommandContext(ctx, bin, "version")
	direct.Env = append(os.Environ(), append(slices.Clone(o.Env), "LD_LIBRARY_PATH="+libs)...)
	if out, err := direct.Output(); err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), o.Version) {
		viaLoader := func() *exec.Cmd { return o.command(ctx, "", "version") }
		kernel := func() *exec.Cmd {
			c := exec.CommandContext(ctx, bin, "version")
			c.Env = direct.Env
			return c
		}
		d, err := medianDifference(viaLoader, kernel)
		if err != nil {
			return 0, "not measured: " + err.Error()
		}
		return d, fmt.Sprintf("median of %d runs of `openssl version` through the loader minus the median of %d runs of the same binary executed by the kernel (LD_LIBRARY_PATH set to the same folders), runs alternating", loaderSamples, loaderSamples)
	}
	if os.Geteuid() == 0 && o.root != "" {
		// As root the kernel can execute the same binary with its own interpreter inside the
		// root (a chroot in this untimed measurement only), so the difference is the loader
		// invocation alone: same binary, same libraries, same configuration.
		var env []string
		for _, kv := range o.Env {
			k, v, _ := strings.Cut(kv, "=")
			env = append(env, k+"=/"+strings.TrimPrefix(strings.TrimPrefix(v, o.root), "/"))
		}
		kernel := func() *exec.Cmd {
			c := exec.CommandContext(ctx, "/usr/bin/openssl", "version")
			c.Path = "/usr/bin/openssl"
			c.Dir = "/"
			c.Env = env
			c.SysProcAttr = &syscall.SysProcAttr{Chroot: o.root}
			return c
		}
		if out, err := kernel().Output(); err == nil && strings.HasPrefix(strings.TrimSpace(string(out)), o.Version) {
			viaLoader := func() *exec.Cmd { return o.command(ctx, "", "version") }
			d, err := medianDifference(viaLoader, kernel)
			if err != nil {
				return 0, "not measured: " + err.Error()
			}
			return d, fmt.Sprintf("median of %d runs of `openssl version` through the root's loader with --library-path minus the median of %d runs of the same binary executed by the kernel inside the root (chroot, in this measurement only), runs alternating", loaderSamples, loaderSamples)
		}
	}
	rootTrue := filepath.Join(o.root, "usr", "bin", "true")
	if _, err := os.Stat(rootTrue); err != nil {
		return 0, "not measured: the root's openssl does not run without its loader and the root has no usr/bin/true"
	}
	viaLoader := func() *exec.Cmd { return exec.CommandContext(ctx, loader, "--library-path", libs, rootTrue) }
	kernel := func() *exec.Cmd { return exec.CommandContext(ctx, "/usr/bin/true") }
	d, err := medianDifference(viaLoader, kernel)
	if err != nil {
		return 0, "not measured: " + err.Error()
	}
	return d, fmt.Sprintf("the root's openssl cannot be executed by the kernel here (its interpreter %s on the host is not the root's loader), so: median of %d runs of the root's usr/bin/true through the root's loader with --library-path minus the median of %d runs of the host's /usr/bin/true executed by the kernel, runs alternating; the two sides also differ in their C library", interpOf(bin), loaderSamples, loaderSamples)
}

func interpOf(bin string) string {
	f, err := elf.Open(bin)
	if err != nil {
		return "(unknown)"
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				return string(bytes.TrimRight(b, "\x00"))
			}
		}
	}
	return "(none)"
}

// medianDifference runs a and b alternately loaderSamples+1 times each (discarding the first
// pair) and returns median(a) - median(b) in ns.
func medianDifference(a, b func() *exec.Cmd) (float64, error) {
	var ta, tb []float64
	for i := 0; i <= loaderSamples; i++ {
		for j, mk := range []func() *exec.Cmd{a, b} {
			c := mk()
			t0 := time.Now()
			err := c.Run()
			d := float64(time.Since(t0).Nanoseconds())
			if err != nil {
				return 0, fmt.Errorf("%s: %w", strings.Join(c.Args, " "), err)
			}
			if i == 0 {
				continue
			}
			if j == 0 {
				ta = append(ta, d)
			} else {
				tb = append(tb, d)
			}
		}
	}
	return runner.Summarize(ta).Median - runner.Summarize(tb).Median, nil
}
