package templates

// PQM4Fig is one figure of pqm4's table as shown: Text is the figure with its unit, Value the
// published number as the dataset holds it, Line its line in pqm4's benchmarks.csv. A figure
// pqm4 does not publish has Present false and is shown as absent, never as a number.
type PQM4Fig struct {
	Present bool
	// Section is speed, memory, hashing or size: the test counts rendered figures by it.
	Section, Text, Value string
	Line                 int
}

// PQM4OpCell is one operation's figures for one scheme and implementation: silicon cycles
// (mean, min, max), stack bytes and the share of cycles spent hashing.
type PQM4OpCell struct {
	Mean, Min, Max, Stack, Hash PQM4Fig
}

// PQM4Line is one scheme and implementation of the pivot.
type PQM4Line struct {
	Scheme, Implementation string
	// Executions is the speed section's run count ("" where pqm4 states none).
	Executions string
	// First is true on a scheme's first row (its name is shown once).
	First bool
	Ops   []PQM4OpCell
	// Size is text, data, bss and total code size in bytes.
	Size []PQM4Fig
}

// PQM4Table is one family (kem or sig) of the pivot.
type PQM4Table struct {
	Family, Title string
	Ops           []string
	Lines         []PQM4Line
}

// PQM4View is /datasets/pqm4: pqm4's last table, scheme x operation, per implementation.
type PQM4View struct {
	Page
	Commit, CommitShort string
	Families, Schemes   []Option
	Tables              []PQM4Table
	// Figures is how many of the dataset's figures the page shows, Total how many it holds.
	Figures, Total int
	Filtered       bool
	// Provenance is the paragraphs of the dataset's PROVENANCE.md, as text.
	Provenance []string
}

// PQM4BesideRow is one pqm4 implementation of a scheme and operation on /schemes: silicon
// cycles, and the ratio to pqm4's baseline implementation of the same scheme and operation
// (both silicon cycles, so comparable).
type PQM4BesideRow struct {
	Implementation string
	Mean, MinMax   string
	Stack          string
	// Hash is pqm4's hashing share of the operation: a share of silicon cycles, "—" when pqm4
	// gives none.
	Hash             string
	Ratio, RatioBase string
}

// PQM4Beside is pqm4's figures for one scheme and operation shown on this board's /schemes.
type PQM4Beside struct {
	Algorithm, Scheme, Operation string
	// Link is the scheme's rows on /datasets/pqm4.
	Link string
	Rows []PQM4BesideRow
}
