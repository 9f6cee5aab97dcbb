package portal

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/portal/store"
	"pqrepro/templates"
)

// heatSteps is the number of colour steps of the heat map's scale (the CSS defines heat-0 to
// heat-6).
const heatSteps = 7

// runHeatMap reads a tls-matrix run's result.json and manifest.yaml from its stored bundle
// (the cells table keeps only the latency statistics, not each cell's TLS figures) and
// builds its heat map.
func (s *Server) runHeatMap(ctx context.Context, r store.Run) (*templates.HeatMap, error) {
	rc, err := s.blobs.Open(ctx, r.Bundle)
	if err != nil {
		return nil, fmt.Errorf("open bundle of run %d: %w", r.ID, err)
	}
	defer rc.Close()
	b, err := artifacts.ReadTarGz(rc, s.cfg.MaxBundleBytes)
	if err != nil {
		return nil, fmt.Errorf("read bundle of run %d: %w", r.ID, err)
	}
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		return nil, fmt.Errorf("run %d %s: %w", r.ID, artifacts.FileResult, err)
	}
	m, err := artifacts.ParseManifest(b.Files[artifacts.FileManifest], artifacts.FileManifest)
	if err != nil {
		return nil, fmt.Errorf("run %d %s: %w", r.ID, artifacts.FileManifest, err)
	}
	return heatMap(r.ID, m.Spec.TLS, res.Cells), nil
}

// heatMap lays out a tls-matrix's cells: rows are spec's groups and columns its signature
// schemes, in the manifest's order (the order the cells first appear when spec is nil). The
// grid shows the cells run with the manifest's own stack (no variant); the table lists every
// cell, variants included. Colours step through the medians on a log scale from the fastest
// to the slowest ok cell of the grid.
func heatMap(runID int64, spec *artifacts.TLSSpec, cells []artifacts.Cell) *templates.HeatMap {
	groups, schemes := heatAxes(spec, cells)
	sc := newHeatScale(cells)
	h := &templates.HeatMap{RunID: runID, Columns: schemes,
		Caption: "Median client handshake latency per cell (key-exchange group × signature scheme): lighter is faster. Hover a cell for p25–p75 and n; every figure is in the table below."}
	for _, g := range groups {
		row := templates.HeatRow{Group: g}
		for _, scheme := range schemes {
			row.Cells = append(row.Cells, sc.cell(g+"+"+scheme))
		}
		h.Rows = append(h.Rows, row)
	}
	if sc.hi >= sc.lo {
		h.Legend = sc.legend()
		h.Notes = append(h.Notes, "Colour scale: logarithmic from the fastest to the slowest measured cell of this run, seven steps.")
	}
	variants := 0
	absent := map[string]bool{}
	for _, c := range cells {
		if c.Operation != artifacts.OpHandshake {
			continue
		}
		h.Table = append(h.Table, heatTableRow(c))
		if c.Variant != "" {
			variants++
		}
		if c.TLS != nil {
			h.Role = artifacts.RoleOf(c.TLS.Role)
			h.Rounds = h.Rounds || c.TLS.Rounds != nil
			if r := c.TLS.RoundsAbsent; r != "" && !absent[r] {
				absent[r] = true
				h.Notes = append(h.Notes, "ML-DSA rejection rounds per signature: not measured ("+r+").")
			}
		}
	}
	if h.Role == artifacts.TLSRoleServer {
		h.Caption = "Median server time per handshake, the server's own work (its waits for the client's bytes excluded; the server signs the CertificateVerify), per cell (key-exchange group × signature scheme): lighter is faster. Hover a cell for p25–p75 and n; every figure is in the table below."
	}
	if variants > 0 {
		h.Notes = append(h.Notes, fmt.Sprintf("The grid shows pqrepro's engine; %d cell(s) of another stack (%s) are in the table only, side by side with the engine's.", variants, artifacts.StackCryptoTLS))
	}
	if impl, server := boardImplementation(cells); impl != "" {
		side, peer := "client", "server"
		if server {
			side, peer = "server", "client"
		}
		h.Caption = "Median " + sc.unit + " per handshake of the board's own TLS " + side + " (" + impl + "), its computation only (waiting for the " + peer + "'s bytes excluded), per cell (key-exchange group × signature scheme): lighter is fewer. Hover a cell for p25–p75 and n; every figure is in the table below. Counts in " + sc.unit + " are never compared with times."
		h.Phases = boardPhases(cells, server)
	}
	return h
}

// boardImplementation names the board's own TLS client or server (server true) when the
// grid's ok cells are a board's counts (one named and a unit other than time), "" otherwise.
func boardImplementation(cells []artifacts.Cell) (string, bool) {
	for _, c := range cells {
		if c.Operation == artifacts.OpHandshake && c.Variant == "" && c.Status == artifacts.StatusOK && c.BoardCounts() {
			return c.TLS.Measured(), c.TLS.BoardServer != ""
		}
	}
	return "", false
}

// boardPhases is the table of the board's split of its count (artifacts.BoardPhaseNames for
// its client, BoardServerPhaseNames for its server), one row per ok cell that has it; nil when
// none has.
func boardPhases(cells []artifacts.Cell, server bool) *templates.HeatPhases {
	p := &templates.HeatPhases{Columns: artifacts.BoardPhaseNames(),
		Caption: "The board's own split of its count per handshake, medians over the timed handshakes, each with its share of the cell's median: key-exchange is ML-KEM key generation and decapsulation; chain-verify the trust anchor and the leaf parsed and the leaf's ML-DSA signature checked; verify the CertificateVerify's ML-DSA verification; key-schedule-records HKDF, HMAC and AES-GCM; rest the parsing, transcript hashing and copying. The server's encapsulation and signing run on the runner, outside the board's count."}
	if server {
		p = &templates.HeatPhases{Columns: artifacts.BoardServerPhaseNames(),
			Caption: "The board's own split of its count per handshake, medians over the timed handshakes, each with its share of the cell's median: key-exchange is ML-KEM encapsulation or ECDH; sign the CertificateVerify's signature; key-schedule-records HKDF, HMAC and AES-GCM; rest the parsing, transcript hashing and copying. The client's key generation, decapsulation and verification run on the runner, outside the board's count."}
	}
	for _, c := range cells {
		if c.Operation != artifacts.OpHandshake || c.Variant != "" || c.Status != artifacts.StatusOK || c.TLS == nil || c.Stats == nil {
			continue
		}
		row := templates.HeatPhaseRow{Cell: c.Algorithm, Total: human(c.Stats.Median, c.Unit)}
		vals := c.BoardPhaseMedians()
		for _, name := range p.Columns {
			v := "–"
			if m, ok := vals[name]; ok {
				v = fmt.Sprintf("%s (%.1f%%)", human(m, c.Unit), 100*m/c.Stats.Median)
			}
			row.Values = append(row.Values, v)
		}
		if len(vals) > 0 {
			p.Rows = append(p.Rows, row)
		}
	}
	if len(p.Rows) == 0 {
		return nil
	}
	return p
}

// heatAxes are the grid's rows and columns: spec's groups and signature schemes, or without
// a spec those of the cells in the order they first appear.
func heatAxes(spec *artifacts.TLSSpec, cells []artifacts.Cell) (groups, schemes []string) {
	if spec != nil {
		return spec.Groups, spec.Signatures
	}
	for _, c := range cells {
		g, sc, ok := artifacts.SplitPair(c.Algorithm)
		if !ok {
			continue
		}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
		if !slices.Contains(schemes, sc) {
			schemes = append(schemes, sc)
		}
	}
	return groups, schemes
}

// heatScale is the grid's cells (the manifest's own stack's handshakes, by name), the range
// of their ok medians, lo to hi, in unit, and the colour steps' bounds: the medians' quantiles
// at 0, 1/7, …, 1, so each colour holds about as many cells and one slow or noisy cell cannot
// push every other into the lightest step.
type heatScale struct {
	own    map[string]artifacts.Cell
	lo, hi float64
	unit   string
	bounds []float64
}

func newHeatScale(cells []artifacts.Cell) heatScale {
	sc := heatScale{own: map[string]artifacts.Cell{}, lo: math.Inf(1), hi: math.Inf(-1)}
	var medians []float64
	for _, c := range cells {
		if c.Operation != artifacts.OpHandshake || c.Variant != "" {
			continue
		}
		sc.own[c.Algorithm] = c
		if c.Status == artifacts.StatusOK && c.Stats != nil && c.Stats.Median > 0 {
			sc.lo, sc.hi = min(sc.lo, c.Stats.Median), max(sc.hi, c.Stats.Median)
			sc.unit = string(c.Unit)
			medians = append(medians, c.Stats.Median)
		}
	}
	slices.Sort(medians)
	if len(medians) > 0 {
		for i := range heatSteps + 1 {
			sc.bounds = append(sc.bounds, artifacts.Quantile(medians, float64(i)/heatSteps))
		}
	}
	return sc
}

// step is v's colour step: the last step whose lower bound v reaches.
func (sc heatScale) step(v float64) int {
	if !(sc.hi > sc.lo) {
		return 0
	}
	s := 0
	for i := 1; i < heatSteps; i++ {
		if v >= sc.bounds[i] && sc.bounds[i] > sc.bounds[i-1] {
			s = i
		}
	}
	return s
}

// cell is the grid's cell name: its median and colour step, or its status and why.
func (sc heatScale) cell(name string) templates.HeatCell {
	hc := templates.HeatCell{Name: name, Status: "not run", Reason: "no such cell in the result"}
	if c, ok := sc.own[name]; ok {
		hc.Status, hc.Reason = string(c.Status), c.Error
		switch {
		case c.Status == artifacts.StatusOK && c.Stats != nil:
			st := c.Stats
			hc.Value, hc.Reason, hc.Step = human(st.Median, c.Unit), "", sc.step(st.Median)
			hc.Spread = human(st.P25, c.Unit) + " – " + human(st.P75, c.Unit)
			hc.Title = fmt.Sprintf("%s: median %s, p25 %s – p75 %s, n = %d", name, human(st.Median, c.Unit), human(st.P25, c.Unit), human(st.P75, c.Unit), st.N)
		case c.Status == artifacts.StatusOK:
			hc.Status, hc.Reason = "no samples", "the cell has no statistics"
		}
	}
	if hc.Title == "" {
		hc.Title = name + ": " + hc.Status
		if hc.Reason != "" {
			hc.Title += ": " + hc.Reason
		}
	}
	return hc
}

// legend is the colour steps in use with the range of medians each covers (one step when
// every median is the same; a step whose bounds coincide holds no cell of its own).
func (sc heatScale) legend() []templates.HeatStep {
	var out []templates.HeatStep
	if len(sc.bounds) == 0 {
		return nil
	}
	for i := range heatSteps {
		if !(sc.hi > sc.lo) {
			return append(out, templates.HeatStep{Step: 0, Range: human(sc.lo, sc.unit)})
		}
		if sc.bounds[i+1] <= sc.bounds[i] && i > 0 {
			continue
		}
		out = append(out, templates.HeatStep{Step: i, Range: human(sc.bounds[i], sc.unit) + " – " + human(sc.bounds[i+1], sc.unit)})
	}
	return out
}

func heatTableRow(c artifacts.Cell) templates.HeatTableRow {
	r := templates.HeatTableRow{Cell: c.Algorithm, Stack: artifacts.StackPQRepro, Role: "–", Status: string(c.Status), Reason: c.Error,
		Median: "–", P25: "–", P75: "–", N: "–", Rounds: "–", ClientCPU: "–", ServerCPU: "–", BytesClient: "–", BytesServer: "–", ChainBytes: "–", Flights: "–", HRR: "–"}
	if c.TLS != nil && c.TLS.Stack != "" {
		r.Stack = c.TLS.Stack
	} else if c.Variant != "" {
		r.Stack = strings.TrimPrefix(c.Variant, "stack: ")
	}
	if st := c.Stats; st != nil {
		r.Median, r.P25, r.P75, r.N = human(st.Median, c.Unit), human(st.P25, c.Unit), human(st.P75, c.Unit), strconv.Itoa(st.N)
	}
	if c.Status == artifacts.StatusOK && c.Stats == nil {
		r.Status, r.Reason = "no samples", "the cell has no statistics"
	}
	t := c.TLS
	if t == nil {
		return r
	}
	r.Role = artifacts.RoleOf(t.Role)
	if rd := t.Rounds; rd != nil {
		r.Rounds = fmt.Sprintf("%g / %g / %g", rd.Min, rd.Median, rd.Max)
	}
	if t.ClientCPU != nil {
		r.ClientCPU = human(t.ClientCPU.Median, artifacts.UnitNanoseconds)
	}
	if t.ServerCPU != nil {
		r.ServerCPU = human(t.ServerCPU.Median, artifacts.UnitNanoseconds)
	}
	r.BytesClient, r.BytesServer, r.ChainBytes = bytesOf(t.BytesClient), bytesOf(t.BytesServer), bytesOf(t.ChainBytes)
	if t.Flights > 0 {
		r.Flights = strconv.Itoa(t.Flights)
	}
	r.HRR = "no"
	if t.HelloRetry {
		r.HRR = "yes"
	}
	return r
}

// bytesOf prints a byte count with its unit, "–" when none was recorded.
func bytesOf(n int) string {
	if n <= 0 {
		return "–"
	}
	return strconv.Itoa(n) + " B"
}
