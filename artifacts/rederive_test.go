package artifacts

import (
	"bytes"
	"encoding/csv"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const rederiveManifest = `apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: paper001, name: mldsa}
spec:
  algorithms: [ML-DSA-44, ML-DSA-65]
  operations: [keygen, sign, verify]
  message: {text: "Test message for ML-DSA benchmark"}
  iterations: 10
  seed: test
`

// rederiveFixture is a consistent result and samples.csv for rederiveManifest: every cell
// ok, samples chosen per cell (test input, not a measurement), statistics from Summarize.
func rederiveFixture(t testing.TB, unit Unit, assurance Level) (*Manifest, *Result, []byte) {
	t.Helper()
	m, err := ParseManifest([]byte(rederiveManifest), "test")
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Schema: ResultSchema, Experiment: m.Ref(), ManifestID: m.ID(), Kind: m.Kind, Method: m.Spec.Method, Board: "host", Assurance: assurance}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(SamplesHeader)
	for ci, ref := range m.Cells() {
		var vals []float64
		for i := range m.Spec.Iterations {
			vals = append(vals, float64(1000*(ci+1)+(i*37)%11))
		}
		c := Cell{Algorithm: ref.Algorithm, Operation: ref.Operation, Status: StatusOK, Unit: unit, Counter: "test", Requested: m.Spec.Iterations, Stats: Summarize(vals)}
		if ref.Operation == OpSign {
			a, _ := LookupAlgorithm(ref.Algorithm)
			c.Sizes = &Sizes{Signature: a.Signature, Message: m.Spec.MessageSize()}
			var rounds []int
			for i := range m.Spec.Iterations {
				rounds = append(rounds, 1+(i*5)%7)
			}
			var err error
			if c.Rounds, err = NewRounds(rounds); err != nil {
				t.Fatal(err)
			}
		}
		res.Cells = append(res.Cells, c)
		for i, v := range vals {
			w.Write([]string{c.Algorithm, c.Operation, strconv.Itoa(i), strconv.FormatFloat(v, 'f', -1, 64), string(c.Unit), ""})
		}
	}
	w.Flush()
	return m, res, buf.Bytes()
}

func TestRederiveAcceptsAConsistentResult(t *testing.T) {
	for _, tc := range []struct {
		unit  Unit
		level Level
	}{{UnitNanoseconds, AssuranceHost}, {UnitInstructions, AssuranceEmulated}, {UnitCycles, AssuranceHardware}} {
		m, res, csvData := rederiveFixture(t, tc.unit, tc.level)
		s, err := ParseSamples(csvData)
		if err != nil {
			t.Fatal(err)
		}
		if err := Rederive(m, res, s); err != nil {
			t.Errorf("%s on %s: %v", tc.unit, tc.level, err)
		}
	}
}

func TestRederiveRefuses(t *testing.T) {
	sign65 := 4 // ML-DSA-65 sign in rederiveFixture's cells
	cases := []struct {
		name        string
		unit        Unit
		level       Level
		edit        func(m *Manifest, r *Result, s *Samples)
		file, field string // what the error must name
	}{
		{"halved median", "", "", func(_ *Manifest, r *Result, _ *Samples) { r.Cells[sign65].Stats.Median /= 2 }, FileResult, "stats"},
		{"median off beyond the tolerance", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			st := r.Cells[sign65].Stats
			st.Median = st.Median * (1 + 1e-7)
		}, FileResult, "stats.median"},
		{"mean off beyond the tolerance", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[sign65].Stats.Mean *= 1 + 1e-6
		}, FileResult, "stats.mean"},
		{"integer unit off by a hair", UnitCycles, AssuranceHardware, func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[sign65].Stats.Mean *= 1 + 1e-12
		}, FileResult, "stats.mean"},
		{"1 ns ML-DSA-65 sign", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[sign65].Stats = &Stats{N: 10, Min: 1, P25: 1, Median: 1, P75: 1, Max: 1, Mean: 1}
		}, FileResult, "stats.min"},
		{"unordered statistics", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			st := r.Cells[sign65].Stats
			st.P25, st.P75 = st.P75+1, st.P25
		}, FileResult, "stats"},
		{"rounds for fewer signatures than samples", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[sign65].Rounds.Counts[0]--
		}, FileResult, "rounds.counts"},
		{"rounds ending in zero", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[sign65].Rounds.Counts = append(r.Cells[sign65].Rounds.Counts, 0)
		}, FileResult, "rounds.counts"},
		{"rounds statistics off", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[sign65].Rounds.Stats.Max++
		}, FileResult, "rounds.stats.max"},
		{"rounds on a verify cell", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[sign65+1].Rounds = r.Cells[sign65].Rounds
		}, FileResult, "rounds"},
		{"negative statistic", "", "", func(_ *Manifest, r *Result, _ *Samples) { r.Cells[0].Stats.Min = -1 }, FileResult, "stats"},
		{"empty samples behind ok cells", "", "", func(_ *Manifest, _ *Result, s *Samples) {
			*s = Samples{Values: map[CellKey][]float64{}, Energy: map[CellKey][]float64{}, Units: map[CellKey]Unit{}}
		}, FileSamples, "n"},
		{"one sample fewer", "", "", func(_ *Manifest, r *Result, s *Samples) {
			k := KeyOf(r.Cells[2])
			s.Values[k] = s.Values[k][1:]
		}, FileSamples, "n"},
		{"a cell outside the manifest", "", "", func(_ *Manifest, r *Result, s *Samples) {
			k := KeyOf(r.Cells[0])
			r.Cells[0].Algorithm = "ML-DSA-87"
			s.Values[KeyOf(r.Cells[0])] = s.Values[k]
			delete(s.Values, k)
		}, FileResult, ""},
		{"a cell twice", "", "", func(_ *Manifest, r *Result, _ *Samples) { r.Cells = append(r.Cells, r.Cells[0]) }, FileResult, ""},
		{"a variant on an in-process run", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			c := r.Cells[0]
			c.Variant, c.Stats = "changed", nil
			c.Status, c.Error = StatusFailed, "x"
			r.Cells = append(r.Cells, c)
		}, FileResult, "variant"},
		{"n above requested", "", "", func(_ *Manifest, r *Result, _ *Samples) { r.Cells[1].Requested = 5 }, FileResult, "requested"},
		{"instructions on the host", UnitInstructions, AssuranceHost, nil, FileResult, "unit"},
		{"an unknown unit", "furlongs", AssuranceHost, nil, FileResult, "unit"},
		{"samples.csv in another unit", "", "", func(_ *Manifest, r *Result, s *Samples) { s.Units[KeyOf(r.Cells[0])] = UnitCycles }, FileSamples, "unit"},
		{"a wrong signature size", "", "", func(_ *Manifest, r *Result, _ *Samples) { r.Cells[sign65].Sizes.Signature = 64 }, FileResult, "sizes"},
		{"negative heap", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			h := -5.0
			r.Cells[0].Memory = &Memory{HeapBytesPerOp: &h}
		}, FileResult, "memory.heapBytesPerOp"},
		{"samples for a cell the result lacks", "", "", func(_ *Manifest, _ *Result, s *Samples) {
			s.Values[CellKey{Algorithm: "ML-DSA-87", Operation: "sign"}] = []float64{1}
		}, FileSamples, ""},
		{"statistics on a failed cell", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			r.Cells[0].Status, r.Cells[0].Error = StatusFailed, "broke"
		}, FileResult, "stats"},
		{"MaxCells+1 cells", "", "", func(_ *Manifest, r *Result, _ *Samples) {
			for len(r.Cells) <= MaxCells {
				r.Cells = append(r.Cells, r.Cells[0])
			}
		}, FileResult, "cells"},
		{"another manifest", "", "", func(m *Manifest, _ *Result, _ *Samples) { m.Spec.Iterations = 11 }, FileResult, "manifestId"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			unit, level := tc.unit, tc.level
			if unit == "" {
				unit, level = UnitNanoseconds, AssuranceHost
			}
			m, res, csvData := rederiveFixture(t, unit, level)
			s, err := ParseSamples(csvData)
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(m, res, &s)
			}
			err = Rederive(m, res, s)
			var re *RederiveError
			if !errors.As(err, &re) {
				t.Fatalf("err %v, want a *RederiveError", err)
			}
			if re.File != tc.file || (tc.field != "" && re.Field != tc.field) {
				t.Errorf("error names %s %q, want %s %q: %v", re.File, re.Field, tc.file, tc.field, err)
			}
			if !strings.HasPrefix(err.Error(), tc.file) {
				t.Errorf("message %q does not start with the file", err)
			}
		})
	}
}

func TestRederiveTolerance(t *testing.T) {
	m, res, csvData := rederiveFixture(t, UnitNanoseconds, AssuranceHost)
	s, _ := ParseSamples(csvData)
	res.Cells[3].Stats.Mean *= 1 + 1e-12 // another summation order could differ this much
	res.Cells[3].Stats.Stddev *= 1 - 1e-12
	if err := Rederive(m, res, s); err != nil {
		t.Errorf("within %g: %v", StatsRelTolerance, err)
	}
}

func TestRederiveVariantFollowsItsCell(t *testing.T) {
	m, res, csvData := rederiveFixture(t, UnitNanoseconds, AssuranceHost)
	m.Spec.Method = MethodOpenSSLCLI
	res.ManifestID, res.Method = m.ID(), MethodOpenSSLCLI
	s, _ := ParseSamples(csvData)
	v := res.Cells[4]
	v.Variant = "corrected"
	s.Values[KeyOf(v)] = s.Values[KeyOf(res.Cells[4])]
	// Right after its cell: accepted.
	ok := append(append(append([]Cell{}, res.Cells[:5]...), v), res.Cells[5:]...)
	res.Cells = ok
	if err := Rederive(m, res, s); err != nil {
		t.Fatalf("variant after its cell: %v", err)
	}
	// After another algorithm's cell: refused.
	res.Cells = append(append([]Cell{}, ok[:5]...), ok[6:]...)
	res.Cells = append(res.Cells, v)
	var re *RederiveError
	if err := Rederive(m, res, s); !errors.As(err, &re) || re.Field != "variant" {
		t.Errorf("variant out of place: %v", err)
	}
}

func TestParseSamplesLimits(t *testing.T) {
	if _, err := ParseSamples([]byte("algorithm,operation,iteration,value,unit,variant\nA,sign,0,1,ns,\nA,sign,1,1,cycles,\n")); err == nil || !strings.Contains(err.Error(), "line 3: unit") {
		t.Errorf("two units in a cell: %v", err)
	}
}

// TestRederiveOneVariantPerCell: an openssl-cli cell may have its one corrected variant
// beside it, never more (variants would otherwise let one result bring any number of cells).
func TestRederiveOneVariantPerCell(t *testing.T) {
	if MaxVariants != 1 {
		t.Skip("the test is written for one variant per cell")
	}
	m, err := ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: t, name: v}
spec:
  algorithms: [ECDSA-P256]
  operations: [sign]
  message: {size: 8}
  method: openssl-cli
  iterations: 2
  seed: s
`), "v")
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Schema: ResultSchema, Experiment: m.Ref(), ManifestID: m.ID(), Kind: m.Kind, Method: m.Spec.Method, Board: "host", Assurance: AssuranceHost}
	samples := Samples{Values: map[CellKey][]float64{}, Units: map[CellKey]Unit{}}
	add := func(variant string) {
		vals := []float64{100, 200}
		c := Cell{Algorithm: "ECDSA-P256", Operation: "sign", Status: StatusOK, Unit: UnitNanoseconds, Requested: 2, Variant: variant, Stats: Summarize(vals)}
		res.Cells = append(res.Cells, c)
		samples.Values[KeyOf(c)], samples.Units[KeyOf(c)] = vals, UnitNanoseconds
	}
	add("")
	add("corrected: -rawin -digest sha256")
	if err := Rederive(m, res, samples); err != nil {
		t.Fatalf("one variant: %v", err)
	}
	add("corrected again")
	if err := Rederive(m, res, samples); err == nil || !strings.Contains(err.Error(), "more than 1 variant") {
		t.Fatalf("two variants: %v; want refused", err)
	}
}

func TestNewRounds(t *testing.T) {
	r, err := NewRounds([]int{3, 1, 1, 5})
	if err != nil || !slices.Equal(r.Counts, []int{2, 0, 1, 0, 1}) || r.Stats.N != 4 || r.Stats.Median != 2 || r.Stats.Max != 5 {
		t.Fatalf("NewRounds = %+v %+v, %v", r, r.Stats, err)
	}
	if r, err := NewRounds(nil); r != nil || err != nil {
		t.Fatalf("NewRounds(nil) = %+v, %v", r, err)
	}
	for _, bad := range [][]int{{0}, {MaxRounds + 1}} {
		if _, err := NewRounds(bad); err == nil {
			t.Errorf("NewRounds(%v) accepted", bad)
		}
	}
}
