package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/internal/cachedir"
	"pqrepro/runner"
	"pqrepro/runner/boards"
	"pqrepro/runner/host"
	"pqrepro/runner/method/openssl"
	"pqrepro/runner/portalclient"
)

// runnerConfig is the runner agent's configuration, built once in main: defaults, then the
// PQREPRO_* environment, then flags; validated before anything starts.
type runnerConfig struct {
	// Portal is the portal's address; EnrolToken the administrator's enrolment token (not
	// needed once a runner token was kept in TokenFile).
	Portal, EnrolToken string
	// Keys is the identity directory; TokenFile the runner token's file beside it.
	Keys, TokenFile string
	// Name is shown in the portal (default "runner on <host name>").
	Name string
	// BoardClass declares the host's board class, checked before enrolling.
	BoardClass string
	// Map is the hardware map; FirmwareDir holds the firmware builds.
	Map, FirmwareDir string
	// Rediscover is how often boards are looked for again between jobs.
	Rediscover time.Duration
	// OpenSSL is the openssl the host board's openssl-cli method runs.
	OpenSSL openssl.Config
}

// parseRunnerConfig reads runner's flags over the environment getenv gives and validates the
// result.
func parseRunnerConfig(args []string, stderr io.Writer, getenv func(string) string) (runnerConfig, error) {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c runnerConfig
	fs.StringVar(&c.Portal, "portal", getenv("PQREPRO_PORTAL"), "portal URL, e.g. http://portal.example:8080 (PQREPRO_PORTAL)")
	fs.StringVar(&c.EnrolToken, "token", getenv("PQREPRO_ENROL_TOKEN"), "enrolment token from the portal's administrator (PQREPRO_ENROL_TOKEN)")
	fs.StringVar(&c.Keys, "keys", "", "runner identity directory")
	fs.StringVar(&c.Name, "name", "", "runner name shown in the portal (default: host name)")
	fs.StringVar(&c.BoardClass, "board-class", "", "declare the host's board class (e.g. rpi4-b on a Raspberry Pi 4)")
	fs.StringVar(&c.Map, "map", getenv("PQREPRO_MAP"), "hardware map YAML (PQREPRO_MAP; default: the host and the emulated boards)")
	fs.StringVar(&c.FirmwareDir, "firmware-dir", getenv("PQREPRO_FIRMWARE"), "firmware builds, <dir>/<class>/pqrepro-fw.elf (PQREPRO_FIRMWARE)")
	fs.DurationVar(&c.Rediscover, "rediscover", 10*time.Second, "how often to look for boards again between jobs (a firmware built meanwhile makes its board available)")
	ossl := opensslFlags(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return c, err
	}
	c.OpenSSL = ossl.config()
	if c.Keys == "" {
		c.Keys = getenv("PQREPRO_KEYS")
	}
	c.Keys = keysDir(c.Keys)
	c.TokenFile = filepath.Join(c.Keys, runner.TokenFileName)
	if _, err := os.Stat(c.TokenFile); c.Portal == "" || (c.EnrolToken == "" && err != nil) {
		return c, usageError{"want --portal URL and --token T (the token may be left out once the runner has enrolled and kept its runner token)"}
	}
	if c.Name == "" {
		h, _ := os.Hostname()
		c.Name = "runner on " + h
	}
	return c, nil
}

// cmdRunner runs the runner agent as its own process, attached to a portal.
func cmdRunner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseRunnerConfig(args, stderr, os.Getenv)
	if err != nil {
		return err
	}
	if cfg.BoardClass != "" {
		// A declared class is checked before the runner enrols; a clear mismatch refuses it.
		if _, err := (&host.Host{Class: cfg.BoardClass}).CheckClass(); err != nil {
			return err
		}
	}
	id, created, err := identity.LoadOrCreateIdentity(cfg.Keys)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stderr, "created runner identity %s in %s\n", id.Public().Fingerprint(), cfg.Keys)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	bs, caps, rediscover, err := agentBoards(ctx, cfg.Map, cfg.FirmwareDir, cfg.BoardClass, cfg.OpenSSL)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "runner %q (%s) pulling jobs from %s\n", cfg.Name, id.Public().Fingerprint(), cfg.Portal)
	printAgentBoards(stdout, bs)
	printCapabilities(stdout, caps)
	agent := &runner.Agent{Portal: &portalclient.Client{BaseURL: cfg.Portal}, EnrolToken: cfg.EnrolToken, TokenFile: cfg.TokenFile, Name: cfg.Name, Identity: id,
		Boards: bs, Capabilities: caps, Version: buildVersion(), Log: log, Discover: rediscover, DiscoverEvery: cfg.Rediscover}
	return agent.Run(ctx)
}

// agentBoards discovers this machine's boards for the runner agent: the host, the emulated
// boards whose emulator and firmware are here, the serial boards of the hardware map. Every
// board is reported to the portal with its availability; boards other than the host can be
// reopened with a firmware build a job names. The host board runs openssl-cli only when ossl
// resolves to OpenSSL 3.5 or later; the capabilities returned say which openssl it found.
// rediscover repeats the discovery with the same map and capabilities, for Agent.Discover: a
// firmware built (or an emulator installed) while the agent runs makes its board available.
func agentBoards(ctx context.Context, mapFile, firmwareDir, hostClass string, ossl openssl.Config) (bs []runner.AgentBoard, caps protocol.Capabilities, rediscover func(context.Context) []runner.AgentBoard, err error) {
	caps = openssl.Probe(ctx, ossl)
	cfg := boards.Config{FirmwareDir: firmwareDir, HostClass: hostClass, RP2040JSDir: cachedir.Find("rp2040js", ".")}
	if mapFile != "" {
		m, err := boards.LoadMap(mapFile)
		if err != nil {
			return nil, caps, nil, err
		}
		cfg.Map = m
	}
	rediscover = func(ctx context.Context) []runner.AgentBoard { return discoverAgentBoards(ctx, cfg, caps, ossl) }
	return rediscover(ctx), caps, rediscover, nil
}

// discoverAgentBoards is one discovery of agentBoards.
func discoverAgentBoards(ctx context.Context, cfg boards.Config, caps protocol.Capabilities, ossl openssl.Config) []runner.AgentBoard {
	entries := boards.Discover(ctx, cfg)
	out := boards.AgentBoards(entries)
	for i := range out {
		e := &entries[i]
		if e.Spec.Driver != artifacts.DriverHost {
			out[i].WithFirmware = func(path string) (runner.Board, error) { return e.Board(path) }
			out[i].Info.FirmwareOnly = !out[i].Info.Available && e.UsableWithFirmware()
			out[i].Info.Methods = []artifacts.Method{artifacts.MethodInProcess}
			continue
		}
		out[i].Info.Methods = host.Methods(caps)
		if h, ok := out[i].Board.(*host.Host); ok {
			h.OpenSSL = ossl
		}
	}
	return out
}

// opensslOptions are the --openssl and --openssl-root flags of run, runner and serve.
type opensslOptions struct{ path, root *string }

func opensslFlags(fs *flag.FlagSet) opensslOptions {
	return opensslOptions{
		path: fs.String("openssl", "", "openssl binary for openssl-cli experiments (default: openssl on PATH; needs OpenSSL 3.5 or later)"),
		root: fs.String("openssl-root", "", "run the openssl of this root directory through its own loader (make one with scripts/openssl-root)"),
	}
}

func (o opensslOptions) config() openssl.Config {
	return openssl.Config{Path: *o.path, Root: *o.root}
}

func printCapabilities(w io.Writer, c protocol.Capabilities) {
	switch {
	case c.OpenSSLUsable:
		fmt.Fprintf(w, "  openssl-cli: %s\n", c.OpenSSL)
	default:
		fmt.Fprintf(w, "  openssl-cli: unavailable: %s\n", c.OpenSSLReason)
	}
}

func printAgentBoards(w io.Writer, bs []runner.AgentBoard) {
	for _, b := range bs {
		state := "available"
		if !b.Info.Available {
			state = "unavailable: " + b.Info.Reason
		}
		fmt.Fprintf(w, "  board %s [%s, %s] %s\n", b.Info.Name, b.Info.Class, b.Info.Driver, state)
	}
}
