package storetest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/portal/store"
)

var (
	sumBoards = []struct {
		class string
		level artifacts.Level
	}{{"host", "host"}, {"qemu-mps2-an386", "emulated"}, {"rpi4-b", "hardware"}, {"pico-w", "hardware"}}
	sumPapers   = []string{"paper001", "paper002", "paper003"}
	sumVerdicts = []string{"holds", "fails", "inconclusive", "untestable"}
	sumKinds    = []artifacts.Kind{"kem-bench", "sig-bench", "tls-matrix"}
	sumMethods  = []artifacts.Method{artifacts.MethodInProcess, artifacts.MethodProcessPerOperation}
	sumDims     = []string{store.CountPaper, store.CountExperiment, store.CountKind, store.CountMethod, store.CountRunner}
)

// ledger is what a test published, kept in Go: the expected summaries.
type ledger struct {
	mu     sync.Mutex
	runs   map[int64]store.Run
	claims map[int64][]store.ClaimVerdict
}

func newLedger() *ledger {
	return &ledger{runs: map[int64]store.Run{}, claims: map[int64][]store.ClaimVerdict{}}
}

func (l *ledger) add(id int64, p store.Publication) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[id], l.claims[id] = p.Run, p.Claims
}

// summaries is every summary a page reads, as the store's readers return them.
type summaries struct {
	Tallies map[string][]store.ClaimTally
	Boards  []store.BoardCount
	Counts  map[string]map[string]int
}

// expected computes the summaries from the ledger.
func (l *ledger) expected() summaries {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := summaries{Tallies: map[string][]store.ClaimTally{}, Counts: map[string]map[string]int{}}
	for _, d := range sumDims {
		s.Counts[d] = map[string]int{}
	}
	tallies := map[string]map[store.ClaimTally]int{}
	boards := map[string]*store.BoardCount{}
	for id, r := range l.runs {
		for _, v := range l.claims[id] {
			k := store.ClaimTally{ClaimID: v.ClaimID, Origin: r.Origin, BoardClass: r.BoardClass, Level: string(r.Level), ClassStatus: v.ClassStatus, Verdict: v.Verdict}
			if tallies[v.Paper] == nil {
				tallies[v.Paper] = map[store.ClaimTally]int{}
			}
			tallies[v.Paper][k]++
		}
		b := boards[r.BoardClass]
		if b == nil {
			b = &store.BoardCount{BoardClass: r.BoardClass, Levels: string(r.Level)}
			boards[r.BoardClass] = b
		}
		b.Runs++
		b.Levels = min(b.Levels, string(r.Level))
		s.Counts[store.CountPaper][r.Paper]++
		s.Counts[store.CountExperiment][r.Experiment]++
		s.Counts[store.CountKind][string(r.Kind)]++
		s.Counts[store.CountMethod][string(r.Method)]++
		if r.RunnerID != 0 {
			s.Counts[store.CountRunner][strconv.FormatInt(r.RunnerID, 10)]++
		}
	}
	for paper, ts := range tallies {
		for k, n := range ts {
			k.Runs = n
			s.Tallies[paper] = append(s.Tallies[paper], k)
		}
		slices.SortFunc(s.Tallies[paper], func(a, b store.ClaimTally) int {
			return cmp.Or(strings.Compare(a.ClaimID, b.ClaimID), strings.Compare(a.Level, b.Level), strings.Compare(a.BoardClass, b.BoardClass),
				strings.Compare(a.ClassStatus, b.ClassStatus), strings.Compare(a.Verdict, b.Verdict))
		})
	}
	for _, b := range boards {
		s.Boards = append(s.Boards, *b)
	}
	slices.SortFunc(s.Boards, func(a, b store.BoardCount) int { return strings.Compare(a.BoardClass, b.BoardClass) })
	return s
}

// readSummaries reads every summary through the store's readers.
func (e *env) readSummaries() summaries {
	e.Helper()
	s := summaries{Tallies: map[string][]store.ClaimTally{}, Counts: map[string]map[string]int{}}
	for _, p := range sumPapers {
		ts, err := e.st.ClaimTallies(e.ctx, p)
		e.must(err, "claim tallies of "+p)
		if len(ts) > 0 {
			s.Tallies[p] = ts
		}
	}
	var err error
	s.Boards, err = e.st.BoardCounts(e.ctx)
	e.must(err, "board counts")
	for _, d := range sumDims {
		s.Counts[d], err = e.st.CountsBy(e.ctx, d)
		e.must(err, "counts by "+d)
		for k, n := range s.Counts[d] {
			if one, err := e.st.RunCount(e.ctx, d, k); err != nil || one != n {
				e.Fatalf("RunCount(%s, %s) = %d (%v), CountsBy says %d", d, k, one, err, n)
			}
		}
	}
	counts, err := e.st.RunCounts(e.ctx)
	e.must(err, "run counts")
	if !reflect.DeepEqual(counts, s.Counts[store.CountPaper]) {
		e.Fatalf("RunCounts %v, CountsBy(paper) %v", counts, s.Counts[store.CountPaper])
	}
	return s
}

// checkSummaries asserts the summaries equal the ledger's, as maintained, after a compaction
// and after a rebuild from the runs.
func (e *env) checkSummaries(l *ledger, when string) {
	e.Helper()
	want := l.expected()
	if len(want.Tallies) == 0 || len(want.Boards) == 0 {
		e.Fatalf("%s: nothing to compare", when)
	}
	for _, step := range []struct {
		name string
		fn   func() error
	}{
		{"maintained", func() error { return nil }},
		{"compacted", func() error { _, err := e.st.CompactSummaries(e.ctx); return err }},
		{"compacted again", func() error {
			n, err := e.st.CompactSummaries(e.ctx)
			if err == nil && n != 0 {
				err = fmt.Errorf("a second compaction removed %d rows", n)
			}
			return err
		}},
		{"rebuilt", func() error { return e.st.RebuildSummaries(e.ctx) }},
	} {
		e.must(step.fn(), when+": "+step.name)
		if got := e.readSummaries(); !reflect.DeepEqual(got, want) {
			e.Fatalf("%s, %s summaries:\n got %+v\nwant %+v", when, step.name, got, want)
		}
	}
}

// randomPub is a run on a random board of a random paper, kind and method, from one of
// runners or uploaded, with a random subset of its paper's claims given random verdicts.
func (e *env) randomPub(rng *rand.Rand, runners []int64) store.Publication {
	b := sumBoards[rng.IntN(len(sumBoards))]
	p := e.pub(b.class, b.level, 10)
	paper := sumPapers[rng.IntN(len(sumPapers))]
	p.Run.Paper, p.Run.Experiment = paper, fmt.Sprintf("%s/e%d", paper, rng.IntN(3))
	p.Run.Kind, p.Run.Method = sumKinds[rng.IntN(len(sumKinds))], sumMethods[rng.IntN(len(sumMethods))]
	if rng.IntN(4) != 0 {
		p.Run.RunnerID = runners[rng.IntN(len(runners))]
	}
	p.Claims = randomClaims(rng, paper)
	return p
}

func randomClaims(rng *rand.Rand, paper string) []store.ClaimVerdict {
	var out []store.ClaimVerdict
	for c := range 5 {
		if rng.IntN(3) == 0 {
			continue
		}
		status := artifacts.ClassVerified
		if rng.IntN(4) == 0 {
			status = artifacts.ClassDeclared
		}
		out = append(out, store.ClaimVerdict{Paper: paper, ClaimID: fmt.Sprintf("C%02d", c), Verdict: sumVerdicts[rng.IntN(len(sumVerdicts))], Reason: "r", ClassStatus: status})
	}
	return out
}

// rebuildClaims gives run id new random verdicts (none, sometimes) through SaveRebuilt.
func (e *env) rebuildClaims(rng *rand.Rand, l *ledger, id int64, paper string) error {
	claims := randomClaims(rng, paper)
	if rng.IntN(5) == 0 {
		claims = nil
	}
	err := e.st.SaveRebuilt(e.ctx, store.Rebuilt{RunID: id, Report: `{"cells":1}`, ReportVersion: 9, Claims: claims,
		Cells: []artifacts.Cell{okCell("ML-KEM-768", "keygen", "ns", 10)}})
	if err == nil {
		l.mu.Lock()
		l.claims[id] = claims
		l.mu.Unlock()
	}
	return err
}

// testSummaries: the maintained claim tallies and run counts equal what was published, after
// random publications, a refused duplicate, revocations and re-derived verdicts, and so do
// they after a compaction and after a rebuild from the runs.
func testSummaries(e *env) {
	rng := rand.New(rand.NewPCG(14, 1))
	var runners []int64
	for _, name := range []string{"sum-a", "sum-b", "sum-c"} {
		id, _ := e.runner(name)
		runners = append(runners, id)
	}
	l := newLedger()
	var ids []int64
	for range 60 {
		p := e.randomPub(rng, runners)
		id := e.publish(p)
		l.add(id, p)
		ids = append(ids, id)
	}
	e.checkSummaries(l, "after publishing")
	dup := e.randomPub(rng, runners)
	dup.Run.Bundle = l.runs[ids[0]].Bundle
	if _, err := e.st.Publish(e.ctx, dup); err == nil {
		e.Fatal("a duplicate bundle was published")
	}
	e.must(e.st.RevokeRunner(e.ctx, runners[0]), "revoke runner")
	e.checkSummaries(l, "after a revocation (a revoked signer's runs still count)")
	for _, id := range ids {
		if rng.IntN(3) == 0 {
			e.must(e.rebuildClaims(rng, l, id, l.runs[id].Paper), "save rebuilt")
		}
	}
	for range 20 {
		p := e.randomPub(rng, runners[1:])
		l.add(e.publish(p), p)
	}
	e.checkSummaries(l, "after rebuilt verdicts and more runs")
}

// testRaceSummaries: publishers, re-derivations and a compactor running at once lose no
// count and count nothing twice.
func testRaceSummaries(e *env) {
	rng := rand.New(rand.NewPCG(14, 2))
	a, _ := e.runner("race-a")
	b, _ := e.runner("race-b")
	const workers, each = 8, 12
	pubs := make([][]store.Publication, workers)
	for w := range pubs {
		for range each {
			pubs[w] = append(pubs[w], e.randomPub(rng, []int64{a, b}))
		}
	}
	l := newLedger()
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*2+1)
	stop, compactions := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { compactions <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := e.st.CompactSummaries(e.ctx); err != nil {
				errs <- fmt.Errorf("compact: %w", err)
				return
			}
			n++
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for i, p := range pubs[w] {
				id, err := e.st.Publish(e.ctx, p)
				if err != nil {
					errs <- err
					continue
				}
				l.add(id, p)
				if i%3 == 0 {
					if err := e.rebuildClaims(rng, l, id, p.Run.Paper); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if n := <-compactions; n < 2 {
		e.Errorf("the compactor ran %d times beside the publishers", n)
	}
	close(errs)
	for err := range errs {
		e.Error(err)
	}
	e.checkSummaries(l, "after concurrent publications")
}

// testHighlights: saved highlight standings read back in order, replaced whole by the next save.
func testHighlights(e *env) {
	rows, at, err := e.st.Highlights(e.ctx, "ML-KEM-768", "encaps", store.MetricLatency)
	e.must(err, "highlights before any")
	if len(rows) != 0 || !at.IsZero() {
		e.Fatalf("highlights of a fresh store: %+v at %v", rows, at)
	}
	first := []store.Standing{
		{Unit: "ns", Level: "host", Method: "in-process", ClassStatus: "verified", BoardClass: "host", Origin: "community", Median: 20, P25: 9, P75: 31, N: 15, Runs: 3, LatestRun: 7},
		{Unit: "instructions", Level: "emulated", Method: "in-process", ClassStatus: "declared", BoardClass: "qemu-mps2-an386", Origin: "portal-runner", Median: 150.5, P25: 99, P75: 201, N: 10, Runs: 2, LatestRun: 5},
	}
	when := time.UnixMilli(1764590000123)
	e.must(e.st.SaveHighlights(e.ctx, "ML-KEM-768", "encaps", store.MetricLatency, first, when), "save highlights")
	rows, at, err = e.st.Highlights(e.ctx, "ML-KEM-768", "encaps", store.MetricLatency)
	e.must(err, "highlights")
	if !reflect.DeepEqual(rows, first) || !at.Equal(when) {
		e.Fatalf("highlights %+v at %v, want %+v at %v", rows, at, first, when)
	}
	if other, _, err := e.st.Highlights(e.ctx, "ML-DSA-65", "sign", store.MetricLatency); err != nil || len(other) != 0 {
		e.Fatalf("another pair's highlights: %+v (%v)", other, err)
	}
	e.must(e.st.SaveHighlights(e.ctx, "ML-KEM-768", "encaps", store.MetricLatency, first[1:], when.Add(time.Minute)), "replace highlights")
	if rows, _, err := e.st.Highlights(e.ctx, "ML-KEM-768", "encaps", store.MetricLatency); err != nil || !reflect.DeepEqual(rows, first[1:]) {
		e.Fatalf("replaced highlights %+v (%v)", rows, err)
	}
}
