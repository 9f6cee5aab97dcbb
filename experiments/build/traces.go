package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tracesFolder is where a paper's raw power captures sit in its shared folder (one folder per
// board, its CSV exports under csv_files), and where their compressed copies go in the
// project's paper folder.
const (
	sharedTraces  = "raw/power_readings"
	projectTraces = "traces"
)

// packTraces copies every CSV power capture of the shared folder src into dst/traces/<board>/
// as <name>.csv.gz (gzip at its best compression, without a name or time in its header, so the
// same input gives the same bytes). The .cfn originals are not copied: tests read them from
// the shared data. It returns how many captures it wrote, 0 when src has none.
func packTraces(src, dst string) (int, error) {
	files, err := filepath.Glob(filepath.Join(src, sharedTraces, "*", "csv_files", "*.csv"))
	if err != nil || len(files) == 0 {
		return 0, err
	}
	out := filepath.Join(dst, projectTraces)
	if err := os.RemoveAll(out); err != nil {
		return 0, err
	}
	for _, f := range files {
		board := filepath.Base(filepath.Dir(filepath.Dir(f)))
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if _, err := w.Write(b); err != nil {
			return 0, err
		}
		if err := w.Close(); err != nil {
			return 0, err
		}
		name := filepath.Join(out, board, strings.TrimSuffix(filepath.Base(f), ".csv")+".csv.gz")
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(name, z.Bytes(), 0o644); err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
	}
	return len(files), nil
}
