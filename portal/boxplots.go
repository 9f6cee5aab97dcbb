package portal

import (
	"container/list"
	"sync"

	"pqrepro/portal/plot"
)

// boxPlotRuns is how many runs' box plots the portal keeps drawn.
const boxPlotRuns = 256

// boxPlots keeps the run pages' box plots of the most recently viewed runs, by bundle digest.
// A bundle never changes (its name is its digest), so its plots are drawn once: every
// publication anywhere makes the response cache render a run page again, and without this the
// page would read, decompress and parse the run's bundle each time (about a third of the
// page's CPU). The zero value is ready; at most boxPlotRuns runs are kept, the least recently
// viewed dropped first. Kept figures are shared between requests and never modified.
type boxPlots struct {
	mu      sync.Mutex
	recent  list.List // of *boxPlotEntry, front: most recently viewed
	entries map[string]*list.Element
}

type boxPlotEntry struct {
	bundle string
	figs   []*plot.Figure
}

// get returns the figures kept for bundle.
func (b *boxPlots) get(bundle string) ([]*plot.Figure, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	el, ok := b.entries[bundle]
	if !ok {
		return nil, false
	}
	b.recent.MoveToFront(el)
	return el.Value.(*boxPlotEntry).figs, true
}

// put keeps figs as bundle's figures.
func (b *boxPlots) put(bundle string, figs []*plot.Figure) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[string]*list.Element{}
	}
	if el, ok := b.entries[bundle]; ok {
		b.recent.MoveToFront(el)
		return
	}
	b.entries[bundle] = b.recent.PushFront(&boxPlotEntry{bundle: bundle, figs: figs})
	for b.recent.Len() > boxPlotRuns {
		el := b.recent.Back()
		b.recent.Remove(el)
		delete(b.entries, el.Value.(*boxPlotEntry).bundle)
	}
}
