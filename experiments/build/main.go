// Command build regenerates each paper's reference.csv, and the pqm4 dataset's, from the shared
// reference data:
//
//	go run ./experiments/build [-shared ../shared/reference-data] [-out experiments]
//
// Papers with raw power captures (paper002) also get them compressed under traces/ (see
// traces.go). Rows are copied as published (no value is converted, rounded or estimated). Where the same
// number (board, algorithm, operation, scenario, metric, statistic) appears in several files,
// the published table wins over the appendix, and both over the authors' repository data; a
// "file" column records where each row came from, beside the paper's own "source" column.
//
// Sources that disagree (beyond the rounding of the less precise one) are never mixed in one
// cell: a power figure (power_w, power_delta_w) is kept from the file the cell's published
// energies were computed from (the authors' repository results), and the other value is named in
// the row's note; for every other metric the priority above decides, and the note names the
// disagreeing value too.
package main

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// papers maps the project's paper id to its shared folder and files in priority order.
var papers = []struct {
	id, folder string
	files      []string
}{
	{"paper000", "paper000-tls-matrix", []string{"abstract_figures.csv"}},
	{"paper001", "paper001-esp32c6-liboqs", []string{"in_text_figures.csv"}},
	{"paper002", "paper002-energy-openssl", []string{
		"table5_time_per_op.csv", "table4_energy_per_op.csv", "table3_key_signature_sizes.csv",
		"appendixA_per_board_performance.csv", "appendixA_power_w.csv", "in_text_figures.csv", "repo_full_results_long.csv",
	}},
	{"paper003", "paper003-mqtt-ascon", []string{"summary_figures.csv"}},
}

var header = []string{"board", "arch", "clock_mhz", "library", "algorithm", "operation", "scenario", "metric", "stat", "value", "unit", "n", "source", "note"}

func main() {
	shared := flag.String("shared", "../shared/reference-data", "the shared reference-data folder")
	out := flag.String("out", "experiments", "the experiments folder to write into")
	flag.Parse()
	for _, p := range papers {
		n, err := build(filepath.Join(*shared, p.folder), p.files, filepath.Join(*out, p.id))
		if err != nil {
			fmt.Fprintln(os.Stderr, "build reference:", err)
			os.Exit(1)
		}
		t, err := packTraces(filepath.Join(*shared, p.folder), filepath.Join(*out, p.id))
		if err != nil {
			fmt.Fprintln(os.Stderr, "build reference: traces:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d rows", p.id, n)
		if t > 0 {
			fmt.Printf(", %d power captures", t)
		}
		fmt.Println()
	}
	n, err := buildPQM4(*shared, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build reference: pqm4:", err)
		os.Exit(1)
	}
	fmt.Printf("pqm4: %d rows\n", n)
	b, err := os.ReadFile(filepath.Join(*shared, "boards.csv"))
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, "boards.csv"), keepEmulated(b), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build reference: boards:", err)
		os.Exit(1)
	}
}

// energySource is the file whose power figures the published energies were computed from;
// powerMetrics are the figures that must come from it when sources disagree.
const energySource = "repo_full_results_long.csv"

var powerMetrics = map[string]bool{"power_w": true, "power_delta_w": true}

// Columns of the shared CSVs used below.
const (
	colMetric, colValue, colUnit, colSource, colNote = 7, 9, 10, 12, 13
)

// decimals is the number of digits after the point in a published number's text.
func decimals(v string) int {
	if i := strings.IndexByte(v, '.'); i >= 0 {
		return len(v) - i - 1
	}
	return 0
}

// disagree reports whether two published texts of one number differ by more than the rounding
// of the less precise one (half a unit in its last place).
func disagree(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil {
		return a != b
	}
	half := 0.5 * math.Pow(10, -float64(min(decimals(a), decimals(b))))
	return math.Abs(x-y) > half*(1+1e-9)
}

func joinNote(note, more string) string {
	if note == "" {
		return more
	}
	return note + "; " + more
}

func build(src string, files []string, dst string) (int, error) {
	at := map[string]int{} // key -> index in rows
	var rows [][]string
	for _, f := range files {
		fh, err := os.Open(filepath.Join(src, f))
		if err != nil {
			return 0, err
		}
		recs, err := csv.NewReader(fh).ReadAll()
		fh.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if strings.Join(recs[0], ",") != strings.Join(header, ",") {
			return 0, fmt.Errorf("%s: unexpected header %v", f, recs[0])
		}
		for _, r := range recs[1:] {
			r = append(r, filepath.Base(src)+"/"+f)
			key := strings.Join([]string{r[0], r[4], r[5], r[6], r[7], r[8]}, "|")
			i, seen := at[key]
			if !seen {
				at[key] = len(rows)
				rows = append(rows, r)
				continue
			}
			kept := rows[i]
			if !disagree(kept[colValue], r[colValue]) {
				continue
			}
			if powerMetrics[r[colMetric]] && f == energySource {
				r[colNote] = joinNote(r[colNote], fmt.Sprintf("%s gives %s %s (%s); this row keeps the value the published energies were computed from, so the two sources are not mixed",
					filepath.Base(kept[len(kept)-1]), kept[colValue], kept[colUnit], kept[colSource]))
				rows[i] = r
				continue
			}
			kept[colNote] = joinNote(kept[colNote], fmt.Sprintf("%s gives %s %s (%s)", f, r[colValue], r[colUnit], r[colSource]))
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	fh, err := os.Create(filepath.Join(dst, "reference.csv"))
	if err != nil {
		return 0, err
	}
	w := csv.NewWriter(fh)
	w.Write(append(header, "file"))
	w.WriteAll(rows)
	if err := fh.Close(); err != nil {
		return 0, err
	}
	for _, md := range []string{"PROVENANCE.md", "CLAIMS.md"} {
		b, err := os.ReadFile(filepath.Join(src, md))
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(dst, md), b, 0o644); err != nil {
			return 0, err
		}
	}
	return len(rows), w.Error()
}

// emulatedBoards are the project's own emulated board classes (qemu-*), what each stands
// in for and what it is not; the shared catalogue has none, so they are appended to it.
//
//go:embed emulated.csv
var emulatedBoards []byte

// keepEmulated appends emulatedBoards to the shared catalogue.
func keepEmulated(shared []byte) []byte {
	out := append(bytes.TrimRight(shared, "\n"), '\n')
	return append(out, emulatedBoards...)
}
