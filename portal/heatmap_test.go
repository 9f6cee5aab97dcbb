package portal

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/templates"
)

// matrixCells is a hand-built tls-matrix result (a fixture, not a measurement): medians rise
// with the cell's index from 250 µs, one cell failed with a hostile error text, one skipped.
func matrixCells(spec *artifacts.TLSSpec) []artifacts.Cell {
	var cells []artifacts.Cell
	i := 0
	for _, g := range spec.Groups {
		for _, s := range spec.Signatures {
			c := artifacts.Cell{Algorithm: g + "+" + s, Operation: artifacts.OpHandshake, Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds}
			switch c.Algorithm {
			case "P-256+RSA-PSS":
				c.Status, c.Error = artifacts.StatusFailed, `peer alert <script>alert(1)</script> bad_certificate`
			case "ML-KEM-1024+Ed25519":
				c.Status, c.Error = artifacts.StatusSkipped, "the stack lacks the group"
			default:
				m := 250e3 * float64(1+i)
				c.Stats = &artifacts.Stats{N: 100, Median: m, P25: m * 0.95, P75: m * 1.1, Min: m * 0.9, Max: m * 1.5, Mean: m}
				c.TLS = &artifacts.TLSCell{Group: g, Signature: s, Stack: artifacts.StackPQRepro, Batch: 10,
					ClientCPU: &artifacts.Stats{N: 10, Median: m / 2}, ServerCPU: &artifacts.Stats{N: 10, Median: m / 3},
					BytesClient: 1400 + i, BytesServer: 5000 + i, Flights: 3, ChainBytes: 3900 + i}
			}
			cells = append(cells, c)
			i++
		}
	}
	// A crypto/tls cell beside the engine's: in the table, never in the grid.
	cells = append(cells, artifacts.Cell{Algorithm: "X25519+Ed25519", Operation: artifacts.OpHandshake, Variant: artifacts.TLSStackVariant(artifacts.StackCryptoTLS),
		Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds, Stats: &artifacts.Stats{N: 100, Median: 2e6, P25: 1.9e6, P75: 2.1e6},
		TLS: &artifacts.TLSCell{Stack: artifacts.StackCryptoTLS}})
	return cells
}

func paperSpec() *artifacts.TLSSpec {
	return &artifacts.TLSSpec{Groups: []string{"ML-KEM-512", "ML-KEM-768", "ML-KEM-1024", "X25519", "P-256", "X25519MLKEM768"},
		Signatures: []string{"ML-DSA-44", "ML-DSA-65", "ML-DSA-87", "Ed25519", "ECDSA-P256", "RSA-PSS"}}
}

func TestHeatMap(t *testing.T) {
	spec := paperSpec()
	h := heatMap(7, spec, matrixCells(spec))
	if len(h.Rows) != 6 || len(h.Columns) != 6 || h.Columns[5] != "RSA-PSS" || h.Rows[5].Group != "X25519MLKEM768" {
		t.Fatalf("grid %d×%d %v", len(h.Rows), len(h.Columns), h.Columns)
	}
	first, last := h.Rows[0].Cells[0], h.Rows[5].Cells[5]
	if first.Value != "250.00 µs" || first.Step != 0 || last.Step != heatSteps-1 || last.Value != "9.000 ms" {
		t.Errorf("first %+v last %+v: want 250.00 µs at the lightest step, 9.000 ms at the darkest", first, last)
	}
	if want := "ML-KEM-512+ML-DSA-44: median 250.00 µs, p25 237.50 µs – p75 275.00 µs, n = 100"; first.Title != want {
		t.Errorf("tooltip %q, want %q", first.Title, want)
	}
	failed := h.Rows[4].Cells[5]
	if failed.Status != string(artifacts.StatusFailed) || failed.Value != "" || !strings.Contains(failed.Reason, "bad_certificate") || failed.Class() != "heat heat-none" {
		t.Errorf("failed cell %+v", failed)
	}
	if got := h.Rows[2].Cells[3]; got.Status != string(artifacts.StatusSkipped) || got.Reason != "the stack lacks the group" {
		t.Errorf("skipped cell %+v", got)
	}
	for _, r := range h.Rows {
		for _, c := range r.Cells {
			if c.Name == "X25519+Ed25519" && c.Value != "5.500 ms" {
				t.Errorf("the grid shows the crypto/tls variant's median %q, want the engine's", c.Value)
			}
		}
	}
	if len(h.Table) != 37 || h.Table[36].Stack != artifacts.StackCryptoTLS || len(h.Notes) != 2 {
		t.Fatalf("table %d rows, notes %v", len(h.Table), h.Notes)
	}
	row := h.Table[0]
	if row.ClientCPU != "125.00 µs" || row.ServerCPU != "83.33 µs" || row.BytesClient != "1400 B" || row.ChainBytes != "3900 B" || row.Flights != "3" || row.HRR != "no" {
		t.Errorf("table row %+v", row)
	}
	if len(h.Legend) != heatSteps || h.Legend[0].Range != "250.00 µs – 1.429 ms" || h.Legend[6].Range != "7.821 ms – 9.000 ms" {
		t.Errorf("legend %+v", h.Legend)
	}
	if first.Spread != "237.50 µs – 275.00 µs" {
		t.Errorf("spread %q: the interquartile range is shown under the median", first.Spread)
	}

	var buf bytes.Buffer
	if err := templates.HeatMapSection(h).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if n := len(regexp.MustCompile(`<td class="heat heat-[0-6none]+" title="`).FindAllString(html, -1)); n != 36 {
		t.Errorf("%d heat cells with a tooltip, want 36", n)
	}
	for _, want := range []string{`title="ML-KEM-512+ML-DSA-44: median 250.00 µs, p25 237.50 µs – p75 275.00 µs, n = 100"`, `<span class="heat-value">9.000 ms</span>`,
		`class="heat-scroll"`, "&lt;script&gt;", `class="heat-legend"`, "not measured (failed, skipped or not run)"} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered map lacks %q", want)
		}
	}
	if strings.Contains(html, "<script>") || regexp.MustCompile(`\d ns<`).MatchString(html) {
		t.Error("the map renders unescaped text or raw nanoseconds")
	}
}

// TestHeatMapWithoutSpec lays out cells in the order they appear when the manifest gives no
// spec.tls, and a single measured cell still gets a legend.
func TestHeatMapWithoutSpec(t *testing.T) {
	cells := []artifacts.Cell{
		{Algorithm: "X25519+Ed25519", Operation: artifacts.OpHandshake, Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds, Stats: &artifacts.Stats{N: 5, Median: 2e6}},
		{Algorithm: "ML-KEM-768+Ed25519", Operation: artifacts.OpHandshake, Status: artifacts.StatusFailed, Error: "timeout"},
	}
	h := heatMap(1, nil, cells)
	if len(h.Rows) != 2 || h.Rows[0].Group != "X25519" || len(h.Columns) != 1 || len(h.Legend) != 1 || h.Rows[0].Cells[0].Value != "2.000 ms" {
		t.Fatalf("%+v", h)
	}
}

// TestHeatScaleOneOutlier checks one slow cell does not push the rest into the lightest
// colour: with 35 medians between 1.0 and 1.7 ms and one at 100 ms, the 35 spread over the
// steps (on a scale from the extremes they would all share step 0 or 1).
func TestHeatScaleOneOutlier(t *testing.T) {
	var cells []artifacts.Cell
	for i := range 36 {
		m := 1e6 + float64(i)*2e4
		if i == 35 {
			m = 1e8
		}
		cells = append(cells, artifacts.Cell{Algorithm: fmt.Sprintf("K%d+S", i), Operation: artifacts.OpHandshake, Status: artifacts.StatusOK,
			Unit: artifacts.UnitNanoseconds, Stats: &artifacts.Stats{N: 5, Median: m, P25: m, P75: m}})
	}
	sc := newHeatScale(cells)
	used := map[int]int{}
	for _, c := range cells[:35] {
		used[sc.step(c.Stats.Median)]++
	}
	if len(used) < heatSteps-1 || sc.step(1e8) != heatSteps-1 {
		t.Errorf("the 35 close medians use steps %v; the outlier step %d", used, sc.step(1e8))
	}
}

// TestHeatMapBoardPhases: a board's matrix (the C client's counts in instructions, its own phase
// split) gets a caption in instructions that names the client, and the phase table: every
// phase's median with its share of the cell's count; engine cells (ns) get neither.
func TestHeatMapBoardPhases(t *testing.T) {
	spec := &artifacts.TLSSpec{Groups: []string{"ML-KEM-512", "X25519"}, Signatures: []string{"ML-DSA-44"}}
	phases := map[string]float64{"key-exchange": 1e6, "chain-verify": 4e6, "verify": 4e6, "key-schedule-records": 10e6, "rest": 1e6}
	c := artifacts.Cell{Algorithm: "ML-KEM-512+ML-DSA-44", Operation: artifacts.OpHandshake, Status: artifacts.StatusOK, Unit: artifacts.UnitInstructions,
		Stats: &artifacts.Stats{N: 5, Median: 20e6, P25: 20e6, P75: 20e6},
		TLS:   &artifacts.TLSCell{Group: "ML-KEM-512", Signature: "ML-DSA-44", Stack: artifacts.StackPQRepro, Client: "pqrepro C client (board firmware pqrepro-fw 0.1.0)"}}
	for _, name := range artifacts.BoardPhaseNames() {
		c.TLS.Phases = append(c.TLS.Phases, artifacts.TLSPhase{Name: name, Side: artifacts.SideClient, Unit: artifacts.UnitInstructions, Stats: &artifacts.Stats{N: 5, Median: phases[name]}})
	}
	skipped := artifacts.Cell{Algorithm: "X25519+ML-DSA-44", Operation: artifacts.OpHandshake, Status: artifacts.StatusSkipped, Error: "the board's TLS client does not offer X25519 (group 29)"}
	h := heatMap(3, spec, []artifacts.Cell{c, skipped})
	if !strings.Contains(h.Caption, "instructions per handshake of the board's own TLS client (pqrepro C client") || h.Phases == nil {
		t.Fatalf("caption %q, phases %+v", h.Caption, h.Phases)
	}
	if len(h.Phases.Rows) != 1 || h.Phases.Rows[0].Total != "20,000,000 instructions" ||
		strings.Join(h.Phases.Rows[0].Values, "|") != "1,000,000 instructions (5.0%)|4,000,000 instructions (20.0%)|4,000,000 instructions (20.0%)|10,000,000 instructions (50.0%)|1,000,000 instructions (5.0%)" {
		t.Fatalf("phase rows %+v", h.Phases.Rows)
	}
	var buf bytes.Buffer
	if err := templates.HeatMapSection(h).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Where the board") || !strings.Contains(buf.String(), "key-schedule-records") {
		t.Fatalf("rendered section lacks the phase table:\n%s", buf.String())
	}
	if e := heatMap(7, paperSpec(), matrixCells(paperSpec())); e.Phases != nil || strings.Contains(e.Caption, "instructions") {
		t.Fatalf("an engine matrix got a board's caption or phases: %q", e.Caption)
	}
}

// TestHeatMapServerRole: a server-role matrix names its role in the heading, the caption and
// each table row; the rounds column appears where some cell records rounds, and a cell
// without them says why in a note; a board's server phases are its own split.
func TestHeatMapServerRole(t *testing.T) {
	spec := &artifacts.TLSSpec{Groups: []string{"ML-KEM-512"}, Signatures: []string{"ML-DSA-44", "Ed25519"}, Role: artifacts.TLSRoleServer}
	mk := func(s string, unit artifacts.Unit) artifacts.Cell {
		return artifacts.Cell{Algorithm: "ML-KEM-512+" + s, Operation: artifacts.OpHandshake, Status: artifacts.StatusOK, Unit: unit,
			Stats: &artifacts.Stats{N: 5, Median: 2e6, P25: 2e6, P75: 2e6},
			TLS:   &artifacts.TLSCell{Group: "ML-KEM-512", Signature: s, Stack: artifacts.StackPQRepro, Role: artifacts.TLSRoleServer}}
	}
	host := []artifacts.Cell{mk("ML-DSA-44", artifacts.UnitNanoseconds), mk("Ed25519", artifacts.UnitNanoseconds)}
	host[0].TLS.RoundsAbsent = "the signer does not report them"
	h := heatMap(1, spec, host)
	if h.Title() != "Handshake matrix, server role" || !strings.Contains(h.Caption, "Median server time per handshake") || h.Rounds ||
		h.Table[0].Role != artifacts.TLSRoleServer || !slices.Contains(h.Notes, "ML-DSA rejection rounds per signature: not measured (the signer does not report them).") {
		t.Fatalf("host server matrix: %q %q rounds %v role %q notes %q", h.Title(), h.Caption, h.Rounds, h.Table[0].Role, h.Notes)
	}
	board := []artifacts.Cell{mk("ML-DSA-44", artifacts.UnitInstructions), mk("Ed25519", artifacts.UnitInstructions)}
	for i := range board {
		board[i].TLS.BoardServer = artifacts.SerialTLSServer + " (board firmware pqrepro-fw 0.3.0)"
		for _, name := range artifacts.BoardServerPhaseNames() {
			board[i].TLS.Phases = append(board[i].TLS.Phases, artifacts.TLSPhase{Name: name, Side: artifacts.SideServer, Unit: artifacts.UnitInstructions, Stats: &artifacts.Stats{N: 5, Median: 5e5}})
		}
	}
	board[0].TLS.Rounds = &artifacts.Stats{N: 5, Min: 1, Median: 4, Max: 11}
	h = heatMap(2, spec, board)
	if !h.Rounds || h.Table[0].Rounds != "1 / 4 / 11" || h.Table[1].Rounds != "–" || h.Phases == nil || h.Phases.Columns[1] != "sign" ||
		!strings.Contains(h.Caption, "the board's own TLS server (pqrepro C server") || !strings.Contains(h.Phases.Caption, "sign the CertificateVerify's signature") {
		t.Fatalf("board server matrix: rounds %v %q %q, phases %+v, caption %q", h.Rounds, h.Table[0].Rounds, h.Table[1].Rounds, h.Phases, h.Caption)
	}
	var buf bytes.Buffer
	if err := templates.HeatMapSection(h).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Handshake matrix, server role", ">Rounds</th>", "<td class=\"num\">1 / 4 / 11</td>", "<td>server</td>"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("rendered section lacks %q", want)
		}
	}
}
