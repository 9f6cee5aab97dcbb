package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process of the demonstration, its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // the exit status, once done is closed
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the process (its process group) and waits for it.
func (p *proc) kill() {
	if !p.exited() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// output returns what the process wrote so far.
func (p *proc) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// tail is the last lines of the process's output, for an error message.
func (p *proc) tail() string {
	lines := strings.Split(strings.TrimRight(p.output(), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

// procs starts and stops the demonstration's processes. Each runs in its own process group,
// so a Ctrl-C at the terminal reaches only the demonstration, which then stops them in order.
type procs struct {
	logs     string
	mu       sync.Mutex
	list     []*proc
	stopping bool
}

// errStopping is start's error once stopAll has begun.
var errStopping = errors.New("the demonstration is stopping")

// start runs bin with args and env added to the environment, its output in logs/name.log.
func (ps *procs) start(name string, env []string, bin string, args ...string) (*proc, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.stopping {
		return nil, errStopping
	}
	f, err := os.Create(filepath.Join(ps.logs, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: f.Name(), done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	ps.list = append(ps.list, p)
	return p, nil
}

// stopAll asks every process still running to stop (SIGTERM), in reverse order of start, and
// SIGKILLs those that have not stopped within five seconds.
func (ps *procs) stopAll() {
	ps.mu.Lock()
	ps.stopping = true
	list := append([]*proc(nil), ps.list...)
	ps.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		if p := list[i]; !p.exited() {
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	deadline := time.After(5 * time.Second)
	for _, p := range list {
		select {
		case <-p.done:
		case <-deadline:
			p.kill()
		}
	}
}

// script runs one of the repository's scripts to its end and returns its standard output;
// its standard error is kept in logs/name.log. It runs in its own process group, so the
// servers it starts (PostgreSQL) do not receive the terminal's Ctrl-C.
func script(ctx context.Context, logs, name string, path string, args ...string) (string, error) {
	f, err := os.Create(filepath.Join(logs, name+".log"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &out, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(f.Name())
		return "", fmt.Errorf("%s %s: %w\n%s", path, strings.Join(args, " "), err, b)
	}
	return strings.TrimSpace(out.String()), nil
}

// freeAddr returns a loopback address with a port free at the time of asking.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHealthy waits until url answers 200, the process exits or ctx ends.
func waitHealthy(ctx context.Context, p *proc, url string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited (%v):%s", p.name, p.err, p.tail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if p != nil {
				return fmt.Errorf("%s did not answer %s within %v:%s", p.name, url, within, p.tail())
			}
			return fmt.Errorf("%s did not answer within %v", url, within)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitListening waits until addr accepts a connection, the process exits or ctx ends.
func waitListening(ctx context.Context, p *proc, addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited (%v):%s", p.name, p.err, p.tail())
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %v:%s", p.name, addr, within, p.tail())
}

// moduleRoot is the folder holding go.mod, from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository (or pass -root)")
		}
		dir = parent
	}
}
