package templates

// PaperCard summarises a paper on the home page.
type PaperCard struct {
	ID, Title, Citation string
	Experiments, Runs   int
	Measured            string
	// Runnable lists the board classes connected runners offer for at least one of the
	// paper's experiments; empty when nothing of it can be re-run now.
	Runnable []string
}

// Highlight is a small leaderboard on the home page: one ranking (one unit, assurance,
// method and class status).
type Highlight struct {
	Algorithm, Operation, Link string
	// Ranking names the ranking ("host time · host · in-process"); empty with no rows.
	Ranking  string
	Declared bool
	Rows     []LeaderRow
}

// Home is the home page.
type Home struct {
	Page
	Papers []PaperCard
	Runs   []RunRow
	Jobs   []JobRow
	// RunsMore and JobsMore link to the filtered lists when a list shows one page of more.
	RunsMore   []MoreLink
	JobsMore   []MoreLink
	Highlights []Highlight
	Runners    int
}
