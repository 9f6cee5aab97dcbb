package artifacts

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"pqrepro/artifacts/yamlcheck"
)

// APIVersion is the only manifest schema version this build reads.
const APIVersion = "pqrepro/v1"

// Key forms: how a timed encaps, decaps, sign or verify receives its key.
const (
	// KeysEncoded starts every timed operation from the encoded key (the FIPS 203/204 byte
	// forms liboqs takes: the encoded public key, the expanded private key), so unpacking the
	// key (matrix expansion, NTTs, H(pk)) is part of every sample, as in the papers.
	KeysEncoded = "encoded"
	// KeysParsed hands every timed call the library's already-parsed key object: the cost of
	// a warm key, cheaper than what liboqs or the openssl command line time.
	KeysParsed = "parsed"
)

// MaxMessageSize bounds spec.message.size so a manifest cannot ask for absurd allocations.
const MaxMessageSize = 16 << 20

// Manifest is a declared experiment: everything needed to re-run it. Its identity is the
// SHA-256 of its canonical form (see ID).
type Manifest struct {
	// APIVersion must be "pqrepro/v1".
	APIVersion string `yaml:"apiVersion" json:"apiVersion"`
	// Kind is one of kem-bench, sig-bench, kem-sig-sequence, tls-matrix (see Kinds).
	Kind Kind `yaml:"kind" json:"kind"`
	// Metadata names the experiment and says what it reproduces.
	Metadata Metadata `yaml:"metadata" json:"metadata"`
	// Spec pins what runs.
	Spec Spec `yaml:"spec" json:"spec"`
}

// Metadata addresses a manifest as <paper>/<name> and describes it for people.
type Metadata struct {
	// Paper is the source paper's id, e.g. "paper001".
	Paper string `yaml:"paper" json:"paper"`
	// Name is the experiment's name within the paper, e.g. "mlkem".
	Name string `yaml:"name" json:"name"`
	// Title is a one-line description.
	Title string `yaml:"title,omitempty" json:"title,omitempty"`
	// Description says what the paper measured and how this manifest mirrors it.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
}

// Spec is the part of a manifest that determines the measurement.
type Spec struct {
	// BenchSpec is what the benchmark kinds time (algorithms, operations, message), inline.
	// A kind with other needs owns its own typed section of the spec (see KindDef).
	BenchSpec `yaml:",inline"`
	// TLS is the tls-matrix kind's section (spec.tls); nil for every other kind.
	TLS *TLSSpec `yaml:"tls,omitempty" json:"tls,omitempty"`
	// Warmup iterations run before timing starts; they are checked but not recorded.
	Warmup int `yaml:"warmup" json:"warmup"`
	// Iterations is the number of timed iterations per cell (an upper bound when Budget is set).
	Iterations int `yaml:"iterations" json:"iterations"`
	// Budget stops a cell once this much time has been spent timing it; the n reached is recorded.
	Budget Duration `yaml:"budget,omitempty" json:"budget,omitempty"`
	// MinIterations is the least n a budgeted cell runs even when over budget (default 1).
	MinIterations int `yaml:"minIterations,omitempty" json:"minIterations,omitempty"`
	// BoardBudgets replace Budget and MinIterations on the board classes they name, and
	// bound one operation there (an emulated Cortex-M4 signs one SLH-DSA "s" message in a
	// minute or more of emulator time, where the host takes a second).
	BoardBudgets map[string]BoardBudget `yaml:"boardBudgets,omitempty" json:"boardBudgets,omitempty"`
	// Method is in-process (default), process-per-operation, openssl-cli, or loopback-tcp
	// (tls-matrix, its default).
	Method Method `yaml:"method,omitempty" json:"method"`
	// Keys is encoded (default: every timed operation starts from the encoded key) or parsed
	// (the parsed key object is reused: the warm-key cost).
	Keys string `yaml:"keys,omitempty" json:"keys"`
	// Seed derives every input (keys' randomness, messages) so a re-run draws the same inputs.
	Seed string `yaml:"seed" json:"seed"`
	// Scenario names the measurement condition, as the reference data does ("baseline").
	Scenario string `yaml:"scenario,omitempty" json:"scenario,omitempty"`
	// Boards lists the board classes the experiment is meant for ("host", "esp32c6", ...).
	Boards []string `yaml:"boards" json:"boards"`
	// Firmware pins a firmware digest ("sha256:<hex>") for boards that need one.
	Firmware string `yaml:"firmware,omitempty" json:"firmware,omitempty"`
	// Reference names the dataset and claims the result is compared with.
	Reference Reference `yaml:"reference,omitempty" json:"reference"`
	// MQTT is the mqtt-telemetry kind's own section.
	MQTT *MQTTSpec `yaml:"mqtt,omitempty" json:"mqtt,omitempty"`
	// Energy sets the metered energy pass's windows (spec.energy); nil: the defaults.
	Energy *EnergySpec `yaml:"energy,omitempty" json:"energy,omitempty"`
}

// EnergySpec is the metered energy pass's windows: one idle window per run, then one load
// window of back-to-back operations per cell, so a metered run takes Idle + cells × Load
// more than an unmetered one. Each is 5 s to 1 h: the interval needs five blocks of at least
// a second (energy.MinBlocks, energy.MinBlockSeconds).
type EnergySpec struct {
	// Idle is the run's idle window (default DefaultEnergyIdle).
	Idle Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	// Load is each cell's load window (default DefaultEnergyLoad).
	Load Duration `yaml:"load,omitempty" json:"load,omitempty"`
}

// The energy windows' defaults and bounds.
const (
	DefaultEnergyIdle = Duration(60 * time.Second)
	DefaultEnergyLoad = Duration(10 * time.Second)
	MinEnergyWindow   = Duration(5 * time.Second)
	MaxEnergyWindow   = Duration(time.Hour)
)

// EnergyWindows returns the idle and load windows, with the defaults for those not set.
func (s *Spec) EnergyWindows() (idle, load time.Duration) {
	idle, load = time.Duration(DefaultEnergyIdle), time.Duration(DefaultEnergyLoad)
	if e := s.Energy; e != nil {
		if e.Idle > 0 {
			idle = time.Duration(e.Idle)
		}
		if e.Load > 0 {
			load = time.Duration(e.Load)
		}
	}
	return idle, load
}

// BoardBudget is a cell's budget on one board class (Spec.BoardBudgets).
type BoardBudget struct {
	// Budget stops a cell on this board once this much time has been spent measuring it
	// (an emulated board's time is its emulator's CPU time, so a busy host does not change
	// the n reached); required.
	Budget Duration `yaml:"budget" json:"budget"`
	// MinIterations is the least n a cell runs there even when over budget (default: the
	// spec's minIterations, else 1).
	MinIterations int `yaml:"minIterations,omitempty" json:"minIterations,omitempty"`
	// OperationLimit is the longest one operation may run there without the board saying
	// anything; a cell whose operation passes it is failed as "budget exhausted" with what
	// it measured. 0: the driver's default.
	OperationLimit Duration `yaml:"operationLimit,omitempty" json:"operationLimit,omitempty"`
}

// BudgetOn is the budget of a cell on a board class: the class's entry of BoardBudgets, else
// the spec's own Budget and MinIterations (no operation limit).
func (s *Spec) BudgetOn(class string) BoardBudget {
	if b, ok := s.BoardBudgets[class]; ok {
		if b.MinIterations == 0 {
			b.MinIterations = max(s.MinIterations, 1)
		}
		return b
	}
	return BoardBudget{Budget: s.Budget, MinIterations: s.MinIterations}
}

// Message describes the message signed in sig-bench and kem-sig-sequence runs.
type Message struct {
	// Size in bytes of a fresh, seed-derived message drawn for every iteration.
	Size int `yaml:"size,omitempty" json:"size,omitempty"`
	// Text is a fixed message, as paper001 signed; randomized signing still varies the signature.
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
}

// Reference points at the published numbers a run is compared with.
type Reference struct {
	// Dataset is the reference dataset id, normally the paper id.
	Dataset string `yaml:"dataset,omitempty" json:"dataset,omitempty"`
	// Claims lists claim ids from the dataset's claims file to check.
	Claims []string `yaml:"claims,omitempty" json:"claims,omitempty"`
	// Tolerance is the relative difference within which a number counts as reproduced (default 0.15).
	Tolerance float64 `yaml:"tolerance,omitempty" json:"tolerance,omitempty"`
}

// DefaultTolerance is used when a manifest states none.
const DefaultTolerance = 0.15

// Duration is a time.Duration written as "90s" or "5m" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (write e.g. 90s or 5m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// IsZero lets omitempty drop an unset budget.
func (d Duration) IsZero() bool { return d == 0 }

// ManifestError lists every problem found in a manifest. It is an invalid-input error.
type ManifestError struct {
	// Source names the manifest (a path or <paper>/<name>).
	Source   string
	Problems []yamlcheck.Problem
}

func (e *ManifestError) Error() string { return yamlcheck.Format("manifest", e.Source, e.Problems) }

// ParseManifest reads, checks and normalises a manifest. Unknown fields, unknown algorithms and
// impossible values are all reported, each with its line and field; nothing is silently ignored.
func ParseManifest(data []byte, source string) (*Manifest, error) {
	var m Manifest
	c, decoded := yamlcheck.Decode(data, "manifest", "apiVersion, kind, metadata and spec", &m)
	v := &validator{Checker: *c}
	if decoded {
		m.applyDefaults()
		v.check(&m)
	}
	if len(v.Problems) > 0 {
		// In the file's order, whichever check found them (a line-less problem last).
		slices.SortStableFunc(v.Problems, func(a, b yamlcheck.Problem) int {
			return cmp.Compare(lineOrLast(a.Line), lineOrLast(b.Line))
		})
		return nil, &ManifestError{Source: source, Problems: v.Problems}
	}
	return &m, nil
}

func lineOrLast(l int) int {
	if l <= 0 {
		return math.MaxInt
	}
	return l
}

// Validate checks a manifest built in code (no line numbers are available).
func (m *Manifest) Validate() error {
	v := &validator{}
	v.check(m)
	v.checkWritten(m)
	if len(v.Problems) > 0 {
		return &ManifestError{Source: m.Ref(), Problems: v.Problems}
	}
	return nil
}

func (m *Manifest) applyDefaults() {
	if k, ok := LookupKind(m.Kind); ok && k.defaults != nil {
		k.defaults(m) // first: a kind may have its own default method
	}
	if m.Spec.Method == "" {
		m.Spec.Method = MethodInProcess
	}
	if m.Spec.Keys == "" {
		m.Spec.Keys = KeysEncoded
	}
	if len(m.Spec.Boards) == 0 {
		m.Spec.Boards = []string{HostBoard}
	}
	if m.Spec.Reference.Tolerance == 0 {
		m.Spec.Reference.Tolerance = DefaultTolerance
	}
	if m.Spec.Budget > 0 && m.Spec.MinIterations == 0 {
		m.Spec.MinIterations = 1
		if len(m.Spec.Reference.Claims) > 0 {
			m.Spec.MinIterations = min(MinClaimSamples, max(m.Spec.Iterations, 1))
		}
	}
}

// MinClaimSamples is the fewest samples a cell needs for a claim check's interval (and, in a
// run's rounds, the fewest rounds two slow cells must share). A budgeted manifest that checks
// claims defaults its spec.minIterations to it, and MinIterationsProblem says when one asks
// for less; that is not a parse error, so bundles published before the rule still parse.
const MinClaimSamples = 5

// MinIterationsProblem says why a manifest's budget could stop a cell below the samples its
// claim checks need (spec.minIterations, or a board budget's, below MinClaimSamples while
// the manifest checks claims), or "" when it cannot. The project's own manifests must have
// none (experiments.Load refuses them).
func (m *Manifest) MinIterationsProblem() string {
	s := &m.Spec
	if len(s.Reference.Claims) == 0 {
		return ""
	}
	need := min(MinClaimSamples, s.Iterations)
	if s.Budget > 0 && s.MinIterations < need {
		return fmt.Sprintf("spec.minIterations %d is below the %d samples a claim check needs (spec.reference.claims): the budget would stop slow cells where no claim can be tested", s.MinIterations, need)
	}
	for _, class := range slices.Sorted(maps.Keys(s.BoardBudgets)) {
		if b := s.BoardBudgets[class]; b.MinIterations > 0 && b.MinIterations < need {
			return fmt.Sprintf("spec.boardBudgets.%s.minIterations %d is below the %d samples a claim check needs (spec.reference.claims)", class, b.MinIterations, need)
		}
	}
	return ""
}

// Ref is the manifest's address, <paper>/<name>.
func (m *Manifest) Ref() string { return m.Metadata.Paper + "/" + m.Metadata.Name }

// Canonical is the manifest's canonical form: compact JSON of the normalised manifest, fields
// in declaration order, lists in their given order (order is part of what runs).
func (m *Manifest) Canonical() []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("canonical manifest: %v", err)) // only plain data types: cannot fail
	}
	return b
}

// ID is the canonical form's Digest.
func (m *Manifest) ID() string {
	return Digest(m.Canonical())
}

// YAML renders the normalised manifest, as stored in a bundle's manifest.yaml.
func (m *Manifest) YAML() []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		panic(fmt.Sprintf("manifest yaml: %v", err))
	}
	_ = enc.Close()
	return buf.Bytes()
}

// CellRef is one (algorithm, operation) pair a manifest asks for.
type CellRef struct {
	Algorithm string `json:"algorithm"`
	Operation string `json:"operation"`
}

// Cells lists the cells the manifest asks for, in run order (for the benchmark kinds:
// algorithm-major, skipping operations an algorithm does not have); none for an unknown kind.
func (m *Manifest) Cells() []CellRef {
	k, ok := LookupKind(m.Kind)
	if !ok {
		return nil
	}
	return k.cells(m)
}

// MessageSize is the length in bytes of every message signed in the run.
func (s *Spec) MessageSize() int {
	if s.Message.Text != "" {
		return len(s.Message.Text)
	}
	return s.Message.Size
}

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// boardRE allows dots, as in the reference data's rpi2-b-v1.1.
var boardRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,62}$`)

// ValidBoardClass reports whether s is a board class: a lower-case slug such as "host",
// "qemu-mps2-an386" or "rpi2-b-v1.1". Classes travel into file names and URLs, so nothing else
// is accepted from runners or bundles.
func ValidBoardClass(s string) bool { return boardRE.MatchString(s) }

// validator checks a decoded manifest against its rules, adding each problem with its line.
type validator struct {
	yamlcheck.Checker
}

func (v *validator) check(m *Manifest) {
	if m.APIVersion != APIVersion {
		v.Add("apiVersion", "must be %q, got %q", APIVersion, m.APIVersion)
	}
	kind, kindOK := LookupKind(m.Kind)
	if !kindOK {
		v.Add("kind", "unknown kind %q (valid: %s)", m.Kind, Join(Kinds(), ", "))
	}
	if !slugRE.MatchString(m.Metadata.Paper) {
		v.Add("metadata.paper", "must be a lower-case slug like paper001, got %q", m.Metadata.Paper)
	}
	if !slugRE.MatchString(m.Metadata.Name) {
		v.Add("metadata.name", "must be a lower-case slug like mlkem, got %q", m.Metadata.Name)
	}
	v.checkTextFields(m)
	s := &m.Spec
	if kindOK {
		kind.check(v, m)
	}
	if s.Warmup < 0 || s.Warmup > 1_000_000 {
		v.Add("spec.warmup", "must be between 0 and 1000000, got %d", s.Warmup)
	}
	if s.Iterations < 1 || s.Iterations > MaxSamplesPerCell {
		v.Add("spec.iterations", "must be between 1 and %d, got %d", MaxSamplesPerCell, s.Iterations)
	}
	if s.Budget < 0 {
		v.Add("spec.budget", "must not be negative")
	}
	if e := s.Energy; e != nil {
		for _, w := range []struct {
			field string
			d     Duration
		}{{"spec.energy.idle", e.Idle}, {"spec.energy.load", e.Load}} {
			if field, d := w.field, w.d; d != 0 && (d < MinEnergyWindow || d > MaxEnergyWindow) {
				v.Add(field, "must be between %v and %v, got %v", time.Duration(MinEnergyWindow), time.Duration(MaxEnergyWindow), time.Duration(d))
			}
		}
	}
	if s.MinIterations < 0 || (s.MinIterations > s.Iterations && s.Iterations > 0) {
		v.Add("spec.minIterations", "must be between 0 and spec.iterations (%d), got %d", s.Iterations, s.MinIterations)
	}
	if s.MinIterations > 0 && s.Budget == 0 {
		v.Add("spec.minIterations", "only applies with spec.budget")
	}
	for _, class := range slices.Sorted(maps.Keys(s.BoardBudgets)) {
		b, at := s.BoardBudgets[class], "spec.boardBudgets."+class
		if !ValidBoardClass(class) {
			v.Add(at, "not a board class: %q", class)
		}
		if b.Budget <= 0 {
			v.Add(at+".budget", "must be a positive duration")
		}
		if b.MinIterations < 0 || b.MinIterations > s.Iterations {
			v.Add(at+".minIterations", "must be between 0 and spec.iterations (%d), got %d", s.Iterations, b.MinIterations)
		}
		if b.OperationLimit < 0 {
			v.Add(at+".operationLimit", "must not be negative")
		}
	}
	switch {
	case !slices.Contains(Methods(), s.Method):
		v.Add("spec.method", "unknown method %q (valid: %s)", s.Method, Join(Methods(), ", "))
	case kindOK && !slices.Contains(kind.Methods, s.Method):
		v.Add("spec.method", "a %s cannot be timed with %s (valid: %s)", m.Kind, s.Method, Join(kind.Methods, ", "))
	}
	if s.Method == MethodOpenSSLCLI {
		for i, name := range s.Algorithms {
			if _, known := LookupAlgorithm(name); known && !slices.Contains(OpenSSLCLIAlgorithms(), name) {
				v.Add(fmt.Sprintf("spec.algorithms[%d]", i), "openssl-cli runs only algorithms OpenSSL 3.5 has; %q is not one (valid: %s)", name, strings.Join(OpenSSLCLIAlgorithms(), ", "))
			}
		}
	}
	switch {
	case s.Keys != KeysEncoded && s.Keys != KeysParsed:
		v.Add("spec.keys", "unknown key form %q (valid: %s, %s)", s.Keys, KeysEncoded, KeysParsed)
	case s.Keys == KeysParsed && s.Method != MethodInProcess:
		v.Add("spec.keys", "parsed keys apply to in-process runs only: a %s run reads every key from its encoding", s.Method)
	}
	if strings.TrimSpace(s.Seed) == "" {
		v.Add("spec.seed", "is required: every input is derived from it so a re-run draws the same inputs")
	}
	if len(s.Boards) == 0 {
		v.Add("spec.boards", "list at least one board class")
	}
	for i, b := range s.Boards {
		if !boardRE.MatchString(b) {
			v.Add(fmt.Sprintf("spec.boards[%d]", i), "board class must be a lower-case slug, got %q", b)
		}
	}
	if s.Firmware != "" && !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(s.Firmware) {
		v.Add("spec.firmware", "must be sha256:<64 hex digits>, got %q", s.Firmware)
	}
	if s.Reference.Tolerance < 0 || s.Reference.Tolerance >= 10 {
		v.Add("spec.reference.tolerance", "must be a relative tolerance between 0 and 10, got %g", s.Reference.Tolerance)
	}
	if len(s.Reference.Claims) > 0 && s.Reference.Dataset == "" {
		v.Add("spec.reference.claims", "claims need spec.reference.dataset")
	}
}
