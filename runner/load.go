package runner

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"pqrepro/artifacts"
)

// ExternalThreshold is the mean CPU demand of other processes, as a share of the machine's
// CPUs, above which a host run is loaded and its claims are not verdicted: a tenth of the
// machine (0.2 CPUs on two) is more than the runner's own sampler and the kernel's housekeeping
// and less than one competing build or test job (see docs/DECISIONS.md, "The host board").
const ExternalThreshold = 0.1

// loadInterval is how often the sampler reads the machine.
const loadInterval = time.Second

// externalMethod describes ExternalLoad's figures in environment.json.
const externalMethod = "every second while the board measured: /proc/stat busy time (user, nice, system) plus steal, minus the CPU time of this run's process tree " +
	"(the runner and every descendant, alive or reaped: utime, stime, cutime, cstime of /proc/<pid>/stat), over the machine's total time, × CPUs; " +
	"interrupt time is left out of both (the kernel attributes it to no process); /proc/pressure/cpu \"some\" total per interval where present"

// loadSampler samples other processes' CPU demand while a board measures. Start it with
// startLoadSampler and end it with finish, once.
type loadSampler struct {
	roots  Roots
	self   int
	every  time.Duration
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	absent string
	prev   loadReading
	start  time.Time
	cpus   []float64 // per interval, other processes' demand in CPUs
	own    []float64 // per interval, this run's process tree in CPUs
	psi    []float64 // per interval, pressure "some" share; nil without PSI
	n      int       // intervals seen (cpus keeps at most MaxLoadIntervals)
	sum    float64
	max    float64
	all    []float64 // every interval's demand, for the 90th percentile (bounded like cpus)
	psiSum float64
	psiN   int
}

// loadReading is one read of the machine: clock ticks since boot of the whole machine
// (total, busy) and of the run's process tree (own), and the cumulative CPU pressure in µs.
type loadReading struct {
	at               time.Time
	total, busy, own uint64
	ncpu             int
	pressure         uint64
	hasPressure, ok  bool
	statError        error
}

// startLoadSampler starts sampling every interval, self being the process whose tree is the
// run's own (os.Getpid() in production).
func startLoadSampler(r Roots, self int, every time.Duration) *loadSampler {
	s := &loadSampler{roots: r, self: self, every: every, stop: make(chan struct{}), done: make(chan struct{}), start: time.Now()}
	s.prev = s.read()
	if !s.prev.ok {
		s.absent = fmt.Sprintf("cannot read %s: %v", r.proc("stat"), s.prev.statError)
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				s.sample(true)
				return
			case <-t.C:
				s.sample(false)
			}
		}
	}()
	return s
}

// finish stops the sampler and returns what it measured, judged against the threshold for
// the machine's CPUs (as /proc/stat counts them).
func (s *loadSampler) finish() *artifacts.ExternalLoad {
	if s.absent == "" {
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	x := &artifacts.ExternalLoad{Method: externalMethod, Seconds: time.Since(s.start).Seconds(), Intervals: s.n, Absent: s.absent}
	if cpus := s.prev.ncpu; cpus > 0 {
		x.Threshold = ExternalThreshold * float64(cpus)
	}
	if s.absent != "" || s.n == 0 {
		if x.Absent == "" {
			x.Absent = "the run ended before a first interval could be measured"
		}
		return x
	}
	x.CPUs, x.PressureSome = s.cpus, s.psi
	x.Mean, x.Max = s.sum/float64(s.n), s.max
	sorted := slices.Sorted(slices.Values(s.all))
	x.P90 = artifacts.Quantile(sorted, 0.9)
	if s.psiN > 0 {
		m := s.psiSum / float64(s.psiN)
		x.MeanPressure = &m
	}
	x.Exceeded = x.Threshold > 0 && x.Mean > x.Threshold
	return x
}

// sample reads the machine and records the interval since the last read. A final read
// shorter than a tenth of an interval is dropped (too short to say anything), unless it is the
// run's only one.
func (s *loadSampler) sample(final bool) {
	r := s.read()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !r.ok || r.total <= s.prev.total {
		return
	}
	if final && s.n > 0 && r.at.Sub(s.prev.at) < s.every/10 {
		return
	}
	cpus := float64(r.ncpu)
	dt := float64(r.total - s.prev.total)
	own := float64(r.own) - float64(s.prev.own)
	busy := float64(r.busy - s.prev.busy)
	ext := max(0, (busy-max(own, 0))/dt*cpus)
	s.n++
	s.sum += ext
	s.max = max(s.max, ext)
	if len(s.cpus) < artifacts.MaxLoadIntervals {
		s.cpus = append(s.cpus, round3(ext))
		s.own = append(s.own, max(0, own/dt*cpus))
		s.all = append(s.all, ext)
	}
	if r.hasPressure && s.prev.hasPressure {
		wall := r.at.Sub(s.prev.at).Microseconds()
		if wall > 0 {
			p := min(1, float64(r.pressure-s.prev.pressure)/float64(wall))
			s.psiSum += p
			s.psiN++
			if len(s.psi) < artifacts.MaxLoadIntervals {
				s.psi = append(s.psi, round3(p))
			}
		}
	}
	s.prev = r
}

func round3(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 3, 64), 64)
	return f
}

// read takes one reading of the machine.
func (s *loadSampler) read() loadReading {
	r := loadReading{at: time.Now()}
	b, err := os.ReadFile(s.roots.proc("stat"))
	if err != nil {
		r.statError = err
		return r
	}
	total, busy, n, err := parseProcStat(b)
	if err != nil {
		r.statError = err
		return r
	}
	r.total, r.busy, r.ncpu, r.ok = total, busy, n, true
	r.own = s.treeTicks()
	if p, err := os.ReadFile(s.roots.proc("pressure", "cpu")); err == nil {
		if v, ok := parsePressureSome(p); ok {
			r.pressure, r.hasPressure = v, true
		}
	}
	return r
}

// parseProcStat reads /proc/stat's aggregate "cpu" line: total is the sum of user, nice,
// system, idle, iowait, irq, softirq and steal ticks (guest time is already inside user), busy
// is user + nice + system + steal, and n the number of per-CPU lines.
func parseProcStat(b []byte) (total, busy uint64, n int, err error) {
	lines := bytes.Split(b, []byte("\n"))
	var agg []string
	for _, l := range lines {
		f := strings.Fields(string(l))
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "cpu":
			agg = f[1:]
		case strings.HasPrefix(f[0], "cpu"):
			n++
		}
	}
	if len(agg) < 8 {
		return 0, 0, 0, errors.New("no aggregate cpu line with 8 fields")
	}
	var v [8]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(agg[i], 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("cpu field %d: %w", i+1, err)
		}
		total += v[i]
	}
	if n == 0 {
		return 0, 0, 0, errors.New("no per-CPU lines")
	}
	return total, v[0] + v[1] + v[2] + v[7], n, nil
}

// parsePressureSome is the "some" line's cumulative total (µs) of /proc/pressure/cpu.
func parsePressureSome(b []byte) (uint64, bool) {
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "some ") {
			continue
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				return n, err == nil
			}
		}
	}
	return 0, false
}

// procStat is what the sampler reads of one process: its parent and CPU ticks (its own,
// every thread, plus its reaped children's).
type procStat struct {
	ppid  int
	ticks uint64
}

// treeTicks is the CPU time, in clock ticks, of the process self and all its descendants:
// each one's utime + stime + cutime + cstime (a reaped child's time is in its parent's cutime
// and cstime, an alive one's in its own line).
func (s *loadSampler) treeTicks() uint64 {
	dirs, err := os.ReadDir(s.roots.proc())
	if err != nil {
		return 0
	}
	procs := map[int]procStat{}
	children := map[int][]int{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(s.roots.proc(d.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		st, ok := parsePIDStat(b)
		if !ok {
			continue
		}
		procs[pid] = st
		children[st.ppid] = append(children[st.ppid], pid)
	}
	var sum uint64
	queue := []int{s.self}
	seen := map[int]bool{}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		st, ok := procs[p]
		if !ok {
			continue
		}
		sum += st.ticks
		queue = append(queue, children[p]...)
	}
	return sum
}

// parsePIDStat reads /proc/<pid>/stat: the fields after the command's closing parenthesis
// are state, ppid, ... utime (14), stime (15), cutime (16), cstime (17), numbered as in proc(5).
func parsePIDStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, false
	}
	// f[0] is field 3 (state): field k is f[k-3].
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, false
	}
	var ticks uint64
	for k := 14; k <= 17; k++ {
		v, err := strconv.ParseInt(f[k-3], 10, 64)
		if err != nil {
			return procStat{}, false
		}
		ticks += uint64(max(v, 0))
	}
	return procStat{ppid: ppid, ticks: ticks}, true
}
