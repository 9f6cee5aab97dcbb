// Package store holds the portal's domain types (jobs, runs, accounts, runners, lists and
// the metrics leaderboards rank) and the Store interface every database engine implements.
package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
)

// Roles of accounts.
const (
	RoleAdmin     = "admin"
	RoleSubmitter = "submitter"
	RoleMember    = "member"
)

// User is an account. Its token is stored only as a hash.
type User struct {
	ID        int64
	Name      string
	Role      string
	CreatedAt time.Time
	// RevokedAt is when the administrator revoked the account (zero if not).
	RevokedAt time.Time
}

// Runner is an enrolled runner.
type Runner struct {
	ID          int64
	Name        string
	Fingerprint string
	PublicKeys  identity.PublicKeys
	Boards      []protocol.BoardInfo
	// Capabilities are what the runner reported at its last enrolment (its openssl).
	Capabilities protocol.Capabilities
	Version      string
	CreatedAt    time.Time
	LastSeen     time.Time
	// RevokedAt is when the administrator revoked the runner (zero if not): its token no
	// longer works and its published runs are flagged.
	RevokedAt time.Time
	// ReenrolAllowed: the administrator released the runner's keys for one re-enrolment
	// without its current token.
	ReenrolAllowed bool
}

// SubmitterKey is a public key pair a community member registered for their runner.
type SubmitterKey struct {
	ID          int64
	UserID      int64
	UserName    string
	Label       string
	Fingerprint string
	PublicKeys  identity.PublicKeys
	CreatedAt   time.Time
	// RevokedAt is when the administrator revoked the keys (zero if not): bundles they sign
	// are no longer accepted and runs they signed are flagged.
	RevokedAt time.Time
}

// Firmware is a stored firmware build.
type Firmware struct {
	Digest       string
	Filename     string
	Size         int64
	BoardClass   string
	Toolchain    string
	Libraries    string
	SourceURL    string
	SourceCommit string
	UploadedBy   string
	// UploaderID is the uploading account's id (0 when unknown).
	UploaderID int64
	CreatedAt  time.Time
	// WithdrawnAt is when the build was withdrawn (zero while it is not), Withdrawn why.
	WithdrawnAt time.Time
	Withdrawn   string
	// Build is how the build was built (read by FirmwareBuild, not by the lists), and
	// Metadata the metadata.json uploaded with it, as it came ("" when none was).
	Build    FirmwareBuildInfo
	Metadata string
}

// FirmwareBuildInfo is how a firmware build was built: what the portal read from the ELF
// itself, and what the upload's metadata.json says. Where both give a fact the ELF's is kept
// (the From fields say whose each is) and the metadata's is kept beside it only to show that
// it differs.
type FirmwareBuildInfo struct {
	// Compiler is the compiler and its version (the ELF's DWARF producer or .comment, else
	// metadata.json's toolchain); Flags the compile flags (the ELF's DWARF producer, which
	// GCC records by default, else metadata.json's cflags). CompilerFrom and FlagsFrom say
	// where each was read ("" when nowhere).
	Compiler, CompilerFrom string
	Flags, FlagsFrom       string
	// Producers are the distinct DWARF producers of the ELF's compile units (at most
	// MaxProducers): more than one when units were compiled differently.
	Producers []string
	// MetaCompiler, MetaCFlags and LDFlags are metadata.json's toolchain, cflags and ldflags
	// (the ELF does not record link flags).
	MetaCompiler, MetaCFlags, LDFlags string
	// Sections are the ELF's allocated sections from its section headers; Text, Data and BSS
	// their sums as size(1) reports them (text includes read-only data).
	Sections        []FirmwareSection
	Text, Data, BSS uint64
	// MetaSize is metadata.json's size report, when it gave one.
	MetaSize *FirmwareSize
	// CodeSize is metadata.json's code size per algorithm (symbol sizes grouped by prefix),
	// with the method it states: numbers of the uploader's build tool, not read here.
	CodeSize       []FirmwareCodeGroup
	CodeSizeMethod string
	// BuildID is the GNU build-id note of the ELF (hex; "" when it has none).
	BuildID string
}

// MaxProducers bounds FirmwareBuildInfo.Producers.
const MaxProducers = 8

// FirmwareSection is one allocated ELF section: Kind is text, data or bss.
type FirmwareSection struct {
	Name string
	Kind string
	Size uint64
}

// FirmwareSize is a size(1) report in bytes.
type FirmwareSize struct {
	Text, Data, BSS uint64
}

// FirmwareCodeGroup is the code and read-only data metadata.json attributes to one algorithm
// or part; WithShared adds the shared Keccak code it calls (0 when not given).
type FirmwareCodeGroup struct {
	Group                           string
	Code, ROData, Total, WithShared uint64
}

// LogLimits bound what the store keeps of job logs. Beyond AttemptBytes (or MaxChunks chunks)
// in one attempt, or JobBytes over all of a job's attempts, the oldest chunks after the head
// are dropped (older attempts' first), so the run header (the first HeadBytes) and the most
// recent output stay; readers show "… N bytes dropped …" where the middle was, followed by
// the summary lines of the dropped part (artifacts/logtext: "cell ...", "link: ..."), which
// are kept apart up to SummaryBytes per attempt.
type LogLimits struct {
	// AttemptBytes bounds one attempt's stored log; JobBytes all of a job's attempts.
	AttemptBytes, JobBytes int64
	// HeadBytes: chunks starting within the first HeadBytes of an attempt's log are kept.
	HeadBytes int64
	// SummaryBytes bounds the summary lines kept of one attempt's log beside its chunks (zero:
	// the default).
	SummaryBytes int64
	// MaxChunks bounds one attempt's stored chunks; MaxIndex the index a runner may use (a
	// runner sends one chunk a second at most).
	MaxChunks, MaxIndex int
}

// DefaultLogLimits: 4 MiB per attempt, 8 MiB per job, a 64 KiB head, 1 MiB of summary lines
// per attempt (two lines of every cell of the largest manifest, artifacts.MaxCells), 4096
// chunks, indexes below 10 million (115 days of one chunk a second).
func DefaultLogLimits() LogLimits {
	return LogLimits{AttemptBytes: 4 << 20, JobBytes: 8 << 20, HeadBytes: 64 << 10, SummaryBytes: 1 << 20, MaxChunks: 4096, MaxIndex: 10_000_000}
}

// OrDefault returns the defaults when a limit other than SummaryBytes is not positive, else l
// with SummaryBytes defaulted.
func (l LogLimits) OrDefault() LogLimits {
	if l.AttemptBytes <= 0 || l.JobBytes <= 0 || l.HeadBytes <= 0 || l.MaxChunks <= 0 || l.MaxIndex <= 0 {
		return DefaultLogLimits()
	}
	if l.SummaryBytes <= 0 {
		l.SummaryBytes = DefaultLogLimits().SummaryBytes
	}
	return l
}

// LogView is a bounded view of one attempt's log: its head, its tail and how much of the
// middle is not shown (dropped by the store or left out by the reader).
type LogView struct {
	// Attempt is the attempt shown (the latest with a log); 0 when there is no log.
	Attempt int
	// Text is the head, where bytes are left out a logtext.Marker and the summary lines among
	// them, and the tail.
	Text string
	// End is the position just after the last byte of the attempt's streamed log, as the
	// runner sent it (dropped parts included): where LogSince continues.
	End int64
	// Omitted counts the bytes not in Text.
	Omitted int64
}

// Job states.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobPublished = "published"
	JobFailed    = "failed"
)

// MaxAttempts is how many leases a job gets before an expired lease fails it for good.
const MaxAttempts = 3

// Job is a request to run an experiment on a board class.
type Job struct {
	ID           int64
	Experiment   string
	Paper        string
	ManifestYAML string
	ManifestID   string
	BoardClass   string
	Firmware     string
	// Method is the manifest's timing method (an openssl-cli job needs a runner with OpenSSL 3.5).
	Method      artifacts.Method
	State       string
	RequestedBy string
	CreatedAt   time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	RunnerID    int64
	RunnerName  string
	LeaseID     string
	// LeaseNonce is the random value issued with the current lease ("" when none is held).
	LeaseNonce   string
	LeaseExpires time.Time
	Attempt      int
	Progress     protocol.Progress
	ProgressAt   time.Time
	Note         string
	Error        string
	RunID        int64
}

// cancelledPrefix begins the error of a job cancelled before it started.
const cancelledPrefix = "cancelled before it started: "

// CancelledByWithdrawal is the error of a queued job cancelled because the firmware build it
// would flash (digest) was withdrawn at when, with the reason.
func CancelledByWithdrawal(digest string, when time.Time, reason string) string {
	return cancelledPrefix + "firmware " + digest + " was withdrawn on " + when.UTC().Format("2006-01-02 15:04 UTC") + ": " + reason
}

// Cancelled reports whether the job was cancelled before it started (it is failed, and its
// Error says why); CancelReason is that reason.
func (j Job) Cancelled() bool {
	return j.State == JobFailed && strings.HasPrefix(j.Error, cancelledPrefix)
}

// CancelReason is why a cancelled job was cancelled ("" for any other job).
func (j Job) CancelReason() string {
	if !j.Cancelled() {
		return ""
	}
	return strings.TrimPrefix(j.Error, cancelledPrefix)
}

// Terminal reports whether the job has finished (published or failed).
func (j Job) Terminal() bool { return j.State == JobPublished || j.State == JobFailed }

// NewJob is what CreateJob needs.
type NewJob struct {
	Experiment, Paper, ManifestYAML, ManifestID, BoardClass, Firmware string
	// Method is the manifest's spec.method; empty means in-process.
	Method      artifacts.Method
	RequestedBy int64
}

// ScanCap is how many rows of its leading index one page of a list examines at most. A list
// with one indexed filter never reaches it (every row examined matches); a list with more
// filters, or filtered by algorithm, examines rows of the leading filter's index and tests
// the rest on each: when ScanCap rows did not fill the page, the page ends early with a
// cursor that continues the search where it stopped.
const ScanCap = 5000

// VerdictsPerClaim is how many of a claim's newest verdicts a paper's page lists (its
// tallies count them all); MaxClaimsPerPaper bounds the claims read.
const (
	VerdictsPerClaim  = 20
	MaxClaimsPerPaper = 500
)

// AdminList is how many rows an administrator's list (accounts, runners, keys, enrolment
// tokens, firmware builds) holds at most, newest first.
const AdminList = 200

// EnrolTokenList is how many enrolment tokens the administrator's page lists, newest first.
const EnrolTokenList = 200

// MaxPage is the largest page a list returns.
const MaxPage = 500

// Cursor is a keyset position in a list: the (time, id) of the last row examined. The next
// page holds the rows strictly after it in the list's order (time descending, then id
// descending), so pages neither repeat nor skip rows however many share a time.
type Cursor struct {
	At int64 // Unix milliseconds: published_at of a run, created_at of a job
	ID int64
}

// String is the cursor as a query parameter: "<ms>.<id>".
func (c Cursor) String() string {
	return strconv.FormatInt(c.At, 10) + "." + strconv.FormatInt(c.ID, 10)
}

// ParseCursor reads a cursor written by Cursor.String.
func ParseCursor(s string) (Cursor, error) {
	a, b, ok := strings.Cut(s, ".")
	at, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || at < 0 || id <= 0 {
		return Cursor{}, fault.New(fault.Invalid, "cursor %q: want the value of a next link (<milliseconds>.<id>)", s)
	}
	return Cursor{At: at, ID: id}, nil
}

// ListFilter selects runs or jobs. Empty fields match everything. From and To bound the
// run's publication (the job's creation) time: From <= t < To; zero times are unbounded.
type ListFilter struct {
	Paper, Experiment, Kind, Algorithm, BoardClass, Level, Method, State string
	// Origin is who ran a run: portal-runner, community or local (attest's origins).
	Origin string
	// Submitter is an account name (case-insensitive); runs it submitted match.
	Submitter string
	From, To  time.Time
	After     *Cursor
	Limit     int
}

// ListPage is one page of a list.
type ListPage[T any] struct {
	Items []T
	// Next continues the list after this page; nil at its end.
	Next *Cursor
	// Examined is the number of index rows this page examined; Capped says the search
	// stopped at ScanCap rows before the page was full (Next continues it).
	Examined int
	Capped   bool
	// Lead names the filter whose index the page walked ("" for the plain time order).
	Lead string
}

// RunFacets are the values the run filters can take, for the filter form: each list is
// read from its index (a distinct scan), so it costs a few index pages per value.
type RunFacets struct {
	Papers, Experiments, Boards, Levels, Kinds, Methods []string
}

// SchemeRow is one (algorithm, operation) on one assurance level and board class, for one
// unit, timing method, class status, implementation, key form and message size: the median
// of its runs' medians, the lowest p25 and highest p75 among them, its runs and the newest run.
type SchemeRow struct {
	Algorithm, Operation, Unit, Method, ClassStatus string
	// Quantity is the implementation, key form and message size the row measures.
	Quantity
	Median, P25, P75 float64
	N, Runs          int
	LatestRun        int64
	// Hashing is the latest run's hashing share of the row's cell (artifacts.Hashing: only the
	// share, its bound or why it is absent), nil when that run measured none.
	Hashing *artifacts.Hashing
}

// Quantity is what makes two cells of one (algorithm, operation) the same quantity beyond
// unit, method and board: the code that ran, the key form the timed operation received and
// the size of the message it signed. Rankings never pool cells that differ in any of them.
type Quantity struct {
	// Implementation is artifacts.Implementation.Key ("" for cells published before it was
	// recorded and not yet rebuilt).
	Implementation string
	// Keys is the key form (encoded, parsed; "" for keygen and where not recorded).
	Keys string
	// MessageBytes is the signed message's size (0 for operations that sign none).
	MessageBytes int
}

// BoardLevel is an (assurance level, board class) with runs.
type BoardLevel struct{ Level, BoardClass string }

// Rebuilt is what a rebuild recomputed for one run from its stored bundle.
type Rebuilt struct {
	RunID         int64
	Report        string
	ReportVersion int
	// Claims replace the run's claim verdicts.
	Claims []ClaimVerdict
	// Cells are the bundle's cells in order; their key form, requested iterations, budget
	// flag, implementation and message size are written to the stored cells (which must match
	// them one for one). Their Implementation and Sizes.Message are set (see Publication).
	Cells []artifacts.Cell
	// Catalogue is whether the run ran a manifest of the catalogue (Run.Catalogue).
	Catalogue bool
	// Loaded is the run's loaded flag as re-derived (see Run.Loaded), written to its cells.
	Loaded bool
}

// Run is a published, verified result.
type Run struct {
	ID         int64
	JobID      int64
	Experiment string
	Paper      string
	ManifestID string
	Kind       artifacts.Kind
	Method     artifacts.Method
	BoardClass string
	BoardName  string
	Level      artifacts.Level
	// ClassStatus is verified or declared: how BoardClass was established (the portal's own
	// check of the bundle's environment, never the bundle's word).
	ClassStatus string
	Origin      string
	// Catalogue is true when the run ran a manifest of the portal's catalogue (the same
	// manifest, by digest, as the experiment's, or a job of this portal): only such runs count
	// toward a paper's claims; the others ran their own manifest.
	Catalogue bool
	// Loaded is set for a host run during which other processes used the CPU above the
	// runner's threshold (environment.json timing.external.exceeded): its claims were not
	// verdicted and its cells stay out of the home page's highlights.
	Loaded bool
	// Binding is how the attestation binds the run: BindingJob, BindingUnbound or
	// BindingLegacy.
	Binding    string
	RunnerID   int64
	RunnerName string
	// Submitter is the submitting account's (unique) name; SubmitterID identifies it, and is
	// what a community run is attributed by.
	Submitter   string
	SubmitterID int64
	Signer      string
	PublicKeys  identity.PublicKeys
	Bundle      string
	BundleSize  int64
	Firmware    string
	StartedAt   time.Time
	FinishedAt  time.Time
	PublishedAt time.Time
	// Environment, Report (a compare.Report) and Checks (the verification's checks) are JSON.
	Environment string
	Report      string
	Checks      string
	// ReportVersion is the version of the comparison code that made Report (0: before
	// versions were recorded).
	ReportVersion int
	CellsTotal    int
	CellsOK       int
}

// Run bindings.
const (
	BindingJob     = "job"     // a v2 bundle signed for the job and lease it answered
	BindingUnbound = "unbound" // a v2 bundle with no job (a community submission)
	BindingLegacy  = "legacy"  // a v1 bundle, signed before job binding existed
)

// DuplicateBundleError refuses to publish a bundle that is already published as RunID.
type DuplicateBundleError struct {
	RunID  int64
	Digest string
}

func (e *DuplicateBundleError) Error() string {
	return fmt.Sprintf("bundle %s is already published as run %d", e.Digest, e.RunID)
}

// ClaimVerdict is the verdict one run gave one claim.
type ClaimVerdict struct {
	RunID      int64
	Paper      string
	ClaimID    string
	Verdict    string
	Reason     string
	BoardClass string
	Level      artifacts.Level
	Origin     string
	// ClassStatus is how the board class was established (verified, declared, or empty for
	// verdicts published before it was recorded).
	ClassStatus string
}

// Publication is a verified run to publish, with its cells and claim verdicts. When JobID is
// set the job's lease is checked in the same transaction, and the job is marked published.
// Every cell's Implementation is set (recorded or derived: artifacts.CellImplementation) and
// so is Sizes.Message where the operation signs a message (artifacts.CellMessageBytes): the
// store files the cell under them.
type Publication struct {
	Run      Run
	Cells    []artifacts.Cell
	Claims   []ClaimVerdict
	JobID    int64
	RunnerID int64
	LeaseID  string
}

// RunFilter selects runs for Runs (the first page of ListRuns); empty fields match
// everything; Limit is at most MaxPage.
type RunFilter struct {
	Experiment, Paper, BoardClass string
	Limit                         int
}

// Standing is one board's aggregate for a leaderboard: for one unit, assurance level, timing
// method, board class status, board class and origin, the median of its runs' medians, the
// lowest p25 and highest p75 among them, the total n, the number of runs and the latest run.
type Standing struct {
	Unit, Level, Method, ClassStatus, BoardClass, Origin string
	// Quantity is the implementation, key form and message size of the row's cells.
	Quantity
	// EnergyMethod is how an energy row's figures were measured (EnergyRAPL, EnergyMeter); ""
	// for the other metrics. Energy is never ranked across methods.
	EnergyMethod     string
	Median, P25, P75 float64
	N, Runs          int
	LatestRun        int64
}

// Leaderboard metrics.
const (
	MetricLatency = "latency" // median time (or instructions) per operation, p25-p75 spread
	MetricHeap    = "heap"    // heap bytes allocated per operation (host board)
	MetricStack   = "stack"   // stack high-water mark per operation (firmware boards)
	MetricEnergy  = "energy"  // median joules per operation (RAPL or a meter)
)

// How a cell's energy per operation was measured (the cells' energy_method).
const (
	EnergyRAPL  = "rapl"  // the host's RAPL counter over the timed iterations
	EnergyMeter = "meter" // E_op = (P_load − P_idle) × T_op from a power meter's windows
)

// EnergyMethodOf is how c's energy per operation was measured; "" when it has none.
func EnergyMethodOf(c artifacts.Cell) string {
	switch e := c.Energy; {
	case e == nil || e.JoulesPerOp == nil:
		return ""
	case e.Windows != nil:
		return EnergyMeter
	}
	return EnergyRAPL
}

// AlgOp is an (algorithm, operation) pair that has measurements.
type AlgOp struct{ Algorithm, Operation string }

// BoardCount is a board class with its number of runs.
type BoardCount struct {
	BoardClass string
	Runs       int
	Levels     string
}

// Dimensions of the maintained run counts (Store.CountsBy, RunCount).
const (
	CountPaper      = "paper"
	CountExperiment = "experiment"
	CountKind       = "kind"
	CountMethod     = "method"
	// CountRunner counts by the runner's id (decimal); uploaded runs have none.
	CountRunner = "runner"
)

// ClaimTally is how many runs gave one claim one verdict on one board class, assurance level
// and class status, from one origin (the portal's own runners or community submissions).
type ClaimTally struct {
	ClaimID, Origin, BoardClass, Level, ClassStatus, Verdict string
	Runs                                                     int
}

// EnrolTokenOptions are the administrator's choices for a new enrolment token.
type EnrolTokenOptions struct {
	// MaxUses is how many runners the token may enrol (at least 1).
	MaxUses int
	// Expires is when the token stops working; zero for never.
	Expires time.Time
}

// EnrolToken is an enrolment token's record.
type EnrolToken struct {
	ID        int64
	Label     string
	CreatedAt time.Time
	// Expires is zero for a token that does not expire.
	Expires   time.Time
	RevokedAt time.Time
	MaxUses   int
	Uses      int
	// Runners is how many runners it enrolled that still exist.
	Runners int
}

// Usable says whether the token can enrol another runner at now, and if not, why.
func (t EnrolToken) Usable(now time.Time) (bool, string) {
	switch {
	case !t.RevokedAt.IsZero():
		return false, fmt.Sprintf("enrolment token %d (%s) was revoked", t.ID, t.Label)
	case !t.Expires.IsZero() && !now.Before(t.Expires):
		return false, fmt.Sprintf("enrolment token %d (%s) expired at %s", t.ID, t.Label, t.Expires.Format(time.RFC3339))
	case t.Uses >= t.MaxUses:
		return false, fmt.Sprintf("enrolment token %d (%s) is used up (%d of %d uses)", t.ID, t.Label, t.Uses, t.MaxUses)
	}
	return true, ""
}

// Enrolment is a runner's enrolment, its proof of possession already checked.
type Enrolment struct {
	// EnrolTokenHash is the hash of the enrolment token ("" when none was given).
	EnrolTokenHash string
	// CurrentTokenHash is the hash of the runner token the caller holds ("" when none).
	CurrentTokenHash string
	Name, Version    string
	Keys             identity.PublicKeys
	Boards           []protocol.BoardInfo
	Capabilities     protocol.Capabilities
	// NewTokenHash is the hash of the runner token the enrolment hands out.
	NewTokenHash string
}
