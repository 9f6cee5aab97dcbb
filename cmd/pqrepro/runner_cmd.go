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
	id, created, err := artifacts.LoadOrCreateIdentity(keysDir(*keys))
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stderr, "created runner identity %s in %s\n", id.Public().Fingerprint(), keysDir(*keys))
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	fmt.Fprintf(stdout, "runner %q (%s) pulling jobs from %s\n", *name, id.Public().Fingerprint(), *portalURL)
	agent := &runner.Agent{Portal: &runner.HTTPPortal{BaseURL: *portalURL}, EnrolToken: *token, Name: *name, Identity: id,
		Boards: runner.HostBoards(*boardClass), Version: buildVersion(), Log: log}
	return agent.Run(ctx)
}
