package portal

import (
	"container/list"
	"sync"

	"pqrepro/portal/plot"
)

// boxPlotRuns is how many runs' box plots (and stored comparisons) the portal keeps.
const boxPlotRuns = 256

// boxPlots keeps the run pages' box plots of the most recently viewed runs, by bundle digest.
// A bundle never changes (its name is its digest), so its plots are drawn once: every
// publication anywhere makes the response cache render a run page again, and without this the
// page would read, decompress and parse the run's bundle each time (about a third of the
// page's CPU). Kept figures are shared between requests and never modified.
type boxPlots = recentlyViewed[[]*plot.Figure]

// recentlyViewed keeps values for the boxPlotRuns most recently viewed keys, the least
// recently viewed dropped first. The zero value is ready; safe for concurrent use.
type recentlyViewed[V any] struct {
	mu      sync.Mutex
	recent  list.List // of *recentEntry[V], front: most recently viewed
	entries map[string]*list.Element
}

type recentEntry[V any] struct {
	key string
	val V
}

// get returns the value kept for key.
func (b *recentlyViewed[V]) get(key string) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	el, ok := b.entries[key]
	if !ok {
		var zero V
		return zero, false
	}
	b.recent.MoveToFront(el)
	return el.Value.(*recentEntry[V]).val, true
}

// put keeps val for key, replacing what was kept.
func (b *recentlyViewed[V]) put(key string, val V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[string]*list.Element{}
	}
	if el, ok := b.entries[key]; ok {
		el.Value.(*recentEntry[V]).val = val
		b.recent.MoveToFront(el)
		return
	}
	b.entries[key] = b.recent.PushFront(&recentEntry[V]{key: key, val: val})
	for b.recent.Len() > boxPlotRuns {
		el := b.recent.Back()
		b.recent.Remove(el)
		delete(b.entries, el.Value.(*recentEntry[V]).key)
	}
}
