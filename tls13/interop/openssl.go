package interop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"pqrepro/internal/cachedir"
	"pqrepro/internal/lockedio"
	"pqrepro/internal/osroot"
	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// OpenSSLRootEnv names the environment variable holding the Debian 13 root (scripts/test
// exports it).
const OpenSSLRootEnv = "PQREPRO_OPENSSL_ROOT"

// ErrNoOpenSSL is returned (wrapped) by FindOpenSSL when no root is configured or found.
var ErrNoOpenSSL = errors.New("no OpenSSL 3.5 root: run scripts/openssl-root (it makes trixie-openssl in the cache folder, scripts/cachedir) or set " + OpenSSLRootEnv)

// OpenSSL is the openssl of a root directory (scripts/openssl-root), executed through the
// root's own dynamic loader with --library-path, never through chroot. The few lines that
// find the loader and library folders are copied from runner/opensslcli.go so that this package
// does not import runner (which may import the TLS packages). Safe for concurrent use.
type OpenSSL struct {
	// Root is the root directory; Version the first line `openssl version` printed.
	Root, Version string
	// Invocation is the argv prefix of every command; Env the variables added to it.
	Invocation []string
	Env        []string
}

// FindOpenSSL resolves the root named by PQREPRO_OPENSSL_ROOT, else .cache/trixie-openssl in
// the first parent of the working directory holding go.mod, else trixie-openssl in the cache
// folder (internal/cachedir, where scripts/openssl-root makes it), and checks it is OpenSSL 3.5 or
// later. Without either it returns ErrNoOpenSSL.
func FindOpenSSL(ctx context.Context) (*OpenSSL, error) {
	root := os.Getenv(OpenSSLRootEnv)
	if root == "" {
		dir, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find openssl root: %w", err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				cand := filepath.Join(dir, ".cache", "trixie-openssl")
				if _, err := os.Stat(filepath.Join(cand, "usr", "bin", "openssl")); err == nil {
					root = cand
				}
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		if root == "" {
			root = cachedir.Find(cachedir.OpenSSLRoot)
		}
		if root == "" {
			return nil, ErrNoOpenSSL
		}
	}
	return NewOpenSSL(ctx, root)
}

var versionRE = regexp.MustCompile(`^OpenSSL (\d+)\.(\d+)\.(\d+)`)

// NewOpenSSL resolves the openssl inside root and refuses anything older than 3.5.
func NewOpenSSL(ctx context.Context, root string) (*OpenSSL, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("openssl root %s: %w", root, err)
	}
	bin := filepath.Join(root, "usr", "bin", "openssl")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("openssl root %s has no usr/bin/openssl: %w: %w", root, err, ErrNoOpenSSL)
	}
	loader, err := osroot.Loader(root, bin)
	if err != nil {
		return nil, err
	}
	m, _ := filepath.Glob(filepath.Join(root, "usr", "lib", "*", "libcrypto.so.3"))
	if len(m) == 0 {
		return nil, fmt.Errorf("openssl root %s: no usr/lib/<triplet>/libcrypto.so.3", root)
	}
	triplet := filepath.Base(filepath.Dir(m[0]))
	o := &OpenSSL{
		Root:       root,
		Invocation: []string{loader, "--library-path", filepath.Join(root, "usr", "lib", triplet) + ":" + filepath.Join(root, "lib", triplet), bin},
		Env: []string{
			"OPENSSL_MODULES=" + filepath.Join(root, "usr", "lib", triplet, "ossl-modules"),
			"OPENSSL_CONF=" + filepath.Join(root, "etc", "ssl", "openssl.cnf"),
		},
	}
	out, stderr, err := o.Output(ctx, "version")
	if err != nil {
		return nil, fmt.Errorf("run openssl version in %s: %w: %s", root, err, clip(stderr, 400))
	}
	o.Version, _, _ = strings.Cut(strings.TrimSpace(out), "\n")
	v := versionRE.FindStringSubmatch(o.Version)
	if v == nil {
		return nil, fmt.Errorf("openssl in %s: not an OpenSSL version line: %q", root, clip(o.Version, 80))
	}
	major, _ := strconv.Atoi(v[1])
	minor, _ := strconv.Atoi(v[2])
	if major < 3 || (major == 3 && minor < 5) {
		return nil, fmt.Errorf("openssl in %s is %q, older than 3.5 (no ML-KEM, ML-DSA): rebuild it with scripts/openssl-root", root, o.Version)
	}
	return o, nil
}

// Command is one openssl invocation; the caller runs it. ctx kills it.
func (o *OpenSSL) Command(ctx context.Context, args ...string) *exec.Cmd {
	argv := append(slices.Clone(o.Invocation), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Output runs openssl args to completion and returns its stdout and (trimmed) stderr.
func (o *OpenSSL) Output(ctx context.Context, args ...string) (string, string, error) {
	cmd := o.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), strings.TrimSpace(stderr.String()), err
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// PeerTimeout bounds every OpenSSL peer process.
const PeerTimeout = 30 * time.Second

// OpenSSLServer is a running `openssl s_server -rev -naccept 1 -trace` for one cell: it accepts
// one connection, answers every line with the line reversed, and exits when the connection
// closes.
type OpenSSLServer struct {
	// Addr is the loopback address it listens on (host:port).
	Addr string
	cell Cell
	cmd  *exec.Cmd
	out  *lockedio.Buffer
	err  *lockedio.Buffer
	done chan error
	stop context.CancelFunc
}

// StartOpenSSLServer writes chain's PEM files into dir and starts s_server for cell on a free
// loopback port (127.0.0.1:0, the port read from its ACCEPT line), TLS 1.3 only, with the
// cell's group and signature algorithm alone and TLS_AES_128_GCM_SHA256. It returns once the
// server listens. The process dies after PeerTimeout or when ctx ends; Wait collects it.
func (o *OpenSSL) StartOpenSSLServer(ctx context.Context, cell Cell, chain *tlscert.Chain, dir string) (*OpenSSLServer, error) {
	return o.startServerN(ctx, cell, chain, dir, tls13.TLS_AES_128_GCM_SHA256, 1)
}

// StartOpenSSLServerN is StartOpenSSLServer accepting n connections one after another
// (-naccept n) before it exits: the outside server of a tls-matrix cell's warm-up and timed
// handshakes.
func (o *OpenSSL) StartOpenSSLServerN(ctx context.Context, cell Cell, chain *tlscert.Chain, dir string, n int) (*OpenSSLServer, error) {
	return o.startServerN(ctx, cell, chain, dir, tls13.TLS_AES_128_GCM_SHA256, n)
}

// startServer is StartOpenSSLServer accepting suite alone instead of TLS_AES_128_GCM_SHA256.
func (o *OpenSSL) startServer(ctx context.Context, cell Cell, chain *tlscert.Chain, dir string, suite tls13.CipherSuite) (*OpenSSLServer, error) {
	return o.startServerN(ctx, cell, chain, dir, suite, 1)
}

func (o *OpenSSL) startServerN(ctx context.Context, cell Cell, chain *tlscert.Chain, dir string, suite tls13.CipherSuite, n int) (*OpenSSLServer, error) {
	group, sigalg, err := cell.OpenSSLNames()
	if err != nil {
		return nil, err
	}
	_, certFile, keyFile, err := chain.WritePEM(dir)
	if err != nil {
		return nil, fmt.Errorf("s_server for %v: %w", cell, err)
	}
	ctx, cancel := context.WithTimeout(ctx, PeerTimeout)
	cmd := o.Command(ctx, "s_server", "-tls1_3", "-ciphersuites", suite.String(),
		"-groups", group, "-sigalgs", sigalg, "-cert", certFile, "-key", keyFile,
		"-accept", "127.0.0.1:0", "-naccept", strconv.Itoa(n), "-rev", "-trace")
	s := &OpenSSLServer{cell: cell, cmd: cmd, out: &lockedio.Buffer{}, err: &lockedio.Buffer{}, done: make(chan error, 1), stop: cancel}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, fmt.Errorf("s_server for %v: %w", cell, err)
	}
	cmd.Stderr = s.err
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start s_server for %v: %w", cell, err)
	}
	addr := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		sent := false
		for {
			line, err := r.ReadString('\n')
			s.out.WriteString(line)
			if a, ok := strings.CutPrefix(strings.TrimSpace(line), "ACCEPT "); ok && !sent {
				addr <- a
				sent = true
			}
			if err != nil {
				break
			}
		}
		s.done <- cmd.Wait()
	}()
	select {
	case s.Addr = <-addr:
		return s, nil
	case err := <-s.done:
		cancel()
		return nil, fmt.Errorf("s_server for %v exited before listening: %v: %s", cell, err, clip(s.err.String(), 800))
	case <-ctx.Done():
		cancel()
		return nil, fmt.Errorf("s_server for %v did not listen: %w: %s", cell, ctx.Err(), clip(s.err.String(), 800))
	}
}

// Close kills the server if it still runs.
func (s *OpenSSLServer) Close() { s.stop() }

// ServerReport is what s_server's -trace output says about the connection it served.
type ServerReport struct {
	// Group is the NamedGroup codepoint of the key share in the ServerHello it sent (the last
	// one, after a HelloRetryRequest); Scheme the SignatureScheme of its CertificateVerify.
	Group, Scheme uint16
	// CipherSuite is the cipher_suite of the last ServerHello it sent.
	CipherSuite uint16
	// HelloRetry is whether it sent a HelloRetryRequest.
	HelloRetry bool
	// Alert is the description of the first alert it received ("unknown CA(48)",
	// "close notify(0)"), "" for none.
	Alert string
	// Output is its whole stdout, for error messages.
	Output string
}

// Wait waits for the server to exit (after its one connection) and parses its trace. An exit
// status other than 0 is an error carrying stderr.
func (s *OpenSSLServer) Wait() (*ServerReport, error) {
	defer s.stop()
	err := <-s.done
	out := s.out.String()
	if err != nil {
		return nil, fmt.Errorf("s_server for %v: %w: stderr: %s; stdout tail: %s", s.cell, err, clip(s.err.String(), 800), tail(out, 800))
	}
	rep, perr := ParseServerTrace(out)
	// In -rev mode s_server reports the end of its handshake on stderr: CONNECTION ESTABLISHED
	// or CONNECTION FAILURE, and exits 0 either way after its one connection.
	if !strings.Contains(s.err.String(), "CONNECTION ESTABLISHED") {
		alert := "none"
		if rep != nil && rep.Alert != "" {
			alert = rep.Alert
		}
		return nil, fmt.Errorf("s_server for %v: no connection established (alert received: %s): stderr: %s", s.cell, alert, clip(s.err.String(), 800))
	}
	if perr != nil {
		return nil, fmt.Errorf("s_server for %v: %w; stderr: %s", s.cell, perr, clip(s.err.String(), 800))
	}
	return rep, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

var (
	traceNamedGroupRE = regexp.MustCompile(`NamedGroup: .*\((\d+)\)\s*$`)
	traceSuiteRE      = regexp.MustCompile(`^cipher_suite \{0x([0-9A-Fa-f]{2}), 0x([0-9A-Fa-f]{2})\}`)
	traceAlertRE      = regexp.MustCompile(`^Level=\S+, description=(.+)$`)
	traceSigAlgRE     = regexp.MustCompile(`Signature Algorithm: \S+ \(0x([0-9a-fA-F]{4})\)`)
)

// ParseServerTrace reads the -trace output of s_server: in the records it sent ("Sent TLS
// Record" up to the next "Received TLS Record"/"Sent TLS Record") the NamedGroup of the key
// share in its last ServerHello and the Signature Algorithm of its CertificateVerify; in those
// it received, the first alert. A report is returned with the error when the group or the
// scheme is missing.
func ParseServerTrace(out string) (*ServerReport, error) {
	rep := &ServerReport{Output: out}
	var sent, haveGroup, haveScheme bool
	msg := ""
	for line := range strings.SplitSeq(out, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "Sent TLS Record"), strings.HasPrefix(t, "Sent Record"):
			sent, msg = true, ""
			continue
		case strings.HasPrefix(t, "Received TLS Record"), strings.HasPrefix(t, "Received Record"):
			sent, msg = false, ""
			continue
		}
		if !sent {
			if m := traceAlertRE.FindStringSubmatch(t); m != nil && rep.Alert == "" {
				rep.Alert = m[1]
			}
			continue
		}
		switch {
		case strings.HasPrefix(t, "ServerHello,"), strings.HasPrefix(t, "CertificateVerify,"),
			strings.HasPrefix(t, "EncryptedExtensions,"), strings.HasPrefix(t, "Certificate,"), strings.HasPrefix(t, "Finished,"),
			strings.HasPrefix(t, "NewSessionTicket,"), strings.HasPrefix(t, "HelloRetryRequest,"):
			msg, _, _ = strings.Cut(t, ",")
			if msg == "HelloRetryRequest" {
				rep.HelloRetry = true
			}
		}
		// OpenSSL traces a HelloRetryRequest as a ServerHello whose Random is RFC 8446's
		// fixed value CF21AD74 E59A6111 ..., printed as gmt_unix_time and random_bytes.
		if msg == "ServerHello" && strings.HasPrefix(t, "gmt_unix_time=0xCF21AD74") {
			rep.HelloRetry = true
		}
		switch msg {
		case "ServerHello":
			if m := traceNamedGroupRE.FindStringSubmatch(t); m != nil {
				var g uint16
				if _, err := fmt.Sscan(m[1], &g); err != nil {
					return rep, fmt.Errorf("parse s_server trace: NamedGroup %q: %w", m[1], err)
				}
				rep.Group, haveGroup = g, true
			}
			if m := traceSuiteRE.FindStringSubmatch(t); m != nil {
				var hi, lo uint16
				if _, err := fmt.Sscanf(m[1]+" "+m[2], "%x %x", &hi, &lo); err != nil {
					return rep, fmt.Errorf("parse s_server trace: cipher_suite %q: %w", t, err)
				}
				rep.CipherSuite = hi<<8 | lo
			}
		case "CertificateVerify":
			if m := traceSigAlgRE.FindStringSubmatch(t); m != nil {
				var s uint16
				if _, err := fmt.Sscanf(m[1], "%x", &s); err != nil {
					return rep, fmt.Errorf("parse s_server trace: Signature Algorithm %q: %w", m[1], err)
				}
				rep.Scheme, haveScheme = s, true
			}
		}
	}
	if !haveGroup {
		return rep, fmt.Errorf("parse s_server trace: no key share NamedGroup in a ServerHello it sent (%d bytes of output)", len(out))
	}
	if !haveScheme {
		return rep, fmt.Errorf("parse s_server trace: no CertificateVerify Signature Algorithm it sent (%d bytes of output)", len(out))
	}
	return rep, nil
}

// ClientReport is what s_client printed about its connection.
type ClientReport struct {
	// Group is the "Negotiated TLS1.3 group" name (MLKEM512, X25519MLKEM768, ...), which
	// OpenSSL prints for KEM groups; for an ECDH group it prints none, and Group is the curve
	// named by "Peer Temp Key" ("X25519, 253 bits" gives X25519, "ECDH, prime256v1, 256 bits"
	// prime256v1). Scheme is the "Peer signature type" (mldsa44, ed25519, ...).
	Group, Scheme string
	// Verified is whether it printed "Verification: OK" and "Verify return code: 0 (ok)";
	// PeerName the "Verified peername".
	Verified bool
	PeerName string
	// Cipher is the negotiated cipher suite name ("Cipher is X").
	Cipher string
	// Output is its whole stdout (the application data it received is printed in it).
	Output string
}

// ParseClientReport reads the stdout of s_client (without -quiet/-brief).
func ParseClientReport(out string) (*ClientReport, error) {
	rep := &ClientReport{Output: out}
	var verOK, codeOK bool
	tempKey := ""
	for line := range strings.SplitSeq(out, "\n") {
		t := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(t, "Peer Temp Key: "); ok && tempKey == "" {
			tempKey = v
		}
		if v, ok := strings.CutPrefix(t, "Negotiated TLS1.3 group: "); ok && rep.Group == "" {
			rep.Group = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(t, "Peer signature type: "); ok && rep.Scheme == "" {
			rep.Scheme = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(t, "Verified peername: "); ok && rep.PeerName == "" {
			rep.PeerName = strings.TrimSpace(v)
		}
		if _, v, ok := strings.Cut(t, ", Cipher is "); ok && rep.Cipher == "" {
			rep.Cipher = strings.TrimSpace(v)
		}
		if t == "Verification: OK" {
			verOK = true
		}
		if t == "Verify return code: 0 (ok)" {
			codeOK = true
		}
	}
	rep.Verified = verOK && codeOK
	if rep.Group == "" && tempKey != "" {
		parts := strings.Split(tempKey, ",")
		switch {
		case len(parts) >= 3 && strings.TrimSpace(parts[0]) == "ECDH":
			rep.Group = strings.TrimSpace(parts[1])
		case len(parts) >= 1:
			rep.Group = strings.TrimSpace(parts[0])
		}
	}
	if rep.Group == "" {
		return nil, fmt.Errorf("parse s_client output: no \"Negotiated TLS1.3 group\" or \"Peer Temp Key\" line (%d bytes of output)", len(out))
	}
	if rep.Scheme == "" {
		return nil, fmt.Errorf("parse s_client output: no \"Peer signature type\" line (%d bytes of output)", len(out))
	}
	return rep, nil
}

// RunOpenSSLClient runs s_client for cell against addr: TLS 1.3 only, the cell's group and
// signature algorithm alone, TLS_AES_128_GCM_SHA256, chain's CA as the only trust anchor,
// verification errors fatal, host name and SNI serverName. It sends the lines of send (each
// ends with a newline added here) once connected and keeps its input open until it exits,
// which it does when the server closes the connection: the server must answer and then close
// (s_server -rev closes on a line "CLOSE"). dir receives the PEM
// files. The report's Output holds what it received. A non-zero exit is an error with stderr.
func (o *OpenSSL) RunOpenSSLClient(ctx context.Context, cell Cell, chain *tlscert.Chain, serverName, addr string, send []string, dir string) (*ClientReport, error) {
	return o.runClient(ctx, cell, nil, tls13.TLS_AES_128_GCM_SHA256, chain, serverName, addr, send, dir)
}

// runClient is RunOpenSSLClient offering groups (the first gets the key share) instead of the
// cell's group alone when groups is not empty, and suite alone.
func (o *OpenSSL) runClient(ctx context.Context, cell Cell, groups []tls13.Group, suite tls13.CipherSuite, chain *tlscert.Chain, serverName, addr string, send []string, dir string) (*ClientReport, error) {
	group, sigalg, err := cell.OpenSSLNames()
	if err != nil {
		return nil, err
	}
	if len(groups) > 0 {
		var names []string
		for _, g := range groups {
			n, ok := opensslGroups[g]
			if !ok {
				return nil, fmt.Errorf("s_client for %v: no OpenSSL name for group %v", cell, g)
			}
			names = append(names, n)
		}
		group = strings.Join(names, ":")
	}
	var input strings.Builder
	for _, l := range send {
		if strings.ContainsAny(l, "\r\n") {
			return nil, fmt.Errorf("s_client for %v: a line to send holds a line break", cell)
		}
		input.WriteString(l + "\n")
	}
	caFile, _, _, err := chain.WritePEM(dir)
	if err != nil {
		return nil, fmt.Errorf("s_client for %v: %w", cell, err)
	}
	ctx, cancel := context.WithTimeout(ctx, PeerTimeout)
	defer cancel()
	cmd := o.Command(ctx, "s_client", "-tls1_3", "-ciphersuites", suite.String(), "-nocommands",
		"-groups", group, "-sigalgs", sigalg, "-CAfile", caFile, "-verify_return_error",
		"-verify_hostname", serverName, "-servername", serverName, "-connect", addr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("s_client for %v: %w", cell, err)
	}
	var stdout, stderr lockedio.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start s_client for %v: %w", cell, err)
	}
	// The pipe stays open (s_client would close the connection at end of input) until exit.
	if _, err := io.WriteString(stdin, input.String()); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("s_client for %v: write its input: %w: %s", cell, err, clip(stderr.String(), 800))
	}
	err = cmd.Wait()
	stdin.Close()
	if err != nil {
		return nil, fmt.Errorf("s_client for %v against %s: %w: stderr: %s; stdout tail: %s", cell, addr, err, clip(stderr.String(), 800), tail(stdout.String(), 600))
	}
	rep, err := ParseClientReport(stdout.String())
	if err != nil {
		return nil, fmt.Errorf("s_client for %v: %w; stderr: %s", cell, err, clip(stderr.String(), 800))
	}
	return rep, nil
}
