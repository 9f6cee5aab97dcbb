package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"pqrepro/experiments"
	"pqrepro/internal/cachedir"
	"pqrepro/portal"
	"pqrepro/runner"
	"pqrepro/runner/boards"
	"pqrepro/runner/serialport"
)

// boardsConfig builds the board discovery configuration: --map (or PQREPRO_MAP) for the
// hardware map, --firmware-dir (or PQREPRO_FIRMWARE) for the firmware builds.
func boardsConfig(mapFile, firmwareDir, hostClass string) (boards.Config, error) {
	cfg := boards.Config{FirmwareDir: firmwareDir, HostClass: hostClass, RP2040JSDir: cachedir.Find("rp2040js", ".")}
	if cfg.FirmwareDir == "" {
		cfg.FirmwareDir = os.Getenv("PQREPRO_FIRMWARE")
	}
	if mapFile == "" {
		mapFile = os.Getenv("PQREPRO_MAP")
	}
	if mapFile != "" {
		m, err := boards.LoadMap(mapFile)
		if err != nil {
			return cfg, err
		}
		cfg.Map = m
	}
	return cfg, nil
}

// selectBoard finds --board among the runner's boards and opens it, with --firmware when
// given. An unknown name is a usage error; an unavailable board says why.
// The board's class comes with it.
func selectBoard(ctx context.Context, name, mapFile, firmwareDir, firmware, hostClass string) (runner.Board, string, error) {
	cfg, err := boardsConfig(mapFile, firmwareDir, hostClass)
	if err != nil {
		return nil, "", err
	}
	entries := boards.Discover(ctx, cfg)
	e, err := boards.Find(entries, name)
	if err != nil {
		return nil, "", usageError{err.Error()}
	}
	if firmware != "" {
		// An ELF for another board is named as such before anything boots it (booting it
		// fails later with an unrelated QMP or serial error).
		if err := portal.CheckFirmwareFile(firmware, e.Info.Class, catalogArch(e.Info.Class)); err != nil {
			return nil, "", err
		}
	}
	b, err := e.Board(firmware)
	return b, e.Info.Class, err
}

// catalogArch is the board catalogue's architecture for a class ("" when it names none).
func catalogArch(class string) string {
	cat, err := experiments.Load()
	if err != nil {
		return ""
	}
	for _, b := range cat.Boards {
		if b.Slug == class {
			return b.Arch
		}
	}
	return ""
}

func cmdBoards(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("boards", flag.ContinueOnError)
	mapFile := fs.String("map", "", "hardware map YAML (default: $PQREPRO_MAP, else host and the emulated boards)")
	firmwareDir := fs.String("firmware-dir", "", "where firmware builds are (<dir>/<class>/pqrepro-fw.elf; default: $PQREPRO_FIRMWARE, else firmware/build)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	cfg, err := boardsConfig(*mapFile, *firmwareDir, "")
	if err != nil {
		return err
	}
	entries := boards.Discover(ctx, cfg)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCLASS\tDRIVER\tAVAILABLE\tDETAIL")
	usable := 0
	for _, e := range entries {
		avail, detail := "yes", e.Detail
		if e.Info.Available {
			usable++
		} else {
			avail = "no"
			detail = e.Info.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Info.Name, e.Info.Class, e.Info.Driver, avail, detail)
	}
	tw.Flush()
	src := "built-in defaults (host and the emulated boards)"
	if cfg.Map != nil {
		src = "hardware map " + firstNonEmpty(*mapFile, os.Getenv("PQREPRO_MAP"))
	}
	fmt.Fprintf(stdout, "\n%d of %d boards usable; from %s\n", usable, len(entries), src)
	fmt.Fprintln(stdout, "meters (energy needs one; it is never estimated):")
	for _, e := range entries {
		fmt.Fprintf(stdout, "  %s: %s\n", e.Info.Name, e.Meter)
	}
	ports, err := serialport.Ports()
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "serial ports: %v\n", err)
	case len(ports) == 0:
		fmt.Fprintln(stdout, "serial ports: none")
	default:
		var ps []string
		for _, p := range ports {
			s := p.Name
			if p.IsUSB {
				s += fmt.Sprintf(" (usb %s:%s", strings.ToLower(p.VID), strings.ToLower(p.PID))
				if p.SerialNumber != "" {
					s += " serial " + p.SerialNumber
				}
				s += ")"
			}
			ps = append(ps, s)
		}
		fmt.Fprintf(stdout, "serial ports: %s\n", strings.Join(ps, ", "))
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
