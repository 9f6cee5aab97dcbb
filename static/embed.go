// Package static holds the portal's stylesheets, icon and the little JavaScript it uses (progressive
// enhancement only: every page works without it), embedded into the binary.
package static

import "embed"

// Files are the static files, served under /static/.
//
//go:embed *.css *.js *.svg
var Files embed.FS
