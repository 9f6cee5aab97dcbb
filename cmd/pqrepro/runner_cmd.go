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
	"pqrepro/runner"
	"pqrepro/runner/boards"
	"pqrepro/runner/host"
	"pqrepro/runner/method/openssl"
	"pqrepro/runner/portalclient"
)

// cmdRunner runs the runner agent as its own process, attached to a portal.
func cmdRunner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	portalURL := fs.String("portal", os.Getenv("PQREPRO_PORTAL"), "portal URL, e.g. http://portal.example:8080 (PQREPRO_PORTAL)")
	token := fs.String("token", os.Getenv("PQREPRO_ENROL_TOKEN"), "enrolment token from the portal's administrator (PQREPRO_ENROL_TOKEN)")
	keys := fs.String("keys", "", "runner identity directory")
	name := fs.String("name", "", "runner name shown in the portal (default: host name)")
	boardClass := fs.String("board-class", "", "declare the host's board class (e.g. rpi4-b on a Raspberry Pi 4)")
	mapFile := fs.String("map", os.Getenv("PQREPRO_MAP"), "hardware map YAML (PQREPRO_MAP; default: the host and the emulated boards)")
	firmwareDir := fs.String("firmware-dir", os.Getenv("PQREPRO_FIRMWARE"), "firmware builds, <dir>/<class>/pqrepro-fw.elf (PQREPRO_FIRMWARE)")
	rediscoverEvery := fs.Duration("rediscover", 10*time.Second, "how often to look for boards again between jobs (a firmware built meanwhile makes its board available)")
	ossl := opensslFlags(fs)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	tokenFile := filepath.Join(keysDir(*keys), runner.TokenFileName)
	if _, err := os.Stat(tokenFile); *portalURL == "" || (*token == "" && err != nil) {
		return usageError{"want --portal URL and --token T (the token may be left out once the runner has enrolled and kept its runner token)"}
	}
	if *name == "" {
		h, _ := os.Hostname()
		*name = "runner on " + h
	}
	if *boardClass != "" {
		// A declared class is checked before the runner enrols; a clear mismatch refuses it.
		if _, err := (&host.Host{Class: *boardClass}).CheckClass(); err != nil {
			return err
		}
	}
	id, created, err := identity.LoadOrCreateIdentity(keysDir(*keys))
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stderr, "created runner identity %s in %s\n", id.Public().Fingerprint(), keysDir(*keys))
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	bs, caps, rediscover, err := agentBoards(ctx, *mapFile, *firmwareDir, *boardClass, ossl.config())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "runner %q (%s) pulling jobs from %s\n", *name, id.Public().Fingerprint(), *portalURL)
	printAgentBoards(stdout, bs)
	printCapabilities(stdout, caps)
	agent := &runner.Agent{Portal: &portalclient.Client{BaseURL: *portalURL}, EnrolToken: *token, TokenFile: tokenFile, Name: *name, Identity: id,
		Boards: bs, Capabilities: caps, Version: buildVersion(), Log: log, Discover: rediscover, DiscoverEvery: *rediscoverEvery}
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
	cfg := boards.Config{FirmwareDir: firmwareDir, HostClass: hostClass}
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
