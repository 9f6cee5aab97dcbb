package artifacts

import (
	"fmt"
	"slices"
	"strings"
)

// KindDef is one experiment kind: the spec it owns, how a manifest of it is normalised and
// checked, which cells it asks for, which timing methods it admits, whether board firmware can
// run it, and how one of its measured cells is checked when a result is re-derived. Every kind
// is one entry of kindDefs; its executors live with the boards (runner's hostKinds, and the
// firmware's BENCH for kinds with Firmware set). Adding a kind adds an entry and its files, not
// switches across packages.
type KindDef struct {
	// Name is the manifest's kind.
	Name Kind
	// Summary says in a line what the kind measures.
	Summary string
	// Methods are the timing methods a manifest of this kind may use.
	Methods []Method
	// Firmware is true when board firmware can run the kind's cells (firmware/PROTOCOL.md BENCH).
	Firmware bool
	// firmwareCannot, when set, says why board firmware cannot run a manifest of a Firmware
	// kind ("" when it can): a mode the firmware does not implement.
	firmwareCannot func(m *Manifest) string
	// defaults fills the kind's own defaults after the common ones.
	defaults func(m *Manifest)
	// check adds the kind's problems with its spec.
	check func(v *validator, m *Manifest)
	// cells lists the cells a valid manifest of this kind asks for, in run order.
	cells func(m *Manifest) []CellRef
	// checkCell checks what a measured ok cell claims beyond its statistics (the sizes the
	// standard fixes), for re-derivation; nil when nothing more can be checked.
	checkCell func(m *Manifest, c *Cell) error
	// variant, when set, says whether a cell variant is one the manifest asks for (beside the
	// cell it varies); nil leaves variants to openssl-cli's corrected commands.
	variant func(m *Manifest, variant string) error
	// rederive re-derives what an ok cell records beyond its Stats from the bundle's other
	// samples and returns the file and field at fault; nil when there is nothing more.
	rederive func(m *Manifest, c *Cell, s Samples) (file, field string, err error)
}

// BenchSpec is the spec the three benchmark kinds (kem-bench, sig-bench, kem-sig-sequence)
// own: what is timed. It sits inline in Spec, so manifests write spec.algorithms,
// spec.operations and spec.message.
type BenchSpec struct {
	// Algorithms are catalogue names; for kem-sig-sequence they are "KEM+SIG" pairs.
	Algorithms []string `yaml:"algorithms" json:"algorithms"`
	// Operations to time; each algorithm runs the ones it supports, in this order.
	Operations []string `yaml:"operations" json:"operations"`
	// Message is what signatures sign: a fresh message of Size bytes per iteration, or a fixed Text.
	Message Message `yaml:"message,omitempty" json:"message"`
}

// kindDefs registers every experiment kind, in the order Kinds lists them.
var kindDefs = []KindDef{
	{
		Name: KindKEMBench, Summary: "key establishment: keygen, encapsulation, decapsulation, or Diffie-Hellman derive",
		Methods: []Method{MethodInProcess, MethodProcessPerOperation, MethodOpenSSLCLI}, Firmware: true,
		check:     func(v *validator, m *Manifest) { v.checkBench(m, false); v.noTLS(m) },
		cells:     benchCells,
		checkCell: benchCellSizes,
	},
	{
		Name: KindSigBench, Summary: "signatures: keygen, sign and verify over a message",
		Methods: []Method{MethodInProcess, MethodProcessPerOperation, MethodOpenSSLCLI}, Firmware: true,
		check:     func(v *validator, m *Manifest) { v.checkBench(m, true); v.noTLS(m) },
		cells:     benchCells,
		checkCell: benchCellSizes,
	},
	{
		Name: KindKEMSigSequence, Summary: "paper001's combined run: KEM keygen, encaps, decaps, then signature keygen, sign, verify, timed as one window",
		Methods: []Method{MethodInProcess},
		defaults: func(m *Manifest) {
			if len(m.Spec.Operations) == 0 {
				m.Spec.Operations = []string{OpSequence}
			}
		},
		check: func(v *validator, m *Manifest) { v.checkSequence(m); v.noTLS(m) },
		cells: func(m *Manifest) []CellRef {
			var cells []CellRef
			for _, name := range m.Spec.Algorithms {
				for _, op := range m.Spec.Operations {
					cells = append(cells, CellRef{name, op})
				}
			}
			return cells
		},
	},
	{
		Name: KindTLSMatrix, Summary: "full TLS 1.3 handshakes over a matrix of key-exchange groups and signature schemes, client latency with each side's CPU",
		Methods: []Method{MethodLoopbackTCP}, Firmware: true,
		firmwareCannot: func(m *Manifest) string {
			// A board's client is its firmware's own; the other stacks are the host's.
			for _, st := range m.Spec.TLS.Stacks {
				if st != StackPQRepro {
					return fmt.Sprintf("spec.tls.stacks names %s: a board's client is its firmware's own, other stacks run on the host", st)
				}
			}
			return ""
		},
		defaults: tlsDefaults,
		check:    func(v *validator, m *Manifest) { v.checkTLS(m) },
		cells:    tlsCells,
		variant:  tlsVariant,
		rederive: tlsRederive,
	},
	{
		Name: KindMQTTTelemetry, Summary: "paper003's telemetry: ML-KEM-512 handshakes and Ascon-AEAD128 frames through an MQTT broker to a verifying gateway, and the AEADs' seal and open costs fitted as fixed plus per-byte",
		Methods: []Method{MethodInProcess}, Firmware: true,
		defaults:  mqttDefaults,
		check:     func(v *validator, m *Manifest) { v.checkMQTT(m) },
		cells:     mqttCells,
		checkCell: mqttCheckCell,
	},
}

// noTLS reports a tls section on a kind that has none.
func (v *validator) noTLS(m *Manifest) {
	if m.Spec.TLS != nil {
		v.Add("spec.tls", "only a %s has a tls section; a %s does not", KindTLSMatrix, m.Kind)
	}
}

// Kinds lists the experiment kinds in a stable order.
func Kinds() []Kind {
	names := make([]Kind, len(kindDefs))
	for i, k := range kindDefs {
		names[i] = k.Name
	}
	return names
}

// LookupKind returns the definition of a kind.
func LookupKind(name Kind) (*KindDef, bool) {
	for i := range kindDefs {
		if kindDefs[i].Name == name {
			return &kindDefs[i], true
		}
	}
	return nil, false
}

// FirmwareCannot says why board firmware cannot run m, or "" when it can (the kind is
// Firmware and the firmware implements what m asks for).
func (k *KindDef) FirmwareCannot(m *Manifest) string {
	if !k.Firmware {
		return fmt.Sprintf("board firmware does not run %s experiments", k.Name)
	}
	if k.firmwareCannot != nil {
		return k.firmwareCannot(m)
	}
	return ""
}

// CheckCell checks what a measured ok cell of this kind claims beyond its statistics.
func (k *KindDef) CheckCell(m *Manifest, c *Cell) error {
	if k.checkCell == nil {
		return nil
	}
	return k.checkCell(m, c)
}

// benchCells lists algorithm-major cells, skipping operations an algorithm does not have.
func benchCells(m *Manifest) []CellRef {
	var cells []CellRef
	for _, name := range m.Spec.Algorithms {
		for _, op := range m.Spec.Operations {
			if a, ok := LookupAlgorithm(name); ok && a.Supports(op) {
				cells = append(cells, CellRef{name, op})
			}
		}
	}
	return cells
}

// benchCellSizes checks the sizes an ok cell records against those its standard fixes (zero
// means the standard fixes none, or the operation does not produce the object).
func benchCellSizes(m *Manifest, c *Cell) error {
	a, ok := LookupAlgorithm(c.Algorithm)
	if !ok || c.Sizes == nil {
		return nil
	}
	s := c.Sizes
	for _, f := range []struct {
		name       string
		got, fixed int
	}{
		{"publicKey", s.PublicKey, a.PublicKey}, {"privateKey", s.PrivateKey, a.PrivateKey},
		{"ciphertext", s.Ciphertext, a.Ciphertext}, {"signature", s.Signature, a.Signature},
		{"sharedSecret", s.SharedSecret, a.SharedSecret},
	} {
		if f.got < 0 {
			return fmt.Errorf("sizes.%s is negative (%d)", f.name, f.got)
		}
		if f.got != 0 && f.fixed != 0 && f.got != f.fixed {
			return fmt.Errorf("sizes.%s is %d bytes; %s fixes %d", f.name, f.got, a.Name, f.fixed)
		}
	}
	if s.Message != 0 && s.Message != m.Spec.MessageSize() {
		return fmt.Errorf("sizes.message is %d bytes; the manifest signs %d", s.Message, m.Spec.MessageSize())
	}
	return nil
}

// checkBench checks a kem-bench (signs false) or sig-bench manifest's algorithms, operations
// and message.
func (v *validator) checkBench(m *Manifest, signs bool) {
	s := &m.Spec
	if len(s.Algorithms) == 0 {
		v.Add("spec.algorithms", "list at least one algorithm")
	}
	want, noun := func(a Algorithm) bool { return a.KEM }, "KEM"
	if signs {
		want, noun = func(a Algorithm) bool { return !a.KEM }, "signature algorithm"
	}
	seen := map[string]bool{}
	known := true // an unknown algorithm is reported once, not again as an unused operation
	for i, name := range s.Algorithms {
		path := fmt.Sprintf("spec.algorithms[%d]", i)
		if seen[name] {
			v.Add(path, "%q is listed twice", name)
			continue
		}
		seen[name] = true
		if a, ok := LookupAlgorithm(name); !ok || !want(a) {
			v.Add(path, "unknown %s %q (valid: %s)", noun, name, strings.Join(AlgorithmNames(want), ", "))
			known = known && ok
		}
	}
	ops := []string{OpKeygen, OpEncaps, OpDecaps, OpDerive}
	if signs {
		ops = sigOps
	}
	v.checkOperations(m, func(i int, op string) {
		if !slices.Contains(ops, op) {
			// Not an operation of this kind at all: reported even beside an unknown algorithm.
			v.Add(fmt.Sprintf("spec.operations[%d]", i), "unknown operation %q (valid for %s: %s)", op, m.Kind, strings.Join(ops, ", "))
			return
		}
		used := false
		for _, name := range s.Algorithms {
			if a, ok := LookupAlgorithm(name); ok && a.Supports(op) {
				used = true
			}
		}
		if !used && known {
			v.Add(fmt.Sprintf("spec.operations[%d]", i), "no listed algorithm has operation %q (valid for %s: %s)", op, m.Kind, strings.Join(ops, ", "))
		}
	})
	v.checkMessage(m, signs)
}

// checkSequence checks a kem-sig-sequence manifest: "KEM+SIG" pairs and the one operation.
func (v *validator) checkSequence(m *Manifest) {
	s := &m.Spec
	if len(s.Algorithms) == 0 {
		v.Add("spec.algorithms", "list at least one algorithm")
	}
	seen := map[string]bool{}
	for i, name := range s.Algorithms {
		path := fmt.Sprintf("spec.algorithms[%d]", i)
		if seen[name] {
			v.Add(path, "%q is listed twice", name)
			continue
		}
		seen[name] = true
		k, sg, ok := SplitPair(name)
		if !ok {
			v.Add(path, "a kem-sig-sequence names pairs like ML-KEM-512+ML-DSA-44, got %q", name)
			continue
		}
		if a, ok := LookupAlgorithm(k); !ok || !a.KEM || a.Family != FamilyMLKEM {
			v.Add(path, "unknown KEM %q (valid: %s)", k, strings.Join(AlgorithmNames(func(a Algorithm) bool { return a.Family == FamilyMLKEM }), ", "))
		}
		if a, ok := LookupAlgorithm(sg); !ok || a.KEM {
			v.Add(path, "unknown signature algorithm %q (valid: %s)", sg, strings.Join(AlgorithmNames(func(a Algorithm) bool { return !a.KEM }), ", "))
		}
	}
	v.checkOperations(m, func(i int, op string) {
		if op != OpSequence {
			v.Add(fmt.Sprintf("spec.operations[%d]", i), "a kem-sig-sequence has the one operation %q, got %q", OpSequence, op)
		}
	})
	v.checkMessage(m, true)
}

// checkOperations reports an empty or repeated operation list and hands every first
// occurrence to each.
func (v *validator) checkOperations(m *Manifest, each func(i int, op string)) {
	ops := m.Spec.Operations
	if len(ops) == 0 {
		v.Add("spec.operations", "list at least one operation")
	}
	for i, op := range ops {
		if slices.Index(ops, op) != i {
			v.Add(fmt.Sprintf("spec.operations[%d]", i), "%q is listed twice", op)
			continue
		}
		each(i, op)
	}
}

// checkMessage checks the message a kind signs (signs true) or must not have.
func (v *validator) checkMessage(m *Manifest, signs bool) {
	msg := m.Spec.Message
	switch {
	case msg.Size < 0 || msg.Size > MaxMessageSize:
		v.Add("spec.message.size", "must be between 1 and %d bytes, got %d", MaxMessageSize, msg.Size)
	case msg.Size > 0 && msg.Text != "":
		v.Add("spec.message", "give size or text, not both")
	case signs && msg.Size == 0 && msg.Text == "":
		v.Add("spec.message", "a %s needs a message: size (fresh bytes per iteration) or text", m.Kind)
	case !signs && (msg.Size > 0 || msg.Text != ""):
		v.Add("spec.message", "a %s signs nothing; remove the message", m.Kind)
	}
}
