package artifacts

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// KindMQTTTelemetry is paper003's end-to-end run: ML-KEM-512 handshakes and Ascon-AEAD128
// frames through a real MQTT broker to a verifying gateway, and the AEADs' seal and open costs
// fitted as a fixed plus a per-byte part (firmware/TELEMETRY.md).
const KindMQTTTelemetry Kind = "mqtt-telemetry"

// The AEADs an mqtt-telemetry run times: SP 800-232's Ascon-AEAD128 and the pre-standard
// v1.2 modes it replaced, all from the project's one Ascon code base (package ascon).
const (
	AEADAscon128Std = "Ascon-AEAD128"   // NIST SP 800-232
	AEADAscon128a   = "Ascon-128a-v1.2" // same rate and rounds as Ascon-AEAD128, big-endian
	AEADAscon128    = "Ascon-128-v1.2"  // what paper003 names as "pre-standard": half the rate, p^6
)

// MQTTAEADs lists the AEADs a manifest may name, in their default order.
func MQTTAEADs() []string { return []string{AEADAscon128Std, AEADAscon128a, AEADAscon128} }

// Operations and algorithms of mqtt-telemetry cells.
const (
	OpSession   = "session"   // the telemetry handshake: device handshake published -> gateway session open, through the broker (not a TLS handshake)
	OpSeal      = "seal"      // AEAD encryption of one frame (payload sizes round-robin)
	OpOpen      = "open"      // AEAD decryption of one frame, plaintext checked
	OpTelemetry = "telemetry" // one genuine frame published -> verified and delivered at the gateway

	AlgHandshakePinned = "ML-KEM-512"           // pinned gateway key
	AlgHandshakeFS     = "ML-KEM-512+ML-DSA-44" // forward-secret: signed ephemeral key
	MQTTBrokerEmbedded = "embedded"
	MQTTWindow         = 64   // the gateway's replay window (telemetry.DefaultWindow)
	MQTTMaxPayload     = 4096 // the gateway's largest plaintext (telemetry.DefaultMaxPayload)
	MQTTOverhead       = 24   // counter (8) + tag (16), what every frame should add
	maxPayloadSizes    = 32
)

// MQTTSpec is the spec section spec.mqtt that mqtt-telemetry owns.
type MQTTSpec struct {
	// PayloadSizes are the plaintext sizes in bytes (0..4096, increasing, at least two for a
	// fit). Timed seal and open operations and genuine frames cycle through them in order.
	PayloadSizes []int `yaml:"payloadSizes" json:"payloadSizes"`
	// FramesPerSize is how many genuine frames of each size cross the broker and how many
	// seal and open operations of each size are timed per AEAD; spec.iterations is
	// FramesPerSize × len(PayloadSizes) (set when omitted).
	FramesPerSize int `yaml:"framesPerSize" json:"framesPerSize"`
	// Replays is how many genuine frames, older than the gateway's window, are published
	// again once the stream is through (the paper replayed 3).
	Replays int `yaml:"replays" json:"replays"`
	// Tamperings is how many copies of genuine frames with one bit flipped are published.
	Tamperings int `yaml:"tamperings" json:"tamperings"`
	// Broker is "embedded" (an in-process mochi-mqtt on a loopback port, the default) or
	// mqtt://host:port of a broker to run through.
	Broker string `yaml:"broker,omitempty" json:"broker"`
	// AEADs are the AEADs whose seal and open costs are timed and fitted (MQTTAEADs; all
	// three when omitted). Frames through the broker always use Ascon-AEAD128.
	AEADs []string `yaml:"aeads,omitempty" json:"aeads"`
	// ForwardSecret runs every handshake in the forward-secret mode (ML-DSA-44-signed
	// ephemeral ML-KEM-512 key) instead of the pinned one.
	ForwardSecret bool `yaml:"forwardSecret,omitempty" json:"forwardSecret"`
}

// MQTTBrokerAddr returns host:port of a broker URL mqtt://host:port or tcp://host:port.
func MQTTBrokerAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("broker url %q: %w", raw, err)
	}
	if u.Scheme != "mqtt" && u.Scheme != "tcp" {
		return "", fmt.Errorf("broker url %q: scheme must be mqtt or tcp (the broker is untrusted: TLS to it adds nothing end to end)", raw)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("broker url %q: only mqtt://host:port", raw)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return "", fmt.Errorf("broker url %q: want mqtt://host:port", raw)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("broker url %q: port %q", raw, port)
	}
	return u.Host, nil
}

// MQTTCell is what an mqtt-telemetry cell records beyond its statistics.
type MQTTCell struct {
	// Sizes (seal, open, telemetry cells): sample i is of payload Sizes[i % len(Sizes)]
	// bytes, the manifest's payload sizes.
	Sizes []int `json:"sizes,omitempty"`
	// Fit (seal, open) is the least-squares line through each size's median against the
	// size (FitMedians): re-derived from samples.csv.
	Fit *CostFit `json:"fit,omitempty"`
	// Broker (handshake, telemetry) names the broker the messages crossed.
	Broker string `json:"broker,omitempty"`
	// Mode (handshake) is pinned or forward-secret; HandshakeBytes the payload bytes one
	// handshake publishes in both directions.
	Mode           string `json:"mode,omitempty"`
	HandshakeBytes int    `json:"handshakeBytes,omitempty"`
	// Frames (telemetry) counts the stream and the gateway's verdicts.
	Frames *FrameCounts `json:"frames,omitempty"`
	// Overhead (telemetry) is the wire overhead per frame, per size, measured from the frames
	// sent: frame payload length minus plaintext length.
	Overhead []SizeOverhead `json:"overhead,omitempty"`
	// ThroughputFPS (telemetry) is genuine frames verified per second of wall time, from the
	// first publish to the last verified frame.
	ThroughputFPS float64 `json:"throughputFps,omitempty"`
}

// CostFit is cost = Fixed + PerByte × size, fitted by ordinary least squares.
type CostFit struct {
	// Fixed is the intercept and PerByte the slope, in the cell's unit (per byte).
	Fixed   float64 `json:"fixed"`
	PerByte float64 `json:"perByte"`
	// R2 is the coefficient of determination of the fit through the points fitted.
	R2 float64 `json:"r2"`
	// N is the number of samples behind the fit.
	N int `json:"n"`
}

// FrameCounts are the frames of a telemetry cell and what the gateway did with them.
type FrameCounts struct {
	// Sent genuine frames; Verified those the gateway delivered (plaintext checked equal).
	Sent     int `json:"sent"`
	Verified int `json:"verified"`
	// Duplicated counts genuine frames delivered more than once (must be 0).
	Duplicated int `json:"duplicated"`
	// InjectedReplays and InjectedTamperings were published by the run's adversary.
	InjectedReplays    int `json:"injectedReplays"`
	InjectedTamperings int `json:"injectedTamperings"`
	// Rejected counts the gateway's refusals by reason (telemetry.Reason names).
	Rejected map[string]int `json:"rejected"`
	// Missing is the gateway's count of counters never accepted below the highest one.
	Missing int `json:"missing"`
}

// SizeOverhead is the measured overhead of the frames of one payload size.
type SizeOverhead struct {
	Size   int `json:"size"`
	Frames int `json:"frames"`
	Min    int `json:"min"`
	Max    int `json:"max"`
}

// FitCost fits y = a + b x by least squares and returns the fit with its R² (1 when every y
// is equal and fitted exactly). It needs two distinct x values.
func FitCost(x, y []float64) (CostFit, error) {
	n := len(x)
	if n != len(y) || n < 2 {
		return CostFit{}, fmt.Errorf("fit: %d sizes for %d samples", len(x), len(y))
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return CostFit{}, fmt.Errorf("fit: every sample has the same size")
	}
	b := sxy / sxx
	a := my - b*mx
	var sse float64
	for i := range x {
		r := y[i] - (a + b*x[i])
		sse += r * r
	}
	r2 := 1.0
	if syy > 0 {
		r2 = 1 - sse/syy
	}
	return CostFit{Fixed: a, PerByte: b, R2: r2, N: n}, nil
}

// CycleSizes returns the payload size of each of n samples cycling through sizes.
func CycleSizes(sizes []int, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(sizes[i%len(sizes)])
	}
	return x
}

// GroupBySize splits samples that cycle through sizes (sample i is of size
// sizes[i % len(sizes)]) into one group per size.
func GroupBySize(sizes []int, vals []float64) [][]float64 {
	g := make([][]float64, len(sizes))
	for i, v := range vals {
		g[i%len(sizes)] = append(g[i%len(sizes)], v)
	}
	return g
}

// FitMedians fits cost = Fixed + PerByte × size by least squares through each size's median
// (the type-7 median of its samples), so that a scheduler pause in one sample does not tilt
// the line; R² is that of the fit through the medians, N the samples behind them.
func FitMedians(sizes []int, groups [][]float64) (CostFit, error) {
	x := make([]float64, 0, len(sizes))
	y := make([]float64, 0, len(sizes))
	n := 0
	for k, g := range groups {
		if len(g) == 0 {
			return CostFit{}, fmt.Errorf("fit: no sample of size %d", sizes[k])
		}
		x = append(x, float64(sizes[k]))
		y = append(y, Summarize(g).Median)
		n += len(g)
	}
	f, err := FitCost(x, y)
	f.N = n
	return f, err
}

func mqttDefaults(m *Manifest) {
	// The bench section is unused; empty lists (not nil) so that manifest.yaml, which writes
	// them as [], parses back to the same canonical form and identity.
	if m.Spec.Algorithms == nil {
		m.Spec.Algorithms = []string{}
	}
	if m.Spec.Operations == nil {
		m.Spec.Operations = []string{}
	}
	s := m.Spec.MQTT
	if s == nil {
		return
	}
	if s.Broker == "" {
		s.Broker = MQTTBrokerEmbedded
	}
	if len(s.AEADs) == 0 {
		s.AEADs = MQTTAEADs()
	}
	if m.Spec.Iterations == 0 && s.FramesPerSize > 0 && len(s.PayloadSizes) > 0 {
		m.Spec.Iterations = s.FramesPerSize * len(s.PayloadSizes)
	}
}

func (v *validator) checkMQTT(m *Manifest) {
	sp := &m.Spec
	if len(sp.Algorithms) > 0 || len(sp.Operations) > 0 || sp.Message.Size > 0 || sp.Message.Text != "" {
		v.Add("spec", "an %s names its AEADs in spec.mqtt.aeads; remove spec.algorithms, spec.operations and spec.message", m.Kind)
	}
	if sp.Budget > 0 {
		v.Add("spec.budget", "an %s times every payload size the same number of times; remove the budget", m.Kind)
	}
	s := sp.MQTT
	if s == nil {
		v.Add("spec.mqtt", "an %s needs spec.mqtt (payloadSizes, framesPerSize, replays, tamperings, broker, aeads, forwardSecret)", m.Kind)
		return
	}
	switch {
	case len(s.PayloadSizes) < 2 || len(s.PayloadSizes) > maxPayloadSizes:
		v.Add("spec.mqtt.payloadSizes", "list 2 to %d sizes (a fixed and a per-byte cost need two), got %d", maxPayloadSizes, len(s.PayloadSizes))
	default:
		for i, n := range s.PayloadSizes {
			path := fmt.Sprintf("spec.mqtt.payloadSizes[%d]", i)
			if n < 0 || n > MQTTMaxPayload {
				v.Add(path, "must be between 0 and %d bytes (the gateway's largest frame), got %d", MQTTMaxPayload, n)
			} else if i > 0 && n <= s.PayloadSizes[i-1] {
				v.Add(path, "sizes must increase, got %d after %d", n, s.PayloadSizes[i-1])
			}
		}
	}
	if s.FramesPerSize < 1 {
		v.Add("spec.mqtt.framesPerSize", "must be at least 1, got %d", s.FramesPerSize)
	} else if len(s.PayloadSizes) > 0 && sp.Iterations != s.FramesPerSize*len(s.PayloadSizes) {
		v.Add("spec.iterations", "an %s runs framesPerSize × len(payloadSizes) = %d iterations per cell; omit spec.iterations or set it to that, got %d", m.Kind, s.FramesPerSize*len(s.PayloadSizes), sp.Iterations)
	}
	if s.Replays < 0 || (s.Replays > 0 && s.Replays > sp.Iterations-MQTTWindow) {
		v.Add("spec.mqtt.replays", "must be between 0 and spec.iterations − %d (a replayed frame is one older than the gateway's %d-frame window), got %d", MQTTWindow, MQTTWindow, s.Replays)
	}
	if s.Tamperings < 0 || s.Tamperings > sp.Iterations {
		v.Add("spec.mqtt.tamperings", "must be between 0 and spec.iterations (%d), got %d", sp.Iterations, s.Tamperings)
	}
	if s.Broker != MQTTBrokerEmbedded {
		if _, err := MQTTBrokerAddr(s.Broker); err != nil {
			v.Add("spec.mqtt.broker", "%q: embedded, or mqtt://host:port (%v)", s.Broker, err)
		}
	}
	for i, a := range s.AEADs {
		path := fmt.Sprintf("spec.mqtt.aeads[%d]", i)
		switch {
		case !slices.Contains(MQTTAEADs(), a):
			v.Add(path, "unknown AEAD %q (valid: %s)", a, strings.Join(MQTTAEADs(), ", "))
		case slices.Index(s.AEADs, a) != i:
			v.Add(path, "%q is listed twice", a)
		}
	}
}

// MQTTHandshakeAlgorithm names the handshake cell's algorithm for the spec's mode.
func (s *MQTTSpec) MQTTHandshakeAlgorithm() string {
	if s.ForwardSecret {
		return AlgHandshakeFS
	}
	return AlgHandshakePinned
}

// mqttCells: the handshake, then seal and open for each AEAD, then the telemetry stream.
func mqttCells(m *Manifest) []CellRef {
	s := m.Spec.MQTT
	if s == nil {
		return nil
	}
	cells := []CellRef{{s.MQTTHandshakeAlgorithm(), OpSession}}
	for _, a := range s.AEADs {
		cells = append(cells, CellRef{a, OpSeal}, CellRef{a, OpOpen})
	}
	return append(cells, CellRef{AEADAscon128Std, OpTelemetry})
}

// mqttCheckCell checks what an ok cell records that samples.csv does not determine.
func mqttCheckCell(m *Manifest, c *Cell) error {
	s, x := m.Spec.MQTT, c.MQTT
	if x == nil {
		return fmt.Errorf("mqtt: missing")
	}
	switch c.Operation {
	case OpSeal, OpOpen, OpTelemetry:
		if !slices.Equal(x.Sizes, s.PayloadSizes) {
			return fmt.Errorf("mqtt.sizes %v, the manifest's payload sizes are %v", x.Sizes, s.PayloadSizes)
		}
	}
	if c.Operation != OpTelemetry {
		return nil
	}
	f := x.Frames
	if f == nil {
		return fmt.Errorf("mqtt.frames: missing")
	}
	for name, n := range map[string]int{"sent": f.Sent, "verified": f.Verified, "duplicated": f.Duplicated, "missing": f.Missing, "injectedReplays": f.InjectedReplays, "injectedTamperings": f.InjectedTamperings} {
		if n < 0 {
			return fmt.Errorf("mqtt.frames.%s is %d", name, n)
		}
	}
	if f.Sent != m.Spec.Iterations || f.Verified > f.Sent || f.Verified != c.Stats.N {
		return fmt.Errorf("mqtt.frames: %d sent, %d verified, %d timed; the manifest asks for %d", f.Sent, f.Verified, c.Stats.N, m.Spec.Iterations)
	}
	for r, n := range f.Rejected {
		if n < 0 {
			return fmt.Errorf("mqtt.frames.rejected.%s is %d", r, n)
		}
	}
	if len(x.Overhead) != len(s.PayloadSizes) {
		return fmt.Errorf("mqtt.overhead: %d sizes, the manifest has %d", len(x.Overhead), len(s.PayloadSizes))
	}
	for i, o := range x.Overhead {
		if o.Size != s.PayloadSizes[i] || o.Min < 0 || o.Max < o.Min || o.Frames < 0 {
			return fmt.Errorf("mqtt.overhead[%d]: %+v", i, o)
		}
	}
	if math.IsNaN(x.ThroughputFPS) || math.IsInf(x.ThroughputFPS, 0) || x.ThroughputFPS < 0 {
		return fmt.Errorf("mqtt.throughputFps is %v", x.ThroughputFPS)
	}
	return nil
}

// mqttCheckSamples re-derives a seal or open cell's fit from its samples.
func mqttCheckSamples(m *Manifest, c *Cell, vals []float64) error {
	if c.Operation != OpSeal && c.Operation != OpOpen {
		return nil
	}
	if c.MQTT == nil || c.MQTT.Fit == nil {
		return fmt.Errorf("fit: missing")
	}
	sizes := m.Spec.MQTT.PayloadSizes
	want, err := FitMedians(sizes, GroupBySize(sizes, vals))
	if err != nil {
		return err
	}
	got := c.MQTT.Fit
	for _, f := range []struct {
		name string
		g, w float64
	}{{"fixed", got.Fixed, want.Fixed}, {"perByte", got.PerByte, want.PerByte}, {"r2", got.R2, want.R2}} {
		if math.Abs(f.g-f.w) > StatsRelTolerance*math.Max(1, math.Max(math.Abs(f.g), math.Abs(f.w))) {
			return fmt.Errorf("fit.%s is %v, %s gives %v", f.name, f.g, FileSamples, f.w)
		}
	}
	if got.N != want.N {
		return fmt.Errorf("fit.n is %d, %s holds %d samples", got.N, FileSamples, want.N)
	}
	return nil
}

// kindSampleChecks re-derive, per kind, what a cell's fields claim about its samples. (The
// hook belongs in KindDef beside checkCell; it is kept here so the kind's whole definition
// sits in this file.)
var kindSampleChecks = map[Kind]func(m *Manifest, c *Cell, vals []float64) error{
	KindMQTTTelemetry: mqttCheckSamples,
}

// checkKindSamples runs the kind's sample check, if it has one.
func checkKindSamples(m *Manifest, c *Cell, vals []float64) error {
	if f := kindSampleChecks[m.Kind]; f != nil {
		return f(m, c, vals)
	}
	return nil
}
