package energy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"pqrepro/artifacts"
	"slices"
)

// The bootstrap behind every energy interval (see docs/ENERGY.md).
const (
	// Method names the interval in every estimate.
	Method = "circular block bootstrap of each capture's mean, percentile interval"
	// DefaultReplicates is the number of bootstrap replicates when Options.Replicates is 0.
	DefaultReplicates = 2000
	// DefaultConfidence is the interval's nominal coverage when Options.Confidence is 0.
	DefaultConfidence = 0.95
	// MinBlockSeconds is the shortest block: a meter holds its readings and its samples are
	// correlated over a fraction of a second, so blocks shorter than a second understate
	// the uncertainty of a mean.
	MinBlockSeconds = 1.0
	// MinBlocks is the fewest blocks a capture must hold for an interval.
	MinBlocks = 5
	// BlockFactor multiplies the Politis-White block length. Their choice minimises the
	// error of the bootstrap variance and leaves it biased low by a term of order 1/block,
	// which shows as undercoverage when a capture's memory is long (a reading correlated over
	// half a second or more); four times that block removes most of the bias, and the
	// Student t widening pays for the fewer blocks. docs/ENERGY.md has the coverage figures.
	BlockFactor = 4
	// MaxReplicates bounds Options.Replicates.
	MaxReplicates = 100000
	// seedDomain separates this use of SHA-256 from any other.
	seedDomain = "pqrepro/energy/bootstrap/v1"
)

// Options tune PerOperation. The zero value is the default: DefaultReplicates replicates, a
// 95 % interval and a zero seed.
type Options struct {
	// Seed seeds the bootstrap. Each capture's resamples are drawn from a ChaCha8 stream
	// seeded with SHA-256 of this seed and the capture's Digest, so the same seed and captures
	// give the same interval bit for bit, and a capture shared by two estimates (one idle
	// capture behind every operation of a board) is resampled identically in both.
	Seed [32]byte
	// Replicates is the number of bootstrap replicates (0: DefaultReplicates).
	Replicates int
	// Confidence is the interval's nominal coverage in (0, 1) (0: DefaultConfidence).
	Confidence float64
}

// withDefaults fills in the zero fields.
func (opt Options) withDefaults() Options {
	if opt.Replicates == 0 {
		opt.Replicates = DefaultReplicates
	}
	if opt.Confidence == 0 {
		opt.Confidence = DefaultConfidence
	}
	return opt
}

// Interval is a point estimate and its bootstrap percentile interval.
type Interval struct {
	Point float64 `json:"point"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// Width is Hi - Lo.
func (iv Interval) Width() float64 { return iv.Hi - iv.Lo }

// Contains says whether v lies in [Lo, Hi].
func (iv Interval) Contains(v float64) bool { return v >= iv.Lo && v <= iv.Hi }

// CaptureMean is one capture's mean power with its interval, and what it was computed from.
type CaptureMean struct {
	// Source names the capture (Trace.Source); Digest is its Trace.Digest in hex.
	Source string `json:"source"`
	Digest string `json:"digest"`
	// Samples, Rate (nominal samples per second), Seconds and UpdateRate (distinct readings
	// per second) describe the capture.
	Samples    int     `json:"samples"`
	Rate       float64 `json:"rate"`
	Seconds    float64 `json:"seconds"`
	UpdateRate float64 `json:"updateRate"`
	// Mean is the mean power in W with its interval.
	Mean Interval `json:"mean"`
	// Block is the bootstrap's block length in samples (at least MinBlockSeconds long; longer
	// when the capture's autocorrelation asks for it, see BlockLength).
	Block int `json:"block"`
}

// Estimate is the energy of one operation from an idle and an on-load capture, each quantity
// with its interval.
type Estimate struct {
	Idle CaptureMean `json:"idle"`
	Load CaptureMean `json:"load"`
	// Delta is P_load - P_idle in W; Energy is Delta x TOp in J per operation.
	Delta  Interval `json:"delta"`
	Energy Interval `json:"energy"`
	// TOp is the time per operation in seconds, taken as given (it carries no interval).
	TOp float64 `json:"tOp"`
	// LoadOps is how many operations the load capture spans (its length over TOp). Below
	// MinBlocks the capture's mean depends on where in an operation it started and stopped,
	// which no interval here covers: see FewOps.
	LoadOps float64 `json:"loadOps"`
	// Method, Replicates, Confidence and Seed (hex) say how the intervals were drawn.
	Method     string  `json:"method"`
	Replicates int     `json:"replicates"`
	Confidence float64 `json:"confidence"`
	Seed       string  `json:"seed"`
	// DeltaReplicates are the bootstrap replicates of Delta in draw order (Energy's are
	// these times TOp). Replicate b of two estimates that share a capture used the same
	// resample of it, so a ratio of two estimates can be bootstrapped replicate by replicate.
	DeltaReplicates []float64 `json:"-"`
}

// FewOps says whether the load capture spans fewer than MinBlocks operations, so its mean is
// one of a few operations' phases rather than the operation's mean power.
func (e Estimate) FewOps() bool { return e.LoadOps < MinBlocks }

// EnergyReplicate is replicate b of Energy.
func (e Estimate) EnergyReplicate(b int) float64 { return e.DeltaReplicates[b] * e.TOp }

// PerOperation computes paper002's equation 1, E_op = (P_load - P_idle) x T_op, from an
// idle capture and an on-load capture of the same board and meter and the time per operation
// tOp (seconds, from a separate timing run), with percentile intervals from a circular block
// bootstrap of each capture's mean (the two captures resampled independently; blocks of at
// least MinBlockSeconds, see BlockLength). The interval is the sampling uncertainty of the two
// means given tOp; it does not cover drift between the two captures, or tOp's own spread.
//
// It is the one energy computation of the project: the paper's own traces and a lab's meter
// captures are processed by it alike. Both traces must Validate and hold MinBlocks blocks;
// tOp must be positive and finite. It is safe for concurrent use and deterministic in its
// arguments.
func PerOperation(idle, load Trace, tOp float64, opt Options) (Estimate, error) {
	if !(tOp > 0) || math.IsInf(tOp, 0) {
		return Estimate{}, fmt.Errorf("time per operation %g s: want a positive number of seconds", tOp)
	}
	opt = opt.withDefaults()
	if opt.Replicates < 100 || opt.Replicates > MaxReplicates {
		return Estimate{}, fmt.Errorf("replicates %d: want 100 to %d", opt.Replicates, MaxReplicates)
	}
	if !(opt.Confidence > 0 && opt.Confidence < 1) {
		return Estimate{}, fmt.Errorf("confidence %g: want a number in (0, 1)", opt.Confidence)
	}
	e := Estimate{TOp: tOp, Method: Method, Replicates: opt.Replicates, Confidence: opt.Confidence, Seed: hex.EncodeToString(opt.Seed[:])}
	var idleReps, loadReps []float64
	var err error
	if e.Idle, idleReps, err = captureMean(idle, opt, BlockLength); err != nil {
		return Estimate{}, fmt.Errorf("idle capture: %w", err)
	}
	// The load capture repeats the operation: a block holds at least one of them when the
	// capture is long enough for MinBlocks such blocks.
	loadBlock := func(t Trace) int {
		b := BlockLength(t)
		if op := int(math.Ceil(tOp * t.Rate)); op > b {
			b = max(b, min(op, len(t.Power)/MinBlocks))
		}
		return b
	}
	e.LoadOps = load.Duration() / tOp
	if e.Load, loadReps, err = captureMean(load, opt, loadBlock); err != nil {
		return Estimate{}, fmt.Errorf("load capture: %w", err)
	}
	e.DeltaReplicates = make([]float64, opt.Replicates)
	for b := range e.DeltaReplicates {
		e.DeltaReplicates[b] = loadReps[b] - idleReps[b]
	}
	e.Delta = percentile(e.Load.Mean.Point-e.Idle.Mean.Point, e.DeltaReplicates, opt.Confidence)
	e.Energy = Interval{Point: e.Delta.Point * tOp, Lo: e.Delta.Lo * tOp, Hi: e.Delta.Hi * tOp}
	return e, nil
}

// RatioInterval is the percentile interval of num/den from two estimates' paired replicates
// (their Energy, or their Delta when delta is true): replicate b of each, so a capture the two
// share (one board's idle capture) is resampled once. Both must have been computed with the
// same Options.
func RatioInterval(num, den Estimate, delta bool) (Interval, error) {
	if len(num.DeltaReplicates) != len(den.DeltaReplicates) || num.Seed != den.Seed || num.Confidence != den.Confidence {
		return Interval{}, fmt.Errorf("the two estimates were computed with different options")
	}
	f := func(e Estimate) float64 {
		if delta {
			return 1
		}
		return e.TOp
	}
	pn, pd := num.Delta.Point*f(num), den.Delta.Point*f(den)
	if !(pd > 0) {
		return Interval{}, fmt.Errorf("the denominator is %g: a ratio needs a positive one", pd)
	}
	r := make([]float64, len(num.DeltaReplicates))
	for b := range r {
		r[b] = num.DeltaReplicates[b] * f(num) / (den.DeltaReplicates[b] * f(den))
	}
	return percentile(pn/pd, r, num.Confidence), nil
}

// captureMean bootstraps one capture's mean with blocks of blockLength(t) samples.
func captureMean(t Trace, opt Options, blockLength func(Trace) int) (CaptureMean, []float64, error) {
	if err := t.Validate(); err != nil {
		return CaptureMean{}, nil, err
	}
	opt = opt.withDefaults()
	n := len(t.Power)
	block := blockLength(t)
	if n < MinBlocks*block {
		return CaptureMean{}, nil, fmt.Errorf("%s: %d samples (%.1f s) hold fewer than %d blocks of %d samples (%.1f s): too short for an interval",
			t.Source, n, t.Duration(), MinBlocks, block, float64(block)/t.Rate)
	}
	d := t.Digest()
	cm := CaptureMean{Source: t.Source, Digest: hex.EncodeToString(d[:]), Samples: n, Rate: t.Rate, Seconds: t.Duration(),
		UpdateRate: t.UpdateRate(), Block: block}
	mean := t.Mean()
	// prefix[i] is the sum of the centred samples 0..i-1, over the capture and then its first
	// block again, so a block that wraps around the end is one subtraction.
	prefix := make([]float64, n+block+1)
	var s, c float64
	for i := range n + block {
		y := (t.Power[i%n] - mean) - c
		u := s + y
		c = (u - s) - y
		s = u
		prefix[i+1] = s
	}
	h := sha256.New()
	for _, b := range [][]byte{[]byte(seedDomain), opt.Seed[:], d[:]} {
		h.Write(b)
		h.Write([]byte{0})
	}
	var seed [32]byte
	copy(seed[:], h.Sum(nil))
	rng := rand.New(rand.NewChaCha8(seed))
	full, rest := n/block, n%block
	reps := make([]float64, opt.Replicates)
	for b := range reps {
		var sum float64
		for range full {
			st := rng.IntN(n)
			sum += prefix[st+block] - prefix[st]
		}
		if rest > 0 {
			st := rng.IntN(n)
			sum += prefix[st+rest] - prefix[st]
		}
		reps[b] = sum / float64(n)
	}
	// A mean of k blocks drawn from the capture's own n circular blocks varies by (k-1)/k of
	// the true variance of a mean of k independent blocks, and k blocks estimate that variance
	// only as a Student t with k-1 degrees of freedom does: each replicate's deviation is
	// widened by both factors, so short captures (a 30 s capture holds 30 one-second blocks)
	// are not overconfident. See docs/ENERGY.md for the coverage this gives.
	k := float64(n) / float64(block)
	z := zQuantile(opt.Confidence)
	f := math.Sqrt(k/(k-1)) * tQuantile(k-1, z) / z
	for b := range reps {
		reps[b] = mean + reps[b]*f
	}
	cm.Mean = percentile(mean, reps, opt.Confidence)
	return cm, reps, nil
}

// BlockLength is the bootstrap block length for a capture's mean, in samples: BlockFactor
// times the automatic choice of Politis and White (2004, with the correction of Patton,
// Politis and White 2009) for the circular block bootstrap, from the capture's
// autocorrelation; never shorter than MinBlockSeconds (a meter's held readings make
// neighbouring samples equal) and never so long that the capture holds fewer than MinBlocks
// blocks, unless a second is longer.
func BlockLength(t Trace) int {
	n := len(t.Power)
	minBlock := max(1, int(math.Ceil(MinBlockSeconds*t.Rate)))
	if n < 8 {
		return minBlock
	}
	b := BlockFactor * politisWhite(t.Power)
	cap := n / MinBlocks
	return max(minBlock, min(int(math.Ceil(b)), cap))
}

// politisWhite is the optimal circular block length of Politis and White (2004) with the
// correction of Patton, Politis and White (2009), as a real number of samples.
func politisWhite(x []float64) float64 {
	n := len(x)
	fn := float64(n)
	kn := max(5, int(math.Ceil(math.Sqrt(math.Log10(fn)))))
	mMax := int(math.Ceil(math.Sqrt(fn))) + kn
	mMax = min(mMax, n-1)
	mean := kahanSum(x) / fn
	d := make([]float64, n)
	for i, v := range x {
		d[i] = v - mean
	}
	// Autocovariances are computed lag by lag as far as the search below needs them: the
	// memory of most captures is short, and each lag costs a pass over the capture.
	var cov []float64
	at := func(k int) float64 {
		for len(cov) <= k {
			l := len(cov)
			var s float64
			for i := l; i < n; i++ {
				s += d[i] * d[i-l]
			}
			cov = append(cov, s/fn)
		}
		return cov[k]
	}
	c0 := at(0)
	if c0 == 0 {
		return 1 // a constant capture: any block gives the same (zero) spread
	}
	// The smallest lag after which kn autocorrelations in a row are insignificant.
	thresh := 2 * math.Sqrt(math.Log10(fn)/fn)
	mHat := mMax
	for m := 1; m+kn <= mMax; m++ {
		quiet := true
		for j := 1; j <= kn; j++ {
			if math.Abs(at(m+j)/c0) >= thresh {
				quiet = false
				break
			}
		}
		if quiet {
			mHat = m
			break
		}
	}
	M := min(2*mHat, mMax)
	at(M)
	lambda := func(t float64) float64 {
		t = math.Abs(t)
		switch {
		case t <= 0.5:
			return 1
		case t <= 1:
			return 2 * (1 - t)
		}
		return 0
	}
	g, G := cov[0], 0.0
	for k := 1; k <= M; k++ {
		w := lambda(float64(k) / float64(M))
		g += 2 * w * cov[k]
		G += 2 * w * float64(k) * cov[k]
	}
	dcb := 4.0 / 3 * g * g
	if dcb <= 0 || G == 0 {
		return 1
	}
	return math.Cbrt(2*G*G/dcb) * math.Cbrt(fn)
}

// percentile is the central interval of replicates at confidence c (type 7 quantiles)
// around point; replicates is sorted in a copy.
func percentile(point float64, replicates []float64, c float64) Interval {
	s := slices.Sorted(slices.Values(replicates))
	a := (1 - c) / 2
	return Interval{Point: point, Lo: artifacts.Quantile(s, a), Hi: artifacts.Quantile(s, 1-a)}
}

// zQuantile is the standard normal quantile of (1+c)/2: the half-width of a central interval
// of confidence c in standard deviations.
func zQuantile(c float64) float64 { return math.Sqrt2 * math.Erfinv(c) }

// tQuantile is Student's t quantile with nu degrees of freedom at the normal quantile z, by
// the Cornish-Fisher expansion (within 0.3 % of the exact quantile for nu >= 4 at z = 1.96).
func tQuantile(nu, z float64) float64 {
	z2 := z * z
	return z + z*(z2+1)/(4*nu) + z*(5*z2*z2+16*z2+3)/(96*nu*nu) + z*(3*z2*z2*z2+19*z2*z2+17*z2-15)/(384*nu*nu*nu)
}
