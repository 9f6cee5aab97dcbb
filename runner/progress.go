package runner

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"pqrepro/artifacts"
)

// Progress draws a one-line progress bar with an ETA on a terminal: cells done, the current
// cell and its iterations. It redraws at most ten times a second. Create it only for a TTY;
// when output is not a terminal use NopObserver so logs stay clean.
type Progress struct {
	mu        sync.Mutex
	w         io.Writer
	start     time.Time
	total     int
	done      int
	current   string
	iter, req int
	last      time.Time
	// Bound, when set, is the run's stated upper bound (cells × budget), shown beside the ETA.
	Bound time.Duration
}

var _ Observer = (*Progress)(nil)

// NewProgress writes to w (normally os.Stderr).
func NewProgress(w io.Writer) *Progress { return &Progress{w: w, start: time.Now()} }

func (p *Progress) CellStarted(i, total int, ref artifacts.CellRef) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.done, p.current, p.iter, p.req = total, i, ref.Algorithm+" "+ref.Operation, 0, 0
	p.draw(true)
}

func (p *Progress) Iteration(_, done, requested int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.iter, p.req = done, requested
	p.draw(false)
}

func (p *Progress) CellDone(i, total int, _ artifacts.Cell) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.iter, p.req = i+1, 0, 0
	p.draw(true)
	if p.done == total {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// draw renders the bar; the ETA extrapolates elapsed time over the fraction done, counting
// the current cell's iterations as a part of a cell.
func (p *Progress) draw(force bool) {
	now := time.Now()
	if !force && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	frac := float64(p.done)
	if p.req > 0 && p.done < p.total {
		frac += float64(p.iter) / float64(p.req)
	}
	if p.total > 0 {
		frac /= float64(p.total)
	}
	const width = 24
	filled := int(frac * width)
	eta := "ETA --"
	if elapsed := now.Sub(p.start); frac > 0.01 {
		eta = "ETA " + (time.Duration(float64(elapsed)/frac) - elapsed).Round(time.Second).String()
	}
	if p.Bound > 0 {
		eta += fmt.Sprintf(" (budget %v)", p.Bound.Round(time.Second))
	}
	// The iteration count is shown once the cell has said how many it will run: before its
	// first iteration "(0/0)" would read as a cell of no iterations.
	iters := ""
	if p.req > 0 {
		iters = fmt.Sprintf(" (%d/%d)", p.iter, p.req)
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d cells  %s  %s%s", strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		p.done, p.total, eta, p.current, iters)
}
