package serialport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"pqrepro/internal/lockedio"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrInfrastructure marks a failure of the lab rather than of the experiment: a flasher that
// could not write the image, a port that vanished, a reset that could not be done. Such a
// run is reported as failed with its log, never as a result.
var ErrInfrastructure = errors.New("infrastructure failure")

// Flasher writes a firmware image to a board with an external tool (esptool, picotool,
// openocd). Command is the argument list; "{image}", "{port}" and "{baud}" in any argument
// are replaced by the image path, the serial port and the baud rate.
type Flasher struct {
	Command []string
	// Retries is how many times a failed flash is tried again (0: no retry).
	Retries int
	// Timeout bounds one attempt (default 5 minutes).
	Timeout time.Duration
	// Pause is the wait between attempts (default 2s), for a USB device to come back.
	Pause time.Duration
}

// Validate checks that the command names a program and where the image goes.
func (f *Flasher) Validate() error {
	if len(f.Command) == 0 || f.Command[0] == "" {
		return errors.New("flasher: command is empty")
	}
	if !strings.Contains(strings.Join(f.Command, "\x00"), "{image}") {
		return errors.New("flasher: command must contain {image} where the image path goes")
	}
	if f.Retries < 0 || f.Retries > 20 {
		return fmt.Errorf("flasher: retries must be 0..20, got %d", f.Retries)
	}
	return nil
}

// Expand substitutes the placeholders.
func (f *Flasher) Expand(port, image string, baud int) []string {
	r := strings.NewReplacer("{image}", image, "{port}", port, "{baud}", strconv.Itoa(baud))
	out := make([]string, len(f.Command))
	for i, a := range f.Command {
		out[i] = r.Replace(a)
	}
	return out
}

// FlashError is a flash that failed every attempt. It wraps ErrInfrastructure and the last
// attempt's error.
type FlashError struct {
	Command  []string
	Attempts int
	Err      error
	// Output is the end of the last attempt's output.
	Output string
}

func (e *FlashError) Error() string {
	out := ""
	if e.Output != "" {
		out = ": " + lastLine(e.Output)
	}
	return fmt.Sprintf("%v: flashing with %s failed %d time(s): %v%s", ErrInfrastructure, e.Command[0], e.Attempts, e.Err, out)
}

func (e *FlashError) Unwrap() []error { return []error{ErrInfrastructure, e.Err} }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// Flash runs the flasher until it succeeds or its retries are used up; every attempt's
// command and output go to log. A cancelled ctx returns ctx.Err() wrapped.
func (f *Flasher) Flash(ctx context.Context, port, image string, baud int, log io.Writer) error {
	if err := f.Validate(); err != nil {
		return err
	}
	timeout, pause := f.Timeout, f.Pause
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	if pause <= 0 {
		pause = 2 * time.Second
	}
	args := f.Expand(port, image, baud)
	var last error
	out := &lockedio.Buffer{}
	for attempt := 1; attempt <= f.Retries+1; attempt++ {
		if attempt > 1 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("flash: %w", ctx.Err())
			case <-time.After(pause):
			}
		}
		fmt.Fprintf(log, "flash: attempt %d of %d: %s\n", attempt, f.Retries+1, strings.Join(args, " "))
		out = &lockedio.Buffer{}
		actx, cancel := context.WithTimeout(ctx, timeout)
		cmd := exec.CommandContext(actx, args[0], args[1:]...)
		w := io.MultiWriter(out, prefixWriter{w: log, prefix: "flash: | "})
		cmd.Stdout, cmd.Stderr = w, w
		// The flasher and anything it started die together when the attempt times out.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		cancel()
		if err == nil {
			fmt.Fprintf(log, "flash: done on attempt %d\n", attempt)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("flash: %w", ctx.Err())
		}
		if actx.Err() != nil {
			err = fmt.Errorf("timed out after %v: %w", timeout, err)
		}
		last = err
		fmt.Fprintf(log, "flash: attempt %d failed: %v\n", attempt, err)
	}
	return &FlashError{Command: args, Attempts: f.Retries + 1, Err: last, Output: tail(out.String(), 4096)}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// prefixWriter writes each line with a prefix. Partial lines are written as they come.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l == "" {
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		io.WriteString(p.w, p.prefix+l)
	}
	return len(b), nil
}
