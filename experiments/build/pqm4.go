package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"pqrepro/experiments"
)

// buildPQM4 writes experiments/pqm4/reference.csv from pqm4's benchmarks.csv as published,
// after checking the file against the shared SHA256SUMS: every figure a row, in the file's
// order, in the papers' reference columns (experiments.PQM4Columns).
func buildPQM4(shared, out string) (int, error) {
	dir := filepath.Join(shared, "pqm4-cortex-m4")
	data, err := os.ReadFile(filepath.Join(dir, "benchmarks.csv"))
	if err != nil {
		return 0, err
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return 0, err
	}
	sum := sha256.Sum256(data)
	if !strings.Contains(string(sums), hex.EncodeToString(sum[:])+"  benchmarks.csv") {
		return 0, fmt.Errorf("pqm4 benchmarks.csv does not match SHA256SUMS: not the file as published")
	}
	rows, err := experiments.ParsePQM4(data)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(experiments.PQM4Columns)
	for _, r := range rows {
		w.Write(experiments.PQM4Record(r))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(out, "pqm4"), 0o755); err != nil {
		return 0, err
	}
	return len(rows), os.WriteFile(filepath.Join(out, "pqm4", "reference.csv"), buf.Bytes(), 0o644)
}
