package portal

// A run's page: small view builders (cells, environment, report) that a test can call on
// their own, and the handler that joins them.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/internal/boardcat"
	"pqrepro/portal/fault"
	"pqrepro/portal/plot"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

func (s *Server) runPage(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return err
	}
	cells, err := s.store.Cells(ctx, id)
	if err != nil {
		return err
	}
	rev, err := s.store.SignerRevoked(ctx, r)
	if err != nil {
		return err
	}
	v := runHeader(r)
	v.Page = s.page(c, fmt.Sprintf("Run %d", id))
	v.SignerRevoked = whenSet(rev)
	v.Cells, v.Columns, v.Plots = runCells(cells)
	if v.Columns.Hashing {
		pq, err := pqm4Rows()
		if err != nil {
			return err
		}
		for i := range v.Cells {
			v.Cells[i].PQM4Hashing = pqm4HashingText(pq, cells[i].Algorithm, cells[i].Operation)
		}
	}
	v.Log = s.runLogStatus(ctx, id)
	// Drawn from the bundle's own samples when it can be read: whiskers at 1.5×IQR and the
	// outliers as dots, so one slow iteration does not hide the box. The stored statistics'
	// min-to-max figures above stay when the bundle cannot be read.
	if figs, err := s.RunSampleBoxPlot(ctx, r); err == nil && len(figs) > 0 {
		v.Plots = v.Plots[:0]
		for _, f := range figs {
			note := "Box: p25 to p75 with the median; whiskers: the furthest samples within 1.5 × IQR of the box; dots: samples beyond them."
			v.Plots = append(v.Plots, templates.RunPlot{Figure: f, Note: plotNote(note, f, len(figs))})
		}
	} else if err != nil {
		slog.Warn("run page: samples for the box plot", "run", id, "err", err)
	}
	v.Timing = s.runTiming(r.ClassStatus, nil)
	if r.Environment != "" {
		var env artifacts.Environment
		if err := json.Unmarshal([]byte(r.Environment), &env); err != nil {
			return fmt.Errorf("run %d environment: %w", id, err)
		}
		v.Timing = s.runTiming(r.ClassStatus, &env)
		if env.Meter != nil {
			if v.Energy, err = s.runEnergy(ctx, r); err != nil {
				slog.Warn("run page: energy section", "run", id, "err", err)
			}
		}
		uploaded, stored := s.uploadedBuild(ctx, env, r.Firmware)
		v.Environment = append(environmentKVs(env), uploaded...)
		if stored {
			v.FirmwareLink = "/firmware/" + r.Firmware + "/build"
		}
	}
	if r.Checks != "" {
		if err := json.Unmarshal([]byte(r.Checks), &v.Checks); err != nil {
			return fmt.Errorf("run %d checks: %w", id, err)
		}
	}
	if err := s.reportView(&v, r); err != nil {
		return err
	}
	if kindViews[r.Kind].heatMap {
		if v.HeatMap, err = s.runHeatMap(ctx, r); err != nil {
			return err
		}
	}
	return s.render(c, http.StatusOK, templates.RunPage(v))
}

// countModel is what an emulated board class's counts are a model of, for the run page
// ("" where the unit says enough).
func countModel(class string) string {
	if m, ok := boardcat.LookupEmulated(class); ok && m.IsRP2040JS() {
		return boardcat.RP2040JSCycleModel
	}
	return ""
}

// runHeader is the run page's facts from the run's row.
func runHeader(r store.Run) templates.RunView {
	v := templates.RunView{ID: r.ID, JobID: r.JobID, Experiment: r.Experiment, Paper: r.Paper,
		Kind: string(r.Kind), Method: string(r.Method), Board: r.BoardClass, BoardName: r.BoardName, Assurance: assurance(r.BoardClass, string(r.Level), r.Origin),
		BindingNote: bindingNote(r.Binding), OwnManifest: !r.Catalogue, CountModel: countModel(r.BoardClass),
		Runner: r.RunnerName, Submitter: r.Submitter, Signer: r.Signer, Bundle: r.Bundle, BundleSize: bytesHuman(r.BundleSize), Firmware: r.Firmware,
		ManifestID: r.ManifestID, Started: when(r.StartedAt), Finished: when(r.FinishedAt), Published: when(r.PublishedAt),
		Duration: r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond).String()}
	if v.Firmware == "" {
		v.Firmware = "none (the board needs no firmware)"
	}
	return v
}

// reportView decodes the run's stored comparison report into the page: an undecodable
// report is an error, never an empty comparison; a report older than this portal's
// comparison is shown as stored, labelled.
func (s *Server) reportView(v *templates.RunView, r store.Run) error {
	key := strconv.FormatInt(r.ID, 10)
	k, ok := s.reports.get(key)
	if !ok || k.report != r.Report || k.version != r.ReportVersion {
		var rep compare.Report
		if err := json.Unmarshal([]byte(r.Report), &rep); err != nil {
			return fmt.Errorf("run %d report: %w", r.ID, err)
		}
		k = &keptReport{report: r.Report, version: r.ReportVersion, dataset: rep.Dataset, tolerance: fmt.Sprintf("%.0f%%", rep.Tolerance*100),
			claims: claimResultRows(rep, r.Origin)}
		k.comparison, k.notComparable = comparisonView(rep)
		if r.ReportVersion < ReportVersion {
			k.note = fmt.Sprintf("This comparison was made by an older version of the portal's comparison (report version %d, now %d); it is shown as it was stored until the administrator runs pqrepro rebuild.",
				r.ReportVersion, ReportVersion)
		}
		s.reports.put(key, k)
	}
	v.Dataset, v.Tolerance, v.Comparison, v.NotComparable, v.Claims, v.ReportNote = k.dataset, k.tolerance, k.comparison, k.notComparable, k.claims, k.note
	return nil
}

// keptReport is a run's stored comparison as its page shows it, kept (in Server.reports, by
// run) with the stored text it was decoded from: decoding the 10–20 KB report was an eighth of
// a run page's CPU. A rebuild that rewrites the report changes the text, so the page decodes it
// again. Kept rows are shared between requests and never modified.
type keptReport struct {
	report                   string
	version                  int
	dataset, tolerance, note string
	comparison               []templates.CompareRow
	notComparable            []templates.NotComparableRow
	claims                   []templates.ClaimResultRow
}

// runCells builds the cells table: each statistic printed in the unit its row's Unit column
// names, the n reached against the n requested (flagged when the time budget stopped the
// cell), and the heap, stack and energy columns wherever a cell has them. The plot takes the
// cells of the first unit.
func runCells(cells []artifacts.Cell) ([]templates.CellRow, templates.CellColumns, []templates.RunPlot) {
	var rows []templates.CellRow
	var cols templates.CellColumns
	var groups plotGroups
	for _, cl := range cells {
		row := cellRow(cl)
		cols.Heap = cols.Heap || row.Heap != "–"
		cols.Stack = cols.Stack || row.Stack != "–"
		cols.Energy = cols.Energy || row.Energy != "–"
		cols.Hashing = cols.Hashing || row.Hashing != "–"
		cols.Keys = cols.Keys || row.Keys != "–"
		if st := cl.Stats; st != nil && cl.Status == artifacts.StatusOK {
			groups.add(cl, plot.Row{Label: row.Algorithm + " " + row.Operation, Min: st.Min, P25: st.P25, Median: st.Median, P75: st.P75, Max: st.Max})
		}
		rows = append(rows, row)
	}
	var plots []templates.RunPlot
	figs := groups.figures()
	for _, f := range figs {
		plots = append(plots, templates.RunPlot{Figure: f, Note: plotNote("Box: p25 to p75 with the median; whiskers: min to max.", f, len(figs))})
	}
	return rows, cols, plots
}

// plotNote completes a box plot's caption: its log axis, and, when a run has several plots,
// that each holds one unit.
func plotNote(note string, f *plot.Figure, plots int) string {
	if f.Log {
		note += " Log axis: the values span more than an order of magnitude."
	}
	if plots > 1 {
		note += " One plot per unit: cells measured in other units are in the other plots."
	}
	return note
}

// plotGroups gathers a run's box plot rows by unit and quantity, in the order the cells
// first show each: rows of different units (or quantities) never share an axis.
type plotGroups struct {
	keys []plotKey
	rows map[plotKey][]plot.Row
}

// plotKey is one box plot's unit and quantity (the axis title).
type plotKey struct{ unit, quantity string }

func (g *plotGroups) add(cl artifacts.Cell, r plot.Row) {
	k := plotKey{string(cl.Unit), quantityTitle(cl.Operation, cl.Unit)}
	if g.rows == nil {
		g.rows = map[plotKey][]plot.Row{}
	}
	if _, seen := g.rows[k]; !seen {
		g.keys = append(g.keys, k)
	}
	g.rows[k] = append(g.rows[k], r)
}

// figures lays out one box plot per group (a group with nothing to draw has none).
func (g *plotGroups) figures() []*plot.Figure {
	var out []*plot.Figure
	for _, k := range g.keys {
		unit := k.unit
		if f := plot.Layout(g.rows[k], k.quantity, func(x float64) string { return axisLabel(x, unit) }); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// cellRow is one cell's row; its statistics share the unit of its Unit column.
func cellRow(cl artifacts.Cell) templates.CellRow {
	row := templates.CellRow{Algorithm: cl.Algorithm, Operation: cl.Operation, Status: string(cl.Status), Error: cl.Error, Unit: string(cl.Unit),
		Heap: "–", Stack: "–", Energy: "–", Hashing: "–", Keys: cmp.Or(cl.Keys, "–"), Implementation: implementationText("")}
	if cl.Implementation != nil {
		// A stored cell's Implementation holds its key (sqlstore Cells).
		row.Implementation = implementationText(cl.Implementation.Name)
	}
	if cl.Variant != "" {
		// A variant (a corrected command, the crypto/tls stack) is never the paper's method:
		// the row says which it is, so it is not read as a repeat of the cell above.
		row.Operation += " · " + cl.Variant
	}
	if q := quantityNote(cl.Operation, cl.Unit); q != "" {
		row.Operation += " (" + q + ")"
	}
	if st := cl.Stats; st != nil {
		unit, f := statScale(cl.Unit, st.Median)
		row.Unit = unit
		row.N = st.N
		row.Min, row.P25, row.Median, row.P75 = f(st.Min), f(st.P25), f(st.Median), f(st.P75)
		row.Max, row.Mean, row.Stddev = f(st.Max), f(st.Mean), f(st.Stddev)
		if cl.Requested > 0 && st.N < cl.Requested {
			row.NOf = "of " + strconv.Itoa(cl.Requested)
			if cl.BudgetReached {
				row.NOf += " (time budget)"
			}
		}
	}
	if m := cl.Memory; m != nil {
		if m.HeapBytesPerOp != nil {
			row.Heap = human(*m.HeapBytesPerOp, "B")
		}
		if m.StackBytes != nil {
			row.Stack = groupDigits(int64(*m.StackBytes)) + " B"
		}
		if m.PeakHeapBytes != nil {
			row.Heap = groupDigits(int64(*m.PeakHeapBytes)) + " B peak"
		}
	}
	if e := cl.Energy; e != nil && e.JoulesPerOp != nil {
		row.Energy = joules(e.JoulesPerOp.Median)
	}
	row.Hashing, row.HashingWhy = hashingText(cl.Hashing)
	return row
}

// hashingText is a cell's hashing share as the run and scheme pages print it: a percentage of
// instructions, with ± its bound where the counter is coarse; "not measured" with the reason;
// "–" when no pass ran.
func hashingText(h *artifacts.Hashing) (text, why string) {
	switch {
	case h == nil:
		return "–", ""
	case h.Absent != "":
		return "not measured", h.Absent
	case h.Bound > 0:
		return fmt.Sprintf("%.1f %% ± %.1f", 100*h.Share, 100*h.Bound), "of instructions; ± from the counter's resolution"
	}
	return fmt.Sprintf("%.1f %%", 100*h.Share), "of instructions; exact counter"
}

// statScale picks, for a row whose median is m, the unit its statistics are printed in and
// the function printing them as bare numbers: nanoseconds become ns, µs, ms or s by the
// median's size (so the Unit column names the unit of every number beside it), counts keep
// their unit with thousands separators.
func statScale[U ~string](unit U, m float64) (string, func(float64) string) {
	if artifacts.Unit(unit) != artifacts.UnitNanoseconds {
		return string(unit), func(v float64) string { return groupDigits(int64(math.Round(v))) }
	}
	div, name, prec := 1.0, "ns", 0
	switch a := math.Abs(m); {
	case a >= 1e9:
		div, name, prec = 1e9, "s", 3
	case a >= 1e6:
		div, name, prec = 1e6, "ms", 3
	case a >= 1e3:
		div, name, prec = 1e3, "µs", 2
	}
	return name, func(v float64) string { return strconv.FormatFloat(v/div, 'f', prec, 64) }
}

// groupDigits prints an integer with thousands separators.
func groupDigits(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// joules prints an energy per operation with an SI prefix.
func joules(j float64) string {
	switch a := math.Abs(j); {
	case a >= 1:
		return strconv.FormatFloat(j, 'f', 3, 64) + " J"
	case a >= 1e-3:
		return strconv.FormatFloat(j*1e3, 'f', 3, 64) + " mJ"
	case a >= 1e-6:
		return strconv.FormatFloat(j*1e6, 'f', 3, 64) + " µJ"
	}
	return strconv.FormatFloat(j*1e9, 'f', 1, 64) + " nJ"
}

// measuredLibraries are the modules whose code a host run timed (the rest of the runner's
// build information is the portal's and runner's own plumbing).
var measuredLibraries = []string{"github.com/cloudflare/circl", "golang.org/x/crypto", "filippo.io/mlkem768", "filippo.io/edwards25519"}

// environmentKVs shows a run's environment: the machine, and the libraries of the code that
// ran — the Go modules of the measured cryptography on the host (with the openssl command
// line of an openssl-cli run), the firmware's own code and toolchain on a board.
func environmentKVs(env artifacts.Environment) []templates.KV {
	b := env.Board
	board := b.Name
	for _, part := range []struct{ k, v string }{{"class", b.Class}, {"driver", string(b.Driver)}, {"chip", b.Chip}} {
		if part.v != "" && !strings.Contains(board, part.v) {
			board += ", " + part.k + " " + part.v
		}
	}
	kv := []templates.KV{
		{Key: "Runner version", Value: env.RunnerVersion}, {Key: "Go", Value: env.GoVersion}, {Key: "OS / arch", Value: strings.TrimSpace(env.OS + "/" + env.Arch + " " + env.Kernel)},
		{Key: "CPU", Value: fmt.Sprintf("%s (%d logical)", env.CPUModel, env.CPUs)}, {Key: "Virtualized", Value: strconv.FormatBool(env.Virtualized)},
		{Key: "Board", Value: board}, {Key: "Board RNG", Value: b.RNG}, {Key: "Timer", Value: env.TimerSource}, {Key: "Energy", Value: env.EnergySource},
		{Key: "Libraries", Value: librariesRan(env)},
	}
	if b.Emulator != "" {
		kv = append(kv, templates.KV{Key: "Emulator", Value: b.Emulator})
	}
	kv = append(kv, firmwareBuildKVs(b.FirmwareBuild)...)
	out := kv[:0]
	for _, e := range kv {
		if strings.TrimSpace(e.Value) != "" {
			out = append(out, e)
		}
	}
	return out
}

// uploadedBuildKVs shows, for a run whose bundle records no build record (a board that ran a
// firmware uploaded to this portal, which the runner fetched without its metadata.json), what
// the upload declared and the portal checked: file, toolchain, implementations, source and
// uploader, labelled as the upload's and not the signed bundle's. Nothing when the bundle
// records its build, or the firmware was never uploaded here.
//
// stored reports whether the build is stored here (its page can be linked), whether or not
// its record is shown.
func (s *Server) uploadedBuild(ctx context.Context, env artifacts.Environment, digest string) (kv []templates.KV, stored bool) {
	if digest == "" {
		return nil, false
	}
	fw, err := s.store.FirmwareBuild(ctx, digest)
	if err != nil {
		if !fault.Is(err, fault.NotFound) {
			slog.Warn("run page: uploaded firmware build", "digest", digest, "err", err)
		}
		return nil, false
	}
	if !fw.WithdrawnAt.IsZero() {
		// A run that was running when its build was withdrawn finished (docs/DECISIONS.md):
		// its page says the build is withdrawn, and why.
		kv = append(kv, templates.KV{Key: "Firmware build withdrawn", Value: when(fw.WithdrawnAt) + ": " + fw.Withdrawn})
	}
	if len(env.Board.FirmwareBuild) > 0 {
		return kv, true
	}
	return append(uploadedBuildKVs(fw), kv...), true
}

// uploadedBuildKVs is an uploaded build's record as the run page shows it.
func uploadedBuildKVs(fw store.Firmware) []templates.KV {
	from := " (declared at upload, checked against the ELF; not part of the signed bundle)"
	src := fw.SourceURL
	if fw.SourceCommit != "" {
		src += " at commit " + fw.SourceCommit
	}
	kv := []templates.KV{
		{Key: "Uploaded firmware build", Value: fmt.Sprintf("%s for %s, %s, uploaded by %s on %s", fw.Filename, fw.BoardClass, bytesHuman(fw.Size), fw.UploadedBy, when(fw.CreatedAt))},
		{Key: "Firmware toolchain", Value: fw.Toolchain + from},
		{Key: "Firmware implementations", Value: fw.Libraries},
		{Key: "Firmware source", Value: src},
	}
	// How it was built, as the portal read the ELF at upload (metadata.json's where the ELF
	// does not hold the fact): the provenance a run from the command line shows from the
	// bundle's build record.
	b := fw.Build
	if b.Compiler != "" {
		kv = append(kv, templates.KV{Key: "Firmware compiler", Value: b.Compiler + " (read from " + b.CompilerFrom + " at upload)"})
	}
	if b.Flags != "" {
		kv = append(kv, templates.KV{Key: "Firmware flags", Value: projectRelative(b.Flags) + " (read from " + b.FlagsFrom + " at upload)"})
	}
	if len(b.Sections) > 0 {
		kv = append(kv, templates.KV{Key: "Firmware size", Value: fmt.Sprintf("text %s, data %s, bss %s (the ELF's section headers)", exactBytes(b.Text), exactBytes(b.Data), exactBytes(b.BSS))})
	}
	if len(b.CodeSize) > 0 {
		var sizes []string
		for _, c := range b.CodeSize {
			sizes = append(sizes, fmt.Sprintf("%s %s", c.Group, exactBytes(c.Total)))
		}
		kv = append(kv, templates.KV{Key: "Code size (code + read-only data)", Value: strings.Join(sizes, ", ") + " (from the upload's metadata.json)"})
	}
	out := kv[:0]
	for _, e := range kv {
		if strings.TrimSpace(strings.TrimSuffix(e.Value, from)) != "" {
			out = append(out, e)
		}
	}
	return out
}

// librariesRan names the code that was measured: on a firmware board the firmware (name,
// version, toolchain), on the host the measured Go modules and, for openssl-cli, openssl.
func librariesRan(env artifacts.Environment) string {
	b := env.Board
	if b.Driver != "" && b.Driver != "host" {
		fw := "harness " + cmp.Or(b.Firmware, "firmware")
		if b.FirmwareVersion != "" {
			fw += " " + b.FirmwareVersion
		}
		var meta struct {
			Toolchain string `json:"toolchain"`
		}
		if len(b.FirmwareBuild) > 0 && json.Unmarshal(b.FirmwareBuild, &meta) == nil && meta.Toolchain != "" {
			fw += ", built with " + meta.Toolchain
		}
		return fw + " (the board's firmware; each cell's implementation is in its row of the cells table; the runner's Go modules did not run on it)"
	}
	var libs []string
	for _, mod := range measuredLibraries {
		if ver, ok := env.Libraries[mod]; ok {
			libs = append(libs, mod+" "+ver)
		}
	}
	if env.OpenSSL != nil && env.OpenSSL.Version != "" {
		libs = append(libs, env.OpenSSL.Version)
	}
	slices.Sort(libs)
	return strings.Join(libs, ", ")
}

// prefixMapRE finds the compiler's prefix maps (-ffile-prefix-map=OLD=NEW and the like),
// whose OLD is the build machine's directory.
var prefixMapRE = regexp.MustCompile(`(-f(?:file|debug|macro)-prefix-map=|--debug-prefix-map=)(/[^=\s]*)=(\S*)`)

// projectRelative rewrites a build's flags so they name paths relative to the project: the
// directory each prefix map names is replaced by what it maps to everywhere in the flags, and
// shown in the map itself as <build dir>.
func projectRelative(flags string) string {
	for _, m := range prefixMapRE.FindAllStringSubmatch(flags, -1) {
		old, repl := m[2], m[3]
		flags = strings.ReplaceAll(flags, m[0], m[1]+"<build dir>="+repl)
		flags = strings.ReplaceAll(flags, old+"/", repl+"/")
	}
	return flags
}

// firmwareBuildKVs shows the parts of a firmware build record (metadata.json) a reader needs:
// toolchain, flags (relative to the project) and code size per algorithm as read from the ELF.
func firmwareBuildKVs(raw json.RawMessage) []templates.KV {
	var b struct {
		Toolchain string `json:"toolchain"`
		CFlags    string `json:"cflags"`
		KATs      string `json:"kat_vectors"`
		CodeSize  []struct {
			Group string `json:"group"`
			Total int    `json:"total"`
		} `json:"code_size"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &b) != nil {
		return nil
	}
	var sizes []string
	for _, c := range b.CodeSize {
		sizes = append(sizes, fmt.Sprintf("%s %s B", c.Group, groupDigits(int64(c.Total))))
	}
	return []templates.KV{{Key: "Firmware toolchain", Value: b.Toolchain}, {Key: "Firmware flags", Value: projectRelative(b.CFlags)},
		{Key: "Firmware self-test vectors", Value: b.KATs}, {Key: "Code size (code + read-only data)", Value: strings.Join(sizes, ", ")}}
}

// bindingNote says, for a run page, how the run's signed bundle is bound.
func bindingNote(binding string) string {
	switch binding {
	case store.BindingUnbound:
		return "unbound: a community submission, signed without a job of this portal"
	case store.BindingLegacy:
		return "legacy: a v1 bundle (or one published before bundles were bound to their job); its signature is checked, its job binding cannot be"
	}
	return ""
}
