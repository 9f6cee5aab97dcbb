// Package qemu is the board driver for emulated boards: it boots the benchmark firmware in
// QEMU with the UART on a pty the runner allocates and speaks the same framed protocol on it
// as to a board on USB. "Flashing" is starting QEMU with a new image. Every machine runs under
// -icount shift=0, so counts are emulated retired instructions, identical between runs of
// the same manifest; they are never cycles of real silicon.
//
// The catalogue's rp2040js board (rp2040js-picow) is booted the same way in rp2040js instead
// (rp2040js.go): the harness's stdin and stdout are its UART, and its counts are cycles of
// rp2040js's cycle model, also identical between runs and also never silicon cycles.
package qemu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"pqrepro/artifacts"
	"pqrepro/internal/boardcat"
	"pqrepro/internal/lockedio"
	"pqrepro/internal/pty"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
)

// Machine is one emulated board class of the board catalogue (internal/boardcat): the QEMU
// binary and machine options that boot the firmware built for it, and what its counter counts.
type Machine = boardcat.Emulated

// Machines lists the emulated board classes this driver can boot.
func Machines() []Machine { return boardcat.EmulatedBoards() }

// LookupMachine returns the machine of a board class.
func LookupMachine(class string) (Machine, bool) { return boardcat.LookupEmulated(class) }

// QEMU is an emulated board. Each Identity and Run boots a fresh QEMU with Firmware and
// stops it before returning, so nothing outlives a call; cancelling ctx stops QEMU too.
// A QEMU value may be reused for many runs but not concurrently.
type QEMU struct {
	// Name is the board's name in the hardware map (default: the class).
	Name string
	// Class is a machine class (see Machines).
	Class string
	// Firmware is the ELF to boot.
	Firmware string
	// Binary overrides the QEMU binary (default: the machine's, from PATH).
	Binary string
	// BootTimeout bounds starting QEMU (wall time) and the emulator's CPU time before the
	// first HELLO (default 20s). A busy host slows the boot but does not fail it: the HELLO
	// has ten times as long in wall time.
	BootTimeout time.Duration
	// RetryInterval and SilenceTimeout tune the line (see wire.Options). Liveness follows
	// the emulator, not the wall clock: the line ends with wire.ErrTimeout when the
	// emulated CPU has been idle for SilenceTimeout (default 30s) without answering, or has
	// worked for the cell's operation limit (the manifest's, else wire's default) without
	// a frame; QEMU exiting ends it at once. A starved or stopped emulator is waited for.
	RetryInterval, SilenceTimeout time.Duration
	// SkipSelfTest skips the firmware's known-answer vectors (a fraction of a second),
	// which otherwise run before measuring; a failing vector stops the run.
	SkipSelfTest bool
	// Executors measure each experiment kind (device.RunOptions.Executors; default the BENCH
	// kinds only; runner/exec/kinds.Board is the complete table).
	Executors device.Kinds
	// TLSOutside is how the board's client trusts an outside TLS server (spec.tls.server
	// HOST:PORT); nil when none was given.
	TLSOutside *device.TLSOutside
	// TLSClient plays the client of the board's server-role cells instead of the engine
	// (device.RunOptions.TLSClient); nil: the engine.
	TLSClient device.TLSClient
	// RP2040JSDir is where `make rp2040js` installed rp2040js (its node_modules), for the
	// boards the catalogue boots in rp2040js.
	RP2040JSDir string
	// KindFirmware is the ELF booted instead of Firmware for a manifest of a kind (the
	// catalogue's KindImages, beside the board's own image); nil when Firmware serves every
	// kind (an image chosen for a run).
	KindFirmware map[artifacts.Kind]string

	mu         sync.Mutex
	identified string // digest of the image Identity reported
	idLog      []byte // what Identity's session said, replayed at the top of Run's log
	parked     *parkedSession

	// Test hooks: bootImage replaces the ELF QEMU boots (not the one checked against), and
	// started sees each session once the machine runs.
	bootImage string
	started   func(*session)
	// line wraps the runner's end of the UART (fault injection in tests).
	line func(io.ReadWriteCloser) io.ReadWriteCloser
}

var (
	_ runner.Board     = (*QEMU)(nil)
	_ runner.KindBoard = (*QEMU)(nil)
)

// ForKind returns the board that runs a manifest of kind k: q, or, when KindFirmware names an
// image for k, a board configured as q that boots it. An image that is not there is an error
// that names it and the make target that builds it.
func (q *QEMU) ForKind(k artifacts.Kind) (runner.Board, error) {
	img, ok := q.KindFirmware[k]
	if !ok {
		return q, nil
	}
	if _, err := os.Stat(img); err != nil {
		return nil, fmt.Errorf("%s's %s firmware: %w (make -C firmware %s builds it)", q.name(), k, err, q.Class)
	}
	return &QEMU{Name: q.Name, Class: q.Class, Firmware: img, Binary: q.Binary, BootTimeout: q.BootTimeout,
		RetryInterval: q.RetryInterval, SilenceTimeout: q.SilenceTimeout, SkipSelfTest: q.SkipSelfTest,
		Executors: q.Executors, TLSOutside: q.TLSOutside, TLSClient: q.TLSClient, RP2040JSDir: q.RP2040JSDir,
		started: q.started, line: q.line}, nil
}

func (q *QEMU) machine() (Machine, error) {
	m, ok := LookupMachine(q.Class)
	if !ok {
		var cs []string
		for _, m := range boardcat.EmulatedBoards() {
			cs = append(cs, m.Class)
		}
		return m, fmt.Errorf("qemu: unknown machine class %q (known: %s)", q.Class, strings.Join(cs, ", "))
	}
	if q.Binary != "" {
		m.Binary = q.Binary
	}
	return m, nil
}

func (q *QEMU) name() string {
	if q.Name != "" {
		return q.Name
	}
	return q.Class
}

func (q *QEMU) bootTimeout() time.Duration {
	if q.BootTimeout > 0 {
		return q.BootTimeout
	}
	return 20 * time.Second
}

// Version is the first line of `binary --version`, e.g. "QEMU emulator version 7.2.22
// (Debian 1:7.2+dfsg-7+deb12u18+b3)". It is read afresh on every call: an upgraded emulator
// shows up in the next run's identity.
func Version(ctx context.Context, binary string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", binary, err)
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if v == "" {
		return "", fmt.Errorf("%s --version printed nothing", binary)
	}
	return v, nil
}

// Identity boots the firmware, asks HELLO and checks that the board runs the ELF's build.
// A mismatch (device.ErrFirmwareMismatch) stops the run before anything is measured.
func (q *QEMU) Identity(ctx context.Context) (artifacts.BoardIdentity, error) {
	m, err := q.machine()
	if err != nil {
		return artifacts.BoardIdentity{}, err
	}
	img, err := device.LoadImage(q.Firmware)
	if err != nil {
		return artifacts.BoardIdentity{}, err
	}
	ver, err := q.emulatorVersion(ctx, m)
	if err != nil {
		return artifacts.BoardIdentity{}, err
	}
	q.unpark()
	buf := &lockedio.Buffer{}
	log := &lockedio.Writer{W: buf}
	s, h, err := q.boot(ctx, m, img, log)
	q.mu.Lock()
	q.idLog = buf.Bytes()
	if err == nil {
		q.identified = img.Digest
		// The booted board waits for Run, which takes it instead of booting again (one
		// boot per run); stopped if no Run comes within parkFor.
		q.parked = &parkedSession{s: s, log: log, buf: buf, digest: img.Digest}
		q.parked.timer = time.AfterFunc(parkFor, q.unpark)
	}
	q.mu.Unlock()
	if err != nil {
		return artifacts.BoardIdentity{}, err
	}
	id := device.Identity(h, img)
	id.Name, id.Class, id.Driver, id.Emulator, id.Assurance = q.name(), q.Class, "qemu", ver, artifacts.AssuranceEmulated
	id.ClassStatus = artifacts.ClassVerified // the emulated machine is its class
	if !m.IsRP2040JS() {
		// The machine's nominal clock (HELLO clock_hz, the log keeps it) only scales its timer
		// into instructions under -icount: an instruction count has no clock, so none is recorded.
		// rp2040js's counts are cycles of its model at the clk_sys the firmware set up.
		id.Emulator += " (-icount shift=0)"
		id.ClockHz = 0
	}
	return id, nil
}

// Run boots the firmware, checks it is the ELF's build and measures every cell of m. It
// returns an error, and nothing must be published, when the firmware goes silent, QEMU
// dies, or the firmware is not the one the manifest or the board's identity named.
func (q *QEMU) Run(ctx context.Context, m *artifacts.Manifest, obs runner.Observer, log io.Writer) ([]runner.CellResult, error) {
	mc, err := q.machine()
	if err != nil {
		return nil, err
	}
	img, err := device.LoadImage(q.Firmware)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	identified := q.identified
	parked := q.parked
	q.parked = nil
	if parked != nil {
		parked.timer.Stop()
		// What the identity session said so far goes first, as it always did; from here on
		// the same board writes into the run's log.
		parked.log.Redirect(io.Discard)
		q.idLog = parked.buf.Bytes()
	}
	device.ReplayIdentityLog(log, q.idLog)
	q.idLog = nil
	q.mu.Unlock()
	var cur *session
	defer func() {
		if cur != nil {
			cur.stop(log)
		}
	}()
	if parked != nil {
		if parked.digest == img.Digest {
			parked.log.Redirect(log)
			cur = parked.s
			fmt.Fprintf(log, "board: measuring on the board identity booted (qemu pid %d)\n", cur.pid)
		} else {
			parked.s.stop(io.Discard)
		}
	}
	if identified != "" && identified != img.Digest {
		return nil, &device.MismatchError{What: "the image " + img.Path + " (it changed after the board was identified)", Want: identified, Got: img.Digest}
	}
	if err := device.CheckPin(m, img); err != nil {
		return nil, err
	}
	boot := func(ctx context.Context) (*wire.Conn, wire.Hello, error) {
		if cur != nil {
			cur.stop(log)
			cur = nil
		}
		s, h, err := q.boot(ctx, mc, img, log)
		if err != nil {
			return nil, wire.Hello{}, err
		}
		cur = s
		return s.conn, h, nil
	}
	var conn *wire.Conn
	var h wire.Hello
	if cur != nil {
		conn, h = cur.conn, cur.hello
	} else if conn, h, err = boot(ctx); err != nil {
		return nil, err
	}
	var lastWork time.Duration
	clock := func() time.Duration { // the emulator's CPU time: the board's own time
		if cur != nil {
			if a, err := cur.activity(); err == nil {
				lastWork = a.Work
			}
		}
		return lastWork
	}
	cells, err := device.Run(ctx, conn, h, m, obs, log, device.RunOptions{
		Counter: mc.Counter, SelfTest: !q.SkipSelfTest, Class: q.Class, Clock: clock, HashPass: true,
		Reboot: func(ctx context.Context) (*wire.Conn, wire.Hello, error) {
			lastWork = 0
			return boot(ctx)
		},
		EnergyAbsent: energyAbsent(mc),
		Executors:    q.Executors,
		TLSOutside:   q.TLSOutside,
		TLSClient:    q.TLSClient,
	})
	if cur != nil {
		fmt.Fprintf(log, "link: %s\n", cur.conn.Stats())
		if err != nil {
			err = cur.explain(ctx, err)
		}
	}
	return cells, err
}

// EmulatorVersion names the emulator that boots q's class: QEMU's version line, or
// rp2040js's (an error when it is not installed).
func (q *QEMU) EmulatorVersion(ctx context.Context) (string, error) {
	m, err := q.machine()
	if err != nil {
		return "", err
	}
	return q.emulatorVersion(ctx, m)
}

// emulatorVersion names the emulator that boots m: QEMU's version line, or rp2040js's.
func (q *QEMU) emulatorVersion(ctx context.Context, m Machine) (string, error) {
	if m.IsRP2040JS() {
		return rp2040jsVersion(ctx, m.Binary, q.RP2040JSDir)
	}
	return Version(ctx, m.Binary)
}

// boot starts the emulator with img, says HELLO and checks the build-id; the caller stops
// the session.
func (q *QEMU) boot(ctx context.Context, m Machine, img *device.Image, log io.Writer) (*session, wire.Hello, error) {
	elf := img.Path
	if q.bootImage != "" {
		elf = q.bootImage
	}
	fmt.Fprintf(log, "flash: starting %s %s with %s (%s, build-id %s)\n", m.Binary, strings.Join(m.Args, " "), img.Path, img.Digest, img.BuildID)
	opts := wire.Options{Log: log, RetryInterval: q.RetryInterval, SilenceTimeout: q.SilenceTimeout}
	var s *session
	var err error
	if m.IsRP2040JS() {
		s, err = startRP2040JS(m, q.RP2040JSDir, elf, log, opts)
	} else {
		s, err = start(ctx, m, elf, log, opts, q.bootTimeout(), q.line)
	}
	if err != nil {
		if s != nil {
			s.stop(log)
		}
		return nil, wire.Hello{}, err
	}
	if q.started != nil {
		q.started(s)
	}
	hctx, cancel := context.WithTimeout(ctx, 10*q.bootTimeout())
	s.conn.SetWorkLimit(q.bootTimeout())
	h, err := s.conn.Hello(hctx)
	s.conn.SetWorkLimit(0)
	cancel()
	if err == nil {
		fmt.Fprintln(log, device.DescribeHello(h))
		err = device.CheckHello(h, img)
		s.hello = h
	} else {
		err = s.explain(ctx, fmt.Errorf("HELLO: %w", err))
	}
	if err != nil {
		s.stop(log)
		return nil, wire.Hello{}, err
	}
	return s, h, nil
}

// parkFor is how long a board booted by Identity waits for Run before it is stopped.
const parkFor = time.Minute

// parkedSession is the board Identity booted, kept for the Run that follows.
type parkedSession struct {
	s      *session
	log    *lockedio.Writer
	buf    *lockedio.Buffer
	digest string
	timer  *time.Timer
}

// unpark stops a board Identity booted that no Run took.
func (q *QEMU) unpark() {
	q.mu.Lock()
	p := q.parked
	q.parked = nil
	q.mu.Unlock()
	if p != nil {
		p.timer.Stop()
		p.s.stop(p.log)
	}
}

// session is one running QEMU with the firmware's UART on a pty.
type session struct {
	cmd   *exec.Cmd
	pid   int
	dir   string
	qmp   *qmp
	port  *os.File // the pty's master; QEMU has the slave
	conn  *wire.Conn
	hello wire.Hello // the board's answer to the boot's HELLO

	exited  chan struct{} // closed once the process is reaped
	waitErr error         // Wait's error, valid after exited
	outDone chan struct{} // QEMU's stdout/stderr fully logged
	stopped chan struct{}
	stopMu  sync.Once
}

// start allocates a pty (raw, no output translation), launches QEMU paused (-S) with the UART
// on its slave and a QMP socket, and only then resumes the machine over QMP, so no byte the
// firmware sends is lost. The runner allocates the pty rather than asking QEMU for one
// (-serial pty): QEMU 7.2's pty backend reads the port only once a timer (a second after it
// created the pty) has seen it opened, so the first HELLO of every boot waited most of a
// second; a tty QEMU opens by path (its serial backend) is read from the start.
func start(ctx context.Context, m Machine, elf string, log io.Writer, opts wire.Options, bootTimeout time.Duration,
	wrap func(io.ReadWriteCloser) io.ReadWriteCloser) (_ *session, err error) {
	if _, err := os.Stat(elf); err != nil {
		return nil, fmt.Errorf("firmware image: %w", err)
	}
	dir, err := os.MkdirTemp("", "pqrepro-qemu-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "qmp.sock")
	master, uart, err := pty.Open()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	args := append(append([]string{}, m.Args...),
		"-S", "-display", "none", "-monitor", "none", "-serial", uart,
		"-qmp", "unix:"+sock+",server=on,wait=off",
		"-icount", "shift=0", "-kernel", elf)
	cmd := exec.Command(m.Binary, args...)
	// QEMU dies with the runner: a firmware left spinning without its runner would burn a core.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	outR, outW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	s := &session{cmd: cmd, dir: dir, port: master, exited: make(chan struct{}), outDone: make(chan struct{}), stopped: make(chan struct{})}
	err = s.startChild(cmd)
	outW.Close()
	if err != nil {
		outR.Close()
		master.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", m.Binary, err)
	}
	s.pid = cmd.Process.Pid
	fmt.Fprintf(log, "qemu: pid %d: %s %s\n", s.pid, m.Binary, strings.Join(args, " "))
	go func() {
		defer close(s.outDone)
		defer outR.Close()
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			fmt.Fprintf(log, "qemu: %s\n", sc.Text())
		}
	}()
	defer func() {
		if err != nil {
			s.stop(log)
		}
	}()
	// QEMU starting up on a busy host is slow: the wall bound is three boot timeouts.
	bctx, cancel := context.WithTimeout(ctx, 3*bootTimeout)
	defer cancel()
	s.qmp, err = dialQMP(bctx, sock, s.alive)
	if err != nil {
		return s, err
	}
	// QMP answering means every character device is set up: QEMU has the UART's tty open.
	fmt.Fprintf(log, "qemu: UART on %s; resuming the machine\n", uart)
	var line io.ReadWriteCloser = uartConn{s.port, s}
	if wrap != nil {
		line = wrap(line)
	}
	opts.Activity = s.activity
	s.conn = wire.NewConn(line, opts)
	go func() { // a dead QEMU ends the conversation at once (wire.ErrGone), not at the silence timeout
		select {
		case <-s.exited:
			s.port.Close()
		case <-s.stopped:
		}
	}()
	if _, err := s.qmp.execute("cont", nil, 10*time.Second); err != nil {
		return s, err
	}
	return s, nil
}

// uartConn is the runner's end of QEMU's UART (the pty's master). The line hanging up because
// QEMU exited (EIO once no process has the slave open) reads as wire.ErrGone (the board is
// not there to restart the line with), not as a board that hung up.
type uartConn struct {
	*os.File
	s *session
}

func (u uartConn) Read(p []byte) (int, error) {
	n, err := u.File.Read(p)
	if err != nil && u.exited(errors.Is(err, io.EOF) || errors.Is(err, syscall.EIO)) {
		err = fmt.Errorf("%w: QEMU (pid %d) exited: %s", wire.ErrGone, u.s.pid, exitText(u.s.waitErr))
	}
	return n, err
}

// exited reports whether QEMU has exited; after a hang-up (QEMU closes the slave as it exits)
// it waits up to two seconds for the process to be reaped.
func (u uartConn) exited(eof bool) bool {
	select {
	case <-u.s.exited:
		return true
	default:
	}
	if !eof {
		return false
	}
	select {
	case <-u.s.exited:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// activity is the board's liveness for the line: the emulator's CPU time and scheduling
// state, or an error once it has exited.
func (s *session) activity() (wire.Activity, error) {
	select {
	case <-s.exited:
		return wire.Activity{}, fmt.Errorf("QEMU (pid %d) exited: %s", s.pid, exitText(s.waitErr))
	default:
	}
	return wire.ProcessActivity(s.pid)()
}

// alive returns an error once the process has exited.
func (s *session) alive() error {
	select {
	case <-s.exited:
		<-s.outDone
		return fmt.Errorf("QEMU exited during start-up: %v (its output is in the log)", exitText(s.waitErr))
	default:
		return nil
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// explain turns an error of the conversation into what happened to the board: QEMU died
// (killed, crashed) or the run was cancelled.
func (s *session) explain(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	select {
	case <-s.exited:
	case <-time.After(500 * time.Millisecond):
		return err
	}
	return fmt.Errorf("QEMU (pid %d) exited during the run: %s: %w", s.pid, exitText(s.waitErr), err)
}

// stop closes the line, asks QEMU to quit over QMP, kills it by PID after a grace period
// and always reaps it. It is safe to call more than once.
func (s *session) stop(log io.Writer) {
	s.stopMu.Do(func() {
		close(s.stopped)
		if s.conn != nil {
			s.conn.Close()
		} else if s.port != nil {
			s.port.Close()
		}
		how := "had already exited"
		select {
		case <-s.exited:
		default:
			grace := 3 * time.Second
			how = "quit over QMP"
			if s.qmp == nil {
				grace, how = 0, "killed (no QMP connection)"
			} else if _, err := s.qmp.execute("quit", nil, 2*time.Second); err != nil {
				how = fmt.Sprintf("quit over QMP (%v)", err)
			}
			select {
			case <-s.exited:
			case <-time.After(grace):
				how += "; killed after the grace period"
				s.cmd.Process.Kill()
				<-s.exited
			}
		}
		if s.qmp != nil {
			s.qmp.close()
		}
		<-s.outDone
		os.RemoveAll(s.dir)
		fmt.Fprintf(log, "qemu: pid %d stopped: %s (%s)\n", s.pid, how, exitText(s.waitErr))
	})
}

// energyAbsent says why an emulated board's runs have no energy.
func energyAbsent(m Machine) string {
	if m.IsRP2040JS() {
		return "emulated board: the rp2040js cycle model's counts say nothing about energy"
	}
	return "emulated board: instruction counts say nothing about energy"
}

// startChild starts cmd and, on success, waits for it in the background, recording its exit
// in s.waitErr and closing s.exited. Pdeathsig follows the thread that started the child, so
// that thread stays locked to its goroutine until the child has been reaped. It returns the
// start's error.
func (s *session) startChild(cmd *exec.Cmd) error {
	startErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return <-startErr
}
