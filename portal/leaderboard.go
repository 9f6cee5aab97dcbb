package portal

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/portal/fault"
	"pqrepro/portal/plot"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

func newCSV(w io.Writer) *csv.Writer { return csv.NewWriter(w) }

// Standing is a board's place in a leaderboard: the median of its runs' medians, the widest
// p25-p75 spread among them, the total n, for one unit, assurance level, timing method,
// board class status, origin, implementation, key form and message size.
type Standing struct {
	Rank   int    `json:"rank"`
	Board  string `json:"board"`
	Level  string `json:"level"`
	Origin string `json:"origin"`
	// Method is the timing method (in-process, process-per-operation, openssl-cli); ClassStatus
	// is verified or declared. Rankings never mix either.
	Method      string `json:"method,omitempty"`
	ClassStatus string `json:"classStatus,omitempty"`
	// Implementation is the code the row's cells timed (artifacts.Implementation.Key), Keys
	// their key form and MessageBytes the size of the message they signed: two of any of
	// them are two rows. Key form and message size also separate rankings (another quantity).
	Implementation string `json:"implementation,omitempty"`
	Keys           string `json:"keys,omitempty"`
	MessageBytes   int    `json:"messageBytes,omitempty"`
	// EnergyMethod is how an energy row was measured (rapl, meter): rankings never mix two.
	EnergyMethod string  `json:"energyMethod,omitempty"`
	Unit         string  `json:"unit"`
	Median       float64 `json:"median"`
	P25          float64 `json:"p25"`
	P75          float64 `json:"p75"`
	N            int     `json:"n"`
	Runs         int     `json:"runs"`
	LatestRun    int64   `json:"latestRun"`
	Assurance    string  `json:"assurance"`
	Measured     bool    `json:"measured"`
	Source       string  `json:"source,omitempty"`
	Paper        string  `json:"paper,omitempty"`
	Statistic    string  `json:"statistic,omitempty"`
	Scenario     string  `json:"scenario,omitempty"`
	ValueText    string  `json:"valueText,omitempty"`
	// Library is the implementation a published number was measured with.
	Library    string `json:"library,omitempty"`
	group      string
	groupTitle string
	// quantity names what the standing measures (quantityTitle), the plot's axis title.
	quantity string
}

// Leaderboard is the ranking for one (algorithm, operation, metric): measured standings in
// groups (one per unit, level, method and class status, never mixed) and the published
// numbers beside them.
type Leaderboard struct {
	Algorithm string     `json:"algorithm"`
	Operation string     `json:"operation"`
	Metric    string     `json:"metric"`
	Measured  []Standing `json:"measured"`
	Published []Standing `json:"published"`
}

// leaderboard returns the standings for (alg, op, metric), from the cache when no run was
// published since they were computed.
func (s *Server) leaderboard(ctx context.Context, alg, op, metric string) (Leaderboard, error) {
	key := alg + "\x00" + op + "\x00" + metric
	s.measuredMu.Lock()
	lb, ok := s.boards[key]
	gen := s.generation
	s.measuredMu.Unlock()
	if ok {
		return lb, nil
	}
	lb, err := s.computeLeaderboard(ctx, alg, op, metric)
	if err != nil {
		return lb, err
	}
	s.measuredMu.Lock()
	defer s.measuredMu.Unlock()
	if s.generation != gen {
		return lb, nil // a run was published meanwhile: do not cache what may be stale
	}
	if s.boards == nil || len(s.boards) > 1000 {
		s.boards = map[string]Leaderboard{}
	}
	s.boards[key] = lb
	return lb, nil
}

// computeLeaderboard computes the standings from the stored cells and the catalogue's references.
func (s *Server) computeLeaderboard(ctx context.Context, alg, op, metric string) (Leaderboard, error) {
	lb := Leaderboard{Algorithm: alg, Operation: op, Metric: metric, Measured: []Standing{}, Published: []Standing{}}
	rows, err := s.store.Standings(ctx, alg, op, metric)
	if err != nil {
		return lb, err
	}
	lb.Measured = rankStandings(rows, metric, op)
	// Published numbers of the same kind stand beside the measured ones, labelled.
	published := map[string]string{store.MetricLatency: "latency", store.MetricEnergy: "energy_j"}[metric]
	if published != "" {
		for _, p := range s.catalog.Papers {
			for _, r := range p.Reference {
				if r.Metric != published || r.Algorithm != alg || r.Operation != op {
					continue
				}
				lb.Published = append(lb.Published, Standing{Board: r.Board, Unit: r.Unit, Median: r.Value, ValueText: r.Text, N: r.N,
					Origin: "published", Assurance: "published", Source: r.Source, Paper: p.ID, Statistic: r.Stat, Scenario: r.Scenario, Library: r.Library})
			}
		}
	}
	return lb, nil
}

// rankStandings turns the store's aggregates into ranked standings: grouped (one ranking
// per unit, level, method and class status), by median within a group.
func rankStandings(rows []store.Standing, metric, op string) []Standing {
	out := []Standing{}
	for _, r := range rows {
		st := Standing{Board: r.BoardClass, Level: r.Level, Origin: r.Origin, Method: r.Method, ClassStatus: r.ClassStatus, Unit: r.Unit,
			Implementation: r.Implementation, Keys: r.Keys, MessageBytes: r.MessageBytes, EnergyMethod: r.EnergyMethod,
			Median: r.Median, P25: r.P25, P75: r.P75, N: r.N, Runs: r.Runs, LatestRun: r.LatestRun, Measured: true}
		st.Assurance = st.Level + "/" + st.Origin
		title := quantityTitle(op, st.Unit)
		switch metric {
		case store.MetricHeap:
			title = "heap bytes per operation"
		case store.MetricStack:
			title = "stack high-water mark per operation"
		case store.MetricEnergy:
			title = energyTitle(r.EnergyMethod)
		}
		st.group, st.groupTitle = rankGroup(st, title)
		st.quantity = title
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if a.Median != b.Median {
			return a.Median < b.Median
		}
		if a.Board != b.Board {
			return a.Board < b.Board
		}
		return a.Implementation < b.Implementation
	})
	// Competition ranking: equal medians share a rank ("1, 1, 3"), so identical results are
	// never shown as first and second.
	rank, group := 0, ""
	for i := range out {
		if out[i].group != group {
			rank, group = 0, out[i].group
		}
		if rank == 0 || out[i].Median != out[i-1].Median {
			rank = inGroup(out, i) + 1
		}
		out[i].Rank = rank
	}
	return out
}

// inGroup is how many standings before out[i] share its group.
func inGroup(out []Standing, i int) int {
	n := 0
	for j := i - 1; j >= 0 && out[j].group == out[i].group; j-- {
		n++
	}
	return n
}

// rankGroup is the ranking a standing belongs to and its title: one unit, one assurance
// level, one timing method, one class status (verified classes first), one key form and one
// message size per ranking, so instruction counts never stand beside times, in-process times
// never beside whole processes, a declared board class never among verified ones, a reused
// key object never beside one decoded from its bytes, and signing 33 bytes never beside
// signing 19.6 KB. Implementations are ranked together, each its own row.
func rankGroup(st Standing, title string) (key, heading string) {
	method := st.Method
	if method == "" {
		method = "method not recorded"
	}
	status := "0"
	heading = fmt.Sprintf("%s · %s · %s", title, st.Level, method)
	if st.Keys != "" {
		heading += " · keys " + st.Keys
	}
	if st.MessageBytes > 0 {
		heading += " · " + messageText(st.MessageBytes)
	}
	if st.ClassStatus != artifacts.ClassVerified {
		status = "1"
		heading += " · declared board class, not verified"
	}
	return st.Unit + "|" + st.Level + "|" + method + "|" + status + "|" + st.Keys + "|" + strconv.Itoa(st.MessageBytes) + "|" + st.EnergyMethod, heading
}

// energyTitle names an energy ranking's method: each method is its own ranking.
func energyTitle(method string) string {
	switch method {
	case store.EnergyRAPL:
		return "energy per operation (RAPL package counter over the timed iterations)"
	case store.EnergyMeter:
		return "energy per operation (power meter: (P_load − P_idle) × T_op; the meter and its rate on each run's page)"
	}
	return "energy per operation (method not recorded)"
}

// messageText names a message size for a ranking's title ("33-byte messages").
func messageText(n int) string {
	return groupDigits(int64(n)) + "-byte messages"
}

// implementationText is an implementation key as rows show it: digests abbreviated, and
// "not recorded" for cells published before implementations were (until pqrepro rebuild).
func implementationText(key string) string {
	if key == "" {
		return "not recorded (run pqrepro rebuild)"
	}
	return artifacts.ShortImplementation(key)
}

// algOps lists the (algorithm, operation) pairs the catalogue's manifests ask for, plus
// any that were measured: the algorithms, the operations, and the operations of each
// algorithm. The lists are computed once per publication and shared: callers must not modify
// them.
func (s *Server) algOps(ctx context.Context) ([]string, []string, map[string][]string, error) {
	s.measuredMu.Lock()
	algs, ops, of, gen := s.algList, s.opList, s.algOpsOf, s.generation
	s.measuredMu.Unlock()
	if algs != nil {
		return algs, ops, of, nil
	}
	measured, err := s.store.MeasuredAlgOps(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	// De-duplicated through sets: linear in the pairs, however many a result brought (a
	// list search per pair made 90,000 distinct cells cost seconds per view).
	seenAlg, seenOp, seenPair := map[string]bool{}, map[string]bool{}, map[string]bool{}
	of = map[string][]string{}
	add := func(a, o string) {
		if !seenAlg[a] {
			seenAlg[a] = true
			algs = append(algs, a)
		}
		if !seenOp[o] {
			seenOp[o] = true
			ops = append(ops, o)
		}
		if !seenPair[a+"\x00"+o] {
			seenPair[a+"\x00"+o] = true
			of[a] = append(of[a], o)
		}
	}
	for _, p := range s.catalog.Papers {
		for _, m := range p.Manifests {
			for _, c := range m.Cells() {
				add(c.Algorithm, c.Operation)
			}
		}
	}
	known := map[string]bool{}
	for _, a := range artifacts.Algorithms() {
		known[a.Name] = true
	}
	for _, m := range measured {
		// Only algorithms this build knows are offered: a name no manifest can ask for
		// (a result's invention) cannot grow every visitor's page.
		if knownAlgorithm(known, m.Algorithm) || (m.Operation == artifacts.OpHandshake && matrixCell(m.Algorithm)) {
			add(m.Algorithm, m.Operation)
		}
	}
	slices.SortFunc(algs, naturalCompare)
	s.measuredMu.Lock()
	if s.generation == gen {
		s.algList, s.opList, s.algOpsOf = algs, ops, of
	}
	s.measuredMu.Unlock()
	return algs, ops, of, nil
}

// knownAlgorithm reports whether name is a catalogue algorithm or a KEM+SIG pair of them.
func knownAlgorithm(known map[string]bool, name string) bool {
	if known[name] {
		return true
	}
	k, sg, ok := artifacts.SplitPair(name)
	return ok && known[k] && known[sg]
}

// matrixCell reports whether name is a tls-matrix cell, "<group>+<scheme>" of the TLS names
// this build knows (P-256, X25519MLKEM768 and RSA-PSS are TLS names, not bench algorithms).
func matrixCell(name string) bool {
	g, sc, ok := artifacts.SplitPair(name)
	if !ok {
		return false
	}
	_, okG := artifacts.LookupTLSGroup(g)
	return okG && slices.ContainsFunc(artifacts.TLSSignatures(), func(s artifacts.TLSSignature) bool { return s.Name == sc })
}

func leaderQuery(c echo.Context) (alg, op, metric string, err error) {
	alg, op, metric = c.QueryParam("algorithm"), c.QueryParam("operation"), c.QueryParam("metric")
	// The page's picker sends one "ALGORITHM/operation" of the pairs that exist.
	if pair := c.QueryParam("pair"); pair != "" {
		i := strings.LastIndexByte(pair, '/')
		if i <= 0 || i == len(pair)-1 {
			return "", "", "", fault.New(fault.Invalid, "pair: want ALGORITHM/operation, e.g. ML-KEM-768/encaps")
		}
		alg, op = pair[:i], pair[i+1:]
	}
	if metric == "" {
		metric = store.MetricLatency
	}
	if !slices.Contains([]string{store.MetricLatency, store.MetricHeap, store.MetricStack, store.MetricEnergy}, metric) {
		return "", "", "", fault.New(fault.Invalid, "metric must be %s, %s, %s or %s", store.MetricLatency, store.MetricHeap, store.MetricStack, store.MetricEnergy)
	}
	if len(alg) > 100 || len(op) > 100 {
		return "", "", "", fault.New(fault.Invalid, "algorithm or operation too long")
	}
	return alg, op, metric, nil
}

func leaderLink(alg, op, metric string) string {
	q := url.Values{"algorithm": {alg}, "operation": {op}, "metric": {metric}}
	return "/leaderboards?" + q.Encode()
}

func (s *Server) leaderboardPage(c echo.Context) error {
	ctx := c.Request().Context()
	alg, op, metric, err := leaderQuery(c)
	if err != nil {
		return err
	}
	algs, allOps, opsOf, err := s.algOps(ctx)
	if err != nil {
		return err
	}
	if alg == "" && op == "" {
		alg, op = "ML-KEM-768", "encaps"
	}
	// The picker offers the operations measured or asked for with the chosen algorithm only
	// (handshake for a matrix cell, never for a KEM); an operation the algorithm lacks, left
	// over from the previous choice, becomes its first.
	ops := opsOf[alg]
	switch {
	case len(ops) == 0:
		ops = allOps // an algorithm nothing asks for: its page says no run measured it
	case !slices.Contains(ops, op):
		op = ops[0]
	}
	v := templates.LeaderboardView{Page: s.page(c, "Leaderboards"), Algorithm: alg, Operation: op, Metric: metric}
	for _, a := range algs {
		v.Algorithms = append(v.Algorithms, templates.Option{Value: a, Label: a, Selected: a == alg})
	}
	for _, o := range ops {
		v.Operations = append(v.Operations, templates.Option{Value: o, Label: o, Selected: o == op})
	}
	// One picker of the pairs that exist (asked for by a manifest or measured), so no choice
	// leads to an impossible pair such as a KEM's sign.
	for _, a := range algs {
		g := templates.OptGroup{Label: a}
		for _, o := range opsOf[a] {
			g.Options = append(g.Options, templates.Option{Value: a + "/" + o, Label: a + " " + o, Selected: a == alg && o == op})
		}
		if len(g.Options) > 0 {
			v.Pairs = append(v.Pairs, g)
		}
	}
	v.Metrics = []templates.Option{
		{Value: store.MetricLatency, Label: "latency: median per operation", Selected: metric == store.MetricLatency},
		{Value: store.MetricHeap, Label: "heap bytes per operation", Selected: metric == store.MetricHeap},
		{Value: store.MetricStack, Label: "stack high-water mark (firmware boards)", Selected: metric == store.MetricStack},
		{Value: store.MetricEnergy, Label: "energy per operation", Selected: metric == store.MetricEnergy},
	}
	lb, err := s.leaderboard(ctx, alg, op, metric)
	if err != nil {
		return err
	}
	v.Groups = leaderGroups(lb.Measured)
	v.Empty = noMeasurement(alg, op, metric)
	v.Published = publishedRows(lb)
	q := url.Values{"algorithm": {alg}, "operation": {op}, "metric": {metric}}
	v.JSON = "/api/v1/leaderboards?" + q.Encode()
	q.Set("format", "csv")
	v.CSV = "/api/v1/leaderboards?" + q.Encode()
	return s.render(c, http.StatusOK, templates.LeaderboardPage(v))
}

// publishedRows are the published figures beside a leaderboard. Times are shown in one unit
// for the whole column, the unit the measured times beside them use where there are any (a
// paper's "0.000012345 s" reads as "12.35 µs" under µs rankings), the figure as printed
// beside it: converted for display only, never rounded into a different number's place.
func publishedRows(lb Leaderboard) []templates.PublishedRow {
	var times []float64
	for _, m := range lb.Measured {
		if artifacts.Unit(m.Unit) == artifacts.UnitNanoseconds {
			times = append(times, m.Median)
		}
	}
	if len(times) == 0 {
		for _, p := range lb.Published {
			if ns, ok := publishedNanoseconds(p.Median, p.Unit); ok {
				times = append(times, ns)
			}
		}
	}
	scale := columnTimeScale(times...)
	var out []templates.PublishedRow
	for _, p := range lb.Published {
		n := ""
		if p.N > 0 {
			n = strconv.Itoa(p.N)
		}
		printed := strings.TrimSpace(p.ValueText + " " + p.Unit)
		row := templates.PublishedRow{Paper: p.Paper, Board: p.Board, Value: printed, Stat: p.Statistic,
			N: n, Scenario: p.Scenario, Source: p.Source, Library: p.Library}
		if ns, ok := publishedNanoseconds(p.Median, p.Unit); ok && p.Unit != scale.name {
			row.Value, row.Original = scale.format(ns), printed
		}
		out = append(out, row)
	}
	return out
}

// noMeasurement says why a leaderboard has no row: which runs would measure the metric, and
// why the ones published here do not.
func noMeasurement(alg, op, metric string) string {
	what := alg + " " + op
	switch metric {
	case store.MetricEnergy:
		return "No published run of " + what + " measured energy. The host board measures it only where the kernel exposes a RAPL powercap domain (virtual machines usually do not); a board needs a power meter on the lab's bench. A run without either records why in its environment (Energy), and is ranked by latency only."
	case store.MetricHeap:
		return "No published run of " + what + " recorded heap bytes per operation: the host board's in-process runs record them; firmware boards and whole-process runs do not."
	case store.MetricStack:
		return "No published run of " + what + " recorded a stack high-water mark: firmware boards record it; the host board does not."
	}
	return "No run of " + what + " is published yet: re-run an experiment that measures it, or submit a result."
}

// leaderGroups turns standings (sorted by group) into the page's tables with a plot each.
func leaderGroups(st []Standing) []templates.LeaderGroup {
	var out []templates.LeaderGroup
	for i := 0; i < len(st); {
		j := i
		g := templates.LeaderGroup{Title: st[i].groupTitle, Unit: st[i].Unit, Method: st[i].Method, Declared: st[i].ClassStatus != artifacts.ClassVerified}
		var rows []plot.Row
		format := func(v float64) string { return human(v, g.Unit) }
		if artifacts.Unit(g.Unit) == artifacts.UnitNanoseconds {
			// One time unit for the whole ranking: never ns in one row and µs in the next.
			var vals []float64
			for k := i; k < len(st) && st[k].group == st[i].group; k++ {
				vals = append(vals, st[k].Median, st[k].P25, st[k].P75)
			}
			format = columnTimeScale(vals...).format
		}
		for ; j < len(st) && st[j].group == st[i].group; j++ {
			r := st[j]
			g.Rows = append(g.Rows, templates.LeaderRow{Rank: r.Rank, Board: r.Board, Assurance: assurance(r.Board, r.Level, r.Origin),
				Implementation: implementationText(r.Implementation),
				Median:         format(r.Median), P25: format(r.P25), P75: format(r.P75), Unit: r.Unit, N: r.N, Runs: r.Runs, RunID: r.LatestRun})
			rows = append(rows, plot.Row{Label: r.Board + " (" + r.Origin + ", " + implementationText(r.Implementation) + ")", Min: r.P25, P25: r.P25, Median: r.Median, P75: r.P75, Max: r.P75})
		}
		g.Plot = plot.Layout(rows, cmp.Or(st[i].quantity, unitTitle(g.Unit)), func(v float64) string { return axisLabel(v, g.Unit) })
		out = append(out, g)
		i = j
	}
	return out
}

// apiLeaderboard serves a leaderboard as JSON, or CSV with ?format=csv.
func (s *Server) apiLeaderboard(c echo.Context) error {
	alg, op, metric, err := leaderQuery(c)
	if err != nil {
		return err
	}
	if alg == "" || op == "" {
		return fault.New(fault.Invalid, "give algorithm and operation")
	}
	lb, err := s.leaderboard(c.Request().Context(), alg, op, metric)
	if err != nil {
		return err
	}
	if c.QueryParam("format") != "csv" {
		return c.JSON(http.StatusOK, lb)
	}
	var buf bytes.Buffer
	w := newCSV(&buf)
	w.Write([]string{"algorithm", "operation", "metric", "kind", "rank", "board", "level", "origin", "method", "class_status", "implementation", "keys", "message_bytes",
		"unit", "median", "p25", "p75", "n", "runs", "latest_run", "paper", "statistic", "source"})
	for _, r := range lb.Measured {
		w.Write([]string{alg, op, metric, "measured", strconv.Itoa(r.Rank), r.Board, r.Level, r.Origin, r.Method, r.ClassStatus, r.Implementation, r.Keys, strconv.Itoa(r.MessageBytes),
			r.Unit, ff(r.Median), ff(r.P25), ff(r.P75), strconv.Itoa(r.N), strconv.Itoa(r.Runs), strconv.FormatInt(r.LatestRun, 10), "", "median", ""})
	}
	for _, r := range lb.Published {
		w.Write([]string{alg, op, metric, "published", "", r.Board, "", "published", "", "", r.Library, "", "",
			r.Unit, r.ValueText, "", "", strconv.Itoa(r.N), "", "", r.Paper, r.Statistic, r.Source})
	}
	w.Flush()
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
}
