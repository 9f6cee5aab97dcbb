package wire

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startHostProcess runs the host firmware as a process whose liveness the Conn reads from
// /proc (ProcessActivity), as the QEMU driver does for an emulator.
func startHostProcess(t *testing.T, opts Options) (*Conn, *logBuffer, int) {
	t.Helper()
	cmd := exec.Command(hostFirmware(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	log := &logBuffer{}
	opts.Log = log
	opts.Activity = ProcessActivity(cmd.Process.Pid)
	c := NewConn(rw{stdout, stdin}, opts)
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		c.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("conversation:\n%s", log.String())
		}
	})
	return c, log, cmd.Process.Pid
}

var _ io.ReadWriter = rw{}

// TestActivityStoppedBoard stops the board's process (SIGSTOP) with a request outstanding for
// four times the silence limit: a stopped board is not a silent one, so the exchange waits,
// sends nothing meanwhile (eight retry intervals pass), and completes once the process is
// continued. The retry interval leaves a loaded machine a quarter second to schedule the
// continued process before a repeat would be due (at 50 ms CI once saw one, after the stop).
func TestActivityStoppedBoard(t *testing.T) {
	c, log, pid := startHostProcess(t, Options{RetryInterval: 250 * time.Millisecond, SilenceTimeout: 500 * time.Millisecond})
	ctx := context.Background()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	// The stop takes effect when the kernel next handles the process, which a loaded machine
	// can delay past the retry interval: the request goes out only to a board that is stopped.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if a, err := ProcessActivity(pid)(); err == nil && a.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the board's process never showed as stopped")
		}
	}
	go func() {
		time.Sleep(2 * time.Second)
		syscall.Kill(pid, syscall.SIGCONT)
	}()
	before := c.Stats()
	if _, err := c.Bench(ctx, BenchRequest{Algorithm: "ML-KEM-512", Operation: "keygen", Iterations: 3}, nil); err != nil {
		t.Fatalf("Bench across a SIGSTOP of 4 silence limits: %v", err)
	}
	if d := c.Stats(); d.Repeats != before.Repeats || d.Resends != before.Resends {
		t.Errorf("the runner talked to a stopped board: %s", d)
	}
	if !strings.Contains(log.String(), ":SUMMARY:") {
		t.Errorf("no summary in the log")
	}
}

// TestActivityIdleBoard: a board that is idle and says nothing (its answers lost) is asked
// again with a growing back-off and given up on after the silence limit of idle time.
func TestActivityIdleBoard(t *testing.T) {
	c, _, _ := startHostProcess(t, Options{RetryInterval: 50 * time.Millisecond, SilenceTimeout: 800 * time.Millisecond})
	ctx := context.Background()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	// A request the firmware does not answer at all: ERROR frames of an unknown type are
	// answers, so ask for a RESEND from far ahead instead (nothing to send back), as a
	// request whose answer never comes.
	err := c.exchange(ctx, "RESEND", []Field{{"from", "4000000000"}}, func(Frame) (bool, error) { return true, nil })
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "idle for") {
		t.Fatalf("err = %v, want a timeout of an idle board", err)
	}
	if s := c.Stats(); s.Repeats < 2 || s.Repeats > 6 {
		t.Errorf("%d repeats in 0.8 s of idle time from 50 ms with back-off: %s", s.Repeats, s)
	}
}

// TestActivityWorkLimit: a board that works past its operation limit without a frame ends
// the exchange with ErrWorkLimit (an SLH-DSA-SHAKE-256s signature is seconds of CPU on the
// host build; the limit is 100 ms).
func TestActivityWorkLimit(t *testing.T) {
	c, _, _ := startHostProcess(t, Options{RetryInterval: 20 * time.Millisecond})
	ctx := context.Background()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	c.SetWorkLimit(100 * time.Millisecond)
	_, err := c.Bench(ctx, BenchRequest{Algorithm: "SLH-DSA-SHAKE-256s", Operation: "sign", Iterations: 1, MessageLen: 33}, nil)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrWorkLimit) {
		t.Fatalf("err = %v, want ErrWorkLimit", err)
	}
}

// TestActivityGoneBoard: a board whose process has exited ends the exchange at once.
func TestActivityGoneBoard(t *testing.T) {
	c, _, pid := startHostProcess(t, Options{RetryInterval: 20 * time.Millisecond, SilenceTimeout: time.Hour})
	ctx := context.Background()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(pid, syscall.SIGSTOP) // its line stays open, so only /proc can tell
	go func() {
		time.Sleep(200 * time.Millisecond)
		syscall.Kill(pid, syscall.SIGKILL)
	}()
	_, err := c.Bench(ctx, BenchRequest{Algorithm: "ML-KEM-512", Operation: "keygen", Iterations: 3}, nil)
	if !errors.Is(err, ErrGone) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want the board gone", err)
	}
}
