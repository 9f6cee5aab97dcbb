// Package rp2040js carries the Node harness that boots a Pico W image in rp2040js
// (run.mjs and decode.mjs, embedded), so a runner built anywhere can start it: Install writes
// the harness into a folder, and Version reads the emulator's version from where `make
// rp2040js` installed it (npm ci of this folder's package-lock.json).
package rp2040js

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed run.mjs decode.mjs
var harness embed.FS

// Install writes the harness into dir (which must exist) and returns the path of its entry
// script, to run as `node RUN [--baud N] [--stats] [--spans] MODULE_DIR IMAGE.uf2`.
func Install(dir string) (string, error) {
	for _, name := range []string{"run.mjs", "decode.mjs"} {
		b, err := harness.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("rp2040js harness %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", fmt.Errorf("install rp2040js harness: %w", err)
		}
	}
	return filepath.Join(dir, "run.mjs"), nil
}

// Version is the rp2040js version installed under moduleDir (node_modules/rp2040js), or an
// error saying it is not installed.
func Version(moduleDir string) (string, error) {
	if moduleDir == "" {
		return "", fmt.Errorf("rp2040js not installed (make rp2040js at the repository root)")
	}
	b, err := os.ReadFile(filepath.Join(moduleDir, "node_modules", "rp2040js", "package.json"))
	if err != nil {
		return "", fmt.Errorf("rp2040js not installed in %s (make rp2040js at the repository root): %w", moduleDir, err)
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Version == "" {
		return "", fmt.Errorf("rp2040js in %s: no version in its package.json", moduleDir)
	}
	return p.Version, nil
}
