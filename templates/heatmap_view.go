package templates

// HeatMap is a tls-matrix run's matrix: rows are key-exchange groups, columns signature
// schemes, both in the manifest's order, each cell coloured by its median client handshake
// latency on a sequential scale (Legend), with its value printed and its spread in a tooltip
// and in Table.
type HeatMap struct {
	// RunID is the run shown; Caption says what the colour encodes.
	RunID   int64
	Caption string
	// Role is the side of the handshake the cells measured (client or server), named in the
	// heading.
	Role string
	// Rounds is true when some cell records its signatures' rejection rounds: the table then
	// has their column.
	Rounds  bool
	Columns []string
	Rows    []HeatRow
	// Legend lists the colour steps, lightest (fastest) first.
	Legend []HeatStep
	// Table has one row per cell of the run (variants such as crypto/tls included).
	Table []HeatTableRow
	// Notes qualify the map (cells of other stacks, the scale).
	Notes []string
	// Phases is the board's own split of each cell's count (nil when no cell has one).
	Phases *HeatPhases
}

// Title is the section's heading, with the role measured.
func (h *HeatMap) Title() string {
	if h.Role == "" {
		return "Handshake matrix"
	}
	return "Handshake matrix, " + h.Role + " role"
}

// HeatPhases is a table of the board client's (or server's) phase split: one column per
// phase, one row per cell, each figure its median with its share of the cell's median count.
type HeatPhases struct {
	Caption string
	Columns []string
	Rows    []HeatPhaseRow
}

// HeatPhaseRow is one cell's phases, in HeatPhases.Columns' order ("–" when not recorded).
type HeatPhaseRow struct {
	Cell, Total string
	Values      []string
}

// HeatRow is one key-exchange group's row.
type HeatRow struct {
	Group string
	Cells []HeatCell
}

// HeatCell is one square of the map. Status is ok, failed, skipped or "not run"; Value is the
// median with its unit (µs or ms) for an ok cell, Reason why a cell has none. Step is the
// colour step (0 lightest) of an ok cell. Title is the tooltip: median, p25-p75, n.
type HeatCell struct {
	Name, Status, Value, Reason, Title string
	// Spread is the cell's p25 – p75, shown under its median (not only on hover).
	Spread string
	Step   int
}

// Class is the cell's CSS class: its colour step, or its status.
func (c HeatCell) Class() string {
	if c.Status != "ok" {
		return "heat heat-none"
	}
	return "heat heat-" + string(rune('0'+c.Step))
}

// HeatStep is one colour step of the legend and the range of medians it covers.
type HeatStep struct {
	Step  int
	Range string
}

// Class is the step's CSS class.
func (s HeatStep) Class() string { return "heat heat-" + string(rune('0'+s.Step)) }

// HeatTableRow is one cell's figures, every one with its unit ("–" when not recorded).
type HeatTableRow struct {
	Cell, Stack, Role, Status, Reason string
	// Rounds is the rejection rounds per signature, min / median / max ("–" when not measured).
	Rounds                                             string
	Median, P25, P75, N                                string
	ClientCPU, ServerCPU                               string
	BytesClient, BytesServer, ChainBytes, Flights, HRR string
}
