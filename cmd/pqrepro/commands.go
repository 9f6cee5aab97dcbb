package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/yamlcheck"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/host"
	"pqrepro/runner/method/openssl"
	"pqrepro/runner/portalclient"
)

func cmdList(stdout io.Writer) error {
	cat, err := experiments.Load()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXPERIMENT\tKIND\tCELLS\tMETHOD\tTITLE")
	for _, p := range cat.Papers {
		for _, m := range p.Manifests {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", m.Ref(), m.Kind, len(m.Cells()), m.Spec.Method, m.Metadata.Title)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	for _, p := range cat.Papers {
		note := ""
		if len(p.Manifests) == 0 {
			note = fmt.Sprintf("  (needs %s: no runnable experiment yet)", strings.Join(p.Measured, ", "))
		}
		fmt.Fprintf(stdout, "%s  %s%s\n", p.ID, p.Title, note)
	}
	return nil
}

// parseInterleaved parses flags that may come before or after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	board := fs.String("board", artifacts.HostBoard, "board to run on: a name or class from pqrepro boards")
	mapFile := fs.String("map", "", "hardware map YAML (default: $PQREPRO_MAP, else host and the emulated boards)")
	firmwareDir := fs.String("firmware-dir", "", "firmware builds, <dir>/<class>/pqrepro-fw.elf (default: $PQREPRO_FIRMWARE, else firmware/build)")
	firmware := fs.String("firmware", "", "firmware ELF to flash or boot instead of the board's own")
	boardClass := fs.String("board-class", "", "declare the host's board class for comparison (e.g. rpi4-b when the host is a Raspberry Pi 4)")
	out := fs.String("out", "", "bundle destination: a new directory, or FILE.tar.gz (default: a fresh folder under runs/)")
	iterations := fs.Int("iterations", 0, "override the manifest's iteration count (changes the manifest's identity)")
	warmup := fs.Int("warmup", -1, "override the manifest's warm-up iterations, 0 for none (changes the manifest's identity); an emulated board's counts need no warm-up")
	keyForm := fs.String("key-form", "", "override the manifest's key form: encoded or parsed (changes the manifest's identity)")
	keys := fs.String("keys", "", "runner identity directory")
	quiet := fs.Bool("quiet", false, "no progress bar")
	meterSpec := fs.String("meter", "", "the power meter of the host or of a serial board (whose firmware runs LOOP in each load window): fnb58:/dev/hidrawN, ppk2:/dev/ttyACMn:MODE:MILLIVOLTS (MODE source or ampere) or ina2xx:/sys/class/hwmon/hwmonN; or sim:KIND:IDLE,LOAD (KIND fnb58, ppk2 or ina2xx), the driver against its simulator replaying two FNB58 captures (.csv or .cfn): that bundle is labelled simulated meter and cannot be submitted")
	tlsOut := tlsServerFlags(fs)
	ossl := opensslFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want one experiment: <paper>/<name> or a manifest FILE"}
	}
	if err := checkIterations(fs, *iterations, *warmup); err != nil {
		return err
	}
	cat, err := experiments.Load()
	if err != nil {
		return err
	}
	m, err := loadManifest(cat, pos[0])
	if err != nil {
		return err
	}
	if err := overrideManifest(m, *iterations, *warmup, *keyForm, stderr); err != nil {
		return err
	}
	if err := tlsOut.apply(m); err != nil {
		return err
	}
	if *boardClass != "" {
		// A declared class is checked before anything runs; a clear mismatch refuses the run.
		if _, err := (&host.Host{Class: *boardClass}).CheckClass(); err != nil {
			return err
		}
	}
	b, class, err := selectBoard(ctx, *board, *mapFile, *firmwareDir, *firmware, *boardClass)
	if err != nil {
		return err
	}
	if err := useOpenSSL(ctx, b, m, ossl.config()); err != nil {
		return err
	}
	if err := useMeter(ctx, b, m, *meterSpec, stdout); err != nil {
		return err
	}
	if err := tlsOut.use(b, m); err != nil {
		return err
	}
	if err := tlsOut.useClient(ctx, b, m); err != nil {
		return err
	}
	id, created, err := identity.LoadOrCreateIdentity(keysDir(*keys))
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stderr, "created runner identity %s in %s\n", id.Public().Fingerprint(), keysDir(*keys))
	}
	dest, err := runDest(*out, m, *board)
	if err != nil {
		return err
	}
	budget := m.Spec.BudgetOn(class)
	obs := runObserver(stderr, *quiet, m, budget)
	fmt.Fprintf(stdout, "running %s (%s, %d cells, method %s) on %s, manifest %s\n", m.Ref(), m.Kind, len(m.Cells()), m.Spec.Method, *board, artifacts.ShortDigest(m.ID()))
	if budget.Budget > 0 {
		fmt.Fprintln(stdout, device.PlanText(m, class, len(m.Cells())))
	}
	start := time.Now()
	bundle, res, err := runner.Execute(ctx, b, m, runner.Options{Identity: id, Version: buildVersion(), Origin: attest.OriginLocal, Observer: obs})
	if err != nil {
		return failedRun(err, dest, stderr)
	}
	if err := writeBundle(dest, bundle); err != nil {
		return err
	}
	printCells(stdout, res)
	if p, ok := cat.Paper(m.Spec.Reference.Dataset); ok {
		run, err := compare.RunFromBundle(bundle)
		if err != nil {
			return fmt.Errorf("compare %s: %w", dest, err)
		}
		printComparison(stdout, compare.Compare(run, m, p))
	}
	fmt.Fprintf(stdout, "\nbundle: %s (signed by %s) in %s\n", dest, id.Public().Fingerprint(), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "verify: pqrepro verify %s\n", dest)
	return nil
}

// checkIterations refuses an --iterations that was given but is not a positive count: 0 and
// negative numbers are a mistake, never "keep the manifest's count" (leave the flag out for that);
// and a negative --warmup that was given.
func checkIterations(fs *flag.FlagSet, n, warmup int) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["iterations"] && n < 1 {
		return usageError{fmt.Sprintf("--iterations %d: want a count of at least 1 (leave the flag out to keep the manifest's iterations)", n)}
	}
	if given["warmup"] && warmup < 0 {
		return usageError{fmt.Sprintf("--warmup %d: want 0 or more (leave the flag out to keep the manifest's warm-up)", warmup)}
	}
	return nil
}

// overrideManifest applies run's --iterations, --warmup (when 0 or more) and --key-form to m
// (changing its identity) and validates the result: min_iterations and a TLS batch longer than
// the iterations are lowered to them, the batch with a note on stderr.
func overrideManifest(m *artifacts.Manifest, iterations, warmup int, keyForm string, stderr io.Writer) error {
	if iterations > 0 {
		for _, note := range m.OverrideIterations(iterations) {
			fmt.Fprintln(stderr, note)
		}
	}
	if warmup >= 0 {
		m.Spec.Warmup = warmup
	}
	if keyForm != "" {
		m.Spec.Keys = keyForm
	}
	if iterations > 0 || warmup >= 0 || keyForm != "" {
		if err := m.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// useOpenSSL gives the host board the openssl of the command line and checks it can run an
// openssl-cli manifest; only the host runs that method.
func useOpenSSL(ctx context.Context, b runner.Board, m *artifacts.Manifest, cfg openssl.Config) error {
	if h, ok := b.(*host.Host); ok {
		h.OpenSSL = cfg
		if m.Spec.Method == artifacts.MethodOpenSSLCLI {
			if _, err := openssl.Resolve(ctx, h.OpenSSL); err != nil {
				return fmt.Errorf("cannot run %s: %w", m.Ref(), err)
			}
		}
	} else if m.Spec.Method == artifacts.MethodOpenSSLCLI {
		return usageError{fmt.Sprintf("%s uses the openssl-cli method, which only the host board runs", m.Ref())}
	}
	return nil
}

// runDest is where run writes its bundle: out, or a fresh folder under $PQREPRO_RUNS (default
// runs/); it must not exist yet.
func runDest(out string, m *artifacts.Manifest, board string) (string, error) {
	dest := out
	if dest == "" {
		root := os.Getenv("PQREPRO_RUNS")
		if root == "" {
			root = "runs"
		}
		dest = filepath.Join(root, fmt.Sprintf("%s-%s-%s-%s", m.Metadata.Paper, m.Metadata.Name, board, time.Now().UTC().Format("20060102T150405Z")))
	}
	if _, err := os.Stat(dest); err == nil {
		return "", fmt.Errorf("bundle destination %s already exists", dest)
	}
	return dest, nil
}

// runObserver is the progress bar on a terminal (bounded by the budget when there is one),
// nothing otherwise.
func runObserver(stderr io.Writer, quiet bool, m *artifacts.Manifest, budget artifacts.BoardBudget) runner.Observer {
	if f, ok := stderr.(*os.File); ok && !quiet && term.IsTerminal(int(f.Fd())) {
		p := runner.NewProgress(stderr)
		if budget.Budget > 0 {
			p.Bound = time.Duration(budget.Budget) * time.Duration(len(m.Cells()))
		}
		return p
	}
	return runner.NopObserver{}
}

// failedRun keeps the log of a run that did not finish beside where its bundle would have
// been, and says that no bundle was written.
func failedRun(err error, dest string, stderr io.Writer) error {
	var re *runner.RunError
	if !errors.As(err, &re) {
		return err
	}
	// No bundle for a run that did not finish; the log is kept beside where it would be.
	logPath := strings.TrimSuffix(strings.TrimSuffix(dest, ".tgz"), ".tar.gz") + ".failed-log.txt"
	if mkErr := os.MkdirAll(filepath.Dir(logPath), 0o755); mkErr == nil && os.WriteFile(logPath, re.Log, 0o644) == nil {
		fmt.Fprintf(stderr, "the run's log is in %s\n", logPath)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("no bundle written (%w)", context.Canceled)
	}
	return fmt.Errorf("%w (no bundle written)", err)
}

func loadManifest(cat *experiments.Catalog, arg string) (*artifacts.Manifest, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		b, err := yamlcheck.ReadFile(arg, "manifest")
		if err != nil {
			return nil, err
		}
		return artifacts.ParseManifest(b, arg)
	}
	if strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return nil, fmt.Errorf("manifest file %s not found", arg)
	}
	return cat.Manifest(arg)
}

// writeBundle writes a directory, or a .tar.gz through a temporary file renamed into place,
// so a half-written bundle never appears under its final name.
func writeBundle(dest string, b *artifacts.Bundle) error {
	if !strings.HasSuffix(dest, ".tar.gz") && !strings.HasSuffix(dest, ".tgz") {
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		return artifacts.WriteDir(dest, b)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(dest), ".bundle-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := artifacts.WriteTarGz(f, b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), dest)
}

// human renders a value in the cell's unit; nanoseconds get a readable time unit.
func human(v float64, unit artifacts.Unit) string {
	if unit != artifacts.UnitNanoseconds {
		return fmt.Sprintf("%.0f", v) // the unit is printed once, under the table
	}
	return artifacts.FormatNanoseconds(v)
}

// cellPrinters print a result's cells by its kind; a test checks that every kind has one.
var cellPrinters = map[artifacts.Kind]func(io.Writer, *artifacts.Result){
	artifacts.KindKEMBench:       printBenchCells,
	artifacts.KindSigBench:       printBenchCells,
	artifacts.KindKEMSigSequence: printBenchCells,
	artifacts.KindMQTTTelemetry:  printBenchCells,
	artifacts.KindTLSMatrix:      printTLSMatrixEnergy,
}

// printTLSMatrixEnergy prints a tls-matrix's cells, then each metered cell's energy per
// handshake when the run had a meter (an unmetered run's output is unchanged).
func printTLSMatrixEnergy(w io.Writer, res *artifacts.Result) {
	printTLSMatrix(w, res)
	if slices.ContainsFunc(res.Cells, func(c artifacts.Cell) bool { return c.Energy != nil && c.Energy.Windows != nil }) {
		printEnergy(w, res)
	}
}

// printCells prints res's cells as its kind's printer does (the cell table otherwise).
func printCells(w io.Writer, res *artifacts.Result) {
	if p := cellPrinters[res.Kind]; p != nil {
		p(w, res)
		return
	}
	printBenchCells(w, res)
}

// printBenchCells prints one row of statistics per cell, then the notes below the table.
func printBenchCells(w io.Writer, res *artifacts.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ALGORITHM\tOP\tKEYS\tSTATUS\tN\tMEDIAN\tMEAN\tP25\tP75\tMIN\tMAX\tSTDDEV\tSIZE\tHEAP/OP\tALLOCS/OP\tSTACK\t")
	var notes []string // failed cells' reasons and variants, numbered below the table
	for _, c := range res.Cells {
		op := c.Operation
		if c.Variant != "" {
			notes = append(notes, fmt.Sprintf("%s %s: variant %s", c.Algorithm, c.Operation, c.Variant))
			op += fmt.Sprintf(" [%d]", len(notes))
		}
		if c.Status != artifacts.StatusOK {
			notes = append(notes, fmt.Sprintf("%s %s %s: %s", c.Algorithm, c.Operation, c.Status, c.Error))
			fmt.Fprintf(tw, "%s\t%s\t\t%s [%d]\t\t\t\t\t\t\t\t\t\t\t\t\t\n", c.Algorithm, op, c.Status, len(notes))
			continue
		}
		s := c.Stats
		size := ""
		if c.Sizes != nil {
			switch {
			case c.Sizes.Signature > 0:
				size = fmt.Sprintf("sig %d B", c.Sizes.Signature)
			case c.Sizes.Ciphertext > 0:
				size = fmt.Sprintf("ct %d B", c.Sizes.Ciphertext)
			case c.Sizes.PublicKey > 0:
				size = fmt.Sprintf("pk %d B", c.Sizes.PublicKey)
			}
		}
		heap, allocs, stack := "-", "-", "-"
		if c.Memory != nil && c.Memory.HeapBytesPerOp != nil {
			heap, allocs = fmt.Sprintf("%.0f B", *c.Memory.HeapBytesPerOp), fmt.Sprintf("%.1f", *c.Memory.AllocsPerOp)
		}
		if c.Memory != nil && c.Memory.StackBytes != nil {
			stack = fmt.Sprintf("%d B", *c.Memory.StackBytes)
		}
		n := fmt.Sprint(s.N)
		if c.BudgetReached {
			n += "*"
		}
		keys := c.Keys
		if keys == "" {
			keys = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Algorithm, op, keys, c.Status, n,
			human(s.Median, c.Unit), human(s.Mean, c.Unit), human(s.P25, c.Unit), human(s.P75, c.Unit), human(s.Min, c.Unit), human(s.Max, c.Unit), human(s.Stddev, c.Unit),
			size, heap, allocs, stack)
	}
	tw.Flush()
	for i, n := range notes {
		fmt.Fprintf(w, "[%d] %s\n", i+1, n)
	}
	printCellNotes(w, res)
}

// printCellNotes prints what the table's cells share: the code each timed, the unit of
// values not in ns, a budget that stopped a cell, and why energy is absent.
func printCellNotes(w io.Writer, res *artifacts.Result) {
	// The code each cell timed, once per implementation with the cells that ran it.
	var impls []string
	cellsOf := map[string][]string{}
	for _, c := range res.Cells {
		if c.Implementation == nil {
			continue
		}
		k := artifacts.ShortImplementation(c.Implementation.Key())
		if _, ok := cellsOf[k]; !ok {
			impls = append(impls, k)
		}
		if name := c.Algorithm; !slices.Contains(cellsOf[k], name) {
			cellsOf[k] = append(cellsOf[k], name)
		}
	}
	for _, k := range impls {
		fmt.Fprintf(w, "implementation: %s (%s)\n", k, strings.Join(cellsOf[k], ", "))
	}
	for _, c := range res.Cells {
		if c.Status == artifacts.StatusOK && c.Unit != artifacts.UnitNanoseconds {
			fmt.Fprintf(w, "values in %s (%s)\n", c.Unit, c.Counter)
			break
		}
	}
	for _, c := range res.Cells {
		if c.BudgetReached {
			fmt.Fprintln(w, "* stopped at the manifest's time budget; n is the count reached")
			break
		}
	}
	printHashing(w, res)
	printEnergy(w, res)
}

// printHashing prints each cell's hashing share (an untimed pass, never the timed samples),
// one line per cell that has one.
func printHashing(w io.Writer, res *artifacts.Result) {
	for _, c := range res.Cells {
		switch h := c.Hashing; {
		case h == nil || c.Status != artifacts.StatusOK:
		case h.Absent != "":
			fmt.Fprintf(w, "hashing: %s %s: %s\n", c.Algorithm, c.Operation, h.Absent)
		case h.Bound > 0:
			fmt.Fprintf(w, "hashing: %s %s: %.1f %% ± %.1f of instructions in SHA-2/SHA-3 (untimed pass of %d; ± the counter's steps)\n", c.Algorithm, c.Operation, 100*h.Share, 100*h.Bound, h.Samples)
		default:
			fmt.Fprintf(w, "hashing: %s %s: %.1f %% of instructions in SHA-2/SHA-3 (untimed pass of %d)\n", c.Algorithm, c.Operation, 100*h.Share, h.Samples)
		}
	}
}

func printComparison(w io.Writer, rep compare.Report) {
	fmt.Fprintf(w, "\nCOMPARISON with %s (board %s, tolerance %.0f%%)\n", rep.Dataset, boardLabel(rep.Board, rep.ClassStatus), rep.Tolerance*100)
	// Cells without any published figure are listed once per reason (the reason with the
	// cell's name taken out), so a 36-cell matrix does not print 36 copies of one sentence.
	type noFigure struct {
		reason, note string // note: the first cell's own wording
		names        []string
	}
	var none []*noFigure
	for _, c := range rep.Cells {
		if len(c.Rows) > 0 {
			continue
		}
		name := c.Name()
		reason := strings.ReplaceAll(c.Note, c.Algorithm, "the cell")
		i := slices.IndexFunc(none, func(n *noFigure) bool { return n.reason == reason })
		if i < 0 {
			none = append(none, &noFigure{reason: reason, note: c.Note})
			i = len(none) - 1
		}
		none[i].names = append(none[i].names, name)
	}
	for _, n := range none {
		if len(n.names) == 1 {
			fmt.Fprintf(w, "  %s: not comparable: %s\n", n.names[0], n.note)
			continue
		}
		fmt.Fprintf(w, "  %d cells not comparable (%s … %s): %s\n", len(n.names), n.names[0], n.names[len(n.names)-1], n.reason)
	}
	for _, c := range rep.Cells {
		name := c.Name()
		if len(c.Rows) == 0 {
			continue
		}
		comparable, other := c.Split()
		for _, r := range comparable {
			iv := ""
			if r.RatioLo != nil && r.RatioHi != nil {
				iv = fmt.Sprintf(" [%.3f, %.3f] (%s)", *r.RatioLo, *r.RatioHi, r.Interval)
			}
			fmt.Fprintf(w, "  %s: %s vs published %s %s (%s, %s %s): ratio %.3f%s\n", name, r.Verdict,
				r.Ref.Text, r.Ref.Unit, r.Ref.Board, r.Ref.Stat, r.Ref.Source, *r.Ratio, iv)
			for _, n := range r.Notes {
				fmt.Fprintf(w, "      note: %s\n", n)
			}
			for _, cv := range r.Caveats {
				fmt.Fprintf(w, "      caveat: %s\n", cv)
			}
		}
		if other > 0 {
			fmt.Fprintf(w, "  %s: %d published figure(s) not comparable: %s\n", name, other, strings.Join(compare.CollapseReasons(c.Rows), "; "))
		}
	}
	if len(rep.Claims) == 0 {
		return
	}
	fmt.Fprintf(w, "\nCLAIMS (on %s, %s; checks: 95%% bootstrap intervals, %d resamples, over rounds where the cells ran in rounds)\n", boardLabel(rep.Board, rep.ClassStatus), rep.Assurance, compare.Resamples)
	for _, cl := range rep.Claims {
		fmt.Fprintf(w, "  %s %s: %s\n", cl.Claim.ID, strings.ToUpper(cl.Verdict), cl.Claim.Claim)
		if cl.Reason != "" {
			fmt.Fprintf(w, "      why: %s\n", cl.Reason)
		}
		if cl.Multiplicity != "" {
			fmt.Fprintf(w, "      multiplicity: %s\n", cl.Multiplicity)
		}
		for _, ch := range cl.Checks {
			fmt.Fprintf(w, "      [%s] %s\n", ch.Verdict, ch.Detail)
		}
	}
}

// boardLabel is a board class with its status when the class was declared, not verified.
func boardLabel(class, status string) string {
	if status == artifacts.ClassDeclared {
		return class + " (class declared, not verified)"
	}
	return class
}

func cmdVerify(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	key := fs.String("key", "", "pin the signer: a runner.pub.json file")
	var lf logFlags
	lf.register(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want one BUNDLE (a directory or .tar.gz)"}
	}
	start := time.Now()
	b, v, err := openVerified(pos[0], *key)
	if err != nil {
		return err
	}
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		return fmt.Errorf("%s: signatures hold but %w", pos[0], err)
	}
	for _, c := range v.Checked {
		fmt.Fprintf(stdout, "ok  %s\n", c)
	}
	who := "keys carried in the bundle (not pinned: this proves integrity, not who signed; pass --key to pin)"
	if v.Pinned {
		who = "pinned key " + *key
	}
	if lf.log != "" {
		if err := verifyInLog(ctx, pos[0], &lf, stdout); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "VERIFIED %s: %s on %s, %d cells, signer %s, %s (%s)\n", pos[0], res.Experiment, res.Board, len(res.Cells), v.KeyFingerprint, who,
		time.Since(start).Round(time.Microsecond))
	return nil
}

// openVerified reads a bundle (directory or .tar.gz) and verifies it offline, pinned to the
// keys in keyFile when one is given. Errors name the bundle and what failed.
func openVerified(path, keyFile string) (*artifacts.Bundle, *attest.Verification, error) {
	var pinned *identity.PublicKeys
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, nil, err
		}
		pk, err := identity.ParsePublicKeys(b)
		if err != nil {
			return nil, nil, fmt.Errorf("key %s: %w", keyFile, err)
		}
		pinned = &pk
	}
	b, err := artifacts.ReadBundle(path)
	if err != nil {
		return nil, nil, err
	}
	v, err := attest.Verify(b, pinned)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: FAILED: %w", path, err)
	}
	// Signatures prove who signed, not that the numbers follow from the samples.
	_, res, err := artifacts.RederiveBundle(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: FAILED: signatures hold but the result does not re-derive: %w", path, err)
	}
	if err := rederiveEnergy(b, res, v); err != nil {
		return nil, nil, fmt.Errorf("%s: FAILED: signatures hold but the energy does not re-derive: %w", path, err)
	}
	if _, ok := b.Files[artifacts.FileTLS]; ok {
		v.Checked = append(v.Checked, "result.json re-derives from samples.csv, tls.csv and manifest.yaml (statistics, cells, n, units, sizes, CPU and phases)")
	} else {
		v.Checked = append(v.Checked, "result.json re-derives from samples.csv and manifest.yaml (statistics, cells, n, units, sizes)")
	}
	if v.Legacy {
		v.Checked = append(v.Checked, "legacy attestation ("+attest.PredicateTypeV1+"): bound to no job")
	} else if j := v.Statement.Predicate.Job; j != nil {
		v.Checked = append(v.Checked, fmt.Sprintf("bound to job %d (attempt %d) of portal %s", j.JobID, j.Attempt, j.Portal))
	}
	return b, v, nil
}

// cmdShow verifies a bundle offline, then prints its cells and its comparison with the
// paper it names, as `run` printed them when it was made.
func cmdShow(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("show", flag.ContinueOnError)
	key := fs.String("key", "", "pin the signer: a runner.pub.json file")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want one BUNDLE (a directory or .tar.gz)"}
	}
	b, v, err := openVerified(pos[0], *key)
	if err != nil {
		return fmt.Errorf("%w (nothing is shown from a bundle that does not verify)", err)
	}
	m, err := artifacts.ParseManifest(b.Files[artifacts.FileManifest], pos[0]+"/"+artifacts.FileManifest)
	if err != nil {
		return err
	}
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s (%s, method %s) on %s [%s], signed by %s, measured %s\n", pos[0], res.Experiment, res.Kind, res.Method,
		res.Board, res.Assurance, v.KeyFingerprint, res.StartedAt.Format(time.RFC3339))
	printCells(stdout, res)
	cat, err := experiments.Load()
	if err != nil {
		return err
	}
	if p, ok := cat.Paper(m.Spec.Reference.Dataset); ok {
		run, err := compare.RunFromBundle(b)
		if err != nil {
			return fmt.Errorf("%s: %w", pos[0], err)
		}
		printComparison(stdout, compare.Compare(run, m, p))
	}
	return nil
}

// cmdSubmit sends a signed bundle to a portal as a community result. It verifies the bundle
// locally first, so a bad one never leaves the machine; --register-keys registers this
// runner's public keys under the submitter token before uploading.
func cmdSubmit(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	portalURL := fs.String("portal", os.Getenv("PQREPRO_PORTAL"), "the portal's address (PQREPRO_PORTAL)")
	token := fs.String("token", os.Getenv("PQREPRO_SUBMIT_TOKEN"), "your submitter token (PQREPRO_SUBMIT_TOKEN)")
	register := fs.Bool("register-keys", false, "first register this runner's public keys (from --keys) under the token")
	keys := fs.String("keys", "", "runner identity directory")
	timeout := fs.Duration("timeout", 5*time.Minute, "longest each request to the portal may take")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *portalURL == "" || *token == "" {
		return usageError{"want one BUNDLE, --portal URL and --token T"}
	}
	b, v, err := openVerified(pos[0], "")
	if err != nil {
		return err
	}
	// What the portal would refuse is refused here, before anything is uploaded: a run with no
	// ok cell, timings below the physical floor.
	if err := artifacts.CheckPublishable(b); err != nil {
		return fmt.Errorf("%s is not submitted: %w", pos[0], err)
	}
	client := portalclient.NewSubmitter(*portalURL, *token)
	client.Timeout = *timeout
	if *register {
		id, err := identity.LoadIdentity(keysDir(*keys))
		if err != nil {
			return err
		}
		fp, err := client.RegisterKeys(ctx, id, "pqrepro submit")
		switch {
		case err == nil:
			fmt.Fprintf(stdout, "registered keys %s (possession proven with both keys)\n", fp)
		case errors.Is(err, runner.ErrConflict):
			// Already registered: to this account, which is what we want, or to another one or
			// a runner, in which case the submission below is refused with the reason.
			fmt.Fprintf(stdout, "keys %s not registered: %v\n", id.Public().Fingerprint(), err)
		default:
			return err
		}
	}
	var archive bytes.Buffer
	if err := artifacts.WriteTarGz(&archive, b); err != nil {
		return err
	}
	resp, err := client.Submit(ctx, archive.Bytes())
	if err != nil {
		return fmt.Errorf("submission refused: %w", err)
	}
	published := "published"
	if resp.AlreadyPublished {
		published = "already published"
	}
	fmt.Fprintf(stdout, "%s as run %d (signed by %s): %s%s\n", published, resp.RunID, v.KeyFingerprint, strings.TrimSuffix(*portalURL, "/"), resp.URL)
	return nil
}

func cmdKeys(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("keys", flag.ContinueOnError)
	keys := fs.String("keys", "", "identity directory")
	prove := fs.String("prove", "", "print a key registration proving possession of the keys over this challenge (from the portal's submit page)")
	label := fs.String("label", "", "with --prove: the label the keys are registered with")
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	dir := keysDir(*keys)
	if *prove != "" {
		id, err := identity.LoadIdentity(dir)
		if err != nil {
			return err
		}
		reg, err := portalclient.KeyRegistrationFor(id, strings.TrimSpace(*prove), *label)
		if err != nil {
			return usageError{err.Error()}
		}
		out, err := json.MarshalIndent(reg, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", out)
		return err
	}
	id, created, err := identity.LoadOrCreateIdentity(dir)
	if err != nil {
		return err
	}
	pub := id.Public()
	ed, ml := pub.KeyIDs()
	state := "existing"
	if created {
		state = "created"
	}
	fmt.Fprintf(stdout, "runner identity (%s) in %s\n  fingerprint %s\n  %s\n  %s\n  public keys: %s\n", state, dir, pub.Fingerprint(), ed, ml,
		filepath.Join(dir, "runner.pub.json"))
	return nil
}
