package store

import (
	"context"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/translog"
)

// Events that Listen delivers.
const (
	// EventJobs: jobs were queued or re-queued; waiting runners should ask again.
	EventJobs = "jobs"
	// EventRuns: a run was published, or trust changed; caches of runs must be dropped.
	EventRuns = "runs"
)

// Generations are counters a store advances whenever what readers see changes, read in one
// cheap query by any process on the same database: a cache of rendered pages keyed by them is
// never served after the change it did not see (portal's response cache). A write that
// changes what pages show advances its counter once it is visible to every reader (in its own
// transaction where the engine serialises writers, else right after it commits), never before.
type Generations struct {
	// Runs advances when a run is published, a report or claim verdict is rebuilt, the
	// counters are rebuilt, the home page's highlights are recomputed, or trust changes (a
	// revoked runner, key, account or enrolment token flags the runs it signed).
	Runs int64
	// Work advances when a job is queued, leased, re-queued, failed or published, when a
	// runner enrols or changes what it offers, and when firmware is uploaded. Heartbeats and
	// a runner's last-seen time do not advance it: pages showing them bound their age instead.
	Work int64
	// Log advances when the transparency log publishes a checkpoint, a witness cosigns one
	// or a witness is registered (a run's page shows its inclusion in the latest checkpoint).
	Log int64
}

// Store is the portal's database. portal/sqlite (one file, the default) and portal/postgres
// (shared by any number of portal processes) implement it; portal/storetest is the suite both
// pass. Every method is safe for concurrent use, and every write is one transaction.
type Store interface {
	// Close releases the store's connections.
	Close() error
	// AppliedMigrations returns the recorded migration versions in order.
	AppliedMigrations(ctx context.Context) ([]int, error)
	// QuickCheck checks the database's integrity (SQLite's quick_check; PostgreSQL's
	// connection and schema).
	QuickCheck(ctx context.Context) error
	// ListPlan describes how the database will walk the list f selects (for plan tests).
	ListPlan(ctx context.Context, f ListFilter) (string, error)
	// PagePlans describes, by name, how the database will run every query behind a page (for
	// the plan tests); Analyze refreshes the statistics those plans are chosen from.
	PagePlans(ctx context.Context) (map[string]string, error)
	Analyze(ctx context.Context) error
	// Listen calls fn for each event any process on the same database raised until ctx ends
	// (EventJobs, EventRuns), and returns ctx's error or the connection's. A store that only
	// one process opens has no other process to hear and returns nil at once: its portal
	// raises its own events.
	Listen(ctx context.Context, fn func(event string)) error
	// Generations returns the change counters (see Generations); they only grow.
	Generations(ctx context.Context) (Generations, error)

	// TakeToken takes one token from the rate-limit bucket named key (refilling at perSecond
	// up to burst); when none is left it reports false and how long until one is. It holds
	// across every process sharing the database.
	TakeToken(ctx context.Context, key string, perSecond float64, burst int, now time.Time) (ok bool, wait time.Duration, err error)
	// PruneTokens drops rate-limit buckets untouched since before.
	PruneTokens(ctx context.Context, before time.Time) (int, error)

	// The methods below are documented on the shared SQL implementation (portal/sqlstore).
	AddCosignature(ctx context.Context, size int64, name string, keyID uint32, line string) error
	AddFirmware(ctx context.Context, f Firmware, by int64) error
	AddSubmitterKey(ctx context.Context, userID int64, label string, keys identity.PublicKeys) (SubmitterKey, error)
	AddWitness(ctx context.Context, w translog.Witness) error
	AllowReenrol(ctx context.Context, id int64) error
	AllowReenrolKeys(ctx context.Context, fp string) error
	AppendLog(ctx context.Context, jobID, runnerID int64, leaseID string, idx int, data string) error
	BoardCounts(ctx context.Context) ([]BoardCount, error)
	BoardLevels(ctx context.Context) ([]BoardLevel, error)
	// Cells returns a run's cells in order, as filed: a cell's Implementation holds only the
	// key it is filed under, in Name (the bundle keeps the structured record), and Sizes only
	// the message size.
	Cells(ctx context.Context, runID int64) ([]artifacts.Cell, error)
	ClaimTallies(ctx context.Context, paper string) ([]ClaimTally, error)
	ClaimVerdicts(ctx context.Context, paper string, runID int64) ([]ClaimVerdict, error)
	Cosignatures(ctx context.Context, size int64) ([]string, error)
	CompactSummaries(ctx context.Context) (int, error)
	CountCells(ctx context.Context) (int, error)
	CountsBy(ctx context.Context, dimension string) (map[string]int, error)
	CreateEnrolToken(ctx context.Context, label, tokenHash string, by int64, opt EnrolTokenOptions) (int64, error)
	CreateJob(ctx context.Context, n NewJob) (int64, error)
	CreateSession(ctx context.Context, tokenHash string, userID int64, expires time.Time) error
	CreateUser(ctx context.Context, name, role, tokenHash string) (User, error)
	DeleteSession(ctx context.Context, tokenHash string) error
	Enrol(ctx context.Context, e Enrolment) (id int64, reenrolled bool, err error)
	EnrolTokens(ctx context.Context) ([]EnrolToken, error)
	Facets(ctx context.Context) (RunFacets, error)
	FailJob(ctx context.Context, jobID, runnerID int64, leaseID, reason, log string) error
	FirmwareBuild(ctx context.Context, digest string) (Firmware, error)
	FirmwareBuilds(ctx context.Context, boardClass string) ([]Firmware, error)
	HasAdmin(ctx context.Context) (bool, error)
	Heartbeat(ctx context.Context, jobID, runnerID int64, leaseID string, expires time.Time, p protocol.Progress) error
	Highlights(ctx context.Context, algorithm, operation, metric string) ([]Standing, time.Time, error)
	Integrate(ctx context.Context, holder string, max int, fn translog.IntegrateFunc) (int, error)
	IssueChallenge(ctx context.Context, challenge, purpose string, expires time.Time) error
	Job(ctx context.Context, id int64) (Job, error)
	JobLog(ctx context.Context, jobID int64, attempt int) (string, error)
	JobLogView(ctx context.Context, jobID int64, attempt int, headBytes, tailBytes int) (LogView, error)
	LeaseJob(ctx context.Context, runnerID int64, classes, firmwareOnly, opensslClasses []string, leaseID, nonce string, expires time.Time) (Job, error)
	Leaves(ctx context.Context, start, end int64) ([][]byte, error)
	ListJobs(ctx context.Context, f ListFilter) (ListPage[Job], error)
	ListRuns(ctx context.Context, f ListFilter) (ListPage[Run], error)
	LockSequencer(ctx context.Context, holder string, until time.Time) (bool, error)
	LogEntry(ctx context.Context, runID int64) (translog.Entry, error)
	LogSince(ctx context.Context, jobID int64, attempt int, after int64, limit int) (text string, end int64, ok bool, err error)
	LogState(ctx context.Context) (translog.State, error)
	MarkPublished(ctx context.Context, holder string, size int64, checkpoint []byte) error
	QueuePartials(ctx context.Context, dirs []string, due time.Time) error
	DuePartials(ctx context.Context, now time.Time, max int) ([]string, error)
	DropPartials(ctx context.Context, dirs []string) error
	MeasuredAlgOps(ctx context.Context) ([]AlgOp, error)
	PairReport(ctx context.Context, a, b int64, version string) (report string, ok bool, err error)
	PairReports(ctx context.Context) (int, error)
	PendingLogEntries(ctx context.Context) (int, error)
	Publish(ctx context.Context, p Publication) (int64, error)
	PublishBatch(ctx context.Context, ps []Publication) ([]int64, error)
	RebuildSummaries(ctx context.Context) error
	ReadHashes(ctx context.Context, idx []int64) ([]tlog.Hash, error)
	RequeueExpired(ctx context.Context) (int, error)
	RevokeEnrolToken(ctx context.Context, id int64) error
	RevokeRunner(ctx context.Context, id int64) error
	RevokeSubmitterKey(ctx context.Context, id int64) error
	RevokeUser(ctx context.Context, id int64) error
	Run(ctx context.Context, id int64) (Run, error)
	RunByBundle(ctx context.Context, digest string) (Run, error)
	RunCount(ctx context.Context, dimension, key string) (int, error)
	RunCounts(ctx context.Context) (map[string]int, error)
	Runner(ctx context.Context, id int64) (Runner, error)
	RunnerByToken(ctx context.Context, tokenHash string) (Runner, error)
	Runners(ctx context.Context) ([]Runner, error)
	Runs(ctx context.Context, f RunFilter) ([]Run, error)
	RunsToRebuild(ctx context.Context, version int, all bool, after int64, limit int) ([]int64, error)
	SaveHighlights(ctx context.Context, algorithm, operation, metric string, rows []Standing, at time.Time) error
	SavePairReport(ctx context.Context, a, b int64, version, report string) error
	SaveRebuilt(ctx context.Context, r Rebuilt) error
	Schemes(ctx context.Context, level, board string) ([]SchemeRow, error)
	SetAdminToken(ctx context.Context, tokenHash string) (created bool, err error)
	SetRunnerCapabilities(ctx context.Context, id int64, c protocol.Capabilities) error
	SignerRevoked(ctx context.Context, r Run) (time.Time, error)
	Standings(ctx context.Context, algorithm, operation, metric string) ([]Standing, error)
	QuietStandings(ctx context.Context, algorithm, operation string) ([]Standing, error)
	SubmitterKeyByFingerprint(ctx context.Context, fp string) (SubmitterKey, error)
	SubmitterKeys(ctx context.Context, userID int64) ([]SubmitterKey, error)
	TouchRunner(ctx context.Context, id int64) error
	UnlockSequencer(ctx context.Context, holder string) error
	UseChallenge(ctx context.Context, challenge, purpose string) error
	UserBySession(ctx context.Context, tokenHash string) (User, error)
	UserByToken(ctx context.Context, tokenHash string) (User, error)
	Users(ctx context.Context) ([]User, error)
	Witnesses(ctx context.Context) ([]translog.Witness, error)
}
