package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/boards"
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
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if *portalURL == "" || *token == "" {
		return usageError{"want --portal URL and --token T"}
	}
	if *name == "" {
		h, _ := os.Hostname()
		*name = "runner on " + h
	}
	if *boardClass != "" {
		// A declared class is checked before the runner enrols; a clear mismatch refuses it.
		if _, err := (&runner.Host{Class: *boardClass}).CheckClass(); err != nil {
			return err
		}
	}
	id, created, err := artifacts.LoadOrCreateIdentity(keysDir(*keys))
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stderr, "created runner identity %s in %s\n", id.Public().Fingerprint(), keysDir(*keys))
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	bs, err := agentBoards(ctx, *mapFile, *firmwareDir, *boardClass)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "runner %q (%s) pulling jobs from %s\n", *name, id.Public().Fingerprint(), *portalURL)
	printAgentBoards(stdout, bs)
	agent := &runner.Agent{Portal: &runner.HTTPPortal{BaseURL: *portalURL}, EnrolToken: *token, Name: *name, Identity: id,
		Boards: bs, Version: buildVersion(), Log: log}
	return agent.Run(ctx)
}

// agentBoards discovers this machine's boards for the runner agent: the host, the emulated
// boards whose emulator and firmware are here, the serial boards of the hardware map. Every
// board is reported to the portal with its availability; boards other than the host can be
// reopened with a firmware build a job names.
func agentBoards(ctx context.Context, mapFile, firmwareDir, hostClass string) ([]runner.AgentBoard, error) {
	cfg := boards.Config{FirmwareDir: firmwareDir, HostClass: hostClass}
	if mapFile != "" {
		m, err := boards.LoadMap(mapFile)
		if err != nil {
			return nil, err
		}
		cfg.Map = m
	}
	entries := boards.Discover(ctx, cfg)
	out := boards.AgentBoards(entries)
	for i := range out {
		e := &entries[i]
		if e.Spec.Driver != boards.DriverHost {
			out[i].WithFirmware = func(path string) (runner.Board, error) { return e.Board(path) }
			out[i].Info.FirmwareOnly = !out[i].Info.Available && e.UsableWithFirmware()
		}
	}
	return out, nil
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
