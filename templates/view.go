// Package templates holds the portal's pages as templ components, one file per page plus the
// layout, each taking a typed view model from the <page>_view.go file beside it (this file
// holds what every page shares: the layout's Page, assurance badges, list rows, the error
// page and small formatting helpers). Components make no database calls;
// the portal builds the view model and renders it into a buffer. Numbers arrive formatted.
//
// Regenerate the _templ.go files with `go tool templ generate` after editing a .templ file.
package templates

import (
	"strconv"
	"strings"
)

// Page is what every page's layout needs.
type Page struct {
	Title string
	// User is the signed-in account's name, "" when browsing anonymously.
	User  string
	Admin bool
	// CSRF is the token every form carries.
	CSRF string
	// Refresh, when > 0, reloads the page after that many seconds (pages work without JS),
	// or goes to RefreshURL when set.
	Refresh    int
	RefreshURL string
	// Flash is a one-line message shown at the top; FlashKind is "ok" or "error".
	Flash, FlashKind string
	// Path is the current path, for the sign-in link's return address.
	Path string
}

// Assurance is shown beside every number: level (host/emulated/hardware) and origin
// (portal-runner/community/published).
type Assurance struct {
	Level, Origin string
	// LevelIsBoard: the board shown beside the badge is named as the level (the host board
	// at level host); the level badge is left out so the name is not shown twice.
	LevelIsBoard bool
}

// RunRow is a run in a listing.
type RunRow struct {
	ID                      int64
	Experiment, Board, When string
	// OwnManifest: the run ran its own manifest, not the catalogue's experiment of its name.
	OwnManifest         bool
	Assurance           Assurance
	CellsOK, CellsTotal int
	Signer, By          string
}

// JobRow is a job in a listing.
type JobRow struct {
	ID                             int64
	Experiment, Board, State, When string
	RunID                          int64
}

// MoreLink leads from a page's bounded list to the rest of it on /runs or /jobs.
type MoreLink struct {
	Href, Label string
}

// KV is a labelled value.
type KV struct{ Key, Value string }

// Option is a select option.
type Option struct {
	Value, Label string
	Selected     bool
}

// ErrorView is an error page. Message is safe to show.
type ErrorView struct {
	Page
	Status  int
	Message string
}

// plural says "1 run" or "3 runs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// orDash shows an empty value as "–", so an unknown specification reads as unknown rather
// than as a blank or a bare unit.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "–"
	}
	return s
}

// originText names whose runs a tally counts.
func originText(origin string) string {
	switch origin {
	case "portal-runner":
		return "the portal's runners"
	case "community":
		return "community submissions"
	case "":
		return "not recorded"
	}
	return origin
}
