package compare

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"

	"pqrepro/artifacts"
)

// The bootstrap behind every claim check (see docs/DECISIONS.md, "Comparison").
const (
	// Method names the criterion in every check result.
	Method = "percentile bootstrap of the ratio of medians"
	// Resamples is the number of bootstrap resamples per interval.
	Resamples = 2000
	// Confidence is the interval's nominal coverage.
	Confidence = 0.95
	// MinSamples is the fewest samples a cell needs for an interval: with fewer, the
	// resampled medians take so few distinct values that the interval means little.
	MinSamples = artifacts.MinClaimSamples
	// seedDomain separates this use of SHA-256 from any other.
	seedDomain = "pqrepro/compare/bootstrap/v1"
)

// Interval is a percentile bootstrap interval of median(Num)/median(Den).
type Interval struct {
	// Num and Den name the cells ("ALG/op"); Point is the ratio of the observed medians.
	Num   string  `json:"num"`
	Den   string  `json:"den"`
	Point float64 `json:"point"`
	// Lo and Hi bound the central Confidence interval of the resampled ratios.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// Seed is the hex SHA-256 that seeded the ChaCha8 stream (see BootstrapSeed).
	Seed string `json:"seed"`
	// Verdict is this pair's verdict (holds, fails, inconclusive).
	Verdict string `json:"verdict"`
	// Exact is set when every sample of the cells involved is identical (emulated
	// instruction counts of inputs that do not change the path): Point is then the exact
	// ratio and Lo = Hi = Point describe no uncertainty, only that there is none to resample.
	Exact bool `json:"exact,omitempty"`
	// PFail is the interval's bootstrap p-value of "outside the claimed band" (see
	// allowed.pFail), which Holm's correction ranks; 0 when outside for certain (absent in
	// reports made before it existed).
	PFail float64 `json:"pFail,omitempty"`
	// Note qualifies the verdict: a "fails" that Holm's correction did not confirm.
	Note string `json:"note,omitempty"`
	// Rounds is the number of rounds the cells shared, when the interval resampled rounds
	// (MethodRounds), and Block the moving block's length in rounds; 0 when the samples were
	// resampled cell by cell (cells not measured in rounds: emulated counts, older bundles).
	Rounds int `json:"rounds,omitempty"`
	Block  int `json:"block,omitempty"`
}

// BootstrapSeed derives the 32-byte ChaCha8 seed of one interval from the manifest's id, the
// metric and the two cells, so the same samples always give the same interval, bit for bit.
func BootstrapSeed(manifestID, metric, num, den string) [32]byte {
	h := sha256.New()
	for _, s := range []string{seedDomain, manifestID, metric, num, den} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var seed [32]byte
	copy(seed[:], h.Sum(nil))
	return seed
}

// RatioInterval returns the percentile bootstrap interval of median(num)/median(den): each
// of Resamples rounds draws len(num) values from num and len(den) from den, independently
// and with replacement, from a ChaCha8 stream seeded with seed, and takes the ratio of the
// two medians; Lo and Hi are the 2.5% and 97.5% quantiles of those ratios (type 7). Both
// slices must be non-empty, den with a positive median; neither is modified.
func RatioInterval(num, den []float64, seed [32]byte) (point, lo, hi float64) {
	point, ratios := ratioReplicates(num, den, seed)
	lo, hi = percentiles(ratios)
	return point, lo, hi
}

// ratioReplicates is RatioInterval's observed ratio and its Resamples replicates, sorted.
func ratioReplicates(num, den []float64, seed [32]byte) (point float64, ratios []float64) {
	sn, sd := slices.Sorted(slices.Values(num)), slices.Sorted(slices.Values(den))
	point = sortedMedian(sn) / sortedMedian(sd)
	src := rand.NewChaCha8(seed)
	rng := rand.New(src)
	cn, cd := make([]int32, len(sn)), make([]int32, len(sd))
	ratios = make([]float64, Resamples)
	if mn, md := medianCodes(len(sn)), medianCodes(len(sd)); mn*md <= maxReplicateGrid {
		grid := drawnGrid(seed, len(sn), len(sd), func() []int32 { return drawGrid(len(sn), len(sd), cn, cd, drawer{src, rng}) })
		return point, gridRatios(sn, sd, grid, ratios)
	}
	for b := range ratios {
		mn := resampledMedian(sn, cn, rng)
		ratios[b] = mn / resampledMedian(sd, cd, rng)
	}
	slices.Sort(ratios)
	return point, ratios
}

// Replicates counted, not sorted
//
// A resampled median of n sorted values is one of them (n odd) or the mean of two (n even):
// it takes at most medianCodes(n) values, and a ratio of two such medians at most the product
// of theirs. For the few samples a cell usually has (the comparison needs MinSamples) that is
// far fewer than Resamples, so gridReplicates counts how often each pair of medians was drawn
// and writes the sorted replicates from the counts, instead of sorting Resamples ratios: the
// same random stream, the same draws, the same quotients, in the same order.

// maxReplicateGrid bounds the pairs of medians counted (the counts array's length).
const maxReplicateGrid = 4096

// medianCodes is the number of median codes (see medianCode) of a resample of n values.
func medianCodes(n int) int {
	if n%2 == 1 {
		return n
	}
	return n * n
}

// drawGrid counts, over Resamples replicates drawn as ratioReplicates' loop would draw them
// from n numerator and d denominator samples, how often each pair of median codes was drawn
// (grid[a*medianCodes(d)+b]).
func drawGrid(n, d int, cn, cd []int32, rng drawer) []int32 {
	md := medianCodes(d)
	grid := make([]int32, medianCodes(n)*md)
	for range Resamples {
		a := medianCode(n, cn, rng)
		grid[a*md+medianCode(d, cd, rng)]++
	}
	return grid
}

// gridRatios fills ratios with the Resamples replicates grid counts (see drawGrid) for the
// sorted samples sn and sd, sorted.
func gridRatios(sn, sd []float64, grid []int32, ratios []float64) []float64 {
	md := medianCodes(len(sd))
	type cell struct {
		v float64
		n int32
	}
	var drawn []cell
	for k, c := range grid {
		if c > 0 {
			drawn = append(drawn, cell{codedMedian(sn, k/md) / codedMedian(sd, k%md), c})
		}
	}
	// cmp.Compare orders as slices.Sort does (NaN first); equal values are interchangeable.
	slices.SortFunc(drawn, func(x, y cell) int { return cmp.Compare(x.v, y.v) })
	ratios = ratios[:0]
	for _, c := range drawn {
		for range c.n {
			ratios = append(ratios, c.v)
		}
	}
	return ratios
}

// Grids drawn once
//
// Which indices a resample draws depends only on the seed and the two sample counts, never on
// the values: the seed is derived from the manifest's id, the metric and the cells' names
// (BootstrapSeed). So every run of one manifest with the same sample counts draws the same
// grid of median codes for the same interval, and drawing it (20,000 indices from ChaCha8) is
// most of an interval's cost. drawnGrid keeps the grids drawn, at most maxGrids of them
// (emptied when full: a portal meets few manifests and sample counts); the grid is read only,
// so the replicates are bit for bit those drawn afresh (TestGridReplicatesAsSorted).

// maxGrids bounds the grids kept.
const maxGrids = 4096

type gridKey struct {
	seed [32]byte
	n, d int
}

var grids struct {
	sync.RWMutex
	m map[gridKey][]int32
}

// drawnGrid returns the grid kept for (seed, n, d), or draws it with draw and keeps it.
func drawnGrid(seed [32]byte, n, d int, draw func() []int32) []int32 {
	k := gridKey{seed, n, d}
	grids.RLock()
	g, ok := grids.m[k]
	grids.RUnlock()
	if ok {
		return g
	}
	g = draw()
	grids.Lock()
	if grids.m == nil || len(grids.m) >= maxGrids {
		grids.m = make(map[gridKey][]int32)
	}
	grids.m[k] = g
	grids.Unlock()
	return g
}

// medianCode draws a resample of n sorted values as resampledMedian does and returns which
// median it has: the index i of sorted (n odd, or both middle values at i), or i*n+j for the
// mean of sorted[i] and sorted[j] (n even); codedMedian turns it into the value.
func medianCode(n int, counts []int32, rng drawer) int {
	clear(counts)
	for range n {
		counts[rng.intN(n)]++
	}
	k := (n - 1) / 2
	seen, i := 0, 0
	for ; ; i++ {
		seen += int(counts[i])
		if seen > k {
			break
		}
	}
	if n%2 == 1 {
		return i
	}
	if seen > k+1 {
		return i*n + i
	}
	j := i + 1
	for counts[j] == 0 {
		j++
	}
	return i*n + j
}

// codedMedian is the median medianCode(sorted, …) stands for, computed as resampledMedian
// computes it.
func codedMedian(sorted []float64, code int) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[code]
	}
	i, j := code/n, code%n
	if i == j {
		return sorted[i]
	}
	return (sorted[i] + sorted[j]) / 2
}

// percentiles are the central Confidence interval of sorted replicates (type 7 quantiles).
func percentiles(sorted []float64) (lo, hi float64) {
	alpha := (1 - Confidence) / 2
	return artifacts.Quantile(sorted, alpha), artifacts.Quantile(sorted, 1-alpha)
}

// constant reports whether every value of every slice equals that slice's first value.
func constant(samples ...[]float64) bool {
	for _, s := range samples {
		for _, v := range s {
			if v != s[0] {
				return false
			}
		}
	}
	return true
}

// resampledMedian draws len(sorted) indices with replacement and returns the median of the
// values drawn. It counts how often each index was drawn and walks the counts in sorted
// order, which gives exactly the median of the resample without sorting or selecting it.
func resampledMedian(sorted []float64, counts []int32, rng *rand.Rand) float64 {
	n := len(sorted)
	clear(counts)
	for range n {
		counts[rng.IntN(n)]++
	}
	k := (n - 1) / 2 // the lower middle order statistic, 0-based
	seen, i := 0, 0
	for ; ; i++ {
		seen += int(counts[i])
		if seen > k {
			break
		}
	}
	if n%2 == 1 || seen > k+1 {
		return sorted[i]
	}
	j := i + 1
	for counts[j] == 0 {
		j++
	}
	return (sorted[i] + sorted[j]) / 2
}

// sortedMedian is the median of sorted values.
func sortedMedian(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// median returns the median of v (the mean of the two middle values for even n), reordering
// v in place. It selects in linear expected time with a three-way partition, so a cell of
// identical values (emulated instruction counts) costs no more than any other.
func median(v []float64) float64 {
	n := len(v)
	k := (n - 1) / 2
	m := selectK(v, k)
	if n%2 == 1 {
		return m
	}
	// After selectK every element right of k is >= v[k]; the next order statistic is
	// their minimum.
	next := math.Inf(1)
	for _, x := range v[k+1:] {
		next = min(next, x)
	}
	return (m + next) / 2
}

// selectK reorders v so that v[k] is its k-th smallest value, everything left of k is no
// larger and everything right of k no smaller, and returns v[k].
func selectK(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for lo < hi {
		// Median of three as the pivot.
		a, b, c := v[lo], v[lo+(hi-lo)/2], v[hi]
		p := max(min(a, b), min(max(a, b), c))
		// Dutch national flag: [lo,lt) < p, [lt,i) == p, (gt,hi] > p.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case v[i] < p:
				v[lt], v[i] = v[i], v[lt]
				lt++
				i++
			case v[i] > p:
				v[i], v[gt] = v[gt], v[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return v[k]
		}
	}
	return v[k]
}

// seedHex is the seed as stored in a result.
func seedHex(s [32]byte) string { return hex.EncodeToString(s[:]) }

// The bootstrap of cells measured in rounds (see docs/DECISIONS.md, "Comparison"): the host
// runner interleaves a run's cells in rounds, so the samples of one round were taken at about
// the same time. Resampling whole rounds, several consecutive rounds at a time (a moving-block
// bootstrap), keeps every cell's samples of a round together: drift common to the cells (a
// neighbour's load, a frequency step) moves numerator and denominator alike and cancels in the
// ratio, and drift slower than a block is kept in the resamples rather than averaged away.
const (
	// MethodRounds names the criterion of a check decided over rounds.
	MethodRounds = "moving-block bootstrap over rounds of the ratio of medians (blocks of consecutive rounds; a round's samples of every cell resampled together)"
	// MinRounds is the fewest rounds two cells must share for an interval.
	MinRounds = 5
)

// blockLength is the moving-block length for n rounds: the cube root of n, rounded, at least 1
// (the usual order for a block bootstrap of a smooth statistic).
func blockLength(n int) int { return max(1, int(math.Round(math.Cbrt(float64(n))))) }

// roundGroups are the samples of several cells grouped by the rounds all of them share.
type roundGroups struct {
	rounds []int         // the shared rounds, ascending
	by     [][][]float64 // by[cell][j] are the cell's samples in rounds[j]
}

// groupRounds groups each cell's values by round over the rounds every cell has samples in.
func groupRounds(values [][]float64, rounds [][]int) roundGroups {
	count := map[int]int{}
	for _, rs := range rounds {
		seen := map[int]bool{}
		for _, r := range rs {
			if !seen[r] {
				seen[r] = true
				count[r]++
			}
		}
	}
	var g roundGroups
	for r, n := range count {
		if n == len(rounds) {
			g.rounds = append(g.rounds, r)
		}
	}
	slices.Sort(g.rounds)
	at := map[int]int{}
	for j, r := range g.rounds {
		at[r] = j
	}
	g.by = make([][][]float64, len(values))
	for c := range values {
		g.by[c] = make([][]float64, len(g.rounds))
		for i, r := range rounds[c] {
			if j, ok := at[r]; ok {
				g.by[c][j] = append(g.by[c][j], values[c][i])
			}
		}
	}
	return g
}

// all is every cell's samples over the shared rounds, each cell's sorted.
func (g roundGroups) all() [][]float64 {
	out := make([][]float64, len(g.by))
	for c, rs := range g.by {
		for _, v := range rs {
			out[c] = append(out[c], v...)
		}
		slices.Sort(out[c])
	}
	return out
}

// blockBootstrap returns stat over the shared rounds' samples and its Resamples replicates,
// sorted: each replicate draws blocks of blockLength consecutive rounds (a start uniform over
// the rounds where a whole block fits, from a ChaCha8 stream seeded with seed) until it holds
// as many rounds as were shared, and evaluates stat on every cell's samples of those rounds,
// each sorted. stat must not keep the slices.
func (g roundGroups) blockBootstrap(seed [32]byte, stat func(sorted [][]float64) float64) (point float64, reps []float64) {
	point = stat(g.all())
	n := len(g.rounds)
	l := min(blockLength(n), n)
	rng := rand.New(rand.NewChaCha8(seed))
	draw := make([][]float64, len(g.by))
	idx := make([]int, 0, n+l)
	reps = make([]float64, Resamples)
	for b := range reps {
		idx = idx[:0]
		for len(idx) < n {
			s := rng.IntN(n - l + 1)
			for j := s; j < s+l; j++ {
				idx = append(idx, j)
			}
		}
		idx = idx[:n]
		for c := range draw {
			draw[c] = draw[c][:0]
			for _, j := range idx {
				draw[c] = append(draw[c], g.by[c][j]...)
			}
			slices.Sort(draw[c])
		}
		reps[b] = stat(draw)
	}
	slices.Sort(reps)
	return point, reps
}

// MethodRuns names how two runs' cells are compared (RunsRatio).
const MethodRuns = "ratio of medians of two runs, each run resampled on its own: its rounds in moving blocks where it was measured in rounds (its own drift kept), else its samples"

// RunsRatio is the interval of median(num)/median(den) for one cell measured in two runs:
// each run is resampled on its own, by its rounds in moving blocks where rounds are given
// (nil otherwise) and by its samples otherwise, from a ChaCha8 stream seeded with seed; the
// interval is the central Confidence of Resamples replicates. Two runs cannot show the
// variance between runs; this carries each run's variance within it, drift included.
func RunsRatio(num []float64, numRounds []int, den []float64, denRounds []int, seed [32]byte) (point, lo, hi float64) {
	rng := rand.New(rand.NewChaCha8(seed))
	type side struct {
		g      roundGroups
		sorted []float64
		counts []int32
	}
	mk := func(v []float64, r []int) side {
		s := side{sorted: slices.Sorted(slices.Values(v))}
		if len(r) == len(v) && len(r) > 0 {
			s.g = groupRounds([][]float64{v}, [][]int{r})
		}
		if len(s.g.rounds) < MinRounds {
			s.g = roundGroups{}
			s.counts = make([]int32, len(v))
		}
		return s
	}
	a, b := mk(num, numRounds), mk(den, denRounds)
	point = sortedMedian(a.sorted) / sortedMedian(b.sorted)
	draw := func(s side, buf []float64) ([]float64, float64) {
		if s.g.rounds == nil {
			return buf, resampledMedian(s.sorted, s.counts, rng)
		}
		n := len(s.g.rounds)
		l := min(blockLength(n), n)
		buf = buf[:0]
		for taken := 0; taken < n; {
			st := rng.IntN(n - l + 1)
			for j := st; j < st+l && taken < n; j++ {
				buf = append(buf, s.g.by[0][j]...)
				taken++
			}
		}
		slices.Sort(buf)
		return buf, sortedMedian(buf)
	}
	reps := make([]float64, Resamples)
	var ba, bb []float64
	for i := range reps {
		var ma, mb float64
		ba, ma = draw(a, ba)
		bb, mb = draw(b, bb)
		reps[i] = ma / mb
	}
	slices.Sort(reps)
	lo, hi = percentiles(reps)
	return point, lo, hi
}

// drawer draws what rand.Rand.IntN draws from the same ChaCha8 stream, calling the stream
// directly on 64-bit platforms (Lemire's multiply and reject, as math/rand/v2 does) instead
// of through the Rand's interface: the bootstrap draws 20,000 indices an interval. r wraps
// src, so either path advances the one stream; TestDrawerIntN holds them equal.
type drawer struct {
	src *rand.ChaCha8
	r   *rand.Rand
}

// is32bit is set where math/rand/v2 draws small bounds 32 bits at a time.
const is32bit = ^uint(0)>>32 == 0

// intN is r.IntN(n) for n > 0.
func (d drawer) intN(n int) int {
	if is32bit {
		return d.r.IntN(n)
	}
	u := uint64(n)
	if u&(u-1) == 0 {
		return int(d.src.Uint64() & (u - 1))
	}
	hi, lo := bits.Mul64(d.src.Uint64(), u)
	if lo < u {
		thresh := -u % u
		for lo < thresh {
			hi, lo = bits.Mul64(d.src.Uint64(), u)
		}
	}
	return int(hi)
}
