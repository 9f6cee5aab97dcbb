package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"pqrepro/portal"
	"pqrepro/portal/database"
)

// cmdRebuild re-derives the portal's stored comparison reports (and the claim verdicts and
// cell details that come with them) from the stored bundles: those older than this build's
// report version, or all of them with --all (after the reference data changed); then it
// recomputes the pages' summaries (claim tallies, run counts, home highlights) from the runs.
// Run it with the portal stopped, or beside it: each run is rewritten in one transaction, and
// so are the summaries.
func cmdRebuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := portal.DefaultConfig()
	cfg.Version = buildVersion()
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data directory of the portal")
	all := fs.Bool("all", false, "rebuild every run, not only those whose report is older than this build's")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if v, ok := os.LookupEnv("PQREPRO_DATA"); ok && !flagSet(fs, "data") {
		cfg.DataDir = v
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := database.OpenPortal(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	st, err := srv.Rebuild(ctx, *all)
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	fmt.Fprintf(stdout, "rebuilt %d run(s) to report version %d; recomputed the claim tallies, run counts and highlights\n", st.Rebuilt, portal.ReportVersion)
	fmt.Fprintf(stdout, "latency leaderboards: %d rows before, %d after (%d split by implementation, key form or message size)\n",
		st.RowsBefore, st.RowsAfter, st.RowsAfter-st.RowsBefore)
	for _, s := range st.Split {
		fmt.Fprintln(stdout, "  "+s)
	}
	if st.Failed > 0 {
		fmt.Fprintf(stdout, "%d could not be rebuilt:\n", st.Failed)
		for _, e := range st.Errors {
			fmt.Fprintln(stdout, "  "+e)
		}
		return fmt.Errorf("%d run(s) not rebuilt", st.Failed)
	}
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
