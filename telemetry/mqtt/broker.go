package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"

	"pqrepro/internal/lockedio"
)

// DefaultMaxPacket bounds an MQTT packet on the embedded broker: a forward-secret offer
// (3,245 bytes) and the largest frame (24 + telemetry.DefaultMaxPayload) fit with room for
// topic and properties; anything larger is refused by the broker before it is routed.
const DefaultMaxPacket = 16 << 10

// Embedded is an in-process mochi-mqtt broker listening on a loopback port. It holds no key:
// it routes what it is given, as the scheme's untrusted broker.
type Embedded struct {
	srv  *mochi.Server
	addr string
	done chan struct{}
	err  error
}

// StartEmbedded starts a mochi-mqtt broker on 127.0.0.1 at a free port (or addr when not
// empty), refusing packets larger than maxPacket bytes (0 means DefaultMaxPacket). log
// receives the broker's own log at warning level and above; nil discards it. Close stops it.
func StartEmbedded(addr string, maxPacket uint32, log *slog.Logger) (*Embedded, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if maxPacket == 0 {
		maxPacket = DefaultMaxPacket
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = maxPacket
	caps.MaximumSessionExpiryInterval = 0
	srv := mochi.New(&mochi.Options{Capabilities: caps, Logger: log, InlineClient: false})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, fmt.Errorf("embedded broker: allow hook: %w", err)
	}
	l := listeners.NewTCP(listeners.Config{ID: "tcp", Address: addr})
	if err := srv.AddListener(l); err != nil {
		return nil, fmt.Errorf("embedded broker: listen on %s: %w", addr, err)
	}
	e := &Embedded{srv: srv, addr: l.Address(), done: make(chan struct{})}
	go func() {
		e.err = srv.Serve()
		close(e.done)
	}()
	return e, nil
}

// Addr is the broker's host:port.
func (e *Embedded) Addr() string { return e.addr }

// Name says which broker this is, for results and logs.
func (e *Embedded) Name() string { return "mochi-mqtt (embedded)" }

// closeWait bounds Close. mochi-mqtt v2.7.9's Server.Close can deadlock when a client is
// attaching (taking over a session) at that moment: closing its listener takes the client
// table's read lock twice while the attaching client waits for the write lock. Close then
// gives up after closeWait, leaving those goroutines behind, rather than hang the run.
const closeWait = 10 * time.Second

// Close stops the broker and disconnects its clients, or gives up after closeWait.
func (e *Embedded) Close() error {
	closed := make(chan error, 1)
	go func() { closed <- e.srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			return fmt.Errorf("embedded broker: close: %w", err)
		}
	case <-time.After(closeWait):
		return fmt.Errorf("embedded broker: close did not finish within %v (a client was attaching as it closed)", closeWait)
	}
	select {
	case <-e.done:
	case <-time.After(closeWait):
		return fmt.Errorf("embedded broker: serve did not end within %v of close", closeWait)
	}
	return nil
}

// Mosquitto is a mosquitto process started on a loopback port with a generated config.
type Mosquitto struct {
	cmd  *exec.Cmd
	addr string
	log  *lockedio.Buffer
	wait chan struct{}
}

// MosquittoPath returns the mosquitto binary (PATH, then /usr/sbin where Debian puts it),
// or an error saying it is not installed.
func MosquittoPath() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto", nil
	}
	return "", errors.New("mosquitto is not installed (Debian package mosquitto; scripts/test installs it)")
}

// StartMosquitto starts mosquitto on 127.0.0.1 at a free port with a config written into dir
// (listener, allow_anonymous true, persistence false, a bounded packet size) and waits until
// it accepts connections. Stop ends it; its log is Log().
func StartMosquitto(ctx context.Context, dir string, maxPacket uint32) (*Mosquitto, error) {
	bin, err := MosquittoPath()
	if err != nil {
		return nil, err
	}
	if maxPacket == 0 {
		maxPacket = DefaultMaxPacket
	}
	var last error
	for range 5 { // a free port can be taken between probing and mosquitto's bind: try again
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		conf := filepath.Join(dir, fmt.Sprintf("mosquitto-%d.conf", port))
		body := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nmax_packet_size %d\nlog_dest stderr\nlog_type error\nlog_type warning\n", port, maxPacket)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("mosquitto: write config: %w", err)
		}
		m := &Mosquitto{addr: fmt.Sprintf("127.0.0.1:%d", port), log: &lockedio.Buffer{Limit: 64 << 10}, wait: make(chan struct{})}
		m.cmd = exec.Command(bin, "-c", conf)
		m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
		if err := m.cmd.Start(); err != nil {
			return nil, fmt.Errorf("mosquitto: start %s: %w", bin, err)
		}
		go func() { _ = m.cmd.Wait(); close(m.wait) }()
		if err := m.ready(ctx); err != nil {
			m.Stop()
			last = fmt.Errorf("mosquitto on port %d: %w; log: %s", port, err, strings.TrimSpace(m.log.String()))
			if ctx.Err() != nil {
				return nil, last
			}
			continue
		}
		return m, nil
	}
	return nil, last
}

func (m *Mosquitto) ready(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-m.wait:
			return errors.New("exited at start")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		c, err := net.DialTimeout("tcp", m.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("not accepting connections after 5 s")
}

// Addr is the broker's host:port.
func (m *Mosquitto) Addr() string { return m.addr }

// Name says which broker this is.
func (m *Mosquitto) Name() string { return "mosquitto" }

// Log is what mosquitto wrote so far.
func (m *Mosquitto) Log() string { return m.log.String() }

// Stop kills the process and waits for it (a broker that goes away: clients see the
// connection drop). Safe to call twice.
func (m *Mosquitto) Stop() {
	if m.cmd.Process != nil {
		_ = m.cmd.Process.Kill()
	}
	<-m.wait
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
