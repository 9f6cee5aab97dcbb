package store

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
