package qemu

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"pqrepro/firmware/tools/rp2040js"
	"pqrepro/runner/wire"
)

// rp2040jsVersion names the emulator of an rp2040js board: the package's version under
// moduleDir and node's.
func rp2040jsVersion(ctx context.Context, node, moduleDir string) (string, error) {
	v, err := rp2040js.Version(moduleDir)
	if err != nil {
		return "", err
	}
	nv, err := Version(ctx, node)
	if err != nil {
		return "", err
	}
	return "rp2040js " + v + " (node " + nv + "; batch loop, decode table, RX unpaced under flow control)", nil
}

// UF2Beside is the UF2 the firmware build writes next to the ELF it was made from, which an
// rp2040js board boots.
func UF2Beside(elf string) string { return strings.TrimSuffix(elf, filepath.Ext(elf)) + ".uf2" }

// pipeLine is the harness's stdin and stdout as one line; Close closes stdin, which ends
// the harness.
type pipeLine struct {
	io.Reader
	w io.WriteCloser
}

func (p pipeLine) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeLine) Close() error                { return p.w.Close() }

// startRP2040JS launches the harness (firmware/tools/rp2040js, installed into a temporary
// folder) on the UF2 beside elf, with the UART on its stdin and stdout; its diagnostics go to
// the log. The harness starts the core only once its stdin is open, so nothing is lost.
func startRP2040JS(m Machine, moduleDir, elf string, log io.Writer, opts wire.Options) (_ *session, err error) {
	uf2 := UF2Beside(elf)
	if _, err := os.Stat(uf2); err != nil {
		return nil, fmt.Errorf("firmware image: %w (the rp2040js board boots the UF2 beside the ELF)", err)
	}
	if _, err := rp2040js.Version(moduleDir); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pqrepro-rp2040js-")
	if err != nil {
		return nil, err
	}
	run, err := rp2040js.Install(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(m.Binary, run, moduleDir, uf2)
	// The emulator dies with the runner, as QEMU does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd.Stderr = errW
	s := &session{cmd: cmd, dir: dir, exited: make(chan struct{}), outDone: make(chan struct{}), stopped: make(chan struct{})}
	err = s.startChild(cmd)
	errW.Close()
	if err != nil {
		errR.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", m.Binary, err)
	}
	s.pid = cmd.Process.Pid
	fmt.Fprintf(log, "rp2040js: pid %d: %s %s %s %s\n", s.pid, m.Binary, run, moduleDir, uf2)
	go func() {
		defer close(s.outDone)
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			fmt.Fprintf(log, "rp2040js: %s\n", sc.Text())
		}
	}()
	opts.Activity = s.activity
	s.conn = wire.NewConn(pipeLine{Reader: stdout, w: stdin}, opts)
	go func() { // a dead emulator ends the conversation at once
		select {
		case <-s.exited:
			s.conn.Close()
		case <-s.stopped:
		}
	}()
	return s, nil
}
