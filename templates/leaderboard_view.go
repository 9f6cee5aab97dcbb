package templates

import (
	"strconv"

	"pqrepro/portal/plot"
)

// LeaderRow is a board's standing in a leaderboard.
type LeaderRow struct {
	Rank      int
	Board     string
	Assurance Assurance
	// Implementation is the code the row's cells timed (digests abbreviated).
	Implementation         string
	Median, P25, P75, Unit string
	N, Runs                int
	RunID                  int64
}

// LeaderGroup is one ranking: one unit, one assurance kind, one timing method and one board
// class status, never mixed.
type LeaderGroup struct {
	Title, Unit, Method string
	// Declared marks a ranking of declared (unverified) board classes.
	Declared bool
	Rows     []LeaderRow
	Plot     *plot.Figure
}

// PublishedRow is a published reference number, labelled as such. Value carries its unit;
// a time is shown in the column's one unit, and Original then holds the figure exactly as
// the paper printed it (value and unit), shown beside it.
type PublishedRow struct {
	Paper, Board, Value, Original, Stat, N, Scenario, Source, Library string
}

// countOrDash prints a sample count, or "–" where the metric has none (a stack high-water
// mark is one reading per cell, not samples): never "0" beside a value.
func countOrDash(n int) string {
	if n <= 0 {
		return "–"
	}
	return strconv.Itoa(n)
}

// LeaderboardView is the leaderboards page.
type LeaderboardView struct {
	Page
	Algorithms, Operations, Metrics []Option
	// Pairs offers every (algorithm, operation) that exists, grouped by algorithm.
	Pairs                        []OptGroup
	Algorithm, Operation, Metric string
	Groups                       []LeaderGroup
	// Empty says why no board is ranked, when none is.
	Empty     string
	Published []PublishedRow
	CSV, JSON string
}
