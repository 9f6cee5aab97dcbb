package artifacts

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// CellKey names one cell of a result: its algorithm, operation and variant (empty when the
// cell ran the manifest's method as written).
type CellKey struct {
	Algorithm, Operation, Variant string
}

// KeyOf returns the cell's key.
func KeyOf(c Cell) CellKey {
	return CellKey{Algorithm: c.Algorithm, Operation: c.Operation, Variant: c.Variant}
}

// UnitJoules is the unit of per-iteration energy samples in samples.csv.
const UnitJoules = "J"

// Samples are a bundle's raw per-iteration samples (samples.csv), by cell, in iteration
// order. Values holds the timed samples in the cell's unit; Energy the per-iteration energy
// samples (rows whose unit is J), which only a board with a meter records.
type Samples struct {
	Values map[CellKey][]float64
	Energy map[CellKey][]float64
	// Units is the unit column of each cell's timed rows (one unit per cell); nil when the
	// samples were not read from a file.
	Units map[CellKey]string
	// TLS holds tls.csv's rows (tls-matrix runs: per-batch CPU, per-handshake phases) by
	// cell and series; nil when the bundle has no tls.csv (see ParseBundleSamples).
	TLS map[CellKey]map[TLSSeriesKey][]float64
}

// SamplesHeader is samples.csv's header. The variant column is optional when reading
// (bundles written before it existed have five columns).
var SamplesHeader = []string{"algorithm", "operation", "iteration", "value", "unit", "variant"}

// ParseSamples reads samples.csv. Every row must have the header's columns, a finite
// value, one unit per cell's timed rows, at most MaxSamplesPerCell samples per cell, and
// iterations numbered 0, 1, 2, ... per cell and unit; errors name the line and the column.
func ParseSamples(data []byte) (Samples, error) {
	s := Samples{Values: map[CellKey][]float64{}, Energy: map[CellKey][]float64{}, Units: map[CellKey]string{}}
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	head, err := r.Read()
	if errors.Is(err, io.EOF) {
		return s, fmt.Errorf("%s: empty (want the header %v)", FileSamples, SamplesHeader)
	}
	if err != nil {
		return s, fmt.Errorf("%s: %w", FileSamples, err)
	}
	cols := len(head)
	if (cols != 5 && cols != 6) || !slices.Equal(head, SamplesHeader[:cols]) {
		return s, fmt.Errorf("%s line 1: header %v, want %v", FileSamples, head, SamplesHeader)
	}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return s, fmt.Errorf("%s: %w", FileSamples, err)
		}
		k := CellKey{Algorithm: rec[0], Operation: rec[1]}
		if cols == 6 {
			k.Variant = rec[5]
		}
		if k.Algorithm == "" || k.Operation == "" {
			return s, fmt.Errorf("%s line %d: empty algorithm or operation", FileSamples, line)
		}
		it, err := strconv.Atoi(rec[2])
		if err != nil {
			return s, fmt.Errorf("%s line %d: iteration %q: not an integer", FileSamples, line, rec[2])
		}
		v, err := strconv.ParseFloat(rec[3], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return s, fmt.Errorf("%s line %d: value %q: not a finite number", FileSamples, line, rec[3])
		}
		m := s.Values
		if rec[4] == UnitJoules {
			m = s.Energy
		} else if u, ok := s.Units[k]; ok && u != rec[4] {
			return s, fmt.Errorf("%s line %d: unit %q of %s %s, earlier rows said %q", FileSamples, line, rec[4], k.Algorithm, k.Operation, u)
		} else {
			s.Units[k] = rec[4]
		}
		if len(m[k]) >= MaxSamplesPerCell {
			return s, fmt.Errorf("%s line %d: more than %d samples for %s %s", FileSamples, line, MaxSamplesPerCell, k.Algorithm, k.Operation)
		}
		if it != len(m[k]) {
			return s, fmt.Errorf("%s line %d: iteration %d of %s %s, want %d", FileSamples, line, it, k.Algorithm, k.Operation, len(m[k]))
		}
		m[k] = append(m[k], v)
	}
}
