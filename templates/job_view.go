package templates

// JobView is a job's page: live progress and the log tail.
type JobView struct {
	Page
	ID                                         int64
	Experiment, Board, State, Runner, Firmware string
	Attempt                                    int
	Note, Error                                string
	// Cancelled is why the job was cancelled before it started ("" unless it was); Error is
	// then empty.
	Cancelled string
	RunID     int64
	// Detail is the progress in words (never "0 of 0 cells" before the runner reported).
	Detail, ETA, Elapsed string
	Percent              int
	// Steps are the states the job went through, each done, current, todo or failed.
	Steps []JobStep
	// Redirecting: the page goes on to the published run by itself.
	Redirecting bool
	// Log is the raw log; HumanLog the same with protocol frames as readable lines, when
	// Framed (the raw one then sits behind a toggle).
	Log      string
	HumanLog string
	Framed   bool
	// LogEnd and LogAttempt say where the page's log ends, so its script asks only for what
	// is new.
	LogEnd                     int64
	LogAttempt                 int
	Created, Started, Finished string
	Terminal                   bool
}

// JobStep is one state of a job's life.
type JobStep struct {
	Name, State, When string
}
