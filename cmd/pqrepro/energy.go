package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"pqrepro/compare/rederive"
	"pqrepro/experiments"
)

// cmdEnergy re-derives a paper's published energies from its authors' power traces, which
// ship inside the binary (pqrepro energy paper002 [--board B]... [--json]).
func cmdEnergy(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("energy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var boards stringList
	fs.Var(&boards, "board", "print only this board's cells (repeatable)")
	asJSON := fs.Bool("json", false, "print the table as JSON")
	replicates := fs.Int("replicates", 0, "bootstrap replicates per interval (default 2000)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: pqrepro energy PAPER [--board B]... [--json] [--replicates N]"}
	}
	cat, err := experiments.Load()
	if err != nil {
		return err
	}
	p, ok := cat.Paper(pos[0])
	if !ok {
		return usageError{fmt.Sprintf("no paper %q", pos[0])}
	}
	traces, ok := experiments.Traces(p.ID)
	layout, known := rederive.LayoutOf(p.ID)
	if !ok || !known {
		return fmt.Errorf("%s: the project holds no power traces of this paper (paper002 has them)", p.ID)
	}
	tab, err := rederive.Rederive(p, traces, layout, rederive.Options{Replicates: *replicates})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(tab)
	}
	return tab.Write(stdout, boards...)
}
