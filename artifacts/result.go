package artifacts

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// ResultSchema identifies the result.json format.
const ResultSchema = "pqrepro/result/v1"

// Result is result.json: one cell per (algorithm, operation) with its statistics.
type Result struct {
	// Schema is ResultSchema.
	Schema string `json:"schema"`
	// Experiment is the manifest's <paper>/<name>.
	Experiment string `json:"experiment"`
	// ManifestID is the SHA-256 identity of the manifest that ran (manifest.yaml in the bundle).
	ManifestID string `json:"manifestId"`
	// Kind and Method are copied from the manifest for readers of result.json alone.
	Kind   Kind   `json:"kind"`
	Method Method `json:"method"`
	// Board is the board class the run was measured on ("host", "qemu-mps2-an386", ...).
	Board string `json:"board"`
	// Assurance is host, emulated or hardware.
	Assurance Level `json:"assurance"`
	// StartedAt and FinishedAt bound the run (UTC).
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// Cells hold the measurements, in the manifest's order.
	Cells []Cell `json:"cells"`
	// Schedule says how the cells were interleaved (the host board's rounds); nil for a run
	// whose cells ran one after another (emulated and firmware boards, whose counts drift
	// cannot change, and runs from before rounds).
	Schedule *Schedule `json:"schedule,omitempty"`
}

// Schedule is a run's interleaving of its cells: Rounds rounds, each visiting every cell still
// running once for one block of its iterations (Cell.Block), in an order Order describes.
// Every sample's round and start offset are in samples.csv.
type Schedule struct {
	Rounds int    `json:"rounds"`
	Order  string `json:"order"`
}

// Cell is one measured (algorithm, operation).
type Cell struct {
	Algorithm string `json:"algorithm"`
	Operation string `json:"operation"`
	// Status is ok, failed or skipped; a failed or skipped cell carries Error and no timing.
	Status Status `json:"status"`
	// Error says why the cell failed or was skipped; empty when ok.
	Error string `json:"error"`
	// Unit is the unit of every statistic: ns on the host, instructions on an emulated board.
	Unit Unit `json:"unit"`
	// Counter names the timer or counter the samples came from.
	Counter string `json:"counter"`
	// Stats summarise the timed samples; absent when no sample was timed.
	Stats *Stats `json:"stats"`
	// Requested is the iteration count the manifest asked for; Stats.N is what was reached.
	Requested int `json:"requested"`
	// BudgetReached is true when the cell stopped at its time budget before Requested.
	BudgetReached bool `json:"budgetReached,omitempty"`
	// Block is the iterations of one of the cell's turns in a run's rounds (Result.Schedule);
	// 0 when the run was not interleaved.
	Block int `json:"block,omitempty"`
	// Sizes of the objects the operation produced, measured from its outputs, in bytes.
	Sizes *Sizes `json:"sizes,omitempty"`
	// Memory figures per operation, where the board can measure them.
	Memory *Memory `json:"memory,omitempty"`
	// Energy per operation, or why it is absent.
	Energy *Energy `json:"energy,omitempty"`
	// Keys is the key form the timed operation received: encoded (unpacked inside every
	// sample) or parsed (a reused key object); empty for keygen and where not recorded.
	Keys string `json:"keys,omitempty"`
	// Variant is empty when the cell ran the manifest's method as written; otherwise it names
	// the change (e.g. an openssl-cli command corrected so that it works), and such a cell is
	// never compared with the paper as the same method.
	Variant string `json:"variant,omitempty"`
	// Commands are the per-command timings of a CLI-timed iteration (openssl-cli), in the
	// order each iteration ran them; the cell's Stats are per iteration.
	Commands []CommandStats `json:"commands,omitempty"`
	// Rounds are the rejection-sampling rounds of a sign cell's timed signatures, where the
	// board reports them (board firmware, ML-DSA); they explain the spread of signing costs.
	Rounds *Rounds `json:"rounds,omitempty"`
	// Hashing is the share of a board cell's instructions spent in the firmware's SHA-2 and
	// SHA-3, from an untimed pass, or why it is absent (nil where no pass was asked for).
	Hashing *Hashing `json:"hashing,omitempty"`
	// TLS is what a tls-matrix cell measured beyond its client handshake latency: each
	// side's CPU, the engine's phases, bytes, flights and chain size (nil for other kinds).
	TLS *TLSCell `json:"tls,omitempty"`
	// MQTT is what an mqtt-telemetry cell records beyond its statistics.
	MQTT *MQTTCell `json:"mqtt,omitempty"`
	// Implementation is the code the cell timed (CellImplementation derives it from the
	// environment for bundles made before cells recorded it).
	Implementation *Implementation `json:"implementation,omitempty"`
}

// Rounds summarise how many rejection-sampling rounds each timed signature of a cell took.
type Rounds struct {
	// Counts[i] is how many timed signatures took i+1 rounds; they sum to the cell's Stats.N.
	Counts []int `json:"counts"`
	// Stats summarise the per-signature round counts (the same signatures as Counts).
	Stats *Stats `json:"stats"`
}

// MaxRounds bounds the rounds one signature may report (ML-DSA's expected round counts are
// 4 to 5; the chance of 1000 is negligible).
const MaxRounds = 1000

// NewRounds summarises per-signature round counts (each 1..MaxRounds); nil when there are none.
func NewRounds(rounds []int) (*Rounds, error) {
	if len(rounds) == 0 {
		return nil, nil
	}
	r := &Rounds{}
	vals := make([]float64, len(rounds))
	for i, n := range rounds {
		if n < 1 || n > MaxRounds {
			return nil, fmt.Errorf("signature %d took %d rounds, want 1..%d", i, n, MaxRounds)
		}
		for len(r.Counts) < n {
			r.Counts = append(r.Counts, 0)
		}
		r.Counts[n-1]++
		vals[i] = float64(n)
	}
	r.Stats = Summarize(vals)
	return r, nil
}

// expand lists the round counts in ascending order (what Counts says), or an error when
// Counts is malformed.
func (r *Rounds) expand() ([]float64, error) {
	if len(r.Counts) > MaxRounds {
		return nil, fmt.Errorf("%d round counts, more than %d", len(r.Counts), MaxRounds)
	}
	var vals []float64
	for i, c := range r.Counts {
		if c < 0 || c > MaxSamplesPerCell || len(vals)+c > MaxSamplesPerCell {
			return nil, fmt.Errorf("counts[%d] is %d", i, c)
		}
		for range c {
			vals = append(vals, float64(i+1))
		}
	}
	if len(r.Counts) > 0 && r.Counts[len(r.Counts)-1] == 0 {
		return nil, fmt.Errorf("counts end in 0")
	}
	return vals, nil
}

// CommandStats is one command of a CLI-timed iteration: what ran and how long it took.
type CommandStats struct {
	// Command is the command line as run, with file names relative to the work directory.
	Command string `json:"command"`
	// Stats summarise this command's wall time over the timed iterations, in the cell's unit.
	Stats *Stats `json:"stats"`
}

// Stats summarise n samples. Quantiles interpolate linearly between order statistics
// (Hyndman-Fan type 7, the default of R and NumPy); Stddev is the sample standard deviation
// (n-1 in the denominator, 0 when n is 1).
type Stats struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	P25    float64 `json:"p25"`
	Median float64 `json:"median"`
	P75    float64 `json:"p75"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
}

// Sizes are byte lengths of an operation's outputs; zero fields were not produced.
type Sizes struct {
	PublicKey    int `json:"publicKey,omitempty"`
	PrivateKey   int `json:"privateKey,omitempty"`
	Ciphertext   int `json:"ciphertext,omitempty"`
	Signature    int `json:"signature,omitempty"`
	SharedSecret int `json:"sharedSecret,omitempty"`
	Message      int `json:"message,omitempty"`
}

// Memory holds per-operation memory figures. Nil pointers were not measured.
type Memory struct {
	// HeapBytesPerOp and AllocsPerOp are Go heap figures (host board), averaged over timed iterations.
	HeapBytesPerOp *float64 `json:"heapBytesPerOp,omitempty"`
	AllocsPerOp    *float64 `json:"allocsPerOp,omitempty"`
	// StackBytes is the firmware's stack high-water mark for the operation.
	StackBytes *int `json:"stackBytes,omitempty"`
	// PeakHeapBytes is the largest heap a board's TLS stack held during one handshake, as the
	// board reports it (tls-matrix on a board).
	PeakHeapBytes *int `json:"peakHeapBytes,omitempty"`
}

// Energy is joules per operation from a real meter, or the reason there is none.
type Energy struct {
	// Source names the meter, e.g. "rapl:intel-rapl:0 (package)".
	Source string `json:"source,omitempty"`
	// JoulesPerOp summarises per-iteration energy; nil when absent.
	JoulesPerOp *Stats `json:"joulesPerOp,omitempty"`
	// Absent gives the reason no figure was recorded.
	Absent string `json:"absent,omitempty"`
	// Simulated marks a figure computed from a simulated meter (a recorded capture replayed
	// through the real driver): never a measurement of this run, never ranked or compared, and
	// refused by submit and the portal's ingest.
	Simulated bool `json:"simulated,omitempty"`
	// Windows is a metered figure's method and inputs (nil for RAPL and older bundles): the
	// run's idle window and the cell's load window in power.csv, from which it is re-derived.
	Windows *EnergyWindows `json:"windows,omitempty"`
	// Direct is the second metered figure, by direct integration over the operations the board
	// marked in the load window, when the meter has logic inputs (nil otherwise). It is shown
	// beside JoulesPerOp, never ranked with it: the two methods are not one measurement.
	Direct *EnergyDirect `json:"direct,omitempty"`
}

// EnergyDirect is energy per operation by direct integration: the power above the idle
// window's mean, integrated over each complete span of the load window during which the
// board's marker input was high (LOOP raises it around each call), averaged over the spans,
// with a percentile interval (the spans resampled, the idle mean by its block bootstrap).
type EnergyDirect struct {
	// Method names the computation and its bootstrap.
	Method string `json:"method"`
	// Input is the meter's logic input the marker is wired to (0: a PPK2's D0).
	Input int `json:"input"`
	// JoulesPerOp is the figure; Lo and Hi its interval at Confidence from Replicates replicates.
	JoulesPerOp float64 `json:"joulesPerOp,omitempty"`
	Lo          float64 `json:"lo,omitempty"`
	Hi          float64 `json:"hi,omitempty"`
	Confidence  float64 `json:"confidence,omitempty"`
	Replicates  int     `json:"replicates,omitempty"`
	// Ops is the complete marked spans; SecondsPerOp their mean length.
	Ops          int     `json:"ops"`
	SecondsPerOp float64 `json:"secondsPerOp,omitempty"`
	// Absent is why there is no figure although the window has markers (too few spans).
	Absent string `json:"absent,omitempty"`
}

// EnergyWindows is how a metered energy figure was computed: E_op = (P_load − P_idle) × T_op
// over the run's idle window and the cell's load window of back-to-back operations, with a
// block-bootstrap percentile interval. JoulesPerOp then holds the one figure (n = 1).
type EnergyWindows struct {
	// Method names the computation and its bootstrap.
	Method string `json:"method"`
	// Lo and Hi bound the figure's interval at Confidence, from Replicates replicates.
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"`
	Replicates int     `json:"replicates"`
	// TOp is the time per operation (s): the cell's median time.
	TOp float64 `json:"tOp"`
	// IdleWatts and LoadWatts are the windows' mean power; IdleSeconds and LoadSeconds their
	// lengths; LoadOps the load window's length over TOp.
	IdleWatts   float64 `json:"idleWatts"`
	LoadWatts   float64 `json:"loadWatts"`
	IdleSeconds float64 `json:"idleSeconds"`
	LoadSeconds float64 `json:"loadSeconds"`
	LoadOps     float64 `json:"loadOps"`
}

// Validate checks the invariants readers rely on.
func (r *Result) Validate() error {
	if r.Schema != ResultSchema {
		return fmt.Errorf("result: schema %q, want %q", r.Schema, ResultSchema)
	}
	if r.Experiment == "" || r.ManifestID == "" || r.Board == "" {
		return fmt.Errorf("result: experiment, manifestId and board are required")
	}
	if !ValidBoardClass(r.Board) {
		return fmt.Errorf("result: board %q is not a board class (a lower-case slug)", r.Board)
	}
	for i, c := range r.Cells {
		if c.Algorithm == "" || c.Operation == "" {
			return fmt.Errorf("result: cells[%d]: algorithm and operation are required", i)
		}
		if !slices.Contains([]Status{StatusOK, StatusFailed, StatusSkipped}, c.Status) {
			return fmt.Errorf("result: cells[%d] (%s %s): unknown status %q", i, c.Algorithm, c.Operation, c.Status)
		}
		if c.Status == StatusOK && (c.Stats == nil || c.Stats.N == 0) {
			return fmt.Errorf("result: cells[%d] (%s %s): ok without samples", i, c.Algorithm, c.Operation)
		}
		if c.Status != StatusOK && c.Error == "" {
			return fmt.Errorf("result: cells[%d] (%s %s): %s without a reason", i, c.Algorithm, c.Operation, c.Status)
		}
		if c.Implementation != nil {
			if err := c.Implementation.Validate(); err != nil {
				return fmt.Errorf("result: cells[%d] (%s %s): %w", i, c.Algorithm, c.Operation, err)
			}
		}
	}
	return nil
}

// ParseResult decodes and validates result.json.
func ParseResult(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parse result.json: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Environment is environment.json: where and with what the run was measured.
type Environment struct {
	// RunnerVersion is pqrepro's version; GoVersion the toolchain that built it.
	RunnerVersion string `json:"runnerVersion"`
	GoVersion     string `json:"goVersion"`
	// OS and Arch are GOOS/GOARCH; Kernel is the uname release where known.
	OS     string `json:"os"`
	Arch   string `json:"arch"`
	Kernel string `json:"kernel,omitempty"`
	// Machine is the kernel's machine name (uname -m: x86_64, aarch64, armv7l), where known.
	// A 32-bit OS on a 64-bit CPU reports arm as Arch and aarch64 or armv7l here.
	Machine string `json:"machine,omitempty"`
	// CPUModel is read from the machine (/proc/cpuinfo), CPUs the logical count.
	CPUModel string `json:"cpuModel"`
	CPUs     int    `json:"cpus"`
	// CPUImplementer and CPUPart are /proc/cpuinfo's "CPU implementer" and "CPU part" on ARM
	// ("0x41", "0xd08" is an ARM Cortex-A72); empty where the kernel does not report them.
	CPUImplementer string `json:"cpuImplementer,omitempty"`
	CPUPart        string `json:"cpuPart,omitempty"`
	// BoardModel is the device tree's model ("Raspberry Pi 4 Model B Rev 1.4"), where the
	// machine has a device tree.
	BoardModel string `json:"boardModel,omitempty"`
	// Virtualized notes a hypervisor flag: numbers from shared or virtual machines are noisier.
	Virtualized bool `json:"virtualized"`
	// Hostname is recorded so an operator can tell their machines apart.
	Hostname string `json:"hostname,omitempty"`
	// Libraries maps module path to version as read from the binary's build info.
	Libraries map[string]string `json:"libraries"`
	// LibrarySums maps module path to its go.sum hash ("h1:..."), from the same build info;
	// absent in bundles made before it was recorded.
	LibrarySums map[string]string `json:"librarySums,omitempty"`
	// RunnerRevision is the source revision pqrepro was built from (the build's VCS
	// stamp, "+modified" when the tree had changes); empty when the build has none.
	RunnerRevision string `json:"runnerRevision,omitempty"`
	// TimerSource names the clock or counter behind every sample.
	TimerSource string `json:"timerSource"`
	// EnergySource names the energy meter, or says why there is none.
	EnergySource string `json:"energySource"`
	// Meter is the power meter of the run's energy windows; nil when none was attached.
	Meter *MeterInfo `json:"meter,omitempty"`
	// Board is the board's identity as the board reports it.
	Board BoardIdentity `json:"board"`
	// Timing is the context every host timing was taken in (clock, load, frequency); nil for
	// runs recorded before it existed.
	Timing *TimingContext `json:"timing,omitempty"`
	// OpenSSL describes the openssl command line an openssl-cli run used; nil otherwise.
	OpenSSL *OpenSSLInfo `json:"openssl,omitempty"`
	// TLS records a tls-matrix run's certificate chains and measurement methods; nil otherwise.
	TLS *TLSEnvironment `json:"tls,omitempty"`
}

// TimingContext is what a reader needs to judge host timings: the clock and its measured
// resolution, the scheduler, the load and the CPU frequency. Fields Linux does not expose are
// empty, never guessed.
type TimingContext struct {
	// ClockSource is the kernel clocksource behind the monotonic clock ("tsc", "kvm-clock").
	ClockSource string `json:"clockSource,omitempty"`
	// ResolutionNs is the smallest non-zero step seen between successive clock reads.
	ResolutionNs float64 `json:"resolutionNs"`
	// ReadCostNs is the median cost of one clock read.
	ReadCostNs float64 `json:"readCostNs"`
	// GOMAXPROCS is the Go scheduler's processor count during the run.
	GOMAXPROCS int `json:"gomaxprocs"`
	// LoadBefore and LoadAfter are the 1-, 5- and 15-minute load averages around the run.
	LoadBefore *[3]float64 `json:"loadBefore,omitempty"`
	LoadAfter  *[3]float64 `json:"loadAfter,omitempty"`
	// Governor is the cpufreq governor of CPU 0; FrequencyKHz its current frequency and
	// MaxFrequencyKHz its maximum.
	Governor        string `json:"governor,omitempty"`
	FrequencyKHz    int64  `json:"frequencyKHz,omitempty"`
	MaxFrequencyKHz int64  `json:"maxFrequencyKHz,omitempty"`
	// Virtualization names the hypervisor ("kvm", "vmware", "hypervisor") or is "none".
	Virtualization string `json:"virtualization,omitempty"`
	// VirtualizationSource says what the machine reported it from (a file and its value).
	VirtualizationSource string `json:"virtualizationSource,omitempty"`
	// ReadCostMethod says how ReadCostNs was measured.
	ReadCostMethod string `json:"readCostMethod,omitempty"`
	// Scope says whose timings this context concerns: the host's own for host boards; for
	// emulated and hardware boards it is the host's context only, and their cells count
	// instructions or cycles that it does not affect.
	Scope string `json:"scope,omitempty"`
	// Loaded is true when other processes' measured CPU demand (External) was above its
	// threshold; for runs without External (recorded before it existed, or a machine without
	// /proc/stat), when the 1-minute load average before or after the run was above
	// LoadThreshold × CPUs.
	Loaded bool `json:"loaded,omitempty"`
	// LoadThreshold is the per-CPU 1-minute load average above which the run is loaded.
	LoadThreshold float64 `json:"loadThreshold,omitempty"`
	// Warnings say why timings from this run are noisier than a quiet machine's ("virtual
	// machine", "load average 2.1 on 2 CPUs before the run"); empty on a quiet machine.
	Warnings []string `json:"warnings,omitempty"`
	// External is the CPU demand of other processes, sampled every second while the board
	// measured; nil for runs recorded before it existed (their Loaded came from the load
	// average alone, which counts the run's own work).
	External *ExternalLoad `json:"external,omitempty"`
}

// ExternalLoad is what other processes demanded of the CPUs while a run measured: per
// interval (about a second), the machine's busy and steal time (/proc/stat: user, nice, system,
// steal) minus the CPU time of the run's own process tree (the runner, its threads and every
// child it started, alive or reaped), in CPUs; and, where the kernel has pressure stall
// information, /proc/pressure/cpu's "some" share. Interrupt time is left out of both sides:
// the kernel does not attribute it to a process.
type ExternalLoad struct {
	// Method says how the figures were measured, in words.
	Method string `json:"method"`
	// Seconds is how long the sampler ran; Intervals the number of intervals recorded.
	Seconds   float64 `json:"seconds"`
	Intervals int     `json:"intervals"`
	// CPUs holds, per interval, the CPUs other processes kept busy (1 = one CPU fully busy;
	// steal counts as another's demand); at most MaxLoadIntervals, the rest summarised below.
	CPUs []float64 `json:"cpus,omitempty"`
	// PressureSome holds, per interval, the share of time some runnable task waited for a CPU
	// (0..1; it counts the run's own tasks too); nil where /proc/pressure/cpu is absent.
	PressureSome []float64 `json:"pressureSome,omitempty"`
	// Mean, P90 and Max summarise CPUs over every interval; MeanPressure PressureSome.
	Mean         float64  `json:"mean"`
	P90          float64  `json:"p90"`
	Max          float64  `json:"max"`
	MeanPressure *float64 `json:"meanPressure,omitempty"`
	// Threshold is the mean external demand, in CPUs, above which the run is loaded, and
	// Exceeded whether the mean was above it: a loaded host run's claims are computed and
	// shown, never verdicted.
	Threshold float64 `json:"threshold"`
	Exceeded  bool    `json:"exceeded"`
	// Absent says why no figure could be measured (no /proc/stat); empty otherwise.
	Absent string `json:"absent,omitempty"`
}

// MaxLoadIntervals bounds the per-interval series an environment.json keeps (a day of
// seconds); longer runs keep their summary.
const MaxLoadIntervals = 86400

// OpenSSLInfo is the openssl an openssl-cli run executed and how.
type OpenSSLInfo struct {
	// Version is what `openssl version` printed; Providers what `openssl list -providers` did.
	Version   string   `json:"version"`
	Providers []string `json:"providers,omitempty"`
	// Invocation is the exact argv prefix every command ran with (the binary, or a root's
	// dynamic loader with --library-path and the binary), and Env the variables set for it.
	Invocation []string `json:"invocation"`
	Env        []string `json:"env,omitempty"`
	// LoaderOverheadNs is the measured median wall time the invocation adds to one command
	// over running the same binary directly (LoaderOverheadMethod says how it was measured);
	// 0 when the binary runs directly.
	LoaderOverheadNs     float64 `json:"loaderOverheadNs,omitempty"`
	LoaderOverheadMethod string  `json:"loaderOverheadMethod,omitempty"`
	// BinaryDigest is "sha256:<hex>" of the openssl executable that ran (inside the root for
	// a root's openssl); empty when it could not be read.
	BinaryDigest string `json:"binaryDigest,omitempty"`
}

// BoardIdentity is what a board says it is (never what a document says it should be).
type BoardIdentity struct {
	// Name is the board's name in the runner's hardware map ("host" for the host).
	Name string `json:"name"`
	// Class is the board class compared across runs ("host", "qemu-mps2-an386", "esp32c6").
	Class string `json:"class"`
	// Driver is host, qemu or serial.
	Driver Driver `json:"driver"`
	// Chip and ClockHz as reported by the board; zero when it cannot tell.
	Chip    string `json:"chip,omitempty"`
	ClockHz int64  `json:"clockHz,omitempty"`
	// Firmware, FirmwareVersion and FirmwareDigest identify the image the board runs.
	Firmware        string `json:"firmware,omitempty"`
	FirmwareVersion string `json:"firmwareVersion,omitempty"`
	FirmwareDigest  string `json:"firmwareDigest,omitempty"`
	// FirmwareBuild is the build's own record (metadata.json: target, toolchain and version,
	// flags, code size per algorithm read from the ELF), when the image came with one.
	FirmwareBuild json.RawMessage `json:"firmwareBuild,omitempty"`
	// Emulator names and versions the emulator, for emulated boards.
	Emulator string `json:"emulator,omitempty"`
	// RNG says where the board's randomness came from ("seeded-drbg", "hardware-trng").
	RNG string `json:"rng,omitempty"`
	// Assurance is host, emulated or hardware.
	Assurance Level `json:"assurance"`
	// ClassStatus says how Class was established: verified (intrinsic to the driver, or an
	// operator's declaration checked against the board catalogue) or declared (an operator's
	// declaration the catalogue cannot check). Declared classes are never ranked with verified
	// ones.
	ClassStatus string `json:"classStatus,omitempty"`
	// ClassNote says why a class is declared rather than verified, or what the check
	// compared; empty for intrinsic classes.
	ClassNote string `json:"classNote,omitempty"`
}

// Board class statuses.
const (
	ClassVerified = "verified"
	ClassDeclared = "declared"
)
