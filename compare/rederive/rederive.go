// Package rederive re-derives a paper's published energies from its authors' own power
// captures and checks the paper's energy claims on them. Each published energy (J per
// operation) is recomputed by energy.PerOperation from the board's idle capture, the
// operation's on-load capture and the paper's own time per operation, with a 95 % block
// bootstrap interval, and the published figure is placed inside or outside that interval with
// the reason. This is a check of the paper's arithmetic and of its uncertainty, labelled
// "re-derived from the paper's traces": nothing here was re-run.
//
// A published energy without both captures is "no capture", without a time per operation
// "no timing": never interpolated or estimated.
package rederive

import (
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"pqrepro/energy"
	"pqrepro/energy/fnb58"
	"pqrepro/experiments"
)

// Label is how every re-derived number and claim check is labelled.
const Label = "re-derived from the paper's traces"

// Cell verdicts.
const (
	// Inside: the published energy lies inside the re-derived interval.
	Inside = "inside"
	// Outside: it does not; Reason says why.
	Outside = "outside"
	// NoCapture: the board's idle capture or the operation's load capture is missing.
	NoCapture = "no capture"
	// NoTiming: the paper gives no time per operation for the cell.
	NoTiming = "no timing"
)

// Reasons a published energy lies outside its interval.
const (
	// ReasonSource: the published energy was computed from power figures that are not the
	// captures' means (the repository's result files disagree with its power files).
	ReasonSource = "disagreeing source"
	// ReasonRounding: the published figure's rounding (half a unit of its last digit)
	// reaches the interval.
	ReasonRounding = "rounding"
	// ReasonUnexplained: neither; Detail gives the numbers.
	ReasonUnexplained = "unexplained"
)

// Layout says how a paper's capture files are named: <NN_>?<board>_<operation>_<algorithm>
// for an operation's on-load capture and <NN_>?<board>_<idle> for the board's idle capture,
// in a folder per board, each a gzip of the meter's CSV export (<name>.csv.gz).
type Layout struct {
	// Boards maps the authors' board ids (folder names) to board slugs.
	Boards map[string]string
	// Idle is the word that names a board's idle capture.
	Idle string
	// Operations maps the authors' operation words to operations; a word mapped to "" names
	// captures no published energy uses (they are listed as unused, with Unused's reason).
	Operations map[string]string
	// Unused says why captures of an operation mapped to "" have no published energy.
	Unused string
	// Algorithms maps the file names' algorithm words to the catalogue's names.
	Algorithms map[string]string
}

// Paper002 is paper002's layout: the authors' repository's power_readings folders.
var Paper002 = Layout{
	Boards: map[string]string{"pi1": "rpi1-b", "pizero": "rpi-zero-wh", "pi2": "rpi2-b-v1.1", "pi2b": "rpi2-b-v1.2",
		"pizero2": "rpi-zero-2-wh", "pi3": "rpi3-a-plus", "pi4": "rpi4-b"},
	Idle: "baseline",
	Operations: map[string]string{"keys": "keygen", "key": "keygen", "signing": "sign", "verifying": "verify",
		"verification": "verify", "tls": ""},
	Unused: "TLS handshake captures: the authors published no handshake timing (their TLS data \"failed to provide useful data\"), so no energy",
	Algorithms: map[string]string{"rsa": "RSA-2048", "ecdsa": "ECDSA-P256", "ecdh": "ECDH-P256", "x25519": "X25519",
		"ml-kem-512": "ML-KEM-512", "ml-kem-768": "ML-KEM-768", "ml-kem-1024": "ML-KEM-1024",
		"ml-dsa-44": "ML-DSA-44", "ml-dsa-65": "ML-DSA-65", "ml-dsa-87": "ML-DSA-87",
		"slh-dsa-sha2-128s": "SLH-DSA-SHA2-128s", "slh-dsa-sha2-128f": "SLH-DSA-SHA2-128f", "slh-dsa-shake-128s": "SLH-DSA-SHAKE-128s",
		"slh-dsa-sha2-192s": "SLH-DSA-SHA2-192s", "slh-dsa-sha2-192f": "SLH-DSA-SHA2-192f", "slh-dsa-shake-192s": "SLH-DSA-SHAKE-192s",
		"slh-dsa-sha2-256s": "SLH-DSA-SHA2-256s", "slh-dsa-sha2-256f": "SLH-DSA-SHA2-256f", "slh-dsa-shake-256s": "SLH-DSA-SHAKE-256s"},
}

// LayoutOf returns the layout of a paper's traces, or false when the project knows none.
func LayoutOf(paper string) (Layout, bool) {
	if paper == "paper002" {
		return Paper002, true
	}
	return Layout{}, false
}

// Capture is one capture file as the layout names it.
type Capture struct {
	// Path is its path in the traces folder ("pi1/07_pi1_keys_ml-kem-768.csv.gz").
	Path string
	// Board is the board slug; Idle marks the board's idle capture; otherwise Algorithm and
	// Operation name the operation (Operation "" for a capture no energy uses).
	Board, Algorithm, Operation string
	Idle                        bool
}

// Parse names a capture file from its path ("<board id>/<name>.csv.gz").
func (l Layout) Parse(p string) (Capture, error) {
	dir, file := path.Split(p)
	id := strings.TrimSuffix(dir, "/")
	c := Capture{Path: p, Board: l.Boards[id]}
	if c.Board == "" || strings.Contains(id, "/") {
		return c, fmt.Errorf("%s: unknown board folder %q", p, id)
	}
	name, ok := strings.CutSuffix(file, ".csv.gz")
	if !ok {
		return c, fmt.Errorf("%s: not a .csv.gz capture", p)
	}
	if i := strings.IndexByte(name, '_'); i > 0 && strings.Trim(name[:i], "0123456789") == "" {
		name = name[i+1:]
	}
	rest, ok := strings.CutPrefix(name, id+"_")
	if !ok {
		return c, fmt.Errorf("%s: the name does not start with its board id %q", p, id)
	}
	if rest == l.Idle {
		c.Idle = true
		return c, nil
	}
	word, alg, _ := strings.Cut(rest, "_")
	op, ok := l.Operations[word]
	if !ok {
		return c, fmt.Errorf("%s: unknown operation %q", p, word)
	}
	if c.Algorithm = l.Algorithms[alg]; c.Algorithm == "" {
		return c, fmt.Errorf("%s: unknown algorithm %q", p, alg)
	}
	c.Operation = op
	return c, nil
}

// ReadTrace reads one capture of the traces folder: the gzip of an FNB58 CSV export.
func ReadTrace(fsys fs.FS, p string) (energy.Trace, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return energy.Trace{}, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return energy.Trace{}, fmt.Errorf("%s: %w", p, err)
	}
	c, err := fnb58.ReadCSV(io.LimitReader(z, 1<<30), p)
	if err != nil {
		return energy.Trace{}, err
	}
	return c.Trace, nil
}

// Cell is one published energy and its re-derivation.
type Cell struct {
	Board, Algorithm, Operation string
	// Published is the published energy row (J per operation) as the catalogue holds it:
	// Table 4, the appendix, or the repository's results, in that priority.
	Published experiments.Row
	// Sources names every published table the figure appears in ("Table 4", "Appendix A",
	// "repository").
	Sources []string
	// IdleCapture and LoadCapture are the capture paths used (empty when missing).
	IdleCapture, LoadCapture string
	// TOp is the time per operation in seconds: the repository's loop wall time over its n
	// iterations, which is how its latency rows and the published energies were computed.
	TOp float64
	// Estimate is the re-derivation; nil for a cell with Verdict NoCapture or NoTiming.
	Estimate *energy.Estimate
	// RepoIdle and RepoDelta are the repository's idle and on-load-minus-idle powers (W)
	// behind the published energy, 0 where the catalogue kept another source's row for them;
	// RepoEnergy is RepoDelta x TOp, the published arithmetic.
	RepoIdle, RepoDelta, RepoEnergy float64
	// Disagreement names the powers behind the published energy that are not the captures'
	// means (beyond their rounding), and by how much; empty when they are.
	Disagreement string
	// Verdict is Inside, Outside, NoCapture or NoTiming; Reason (for Outside) is one of the
	// Reason constants, and Detail says it in numbers.
	Verdict, Reason, Detail string
}

// Ref names the cell: "BOARD ALGORITHM/operation".
func (c Cell) Ref() string { return c.Board + " " + c.Algorithm + "/" + c.Operation }

// Table is a paper's energies re-derived from its traces.
type Table struct {
	Paper string
	// Cells are every published energy, in the catalogue's order.
	Cells []Cell
	// Unused are captures no published energy uses, and why.
	Unused []string
	// Claims are the paper's claims with checks on its traces.
	Claims []ClaimResult
	// Captures counts the capture files read.
	Captures int
	// Seed (hex), Replicates, Confidence and Method say how every interval was drawn.
	Seed                 string
	Replicates           int
	Confidence           float64
	Method, EnergyMethod string
}

// Options tune Rederive.
type Options struct {
	// Replicates and Confidence as energy.Options (0: its defaults).
	Replicates int
	Confidence float64
}

// Seed is the bootstrap seed of a paper's re-derivation: fixed per paper, so the page, the
// command and the tests give the same intervals bit for bit.
func Seed(paper string) [32]byte {
	return sha256.Sum256([]byte("pqrepro/rederive/v1\x00" + paper))
}

// Rederive re-derives every published energy of paper p from the captures in traces (laid out
// as l names them) and checks the paper's claims on them. A capture that does not parse or read
// is an error; a published energy without its captures or timing is a cell with no estimate.
// Boards are processed in parallel; the result does not depend on the order.
func Rederive(p *experiments.Paper, traces fs.FS, l Layout, opt Options) (*Table, error) {
	eopt := energy.Options{Seed: Seed(p.ID), Replicates: opt.Replicates, Confidence: opt.Confidence}
	files, err := fs.Glob(traces, "*/*.csv.gz")
	if err != nil {
		return nil, err
	}
	tab := &Table{Paper: p.ID, Captures: len(files), Method: Label, EnergyMethod: energy.Method}
	idle := map[string]string{}    // board -> path
	load := map[[3]string]string{} // board, algorithm, operation -> path
	for _, f := range files {
		c, err := l.Parse(f)
		if err != nil {
			return nil, err
		}
		switch {
		case c.Idle:
			if prev, dup := idle[c.Board]; dup {
				return nil, fmt.Errorf("%s and %s are both idle captures of %s", prev, f, c.Board)
			}
			idle[c.Board] = f
		case c.Operation == "":
			tab.Unused = append(tab.Unused, f)
		default:
			k := [3]string{c.Board, c.Algorithm, c.Operation}
			if prev, dup := load[k]; dup {
				return nil, fmt.Errorf("%s and %s are both captures of %s %s/%s", prev, f, c.Board, c.Algorithm, c.Operation)
			}
			load[k] = f
		}
	}
	if len(tab.Unused) > 0 {
		tab.Unused = append([]string{fmt.Sprintf("%d captures unused: %s", len(tab.Unused), l.Unused)}, tab.Unused...)
	}

	rows := index(p.Reference)
	var boards []string
	for _, r := range p.Reference {
		if r.Metric != "energy_j" || r.Scenario != "openssl_cli" {
			continue
		}
		c := Cell{Board: r.Board, Algorithm: r.Algorithm, Operation: r.Operation, Published: r, Sources: sources(r)}
		c.IdleCapture, c.LoadCapture = idle[r.Board], load[[3]string{r.Board, r.Algorithm, r.Operation}]
		if wall, ok := rows[key{r.Board, r.Algorithm, r.Operation, "openssl_cli", "wall_time_total"}]; ok && wall.N > 0 {
			c.TOp = wall.Value / float64(wall.N)
			if lat, ok := rows[key{r.Board, r.Algorithm, r.Operation, "openssl_cli", "latency"}]; ok && !withinRounding(c.TOp, lat.Text) {
				return nil, fmt.Errorf("%s: wall time %s s over %d iterations is %.9g s, its latency row says %s s", c.Ref(), wall.Text, wall.N, c.TOp, lat.Text)
			}
		}
		// The repository's own powers, where the catalogue kept them (another source's row
		// wins when the two agree within its rounding, e.g. the text's "1.41 W").
		if r, ok := rows[key{r.Board, r.Algorithm, r.Operation, "idle_baseline", "power_w"}]; ok && r.File == repoFile {
			c.RepoIdle = r.Value
		}
		if r, ok := rows[key{r.Board, r.Algorithm, r.Operation, "on_load", "power_delta_w"}]; ok && r.File == repoFile {
			c.RepoDelta = r.Value
			c.RepoEnergy = r.Value * c.TOp
		}
		switch {
		case c.IdleCapture == "" || c.LoadCapture == "":
			c.Verdict, c.Detail = NoCapture, missing(c)
		case c.TOp == 0:
			c.Verdict, c.Detail = NoTiming, "the paper gives no time per operation for this cell"
		}
		if !slices.Contains(boards, c.Board) {
			boards = append(boards, c.Board)
		}
		tab.Cells = append(tab.Cells, c)
	}

	// One worker per CPU, each taking a board: its idle capture is read once.
	var wg sync.WaitGroup
	work := make(chan string)
	errs := make([]error, len(boards))
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for b := range work {
				errs[slices.Index(boards, b)] = rederiveBoard(tab, b, traces, eopt)
			}
		})
	}
	for _, b := range boards {
		work <- b
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for i := range tab.Cells {
		if e := tab.Cells[i].Estimate; e != nil {
			tab.Seed, tab.Replicates, tab.Confidence = e.Seed, e.Replicates, e.Confidence
			break
		}
	}
	tab.Claims = checkClaims(p, tab)
	return tab, nil
}

// rederiveBoard estimates every cell of one board that has its captures and timing. Each
// worker writes only its own board's cells.
func rederiveBoard(tab *Table, board string, traces fs.FS, opt energy.Options) error {
	var idle energy.Trace
	for i := range tab.Cells {
		c := &tab.Cells[i]
		if c.Board != board || c.Verdict != "" {
			continue
		}
		if idle.Power == nil {
			var err error
			if idle, err = ReadTrace(traces, c.IdleCapture); err != nil {
				return err
			}
		}
		load, err := ReadTrace(traces, c.LoadCapture)
		if err != nil {
			return err
		}
		e, err := energy.PerOperation(idle, load, c.TOp, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Ref(), err)
		}
		c.Estimate = &e
		judge(c)
	}
	return nil
}

// judge places the published energy inside or outside the re-derived interval, and says why
// it is outside. It also names any power behind the published energy that is not its
// capture's mean: the repository's idle baseline (six decimals) against the idle capture, and
// the power above idle the published energy implies (energy / T_op, within the energy's
// rounding) against the captures'.
func judge(c *Cell) {
	e := c.Estimate
	pub := c.Published.Value
	half := halfUnit(c.Published.Text)
	var parts []string
	if c.RepoIdle != 0 {
		if d := c.RepoIdle - e.Idle.Mean.Point; math.Abs(d) > 0.5e-6+1e-12 {
			parts = append(parts, fmt.Sprintf("idle %s W in the repository's results, %s W the idle capture's mean (%+.4g W)",
				fmtW(c.RepoIdle), fmtW(e.Idle.Mean.Point), d))
		}
	}
	implied, tol := pub/c.TOp, half/c.TOp+1e-6
	if d := implied - e.Delta.Point; math.Abs(d) > tol {
		parts = append(parts, fmt.Sprintf("the published energy implies %.6g W above idle (%s J / %.9g s), the captures give %.6g W (%+.4g W)",
			implied, c.Published.Text, c.TOp, e.Delta.Point, d))
	}
	c.Disagreement = strings.Join(parts, "; ")
	if e.Energy.Contains(pub) {
		c.Verdict = Inside
		return
	}
	c.Verdict = Outside
	arith := ""
	if c.RepoDelta != 0 {
		arith = fmt.Sprintf(" (the repository's %s W x %.9g s = %.6g J)", fmtW(c.RepoDelta), c.TOp, c.RepoEnergy)
	}
	switch {
	case c.Disagreement != "":
		c.Reason = ReasonSource
		c.Detail = fmt.Sprintf("the published %s J%s comes from powers that are not the captures' means: %s; from the captures: %.6g J [%.6g, %.6g]",
			c.Published.Text, arith, c.Disagreement, e.Energy.Point, e.Energy.Lo, e.Energy.Hi)
	case pub+half >= e.Energy.Lo && pub-half <= e.Energy.Hi:
		c.Reason = ReasonRounding
		c.Detail = fmt.Sprintf("the published %s J stands for [%.6g, %.6g] J, which reaches the interval [%.6g, %.6g]", c.Published.Text, pub-half, pub+half, e.Energy.Lo, e.Energy.Hi)
	default:
		c.Reason = ReasonUnexplained
		c.Detail = fmt.Sprintf("the published %s J%s; from the captures: %.6g J [%.6g, %.6g]", c.Published.Text, arith, e.Energy.Point, e.Energy.Lo, e.Energy.Hi)
	}
}

func missing(c Cell) string {
	var m []string
	if c.IdleCapture == "" {
		m = append(m, "no idle capture of "+c.Board)
	}
	if c.LoadCapture == "" {
		m = append(m, "no on-load capture of "+c.Algorithm+" "+c.Operation)
	}
	return strings.Join(m, "; ") + ": not estimated"
}

// repoFile is the catalogue's file of the authors' repository results, the source of every
// published energy's arithmetic.
const repoFile = "paper002-energy-openssl/repo_full_results_long.csv"

type key struct{ board, algorithm, operation, scenario, metric string }

func index(rows []experiments.Row) map[key]experiments.Row {
	m := make(map[key]experiments.Row, len(rows))
	for _, r := range rows {
		m[key{r.Board, r.Algorithm, r.Operation, r.Scenario, r.Metric}] = r
	}
	return m
}

// sources names the published tables an energy figure appears in. The catalogue keeps one
// row per figure, from the first of Table 4, the appendix and the repository that has it; the
// appendix holds every Table 4 cell and the repository every cell (PROVENANCE, "Checks done").
func sources(r experiments.Row) []string {
	s := []string{}
	switch {
	case r.Source == "Table 4":
		s = append(s, "Table 4", "Appendix A")
	case strings.HasPrefix(r.Source, "Appendix A"):
		s = append(s, "Appendix A")
	}
	return append(s, "repository")
}

// withinRounding says whether v rounds to the decimal text t (half a unit of its last
// digit, and a little for the binary representation).
func withinRounding(v float64, t string) bool {
	x, err := strconv.ParseFloat(t, 64)
	return err == nil && math.Abs(v-x) <= halfUnit(t)*(1+1e-9)+1e-15
}

// halfUnit is half a unit in the last place of a decimal text.
func halfUnit(t string) float64 {
	d := 0
	if i := strings.IndexByte(t, '.'); i >= 0 {
		d = len(t) - i - 1
	}
	return 0.5 * math.Pow10(-d)
}

func fmtW(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
