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
	Units map[CellKey]Unit
	// TLS holds tls.csv's rows (tls-matrix runs: per-batch CPU, per-handshake phases) by
	// cell and series; nil when the bundle has no tls.csv (see ParseBundleSamples).
	TLS map[CellKey]map[TLSSeriesKey][]float64
	// TLSRoles and TLSRounds are tls.csv's role of each cell and, for a cell whose rows give
	// them, its handshakes' signature rounds (TLSFile).
	TLSRoles  map[CellKey]string
	TLSRounds map[CellKey][]int
	// Rounds and Offsets hold, for a cell whose samples were taken in rounds (the host
	// runner's interleaving: every round visits every cell once, in a seeded order), each
	// timed sample's round and its start in ns since the run's measurement began, in
	// iteration order. A cell without them (a bundle from before rounds, an emulated or
	// firmware board, whose counts are not interleaved) has no entry.
	Rounds  map[CellKey][]int
	Offsets map[CellKey][]float64
}

// SamplesHeader is samples.csv's header without the round columns, and SamplesRoundsHeader
// with them (what the host runner writes). The variant column and the round and offset columns
// are optional when reading (bundles written before they existed have five or six columns);
// a row of a cell not measured in rounds leaves round and offset empty.
var (
	SamplesHeader       = []string{"algorithm", "operation", "iteration", "value", "unit", "variant"}
	SamplesRoundsHeader = append(slices.Clone(SamplesHeader), "round", "offset")
)

// ParseSamples reads samples.csv. Every row must have the header's columns, a finite
// value, one unit per cell's timed rows, at most MaxSamplesPerCell samples per cell, and
// iterations numbered 0, 1, 2, ... per cell and unit; where the round and offset columns are
// present, a cell's timed rows give both on every row or on none, rounds are non-negative and
// never decrease, offsets are finite, non-negative and never decrease, and energy rows give
// neither. Errors name the line and the column.
func ParseSamples(data []byte) (Samples, error) {
	s := Samples{Values: map[CellKey][]float64{}, Energy: map[CellKey][]float64{}, Units: map[CellKey]Unit{},
		Rounds: map[CellKey][]int{}, Offsets: map[CellKey][]float64{}}
	r, head, err := csvHead(data, FileSamples, SamplesHeader, 0)
	if err != nil {
		return s, err
	}
	cols := len(head)
	if (cols != 5 && cols != 6 && cols != 8) || !slices.Equal(head, SamplesRoundsHeader[:cols]) {
		return s, fmt.Errorf("%s line 1: header %v, want %v", FileSamples, head, SamplesRoundsHeader)
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
		if cols >= 6 {
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
		} else if u, ok := s.Units[k]; ok && u != Unit(rec[4]) {
			return s, fmt.Errorf("%s line %d: unit %q of %s %s, earlier rows said %q", FileSamples, line, rec[4], k.Algorithm, k.Operation, u)
		} else {
			s.Units[k] = Unit(rec[4])
		}
		if len(m[k]) >= MaxSamplesPerCell {
			return s, fmt.Errorf("%s line %d: more than %d samples for %s %s", FileSamples, line, MaxSamplesPerCell, k.Algorithm, k.Operation)
		}
		if it != len(m[k]) {
			return s, fmt.Errorf("%s line %d: iteration %d of %s %s, want %d", FileSamples, line, it, k.Algorithm, k.Operation, len(m[k]))
		}
		if cols == 8 {
			if err := s.parseRound(rec[6], rec[7], k, rec[4] == UnitJoules, it); err != nil {
				return s, fmt.Errorf("%s line %d: %w", FileSamples, line, err)
			}
		}
		m[k] = append(m[k], v)
	}
}

// parseRound reads one row's round and offset columns into s.
func (s *Samples) parseRound(round, offset string, k CellKey, energy bool, it int) error {
	if round == "" && offset == "" {
		if !energy && len(s.Rounds[k]) > 0 {
			return fmt.Errorf("round and offset of %s %s: empty, earlier rows gave them", k.Algorithm, k.Operation)
		}
		return nil
	}
	if energy {
		return fmt.Errorf("round %q: an energy row has no round", round)
	}
	if it != len(s.Rounds[k]) {
		return fmt.Errorf("round %q of %s %s: earlier rows gave none", round, k.Algorithm, k.Operation)
	}
	r, err := strconv.Atoi(round)
	if err != nil || r < 0 || r > MaxSamplesPerCell {
		return fmt.Errorf("round %q: not an integer in 0..%d", round, MaxSamplesPerCell)
	}
	o, err := strconv.ParseFloat(offset, 64)
	if err != nil || math.IsNaN(o) || math.IsInf(o, 0) || o < 0 {
		return fmt.Errorf("offset %q: not a finite non-negative number", offset)
	}
	if rs := s.Rounds[k]; len(rs) > 0 && r < rs[len(rs)-1] {
		return fmt.Errorf("round %d of %s %s after round %d: rounds never decrease", r, k.Algorithm, k.Operation, rs[len(rs)-1])
	}
	if os := s.Offsets[k]; len(os) > 0 && o < os[len(os)-1] {
		return fmt.Errorf("offset %s of %s %s before the previous sample's: offsets never decrease", offset, k.Algorithm, k.Operation)
	}
	s.Rounds[k] = append(s.Rounds[k], r)
	s.Offsets[k] = append(s.Offsets[k], o)
	return nil
}

// InRounds reports whether a cell's samples were taken in rounds.
func (s Samples) InRounds(k CellKey) bool { return len(s.Rounds[k]) > 0 }

// csvHead opens one of a bundle's CSV files: a reader that reuses its records (fields, when
// above zero, fixes every row's width, the header's included) and the header row. An empty
// file or an unreadable header is an error naming the file and the header wanted.
func csvHead(data []byte, file string, want []string, fields int) (*csv.Reader, []string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	r.FieldsPerRecord = fields
	head, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%s: empty (want the header %v)", file, want)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	return r, head, nil
}
