package portal

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"pqrepro/experiments"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// pqm4Rows is the pqm4 dataset, read once from the embedded reference.csv.
var pqm4Rows = sync.OnceValues(experiments.LoadPQM4)

// pqm4Ops are the operations of each family, in pqm4's order; pqm4SizeParts the code size
// columns.
var (
	pqm4Ops       = map[string][]string{"kem": {"keygen", "encaps", "decaps"}, "sig": {"keygen", "sign", "verify"}}
	pqm4SizeParts = []string{"text", "data", "bss", "total"}
	pqm4Titles    = map[string]string{"kem": "Key encapsulation schemes", "sig": "Signature schemes"}
)

// pqm4Key names one figure of the table.
type pqm4Key struct{ section, scheme, impl, op, stat string }

// pqm4Page is /datasets/pqm4?family=&scheme=: pqm4's table as a pivot, filtered by family and
// scheme.
func (s *Server) pqm4Page(c echo.Context) error {
	family, scheme := c.QueryParam("family"), c.QueryParam("scheme")
	if family != "" && pqm4Ops[family] == nil {
		return fault.New(fault.Invalid, "family: want kem or sig")
	}
	if len(scheme) > 100 {
		return fault.New(fault.Invalid, "scheme too long")
	}
	rows, err := pqm4Rows()
	if err != nil {
		return err
	}
	v := pqm4View(rows, family, scheme)
	prov, err := experiments.PQM4Provenance()
	if err != nil {
		return err
	}
	for _, para := range strings.Split(strings.TrimSpace(prov), "\n\n") {
		v.Provenance = append(v.Provenance, strings.Join(strings.Fields(para), " "))
	}
	v.Page = s.page(c, "pqm4 (Cortex-M4)")
	return s.render(c, http.StatusOK, templates.PQM4Page(v))
}

// pqm4View builds the pivot of rows for one family and scheme ("" for all).
func pqm4View(rows []experiments.PQM4Row, family, scheme string) templates.PQM4View {
	v := templates.PQM4View{Commit: experiments.PQM4Commit, CommitShort: experiments.PQM4Commit[:12], Total: len(rows),
		Filtered: family != "" || scheme != ""}
	v.Families = []templates.Option{{Value: "", Label: "all", Selected: family == ""}, {Value: "kem", Label: "KEM", Selected: family == "kem"},
		{Value: "sig", Label: "signature", Selected: family == "sig"}}
	v.Schemes = []templates.Option{{Value: "", Label: "all", Selected: scheme == ""}}
	figs := map[pqm4Key]experiments.PQM4Row{}
	lines := map[string][]pqm4Line{}
	seen := map[pqm4Line]bool{}
	for _, r := range rows {
		figs[pqm4Key{r.Section, r.Scheme, r.Implementation, r.Operation, r.Stat}] = r
		l := pqm4Line{r.Family, r.Scheme, r.Implementation}
		if !seen[l] {
			seen[l] = true
			lines[r.Family] = append(lines[r.Family], l)
		}
	}
	for _, fam := range []string{"kem", "sig"} {
		ls := lines[fam]
		slices.SortFunc(ls, func(a, b pqm4Line) int {
			return cmp.Or(naturalCompare(a.scheme, b.scheme), strings.Compare(a.impl, b.impl))
		})
		for i, l := range ls {
			if (i == 0 || ls[i-1].scheme != l.scheme) && (family == "" || family == fam) {
				v.Schemes = append(v.Schemes, templates.Option{Value: l.scheme, Label: l.scheme, Selected: l.scheme == scheme})
			}
		}
		if family != "" && family != fam {
			continue
		}
		t := templates.PQM4Table{Family: fam, Title: pqm4Titles[fam] + " · silicon cycles on a Cortex-M4", Ops: pqm4Ops[fam]}
		for _, l := range ls {
			if scheme != "" && l.scheme != scheme {
				continue
			}
			line := pqm4LineView(l, figs, &v.Figures)
			line.First = len(t.Lines) == 0 || t.Lines[len(t.Lines)-1].Scheme != l.scheme
			t.Lines = append(t.Lines, line)
		}
		if len(t.Lines) > 0 {
			v.Tables = append(v.Tables, t)
		}
	}
	return v
}

// pqm4Line is one scheme and implementation of a family.
type pqm4Line struct{ family, scheme, impl string }

// pqm4LineView is one row of the pivot; shown counts the figures it holds.
func pqm4LineView(l pqm4Line, figs map[pqm4Key]experiments.PQM4Row, shown *int) templates.PQM4Line {
	fig := func(section, op, stat string) templates.PQM4Fig {
		r, ok := figs[pqm4Key{section, l.scheme, l.impl, op, stat}]
		if !ok {
			return templates.PQM4Fig{}
		}
		*shown++
		return templates.PQM4Fig{Present: true, Section: section, Text: pqm4Text(r), Value: strconv.FormatFloat(r.Value, 'f', -1, 64), Line: r.Line}
	}
	out := templates.PQM4Line{Scheme: l.scheme, Implementation: l.impl}
	if r, ok := figs[pqm4Key{"speed", l.scheme, l.impl, pqm4Ops[l.family][0], "mean"}]; ok && r.Executions > 0 {
		out.Executions = strconv.Itoa(r.Executions)
	}
	for _, op := range pqm4Ops[l.family] {
		out.Ops = append(out.Ops, templates.PQM4OpCell{Mean: fig("speed", op, "mean"), Min: fig("speed", op, "min"), Max: fig("speed", op, "max"),
			Stack: fig("memory", op, "value"), Hash: fig("hashing", op, "value")})
	}
	for _, part := range pqm4SizeParts {
		out.Size = append(out.Size, fig("size", part, "value"))
	}
	return out
}

// pqm4Text is a figure in its unit: cycles and bytes exactly, digits grouped; the hashing
// share as pqm4 publishes it.
func pqm4Text(r experiments.PQM4Row) string {
	switch r.Unit {
	case "%":
		return strconv.FormatFloat(r.Value, 'f', -1, 64) + " %"
	case "bytes":
		return groupDigits(int64(r.Value)) + " B"
	}
	return human(r.Value, r.Unit)
}

// pqm4HashingText is pqm4's hashing share of an algorithm's operation, each implementation's
// (a share of silicon cycles: "clean 48.5 %, m4fspeed 74.5 % of cycles"), "—" when pqm4 has
// none. It is shown beside a board's share of instructions, never in a ratio with it.
func pqm4HashingText(rows []experiments.PQM4Row, alg, op string) string {
	var parts []string
	for _, r := range rows {
		if r.Section == "hashing" && r.Scheme == strings.ToLower(alg) && r.Operation == op && r.Stat == "value" {
			parts = append(parts, r.Implementation+" "+pqm4Text(r))
		}
	}
	if len(parts) == 0 {
		return "—"
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ") + " of cycles"
}

// pqm4Baselines are the implementations a pqm4 ratio is taken against, in order of
// preference: PQClean's portable C, then the reference code.
var pqm4Baselines = []string{"clean", "ref"}

// pqm4Ratio is a's mean cycles over b's: both pqm4 rows of the speed section, the same scheme
// and operation. It refuses any other pair, so a silicon cycle count is never put in a ratio
// with anything but another silicon cycle count.
func pqm4Ratio(a, b experiments.PQM4Row) (float64, error) {
	if a.Section != "speed" || b.Section != "speed" || a.Unit != "cycles" || b.Unit != "cycles" || a.Scheme != b.Scheme ||
		a.Operation != b.Operation || a.Stat != b.Stat || b.Value == 0 {
		return 0, fmt.Errorf("pqm4 ratio: %s %s %s %s over %s %s %s %s is not comparable", a.Scheme, a.Implementation, a.Operation, a.Stat,
			b.Scheme, b.Implementation, b.Operation, b.Stat)
	}
	return a.Value / b.Value, nil
}

// pqm4Beside is pqm4's figures for each scheme and operation of the board's sections whose
// name pqm4 has (ML-KEM-768 is pqm4's ml-kem-768), in the sections' order.
func pqm4Beside(rows []experiments.PQM4Row, secs []templates.SchemeSection) []templates.PQM4Beside {
	type so struct{ scheme, op string }
	speed := map[so][]experiments.PQM4Row{}
	stack := map[pqm4Key]experiments.PQM4Row{}
	for _, r := range rows {
		switch {
		case r.Section == "speed" && r.Stat == "mean":
			speed[so{r.Scheme, r.Operation}] = append(speed[so{r.Scheme, r.Operation}], r)
		case r.Section == "memory" || r.Section == "hashing":
			stack[pqm4Key{r.Section, r.Scheme, r.Implementation, r.Operation, r.Stat}] = r
		}
	}
	var out []templates.PQM4Beside
	done := map[so]bool{}
	for _, sec := range secs {
		for _, c := range sec.Rows {
			k := so{strings.ToLower(c.Algorithm), c.Operation}
			if done[k] || len(speed[k]) == 0 {
				continue
			}
			done[k] = true
			out = append(out, pqm4BesideOne(c.Algorithm, k.scheme, c.Operation, speed[k], rows, stack))
		}
	}
	// pqm4's order: each scheme's operations together, parameter sets by size.
	slices.SortStableFunc(out, func(a, b templates.PQM4Beside) int {
		return cmp.Or(naturalCompare(a.Algorithm, b.Algorithm), opRank(a.Operation)-opRank(b.Operation))
	})
	return out
}

// opRank is an operation's place in the papers' order: keygen, encaps, decaps, sign, verify,
// then the rest.
func opRank(op string) int {
	if i := slices.Index([]string{"keygen", "encaps", "decaps", "sign", "verify"}, op); i >= 0 {
		return i
	}
	return 5
}

// sectionQuantities are the quantities of the board's tables (the first part of each title,
// "emulated retired instructions per operation (not cycles)"), each once.
func sectionQuantities(secs []templates.SchemeSection) []string {
	var out []string
	for _, sec := range secs {
		q, _, _ := strings.Cut(sec.Title, " · ")
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// pqm4BesideOne is one scheme and operation's pqm4 rows: mean cycles, min–max, stack, and the
// ratio of each implementation's mean to the baseline's.
func pqm4BesideOne(alg, scheme, op string, means, all []experiments.PQM4Row, stack map[pqm4Key]experiments.PQM4Row) templates.PQM4Beside {
	means = slices.Clone(means)
	slices.SortFunc(means, func(a, b experiments.PQM4Row) int { return strings.Compare(a.Implementation, b.Implementation) })
	var base *experiments.PQM4Row
	for _, name := range pqm4Baselines {
		if i := slices.IndexFunc(means, func(r experiments.PQM4Row) bool { return r.Implementation == name }); i >= 0 && base == nil {
			base = &means[i]
		}
	}
	b := templates.PQM4Beside{Algorithm: alg, Scheme: scheme, Operation: op, Link: "/datasets/pqm4?scheme=" + url.QueryEscape(scheme)}
	for _, m := range means {
		row := templates.PQM4BesideRow{Implementation: m.Implementation, Mean: pqm4Text(m), Stack: "—", Hash: "—"}
		if lo, hi, ok := pqm4MinMax(all, m); ok {
			row.MinMax = pqm4Text(lo) + " – " + pqm4Text(hi)
		}
		if s, ok := stack[pqm4Key{"memory", m.Scheme, m.Implementation, m.Operation, "value"}]; ok {
			row.Stack = pqm4Text(s)
		}
		if h, ok := stack[pqm4Key{"hashing", m.Scheme, m.Implementation, m.Operation, "value"}]; ok {
			row.Hash = pqm4Text(h) + " of cycles"
		}
		if base != nil && base.Implementation != m.Implementation {
			if x, err := pqm4Ratio(m, *base); err == nil {
				row.Ratio, row.RatioBase = strconv.FormatFloat(x, 'f', 3, 64), base.Implementation
			}
		}
		b.Rows = append(b.Rows, row)
	}
	return b
}

// pqm4MinMax finds the min and max rows beside mean m.
func pqm4MinMax(all []experiments.PQM4Row, m experiments.PQM4Row) (lo, hi experiments.PQM4Row, ok bool) {
	var okLo, okHi bool
	for _, r := range all {
		if r.Section == "speed" && r.Scheme == m.Scheme && r.Implementation == m.Implementation && r.Operation == m.Operation {
			switch r.Stat {
			case "min":
				lo, okLo = r, true
			case "max":
				hi, okHi = r, true
			}
		}
	}
	return lo, hi, okLo && okHi
}

// schemeRatios sets each row's ratio to the first implementation of the same scheme and
// operation in its section: the same unit, method and board, so comparable.
func schemeRatios(sec *templates.SchemeSection, rows []store.SchemeRow) {
	type ao struct{ alg, op string }
	first := map[ao]store.SchemeRow{}
	for i, r := range rows {
		k := ao{r.Algorithm, r.Operation}
		f, ok := first[k]
		if !ok {
			first[k] = r
			continue
		}
		if f.Implementation != r.Implementation && f.Median > 0 && f.Unit == r.Unit && f.Method == r.Method {
			sec.Rows[i].Ratio = strconv.FormatFloat(r.Median/f.Median, 'f', 3, 64)
			sec.Rows[i].RatioBase = implementationText(f.Implementation)
		}
	}
}
