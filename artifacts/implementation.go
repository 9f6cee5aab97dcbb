package artifacts

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Implementation is the code a cell timed: a library and its version (circl, OpenSSL and the
// provider that served the algorithm), Go's own cryptography, a firmware's implementation of
// one algorithm (from the firmware's implementation table), or the project's TLS engine with
// the libraries its primitives came from. Two cells are one quantity only when their
// implementations' Keys are equal: rankings, schemes and comparisons never pool across them.
type Implementation struct {
	// Name names the implementation: a Go module path ("github.com/cloudflare/circl"),
	// ImplGoCrypto, "openssl", a firmware implementation table's name ("pqrepro-fw",
	// "mlkem-native"), ImplTLSEngine.
	Name string `json:"name"`
	// Version is the implementation's version as its build names it; Commit its source
	// revision where the build records one. At least one of them is set when known.
	Version string `json:"version,omitempty"`
	Commit  string `json:"commit,omitempty"`
	// Digest fixes the code: "sha256:<hex>" of the implementation's sources (DigestSource, the
	// firmware table), of the firmware image it was taken from (DigestImage) or of the binary
	// that ran (DigestBinary), or a Go module's go.sum hash "h1:<base64>" (DigestModule).
	Digest   string `json:"digest,omitempty"`
	DigestOf string `json:"digestOf,omitempty"`
	// Provider is the OpenSSL provider that served the algorithm (openssl-cli).
	Provider string `json:"provider,omitempty"`
	// Primitives are the implementations a protocol implementation's primitives came from
	// (the TLS engine: circl for ML-KEM and ML-DSA, Go's crypto for the rest). They have no
	// primitives of their own.
	Primitives []Implementation `json:"primitives,omitempty"`
}

// What an Implementation's Digest is the digest of.
const (
	DigestSource = "source"         // SHA-256 over the implementation's source files (firmware/impltable)
	DigestImage  = "firmware image" // SHA-256 of the firmware ELF the cell ran on
	DigestBinary = "binary"         // SHA-256 of the executable that ran (the openssl binary)
	DigestModule = "module"         // a Go module's go.sum hash
)

// Names of implementations the host derives (DeriveImplementation).
const (
	// ImplGoCrypto is Go's standard-library cryptography; its version is the Go release.
	ImplGoCrypto = "Go crypto (standard library)"
	// ImplGoTLS is Go's crypto/tls, measured beside the engine in tls-matrix runs.
	ImplGoTLS = "Go crypto/tls"
	// ImplTLSEngine is the project's own TLS 1.3 engine (tls13/).
	ImplTLSEngine = "pqrepro tls13"
	// ImplAscon is the project's own Ascon (ascon/).
	ImplAscon = "pqrepro ascon"
	// ImplTelemetry is the project's telemetry scheme (telemetry/) over MQTT.
	ImplTelemetry = "pqrepro telemetry"
	// ImplOpenSSL is the openssl command line of the openssl-cli method.
	ImplOpenSSL = "openssl"
	// CirclModule is the module of the host's ML-KEM, ML-DSA and SLH-DSA.
	CirclModule = "github.com/cloudflare/circl"
)

// maxImplField bounds every text field of an Implementation; maxPrimitives its primitives.
const (
	maxImplField  = 200
	maxPrimitives = 8
)

var (
	sha256DigestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	moduleSumRE    = regexp.MustCompile(`^h1:[A-Za-z0-9+/]{43}=$`)
)

// Validate checks an implementation read from a bundle: a name, bounded printable fields, a
// digest in one of the known forms with what it is the digest of, primitives one level deep.
func (im Implementation) Validate() error {
	return im.validate(true)
}

func (im Implementation) validate(top bool) error {
	if strings.TrimSpace(im.Name) == "" {
		return fmt.Errorf("implementation: name is required")
	}
	for _, f := range []struct{ name, v string }{{"name", im.Name}, {"version", im.Version}, {"commit", im.Commit},
		{"digest", im.Digest}, {"digestOf", im.DigestOf}, {"provider", im.Provider}} {
		if len(f.v) > maxImplField {
			return fmt.Errorf("implementation %.40q: %s is %d bytes, at most %d", im.Name, f.name, len(f.v), maxImplField)
		}
		if strings.ContainsFunc(f.v, func(r rune) bool { return !unicode.IsPrint(r) }) {
			return fmt.Errorf("implementation %.40q: %s holds a control character", im.Name, f.name)
		}
	}
	switch {
	case im.Digest == "" && im.DigestOf != "":
		return fmt.Errorf("implementation %q: digestOf %q without a digest", im.Name, im.DigestOf)
	case im.Digest == "":
	case im.DigestOf == DigestModule:
		if !moduleSumRE.MatchString(im.Digest) {
			return fmt.Errorf("implementation %q: a module digest is a go.sum hash h1:<base64>, got %q", im.Name, im.Digest)
		}
	case slices.Contains([]string{DigestSource, DigestImage, DigestBinary}, im.DigestOf):
		if !sha256DigestRE.MatchString(im.Digest) {
			return fmt.Errorf("implementation %q: digest %q is not sha256:<64 hex digits>", im.Name, im.Digest)
		}
	default:
		return fmt.Errorf("implementation %q: digestOf %q, want %s, %s, %s or %s", im.Name, im.DigestOf, DigestSource, DigestImage, DigestBinary, DigestModule)
	}
	if len(im.Primitives) > 0 && !top {
		return fmt.Errorf("implementation %q: a primitive has no primitives of its own", im.Name)
	}
	if len(im.Primitives) > maxPrimitives {
		return fmt.Errorf("implementation %q: %d primitives, at most %d", im.Name, len(im.Primitives), maxPrimitives)
	}
	for i := range im.Primitives {
		if err := im.Primitives[i].validate(false); err != nil {
			return fmt.Errorf("implementation %q: primitives[%d]: %w", im.Name, i, err)
		}
	}
	return nil
}

// Key is the implementation's identity as rankings group by it: name, version, commit,
// provider, the digest (a Go module's sum is left out: its version already names exactly
// one source tree, which the checksum database holds) and the primitives' keys. It is also
// the text the portal stores and shows (ShortImplementation abbreviates its digests).
func (im Implementation) Key() string {
	var b strings.Builder
	b.WriteString(im.Name)
	if im.Version != "" {
		b.WriteString(" " + im.Version)
	}
	if im.Commit != "" {
		b.WriteString(" commit " + im.Commit)
	}
	if im.Provider != "" {
		b.WriteString(" (provider " + im.Provider + ")")
	}
	if im.Digest != "" && im.DigestOf != DigestModule {
		b.WriteString(", " + im.DigestOf + " " + im.Digest)
	}
	if len(im.Primitives) > 0 {
		parts := make([]string, len(im.Primitives))
		for i, p := range im.Primitives {
			parts[i] = p.Key()
		}
		b.WriteString(" with " + strings.Join(parts, "; "))
	}
	return b.String()
}

var longDigestRE = regexp.MustCompile(`sha256:([0-9a-f]{12})[0-9a-f]{52}`)

// ShortImplementation abbreviates the SHA-256 digests in an implementation key to 12 hex
// digits, for pages; the full key stays in exports.
func ShortImplementation(key string) string {
	return longDigestRE.ReplaceAllString(key, "sha256:$1…")
}

// CellImplementation is the implementation a cell of a run timed: the one its cell records,
// else the one derived from the run's environment (bundles made before cells recorded theirs).
// kind and method are the manifest's.
func CellImplementation(kind Kind, method Method, env *Environment, c Cell) Implementation {
	if c.Implementation != nil {
		return *c.Implementation
	}
	return DeriveImplementation(kind, method, env, c)
}

// DeriveImplementation names the implementation a cell timed from its run's environment alone:
// on a firmware board, the firmware (its name, version and image digest); on the host, the
// library its method and algorithm use: openssl (version, provider and binary digest) for
// openssl-cli, Go's crypto/tls or the project's TLS engine (with circl and Go's crypto as its
// primitives) for tls-matrix cells, the project's telemetry and Ascon for mqtt-telemetry, and
// for the benchmark kinds circl (version and module sum from the runner's build) for ML-KEM,
// ML-DSA and SLH-DSA and Go's crypto for the classical algorithms.
func DeriveImplementation(kind Kind, method Method, env *Environment, c Cell) Implementation {
	b := env.Board
	if b.Driver != "" && b.Driver != DriverHost || b.Driver == "" && b.Assurance != "" && b.Assurance != AssuranceHost {
		im := Implementation{Name: cmp.Or(b.Firmware, "firmware"), Version: b.FirmwareVersion}
		if sha256DigestRE.MatchString(b.FirmwareDigest) {
			im.Digest, im.DigestOf = b.FirmwareDigest, DigestImage
		}
		return im
	}
	goCrypto := Implementation{Name: ImplGoCrypto, Version: env.GoVersion}
	circl := Implementation{Name: CirclModule, Version: cmp.Or(env.Libraries[CirclModule], "unknown")}
	if sum := env.LibrarySums[CirclModule]; moduleSumRE.MatchString(sum) {
		circl.Digest, circl.DigestOf = sum, DigestModule
	}
	own := func(name string, prims ...Implementation) Implementation {
		return Implementation{Name: name, Version: cmp.Or(env.RunnerVersion, "unknown"), Commit: env.RunnerRevision, Primitives: prims}
	}
	postQuantum := strings.Contains(c.Algorithm, "ML-") || strings.Contains(c.Algorithm, "MLKEM") || strings.Contains(c.Algorithm, "SLH-")
	switch {
	case method == MethodOpenSSLCLI:
		im := Implementation{Name: ImplOpenSSL, Version: "unknown"}
		if o := env.OpenSSL; o != nil {
			im.Version = cmp.Or(opensslRelease(o.Version), "unknown")
			im.Provider = opensslProvider(o.Providers)
			if sha256DigestRE.MatchString(o.BinaryDigest) {
				im.Digest, im.DigestOf = o.BinaryDigest, DigestBinary
			}
		}
		return im
	case kind == KindTLSMatrix && c.Variant == TLSStackVariant(StackCryptoTLS):
		return Implementation{Name: ImplGoTLS, Version: env.GoVersion}
	case kind == KindTLSMatrix:
		if postQuantum {
			return own(ImplTLSEngine, circl, goCrypto)
		}
		return own(ImplTLSEngine, goCrypto)
	case kind == KindMQTTTelemetry && (c.Operation == OpSeal || c.Operation == OpOpen):
		return own(ImplAscon)
	case kind == KindMQTTTelemetry && c.Operation == OpSession:
		return own(ImplTelemetry, circl, own(ImplAscon))
	case kind == KindMQTTTelemetry:
		return own(ImplTelemetry, own(ImplAscon))
	case postQuantum:
		return circl
	}
	return goCrypto
}

// opensslRelease is the release in `openssl version` output ("OpenSSL 3.5.1 1 Jul 2025" is
// 3.5.1), or the text itself when it has another form.
func opensslRelease(v string) string {
	f := strings.Fields(v)
	if len(f) >= 2 && strings.EqualFold(f[0], "OpenSSL") {
		return f[1]
	}
	return strings.TrimSpace(v)
}

// opensslProvider names the provider that serves the catalogue's algorithms: the default
// provider when it is active (OpenSSL 3.5 has ML-KEM, ML-DSA and SLH-DSA built in), else every
// listed provider.
func opensslProvider(provs []string) string {
	for _, p := range provs {
		if strings.HasPrefix(p, "default:") {
			return strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(p, "default:"), "(active)"))
		}
	}
	return strings.Join(provs, "; ")
}

// CellMessageBytes is the length of the message a cell's operation signs or verifies (the
// cell's recorded size, else the manifest's), 0 for operations that handle no message.
func CellMessageBytes(m *Manifest, c Cell) int {
	if c.Sizes != nil && c.Sizes.Message > 0 {
		return c.Sizes.Message
	}
	switch {
	case m.Kind == KindSigBench && (c.Operation == OpSign || c.Operation == OpVerify), m.Kind == KindKEMSigSequence:
		return m.Spec.MessageSize()
	}
	return 0
}
