// Package experiments holds the project's data: one folder per source paper with its
// experiment manifests (<name>.yaml), its reference dataset (reference.csv, built from the
// shared reference data by ./build), its claims as checks (claims.yaml) and its metadata
// (paper.yaml), and paper002's raw power captures (Traces). The data is embedded so the binary
// works from any directory.
package experiments

import (
	"bytes"
	"embed"
	"encoding/csv"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"pqrepro/artifacts"
)

//go:embed boards.csv paper*/*.yaml paper*/*.csv paper*/*.md pqm4/*.csv pqm4/*.md pqm4/*.yaml
var embedded embed.FS

// traces holds the papers' raw power captures, gzip-compressed CSV exports of the meter
// (paper002: 7 boards x 53 FNB58 captures, about 4.3 MB), built by ./build.
//
//go:embed paper002/traces
var traces embed.FS

// Traces returns a paper's raw power captures as <board>/<name>.csv.gz (the authors' board
// ids and file names, each file the gzip of their CSV byte for byte), or false when the
// project holds none for that paper.
func Traces(paper string) (fs.FS, bool) {
	sub, err := fs.Sub(traces, paper+"/traces")
	if err != nil {
		return nil, false
	}
	if _, err := fs.Stat(sub, "."); err != nil {
		return nil, false
	}
	return sub, true
}

// Paper is one source paper with everything pqrepro knows about it.
type Paper struct {
	ID       string   `yaml:"id"`
	Title    string   `yaml:"title"`
	Citation string   `yaml:"citation"`
	Summary  string   `yaml:"summary"`
	Measured []string `yaml:"measured"`
	Boards   []string `yaml:"boards"`
	// Setting is the paper's measurement in one phrase (library, build, boards), quoted in
	// every verdict's reason when a run's board or implementation differs from it.
	Setting string `yaml:"setting"`
	// Method is the timing method (artifacts.Methods) that reproduces the paper's own, where
	// one does (paper002: openssl-cli); empty when no run here uses the paper's implementation.
	Method artifacts.Method `yaml:"method,omitempty"`
	// Manifests are the paper's experiments, sorted by name.
	Manifests []*artifacts.Manifest `yaml:"-"`
	// Reference holds every published number, each with its source.
	Reference []Row `yaml:"-"`
	// Claims are the paper's claims as checks.
	Claims []Claim `yaml:"-"`
	// Caveats qualify published numbers (a failing command timed, a debug build).
	Caveats []Caveat `yaml:"-"`
	// Provenance and ClaimsText are the reference data's PROVENANCE.md and CLAIMS.md.
	Provenance, ClaimsText string `yaml:"-"`
}

// Row is one published number (see the shared reference data's README for the columns).
type Row struct {
	Board, Arch, ClockMHz, Library, Algorithm, Operation, Scenario, Metric, Stat string
	// Value is the number as published; Text keeps its exact written form.
	Value float64
	Text  string
	Unit  string
	// N is the repetitions behind the number, 0 when not stated.
	N int
	// Source is the paper's table or section; Note the quoted wording; File the data file.
	Source, Note, File string
}

// Claim is a paper's claim restated as checks a run can test.
type Claim struct {
	ID        string `yaml:"id"`
	Claim     string `yaml:"claim"`
	Published string `yaml:"published"`
	Source    string `yaml:"source"`
	Scope     string `yaml:"scope,omitempty"`  // "" (any board), board-specific, cross-board, kind, firmware, caveat
	Reason    string `yaml:"reason,omitempty"` // why a scoped claim cannot be tested by one run
	// Boards are the board classes the claim is about (paper000's 41% is a Pico W figure). On
	// any other board the checks still run and are reported, each with its own verdict, but
	// the claim gets none: its reason is OffBoard with "{board}" replaced by the run's board.
	Boards   []string `yaml:"boards,omitempty"`
	OffBoard string   `yaml:"offBoard,omitempty"`
	// Role is the TLS role (artifacts.TLSRoles) whose samples the claim is about: paper000's
	// ML-DSA spread is the signer's, the server's. On a tls-matrix run of the other role the
	// checks still run and are shown, but the claim gets no verdict: its reason is OffRole with
	// "{board}" replaced as in OffBoard.
	Role    string `yaml:"role,omitempty"`
	OffRole string `yaml:"offRole,omitempty"`
	// ByDesign says why the claim holds by construction in this project (a frame layout the
	// project chose, counts the manifest sets): its checks run and show whether the
	// implementation meets its design, but the verdict is "implementation property (by
	// design)", never "holds", since it is no evidence about the paper.
	ByDesign string `yaml:"byDesign,omitempty"`
	// TimingNoise marks a claim about timing variability (paper000's ML-DSA spread): it is
	// never verdicted from a virtual machine, whose hypervisor adds noise of its own, nor from
	// a loaded run.
	TimingNoise bool    `yaml:"timingNoise,omitempty"`
	Checks      []Check `yaml:"checks,omitempty"`
	// Traces are checks of the claim on the paper's own raw power traces (energies
	// re-derived from its captures), separate from any run's verdict; a scoped claim's are
	// tested too, since the paper's data spans every board it compares.
	Traces []TraceCheck `yaml:"traces,omitempty"`
}

// TraceCheck is a ratio of two energies (or powers above idle) re-derived from a paper's own
// power captures, with the band the claim allows.
type TraceCheck struct {
	// Kind is "ratio": Num / Den.
	Kind string `yaml:"kind"`
	// Metric is "energy" (J per operation, the default) or "delta-power" (W above idle).
	Metric string `yaml:"metric,omitempty"`
	// Num and Den name cells "BOARD ALGORITHM/operation"; a BOARD of "*" stands for each of
	// Boards in turn (every board with captures when Boards is empty), in both.
	Num    string   `yaml:"num"`
	Den    string   `yaml:"den"`
	Boards []string `yaml:"boards,omitempty"`
	// Min and Max bound the ratio the claim allows (either may be absent).
	Min *float64 `yaml:"min,omitempty"`
	Max *float64 `yaml:"max,omitempty"`
	// Published is the paper's own figure for this ratio as written ("3.43"), when it states
	// one; it is checked against the re-derived interval within its rounding.
	Published string `yaml:"published,omitempty"`
	Note      string `yaml:"note,omitempty"`
}

// TraceMetrics lists the metrics a TraceCheck can compare.
func TraceMetrics() []string { return []string{"energy", "delta-power"} }

// validate checks a trace check's shape.
func (tc TraceCheck) validate() error {
	numB, numC, ok1 := strings.Cut(tc.Num, " ")
	denB, denC, ok2 := strings.Cut(tc.Den, " ")
	switch {
	case tc.Kind != "ratio":
		return fmt.Errorf("unknown kind %q (valid: ratio)", tc.Kind)
	case tc.Metric != "" && !slices.Contains(TraceMetrics(), tc.Metric):
		return fmt.Errorf("unknown metric %q (valid: %s)", tc.Metric, strings.Join(TraceMetrics(), ", "))
	case !ok1 || !ok2 || !strings.Contains(numC, "/") || !strings.Contains(denC, "/"):
		return fmt.Errorf("num %q and den %q must name cells as \"BOARD ALGORITHM/operation\"", tc.Num, tc.Den)
	case (numB == "*") != (denB == "*"):
		return fmt.Errorf("num %q and den %q: a board of \"*\" must be in both or neither", tc.Num, tc.Den)
	case len(tc.Boards) > 0 && numB != "*":
		return fmt.Errorf("boards are given but num %q names its board", tc.Num)
	case tc.Min == nil && tc.Max == nil:
		return fmt.Errorf("a ratio needs min or max")
	}
	if tc.Published != "" {
		if _, err := strconv.ParseFloat(tc.Published, 64); err != nil {
			return fmt.Errorf("published %q is not a number", tc.Published)
		}
	}
	return nil
}

// CheckKinds lists the check kinds: order and ratio compare medians of two or more cells;
// faster, notslower, additive, spread and range are the relations paper000's handshake
// claims need (see compare/handshake.go for how each is decided); slope-ratio, overhead and
// accepted-once read the mqtt-telemetry kind's recorded fields (compare/mqtt.go).
func CheckKinds() []string {
	return []string{"order", "ratio", "faster", "notslower", "additive", "spread", "range", CheckSlopeRatio, CheckOverhead, CheckAcceptedOnce}
}

// Scopes lists the claim scopes: a scoped claim is shown with its reason and never given a
// verdict by one run, even when it has checks.
func Scopes() []string {
	return []string{"board-specific", "cross-board", "kind", "firmware", "caveat"}
}

// validate checks a claim's scope and checks.
func (cl Claim) validate() error {
	if cl.Scope != "" && !slices.Contains(Scopes(), cl.Scope) {
		return fmt.Errorf("unknown scope %q (valid: %s)", cl.Scope, strings.Join(Scopes(), ", "))
	}
	if cl.Scope != "" && cl.Reason == "" {
		return fmt.Errorf("scope %s needs a reason: a scoped claim is shown with it instead of a verdict", cl.Scope)
	}
	if cl.ByDesign != "" && cl.Scope != "" {
		return fmt.Errorf("byDesign and scope %s exclude each other: a scoped claim is never tested", cl.Scope)
	}
	if len(cl.Checks) > 0 && !slices.ContainsFunc(cl.Checks, func(ch Check) bool { return !ch.Info }) {
		return fmt.Errorf("every check is info: a claim needs a check its verdict rests on")
	}
	if cl.Role != "" && !slices.Contains(artifacts.TLSRoles(), cl.Role) {
		return fmt.Errorf("unknown role %q (valid: %s)", cl.Role, strings.Join(artifacts.TLSRoles(), ", "))
	}
	if cl.Role != "" && cl.OffRole == "" {
		return fmt.Errorf("role %s needs offRole: the reason shown instead of a verdict on a run of the other role", cl.Role)
	}
	if len(cl.Boards) > 0 && cl.OffBoard == "" {
		return fmt.Errorf("boards %s need offBoard: the reason shown instead of a verdict on any other board", strings.Join(cl.Boards, ", "))
	}
	for i, tc := range cl.Traces {
		if err := tc.validate(); err != nil {
			return fmt.Errorf("trace check %d: %w", i+1, err)
		}
	}
	for i, ch := range cl.Checks {
		ratio := ch.Kind == "ratio" || ch.Kind == CheckSlopeRatio
		switch {
		case !slices.Contains(CheckKinds(), ch.Kind):
			return fmt.Errorf("check %d: unknown check kind %q (valid: %s)", i+1, ch.Kind, strings.Join(CheckKinds(), ", "))
		case ch.Kind == "faster" && (ch.Num == "" || ch.Den == "" || !(ch.Percent > 0 && ch.Percent < 100)):
			return fmt.Errorf("check %d: faster needs num (the slower cell), den (the faster one) and percent in (0, 100)", i+1)
		case (ch.Kind == "notslower" || ch.Kind == "spread") && (len(ch.Cells) == 0 || len(ch.Than) == 0):
			return fmt.Errorf("check %d: %s needs cells and than", i+1, ch.Kind)
		case ch.Kind == "additive" && (ch.Num == "" || len(ch.Cells) != 2 || ch.Tolerance <= 0):
			return fmt.Errorf("check %d: additive needs num (the hybrid), two cells (its parts) and a tolerance", i+1)
		case ch.Kind == "range" && (ch.Operation == "" || ch.Max == nil || ch.Count <= 0):
			return fmt.Errorf("check %d: range needs operation, count and max (the threshold of max/min)", i+1)
		case ch.Kind == "order" && len(ch.Cells) < 2:
			return fmt.Errorf("check %d: an order needs two or more cells", i+1)
		case ratio && (ch.Num == "" || ch.Den == ""):
			return fmt.Errorf("check %d: a %s needs num and den", i+1, ch.Kind)
		case ratio && ch.Expected <= 0 && ch.Min == nil && ch.Max == nil:
			return fmt.Errorf("check %d: a %s needs expected (with tolerance) or min/max", i+1, ch.Kind)
		case (ch.Kind == CheckOverhead || ch.Kind == CheckAcceptedOnce) && len(ch.Cells) != 1:
			return fmt.Errorf("check %d: a %s names one cell", i+1, ch.Kind)
		case ch.Kind == CheckOverhead && ch.Expected <= 0:
			return fmt.Errorf("check %d: an overhead check needs expected (bytes per frame)", i+1)
		case ch.Metric != "" && ch.Metric != "time" && ch.Metric != "energy":
			return fmt.Errorf("check %d: unknown metric %q (valid: time, energy)", i+1, ch.Metric)
		case ch.Method != "" && !slices.Contains(artifacts.Methods(), ch.Method):
			return fmt.Errorf("check %d: unknown method %q (valid: %s)", i+1, ch.Method, artifacts.Join(artifacts.Methods(), ", "))
		}
	}
	return nil
}

// Check kinds beyond order and ratio, for the mqtt-telemetry kind's recorded fields.
const (
	// CheckSlopeRatio: the ratio of two cells' fitted per-byte costs (mqtt.fit.perByte), with
	// a bootstrap interval, against expected/tolerance or min/max.
	CheckSlopeRatio = "slope-ratio"
	// CheckOverhead: one telemetry cell's measured wire overhead is Expected bytes for every
	// frame of every payload size.
	CheckOverhead = "overhead"
	// CheckAcceptedOnce: one telemetry cell's gateway delivered every genuine frame exactly
	// once and refused every injected replay and tampering with its reason.
	CheckAcceptedOnce = "accepted-once"
)

// Check is one testable relation between measured cells, named "ALGORITHM/operation".
type Check struct {
	// Kind is "order" (Cells strictly increasing), "ratio" (Num/Den) or one of the other
	// CheckKinds (paper000's handshake relations, the mqtt-telemetry checks).
	Kind  string   `yaml:"kind"`
	Cells []string `yaml:"cells,omitempty"`
	Num   string   `yaml:"num,omitempty"`
	Den   string   `yaml:"den,omitempty"`
	// Expected and Tolerance (relative) bound a ratio, or Min and Max do.
	Expected  float64  `yaml:"expected,omitempty"`
	Tolerance float64  `yaml:"tolerance,omitempty"`
	Min       *float64 `yaml:"min,omitempty"`
	Max       *float64 `yaml:"max,omitempty"`
	// Metric is "time" (median, default) or "energy" (median joules per operation).
	Metric string `yaml:"metric,omitempty"`
	// Method restricts the check to runs with that timing method (one of artifacts.Methods);
	// on any other run the check is untestable.
	Method artifacts.Method `yaml:"method,omitempty"`
	Note   string           `yaml:"note,omitempty"`
	// Boards restricts the check to runs on these board classes (a published figure of those
	// boards); on any other board the check is untestable.
	Boards []string `yaml:"boards,omitempty"`
	// Label starts the check's detail; "{board}" is replaced by the run's board class (and,
	// for a TLS matrix whose client ran on the board, that client and its role).
	Label string `yaml:"label,omitempty"`
	// Beside is a published figure an order check of two cells prints beside its measured
	// ratio (as % lower time and % higher speed), never decided against: the paper's figure
	// of another board or implementation (C000-01's 41% on a Pico W with wolfSSL).
	Beside string `yaml:"beside,omitempty"`
	// Info marks a check shown as information beside the verdict and never part of it (the
	// Ascon-128 ratio beside C003-01's Ascon-128a one; a conclusion the paper scoped to
	// hardware the project cannot identify).
	Info bool `yaml:"info,omitempty"`
	// Than are the cells Cells are compared with (notslower, spread: every pair).
	Than []string `yaml:"than,omitempty"`
	// Percent is the published "percent faster" of a faster check.
	Percent float64 `yaml:"percent,omitempty"`
	// Operation and Count select a range check's cells: every cell of that operation run
	// with the manifest's method, of which Count are expected.
	Operation string `yaml:"operation,omitempty"`
	Count     int    `yaml:"count,omitempty"`
}

// Caveat is a note attached to every published row it matches.
type Caveat struct {
	// Match fields that are empty match anything.
	Match struct {
		Board     string `yaml:"board,omitempty"`
		Algorithm string `yaml:"algorithm,omitempty"`
		Operation string `yaml:"operation,omitempty"`
		Scenario  string `yaml:"scenario,omitempty"`
		// AlgorithmPrefix matches a family ("SLH-DSA-"); Metrics any of the listed metrics.
		AlgorithmPrefix string   `yaml:"algorithmPrefix,omitempty"`
		Metrics         []string `yaml:"metrics,omitempty"`
	} `yaml:"match"`
	Text string `yaml:"text"`
}

// CaveatsFor returns the caveats that apply to a published row.
func (p *Paper) CaveatsFor(r Row) []string {
	var out []string
	for _, c := range p.Caveats {
		m := c.Match
		if (m.Board == "" || m.Board == r.Board) && (m.Algorithm == "" || m.Algorithm == r.Algorithm) &&
			(m.Operation == "" || m.Operation == r.Operation) && (m.Scenario == "" || m.Scenario == r.Scenario) &&
			strings.HasPrefix(r.Algorithm, m.AlgorithmPrefix) && (len(m.Metrics) == 0 || slices.Contains(m.Metrics, r.Metric)) {
			out = append(out, c.Text)
		}
	}
	return out
}

// Board is a board class from boards.csv.
type Board struct {
	Slug, Name, CPU, Arch, ClockMHz, Memory, OS, Papers, SpecSource string
}

// Catalog is everything in the experiments folder.
type Catalog struct {
	Papers []*Paper
	Boards []Board
}

// Load reads the embedded catalogue.
func Load() (*Catalog, error) { return LoadFS(embedded) }

// LoadFS reads a catalogue laid out like the experiments folder.
func LoadFS(fsys fs.FS) (*Catalog, error) {
	c := &Catalog{}
	ids, err := fs.Glob(fsys, "paper*/paper.yaml")
	if err != nil {
		return nil, err
	}
	for _, p := range ids {
		paper, err := loadPaper(fsys, path.Dir(p))
		if err != nil {
			return nil, err
		}
		c.Papers = append(c.Papers, paper)
	}
	if b, err := fs.ReadFile(fsys, "boards.csv"); err == nil {
		if c.Boards, err = parseBoards(b); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseBoards reads boards.csv.
func parseBoards(b []byte) ([]Board, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = 10
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("boards.csv: %w", err)
	}
	var out []Board
	for _, r := range recs[1:] {
		out = append(out, Board{Slug: r[0], Name: r[1], CPU: r[2], Arch: r[3], ClockMHz: r[4], Memory: r[5], OS: r[6], Papers: r[8], SpecSource: r[9]})
	}
	return out, nil
}

func loadPaper(fsys fs.FS, dir string) (*Paper, error) {
	p := &Paper{}
	if err := strictYAML(fsys, path.Join(dir, "paper.yaml"), p); err != nil {
		return nil, err
	}
	if p.ID != dir {
		return nil, fmt.Errorf("%s/paper.yaml: id %q does not match its folder", dir, p.ID)
	}
	var claims struct {
		Claims []Claim `yaml:"claims"`
	}
	if err := strictYAML(fsys, path.Join(dir, "claims.yaml"), &claims); err != nil {
		return nil, err
	}
	p.Claims = claims.Claims
	for _, cl := range p.Claims {
		if err := cl.validate(); err != nil {
			return nil, fmt.Errorf("%s/claims.yaml: %s: %w", dir, cl.ID, err)
		}
	}
	if _, err := fs.Stat(fsys, path.Join(dir, "caveats.yaml")); err == nil {
		var cv struct {
			Caveats []Caveat `yaml:"caveats"`
		}
		if err := strictYAML(fsys, path.Join(dir, "caveats.yaml"), &cv); err != nil {
			return nil, err
		}
		p.Caveats = cv.Caveats
	}
	files, _ := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	for _, f := range files {
		base := path.Base(f)
		if base == "paper.yaml" || base == "claims.yaml" || base == "caveats.yaml" {
			continue
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		m, err := artifacts.ParseManifest(b, "experiments/"+f)
		if err != nil {
			return nil, err
		}
		if m.Ref() != dir+"/"+strings.TrimSuffix(base, ".yaml") {
			return nil, fmt.Errorf("experiments/%s: metadata names it %s; a manifest lives at experiments/<paper>/<name>.yaml", f, m.Ref())
		}
		for _, id := range m.Spec.Reference.Claims {
			if !slices.ContainsFunc(p.Claims, func(c Claim) bool { return c.ID == id }) {
				return nil, fmt.Errorf("experiments/%s: unknown claim %s", f, id)
			}
		}
		if why := m.MinIterationsProblem(); why != "" {
			return nil, fmt.Errorf("experiments/%s: %s", f, why)
		}
		p.Manifests = append(p.Manifests, m)
	}
	rows, err := readReference(fsys, path.Join(dir, "reference.csv"))
	if err != nil {
		return nil, err
	}
	p.Reference = rows
	prov, _ := fs.ReadFile(fsys, path.Join(dir, "PROVENANCE.md"))
	cl, _ := fs.ReadFile(fsys, path.Join(dir, "CLAIMS.md"))
	p.Provenance, p.ClaimsText = string(prov), string(cl)
	return p, nil
}

func strictYAML(fsys fs.FS, name string, v any) error {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("experiments/%s: %w", name, err)
	}
	return nil
}

func readReference(fsys fs.FS, name string) ([]Row, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("experiments/%s: %w", name, err)
	}
	var rows []Row
	for i, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[9], 64)
		if err != nil {
			return nil, fmt.Errorf("experiments/%s line %d: value %q: %w", name, i+2, r[9], err)
		}
		n, _ := strconv.Atoi(r[11])
		rows = append(rows, Row{Board: r[0], Arch: r[1], ClockMHz: r[2], Library: r[3], Algorithm: r[4], Operation: r[5],
			Scenario: r[6], Metric: r[7], Stat: r[8], Value: v, Text: r[9], Unit: r[10], N: n, Source: r[12], Note: r[13], File: r[14]})
	}
	return rows, nil
}

// Paper returns the paper with that id.
func (c *Catalog) Paper(id string) (*Paper, bool) {
	for _, p := range c.Papers {
		if p.ID == id {
			return p, true
		}
	}
	return nil, false
}

// Manifest returns the manifest addressed <paper>/<name>.
func (c *Catalog) Manifest(ref string) (*artifacts.Manifest, error) {
	paper, _, _ := strings.Cut(ref, "/")
	p, ok := c.Paper(paper)
	if !ok {
		return nil, fmt.Errorf("no paper %q (papers: %s)", paper, strings.Join(c.paperIDs(), ", "))
	}
	var names []string
	for _, m := range p.Manifests {
		if m.Ref() == ref {
			return m, nil
		}
		names = append(names, m.Ref())
	}
	return nil, fmt.Errorf("no experiment %q (experiments of %s: %s)", ref, paper, strings.Join(names, ", "))
}

func (c *Catalog) paperIDs() []string {
	var ids []string
	for _, p := range c.Papers {
		ids = append(ids, p.ID)
	}
	return ids
}

// Claim returns a paper's claim by id.
func (p *Paper) Claim(id string) (Claim, bool) {
	for _, c := range p.Claims {
		if c.ID == id {
			return c, true
		}
	}
	return Claim{}, false
}
