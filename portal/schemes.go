package portal

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/portal/fault"
	"pqrepro/portal/plot"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// schemesPage is /schemes?assurance=&board= (or ?at=level/board from its picker): every
// scheme x operation measured on one assurance level and board class, one table per unit,
// method and class status, with a dot-and-interval chart per table.
func (s *Server) schemesPage(c echo.Context) error {
	ctx := c.Request().Context()
	level, board := c.QueryParam("assurance"), c.QueryParam("board")
	if at := c.QueryParam("at"); at != "" {
		var ok bool
		if level, board, ok = strings.Cut(at, "/"); !ok {
			return fault.New(fault.Invalid, "at: want <assurance>/<board class>")
		}
	}
	if len(level) > 100 || len(board) > 100 {
		return fault.New(fault.Invalid, "assurance or board too long")
	}
	choices, err := s.store.BoardLevels(ctx)
	if err != nil {
		return err
	}
	if level == "" && board == "" && len(choices) > 0 {
		level, board = choices[0].Level, choices[0].BoardClass
		for _, ch := range choices {
			if ch.Level == string(artifacts.AssuranceHost) && ch.BoardClass == artifacts.HostBoard {
				level, board = ch.Level, ch.BoardClass
			}
		}
	}
	v := templates.SchemesView{Page: s.page(c, "Schemes"), Level: level, Board: board}
	for _, ch := range choices {
		v.Choices = append(v.Choices, templates.Option{Value: ch.Level + "/" + ch.BoardClass, Label: ch.BoardClass + " (" + ch.Level + ")",
			Selected: ch.Level == level && ch.BoardClass == board})
	}
	if board == "" {
		return s.render(c, http.StatusOK, templates.SchemesPage(v))
	}
	rows, err := s.store.Schemes(ctx, level, board)
	if err != nil {
		return err
	}
	v.Sections = schemeSections(rows, level, board)
	pq, err := pqm4Rows()
	if err != nil {
		return err
	}
	v.PQM4, v.Quantities = pqm4Beside(pq, v.Sections), sectionQuantities(v.Sections)
	return s.render(c, http.StatusOK, templates.SchemesPage(v))
}

// schemeSections groups scheme rows (ordered by algorithm, operation) into one section per
// unit, method, class status, key form and message size, verified classes first; each
// implementation is a row of its own.
func schemeSections(rows []store.SchemeRow, level, board string) []templates.SchemeSection {
	order, byKey := schemeQuantities(rows)
	var out []templates.SchemeSection
	for pass := 0; pass < 2; pass++ {
		for _, k := range order {
			if declared := k.status != artifacts.ClassVerified; declared == (pass == 1) {
				out = append(out, schemeSection(k, byKey[k], level, board))
			}
		}
	}
	return out
}

// schemeQuantity is what one section of /schemes holds: one unit, timing method, class
// status, key form and message size.
type schemeQuantity struct {
	// title names the quantity (quantityTitle): telemetry's delivery latency is its own table,
	// never a row among times per operation.
	title                      string
	unit, method, status, keys string
	msg                        int
}

// schemeQuantities sorts the rows in the papers' order of operations (key generation, then
// encapsulation and decapsulation, then signing and verification, then the rest by name)
// within each algorithm and groups them by quantity, in the order quantities first appear.
func schemeQuantities(rows []store.SchemeRow) ([]schemeQuantity, map[schemeQuantity][]store.SchemeRow) {
	rank := func(op string) int {
		if i := slices.Index([]string{"keygen", "encaps", "decaps", "sign", "verify"}, op); i >= 0 {
			return i
		}
		return 5
	}
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b store.SchemeRow) int {
		return cmp.Or(naturalCompare(a.Algorithm, b.Algorithm), rank(a.Operation)-rank(b.Operation), strings.Compare(a.Operation, b.Operation))
	})
	var order []schemeQuantity
	byKey := map[schemeQuantity][]store.SchemeRow{}
	for _, r := range rows {
		k := schemeQuantity{quantityTitle(r.Operation, r.Unit), r.Unit, r.Method, r.ClassStatus, r.Keys, r.MessageBytes}
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	return order, byKey
}

// schemeSection is one quantity's table and chart: a row per scheme and operation, and the
// chart grouped per operation with a point per scheme, as the papers' figures are.
func schemeSection(k schemeQuantity, rows []store.SchemeRow, level, board string) templates.SchemeSection {
	declared := k.status != artifacts.ClassVerified
	sec := templates.SchemeSection{Title: fmt.Sprintf("%s · %s", k.title, k.method), Declared: declared}
	if k.keys != "" {
		sec.Title += " · keys " + k.keys
	}
	if k.msg > 0 {
		sec.Title += " · " + messageText(k.msg)
	}
	impls := map[string]bool{}
	for _, r := range rows {
		impls[r.Implementation] = true
	}
	if declared {
		sec.Title += " · declared board class, not verified"
	}
	var groups []plot.Group
	series := map[string]int{}
	last := ""
	for _, r := range rows {
		q := url.Values{"algorithm": {r.Algorithm}, "board": {board}, "assurance": {level}}
		sec.Rows = append(sec.Rows, templates.SchemeCell{Algorithm: r.Algorithm, Operation: r.Operation, Implementation: implementationText(r.Implementation), Median: human(r.Median, r.Unit),
			Spread: human(r.P25, r.Unit) + " – " + human(r.P75, r.Unit), N: r.N, Runs: r.Runs, RunsLink: "/runs?" + q.Encode(), LatestRun: r.LatestRun,
			First: r.Algorithm != last})
		last = r.Algorithm
		row := &sec.Rows[len(sec.Rows)-1]
		row.Hashing, row.HashingWhy = hashingText(r.Hashing)
		sec.Hashing = sec.Hashing || r.Hashing != nil
		gi := slices.IndexFunc(groups, func(g plot.Group) bool { return g.Label == r.Operation })
		if gi < 0 {
			groups = append(groups, plot.Group{Label: r.Operation})
			gi = len(groups) - 1
		}
		name := r.Algorithm
		if len(impls) > 1 {
			// Two implementations in one chart: each point says whose it is.
			name += " (" + implementationText(r.Implementation) + ")"
		}
		if _, ok := series[name]; !ok {
			series[name] = len(series)
		}
		groups[gi].Points = append(groups[gi].Points, plot.Point{Name: name, Value: r.Median, Lo: r.P25, Hi: r.P75, Series: series[name],
			Text: "median " + human(r.Median, r.Unit) + " (" + human(r.P25, r.Unit) + " – " + human(r.P75, r.Unit) + ")"})
	}
	schemeRatios(&sec, rows)
	unit := k.unit
	sec.Chart = plot.Intervals(groups, k.title, func(x float64) string { return axisLabel(x, unit) })
	return sec
}

// axisLabel is human(v, unit) without trailing zeros ("10 µs", not "10.00 µs"), short enough
// for an axis on a phone.
func axisLabel[U ~string](v float64, unit U) string {
	h := compact(v, unit)
	num, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.Contains(num, ".") {
		return h
	}
	return strings.TrimRight(strings.TrimRight(num, "0"), ".") + " " + rest
}
