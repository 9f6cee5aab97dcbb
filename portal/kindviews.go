package portal

import "pqrepro/artifacts"

// kindView is what an experiment kind's run and experiment pages show beyond the cells table
// every kind has.
type kindView struct {
	// heatMap draws the key-exchange × signature heat map (of the run, or of the experiment's
	// latest run).
	heatMap bool
}

// kindViews is the portal's table of experiment kinds: every kind has an entry
// (TestKindViewsComplete), so a new kind is a decision here, not a page that silently shows
// less.
var kindViews = map[artifacts.Kind]kindView{
	artifacts.KindKEMBench:       {},
	artifacts.KindSigBench:       {},
	artifacts.KindKEMSigSequence: {},
	artifacts.KindTLSMatrix:      {heatMap: true},
	artifacts.KindMQTTTelemetry:  {},
}
