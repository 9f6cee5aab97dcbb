package tlsmatrix

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"pqrepro/internal/lockedio"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TLSServerArg is the hidden first argument that turns the pqrepro binary (or a test binary)
// into the TLS server child of a tls-matrix cell. main calls TLSServer when it sees it.
const TLSServerArg = "__pqrepro-tls-server"

// The child's control protocol, over its stdin and stdout, one JSON value per line:
//
//	parent → child: the cell (tlsCellConfig)
//	child → parent: {"port": P}                        listening on 127.0.0.1:P
//	parent → child: {"mark": N}                        after the client finished its N-th handshake
//	child → parent: {"cpuNs": C, "handshakes": [...]}  once the child has served N connections:
//	                its own getrusage(RUSAGE_SELF) user + system time so far, and its record of
//	                every connection served since the previous mark
//
// The child serves one connection at a time, so the CPU between two marks is the batch's
// alone. It exits when its stdin closes.

type tlsHello struct {
	Port int    `json:"port"`
	Err  string `json:"err,omitempty"`
}

type tlsMarkReq struct {
	Mark int `json:"mark"`
}

type tlsMarkResp struct {
	CPUNs      int64          `json:"cpuNs"`
	Handshakes []tlsHandshake `json:"handshakes"`
	Err        string         `json:"err,omitempty"`
}

// TLSServer runs the TLS server child: it reads its cell from in, serves loopback
// connections and answers marks on out until in closes. It returns the exit code: 0, or 1
// when the child failed (said on stderr).
func TLSServer(in io.Reader, out io.Writer) int {
	if err := tlsServerChild(in, out); err != nil {
		fmt.Fprintln(os.Stderr, "tls server:", err)
		return 1
	}
	return 0
}

func tlsServerChild(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(bufio.NewReader(in))
	enc := json.NewEncoder(out)
	var cfg tlsCellConfig
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("read the cell: %w", err)
	}
	srv, err := newTLSServer(&cfg)
	if err != nil {
		enc.Encode(tlsHello{Err: err.Error()})
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		enc.Encode(tlsHello{Err: err.Error()})
		return err
	}
	defer ln.Close()
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var served []tlsHandshake
	total := 0
	var acceptErr error
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				mu.Lock()
				acceptErr = err
				cond.Broadcast()
				mu.Unlock()
				return
			}
			conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
			rec := srv.serve(conn)
			conn.Close()
			mu.Lock()
			served = append(served, rec)
			total++
			cond.Broadcast()
			mu.Unlock()
		}
	}()
	if err := enc.Encode(tlsHello{Port: ln.Addr().(*net.TCPAddr).Port}); err != nil {
		return err
	}
	for {
		var req tlsMarkReq
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read a mark: %w", err)
		}
		mu.Lock()
		for total < req.Mark && acceptErr == nil {
			cond.Wait()
		}
		resp := tlsMarkResp{Handshakes: served}
		if total < req.Mark {
			resp.Err = fmt.Sprintf("served %d connections, the client made %d: %v", total, req.Mark, acceptErr)
		}
		served = nil
		mu.Unlock()
		cpu, err := processCPU()
		if err != nil {
			resp.Err = err.Error()
		}
		resp.CPUNs = cpu
		if err := enc.Encode(resp); err != nil {
			return err
		}
	}
}

// tlsHandshakeTimeout bounds one connection (handshake and echo) on either end.
const tlsHandshakeTimeout = 30 * time.Second

// processCPU is this process's user + system CPU time so far, in ns, from
// getrusage(RUSAGE_SELF): every thread of the process, the Go runtime's included; not its
// children.
func processCPU() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), nil
}

// tlsChild is a running server child, seen from the runner.
type tlsChild struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	dec    *json.Decoder
	enc    *json.Encoder
	stderr *lockedio.Buffer
	addr   string
	done   chan error
}

// startTLSChild starts exe as the server child of cfg and waits for its port.
func startTLSChild(ctx context.Context, exe string, cfg *tlsCellConfig) (*tlsChild, error) {
	cmd := exec.CommandContext(ctx, exe, TLSServerArg)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &tlsChild{cmd: cmd, stdin: stdin, dec: json.NewDecoder(bufio.NewReader(stdout)), enc: json.NewEncoder(stdin), stderr: &lockedio.Buffer{Limit: 64 << 10}, done: make(chan error, 1)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server child: %w", err)
	}
	if err := c.enc.Encode(cfg); err != nil {
		c.stop()
		return nil, fmt.Errorf("send the cell to the server child: %w", err)
	}
	var hello tlsHello
	if err := c.dec.Decode(&hello); err != nil {
		c.stop()
		return nil, fmt.Errorf("server child: no port: %w (stderr: %s)", err, c.stderrText())
	}
	if hello.Err != "" {
		c.stop()
		return nil, fmt.Errorf("server child: %s", hello.Err)
	}
	c.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(hello.Port))
	return c, nil
}

// mark asks the child for its CPU and records once it has served n connections.
func (c *tlsChild) mark(n int) (tlsMarkResp, error) {
	var resp tlsMarkResp
	if err := c.enc.Encode(tlsMarkReq{Mark: n}); err != nil {
		return resp, fmt.Errorf("server child: send mark: %w", err)
	}
	if err := c.dec.Decode(&resp); err != nil {
		return resp, fmt.Errorf("server child: read mark: %w (stderr: %s)", err, c.stderrText())
	}
	if resp.Err != "" {
		return resp, fmt.Errorf("server child: %s", resp.Err)
	}
	return resp, nil
}

// stop closes the child's stdin (it exits) and waits for it, killing it after a while.
func (c *tlsChild) stop() error {
	c.stdin.Close()
	go func() { c.done <- c.cmd.Wait() }()
	select {
	case err := <-c.done:
		return err
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		return <-c.done
	}
}

func (c *tlsChild) stderrText() string {
	return strings.TrimSpace(c.stderr.String())
}
