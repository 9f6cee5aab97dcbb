package experiments

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// PQM4Commit is the mupq/pqm4 commit whose benchmarks.csv the pqm4 dataset holds (see
// pqm4/PROVENANCE.md).
const PQM4Commit = "cc2c1b992b602d285bd15991a566d5f17b34c1fa"

// PQM4Row is one figure of pqm4's benchmark table: silicon cycles, stack bytes, the hashing
// share of cycles, or code size on a Cortex-M4, for one scheme, implementation and column.
// Never an instruction count: pqm4 measured cycles on silicon.
type PQM4Row struct {
	// Section is speed, memory, hashing or size; Family is kem or sig.
	Section, Family string
	// Scheme is pqm4's name ("ml-kem-512"); Executions the number of runs the speed section's
	// mean, min and max are over (0 where the section states none).
	Scheme     string
	Executions int
	// Implementation is pqm4's name for the code ("clean", "m4f", "ref", ...).
	Implementation string
	// Operation is keygen, encaps, decaps, sign or verify, or a size part (text, data, bss, total).
	Operation string
	// Stat is mean, min or max in the speed section, "value" elsewhere.
	Stat string
	// Unit is cycles, bytes or % (of the operation's cycles).
	Unit  string
	Value float64
	// Line is the row's 1-based line in benchmarks.csv.
	Line int
}

var (
	pqm4SchemeRE = regexp.MustCompile(`^(\S+) \((\d+) executions?\)$`)
	pqm4ColRE    = regexp.MustCompile(`^(.+?) \[(cycles|bytes|%)\](?: \((mean|min|max)\))?$`)
	pqm4Ops      = map[string]string{"Key Generation": "keygen", "Encapsulation": "encaps", "Decapsulation": "decaps",
		"Sign": "sign", "Verify": "verify", ".text": "text", ".data": "data", ".bss": "bss", "Total": "total"}
	pqm4Sections = map[string]string{"Speed Evaluation": "speed", "Memory Evaluation": "memory",
		"Hashing Evaluation": "hashing", "Size Evaluation": "size"}
	pqm4Families = map[string]string{"Key Encapsulation Schemes": "kem", "Signature Schemes": "sig"}
)

// pqm4Column is what one header cell says its column holds.
type pqm4Column struct{ op, unit, stat string }

// ParsePQM4 reads pqm4's benchmarks.csv as published: four sections (speed, memory, hashing,
// size), each with a KEM and a signature part under their own header row. Every figure becomes
// a row; a row, header or section the format does not have is an error naming its line.
func ParsePQM4(data []byte) ([]PQM4Row, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	var (
		out             []PQM4Row
		section, family string
		cols            []pqm4Column
		line            int
	)
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("pqm4 benchmarks.csv: %w", err)
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("pqm4 benchmarks.csv line %d: %s", line, fmt.Sprintf(format, args...))
		}
		switch first := rec[0]; {
		case pqm4Sections[first] != "":
			section, family, cols = pqm4Sections[first], "", nil
		case pqm4Families[first] != "":
			if section == "" {
				return nil, bad("%q before any section", first)
			}
			family, cols = pqm4Families[first], nil
		case first == "Scheme":
			if cols, err = pqm4Header(rec); err != nil {
				return nil, bad("%v", err)
			}
		default:
			if cols == nil || family == "" {
				return nil, bad("a data row before its header")
			}
			rows, err := pqm4Data(rec, cols, section, family, line)
			if err != nil {
				return nil, bad("%v", err)
			}
			out = append(out, rows...)
		}
	}
	return out, nil
}

// pqm4Header reads a header row: Scheme, Implementation, then each column's operation, unit
// and statistic; trailing empty cells pad the row to the widest section.
func pqm4Header(rec []string) ([]pqm4Column, error) {
	if len(rec) < 3 || rec[1] != "Implementation" {
		return nil, fmt.Errorf("header %q: want Scheme, Implementation and figures", strings.Join(rec, ","))
	}
	var cols []pqm4Column
	for _, h := range rec[2:] {
		if h == "" {
			break
		}
		m := pqm4ColRE.FindStringSubmatch(h)
		if m == nil || pqm4Ops[m[1]] == "" {
			return nil, fmt.Errorf("column %q is none pqm4 publishes", h)
		}
		stat := m[3]
		if stat == "" {
			stat = "value"
		}
		cols = append(cols, pqm4Column{op: pqm4Ops[m[1]], unit: m[2], stat: stat})
	}
	return cols, nil
}

// pqm4Data reads one scheme and implementation's figures under cols.
func pqm4Data(rec []string, cols []pqm4Column, section, family string, line int) ([]PQM4Row, error) {
	if len(rec) < 2+len(cols) {
		return nil, fmt.Errorf("%d cells, the header has %d figures", len(rec)-2, len(cols))
	}
	for _, extra := range rec[2+len(cols):] {
		if extra != "" {
			return nil, fmt.Errorf("a figure %q beyond the header's columns", extra)
		}
	}
	scheme, execs := rec[0], 0
	if m := pqm4SchemeRE.FindStringSubmatch(scheme); m != nil {
		scheme, execs = m[1], atoiOr0(m[2])
	}
	if scheme == "" || strings.ContainsAny(scheme, " ,") || rec[1] == "" {
		return nil, fmt.Errorf("scheme %q, implementation %q", rec[0], rec[1])
	}
	out := make([]PQM4Row, 0, len(cols))
	for i, c := range cols {
		v, err := strconv.ParseFloat(rec[2+i], 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s %s %s %s: %q is not a figure", scheme, rec[1], c.op, c.stat, rec[2+i])
		}
		out = append(out, PQM4Row{Section: section, Family: family, Scheme: scheme, Executions: execs, Implementation: rec[1],
			Operation: c.op, Stat: c.stat, Unit: c.unit, Value: v, Line: line})
	}
	return out, nil
}

func atoiOr0(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// PQM4Columns are the columns of pqm4/reference.csv: the papers' reference columns, so a later
// packaging of datasets takes it unchanged. library is the implementation, algorithm the
// scheme, scenario the family (kem, sig), metric the section's quantity, n the executions.
var PQM4Columns = []string{"board", "arch", "clock_mhz", "library", "algorithm", "operation", "scenario", "metric", "stat", "value", "unit", "n", "source", "note", "file"}

// pqm4Metrics names each section's quantity.
var pqm4Metrics = map[string]string{"speed": "cycles", "memory": "stack_bytes", "hashing": "hashing_share_pct", "size": "code_bytes"}

// PQM4Record is r as a row of pqm4/reference.csv.
func PQM4Record(r PQM4Row) []string {
	n := ""
	if r.Executions > 0 {
		n = strconv.Itoa(r.Executions)
	}
	return []string{"nucleo-l4r5zi", "armv7e-m", "", r.Implementation, r.Scheme, r.Operation, r.Family, pqm4Metrics[r.Section], r.Stat,
		strconv.FormatFloat(r.Value, 'f', -1, 64), r.Unit, n,
		"pqm4 benchmarks.csv at " + PQM4Commit[:12] + ", " + r.Section + " section",
		"silicon cycles on a Cortex-M4, never ratioed with emulated instructions",
		"pqm4-cortex-m4/benchmarks.csv#L" + strconv.Itoa(r.Line)}
}

// LoadPQM4 reads the pqm4 dataset (pqm4/reference.csv, made by experiments/build from the
// published file) back into its rows.
func LoadPQM4() ([]PQM4Row, error) {
	data, err := fs.ReadFile(embedded, "pqm4/reference.csv")
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("pqm4/reference.csv: %w", err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(PQM4Columns, ",") {
		return nil, errors.New("pqm4/reference.csv: not the dataset's columns")
	}
	sections := map[string]string{}
	for s, m := range pqm4Metrics {
		sections[m] = s
	}
	out := make([]PQM4Row, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		v, err := strconv.ParseFloat(rec[9], 64)
		line, _ := strconv.Atoi(strings.TrimPrefix(rec[14], "pqm4-cortex-m4/benchmarks.csv#L"))
		if err != nil || sections[rec[7]] == "" || line == 0 {
			return nil, fmt.Errorf("pqm4/reference.csv line %d: malformed row", i+2)
		}
		out = append(out, PQM4Row{Section: sections[rec[7]], Family: rec[6], Scheme: rec[4], Executions: atoiOr0(rec[11]),
			Implementation: rec[3], Operation: rec[5], Stat: rec[8], Unit: rec[10], Value: v, Line: line})
	}
	return out, nil
}

// PQM4Provenance is the text of pqm4/PROVENANCE.md: where the dataset comes from and what
// its figures are.
func PQM4Provenance() (string, error) {
	b, err := fs.ReadFile(embedded, "pqm4/PROVENANCE.md")
	return string(b), err
}
