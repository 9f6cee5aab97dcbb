package artifacts

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The tls-matrix kind: full TLS 1.3 handshakes over a matrix of key-exchange groups and
// signature schemes (paper000's 6 × 6), each cell "<group>+<scheme>" / handshake, timed as the
// client's handshake latency in ns. Its spec is spec.tls (TLSSpec); a measured cell carries
// Cell.TLS (TLSCell), whose CPU and phase statistics re-derive from the bundle's tls.csv.

// KindTLSMatrix is the experiment kind of TLS 1.3 handshake matrices.
const KindTLSMatrix Kind = "tls-matrix"

// MethodLoopbackTCP times a full TLS 1.3 handshake between a client in the runner's process
// and a server in a child process, over a fresh loopback TCP connection per handshake (no
// resumption). Each side's CPU is the kernel's accounting of its own process. What a sample
// is depends on spec.tls.role: the client's handshake latency (client, the default) or the
// server's own time in its handshake, its waits for the client's bytes excluded (server).
// Each cell's Counter says which.
const MethodLoopbackTCP Method = "loopback-tcp"

// TLS roles: the side of the handshake a tls-matrix measures (spec.tls.role, TLSCell.Role).
// On a board, the board plays that side and the runner the other.
const (
	// TLSRoleClient measures the client: the default, written as nothing in a manifest.
	TLSRoleClient = "client"
	// TLSRoleServer measures the server, the side that signs the CertificateVerify.
	TLSRoleServer = "server"
)

// TLSRoles lists the roles in a stable order.
func TLSRoles() []string { return []string{TLSRoleClient, TLSRoleServer} }

// RoleOf is role with its default: "" (a manifest or a bundle from before roles) is the client.
func RoleOf(role string) string {
	if role == "" {
		return TLSRoleClient
	}
	return role
}

// OpHandshake is the one operation of a tls-matrix cell.
const OpHandshake = "handshake"

// TLS stacks a tls-matrix can measure.
const (
	// StackPQRepro is pqrepro's own TLS 1.3 engine (package tls13), on both ends.
	StackPQRepro = "pqrepro"
	// StackCryptoTLS is Go's crypto/tls, on both ends; its cells are variants
	// (TLSStackVariant) measured beside the engine's and never compared as the paper's method.
	StackCryptoTLS = "crypto/tls"
)

// SerialTLSClient names the TLS client of a board whose HELLO says tls_io=serial: the project's
// own C client (firmware/crypto/tls13). A cell's TLSCell.Client starts with it.
const SerialTLSClient = "pqrepro C client"

// SerialTLSServer names the TLS server of a board in the server role over the serial line: the
// project's own C server (firmware/crypto/tls13). A cell's TLSCell.BoardServer starts with it.
const SerialTLSServer = "pqrepro C server"

// TLSStacks lists the stacks in a stable order.
func TLSStacks() []string { return []string{StackPQRepro, StackCryptoTLS} }

// TLSStackVariant is the Variant of a cell measured with stack: "" for the engine,
// "stack: crypto/tls" for crypto/tls.
func TLSStackVariant(stack string) string {
	if stack == StackPQRepro {
		return ""
	}
	return "stack: " + stack
}

// TLSGroup is a TLS NamedGroup a tls-matrix may name, with the key-share sizes its
// specification fixes (draft-ietf-tls-mlkem, draft-ietf-tls-ecdhe-mlkem, RFC 8446).
type TLSGroup struct {
	Name      string
	Codepoint uint16
	// ClientShare and ServerShare are the key_exchange bytes of each side's key share.
	ClientShare, ServerShare int
	// CryptoTLS is true when Go 1.27's crypto/tls has the group.
	CryptoTLS bool
}

// TLSSignature is a TLS SignatureScheme a tls-matrix may name.
type TLSSignature struct {
	Name      string
	Codepoint uint16
}

// TLSGroups lists the key-exchange groups, in the contract's order.
func TLSGroups() []TLSGroup {
	return []TLSGroup{
		{"ML-KEM-512", 512, 800, 768, false},
		{"ML-KEM-768", 513, 1184, 1088, false},
		{"ML-KEM-1024", 514, 1568, 1568, true},
		{"X25519", 29, 32, 32, true},
		{"P-256", 23, 65, 65, true},
		{"X25519MLKEM768", 4588, 1216, 1120, true},
		{"SecP256r1MLKEM768", 4587, 1249, 1153, true},
		{"SecP384r1MLKEM1024", 4589, 1665, 1665, true},
	}
}

// TLSSignatures lists the signature schemes, in the contract's order (RSA-PSS is
// rsa_pss_rsae_sha256 with an RSA-2048 key; ECDSA-P256 is ecdsa_secp256r1_sha256).
func TLSSignatures() []TLSSignature {
	return []TLSSignature{
		{"ML-DSA-44", 0x0904}, {"ML-DSA-65", 0x0905}, {"ML-DSA-87", 0x0906},
		{"Ed25519", 0x0807}, {"ECDSA-P256", 0x0403}, {"RSA-PSS", 0x0804},
	}
}

// TLSCipherSuites lists the cipher suites a tls-matrix may name.
func TLSCipherSuites() []string {
	return []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
}

// LookupTLSGroup returns the group with that name.
func LookupTLSGroup(name string) (TLSGroup, bool) {
	for _, g := range TLSGroups() {
		if g.Name == name {
			return g, true
		}
	}
	return TLSGroup{}, false
}

func tlsGroupNames() []string {
	var out []string
	for _, g := range TLSGroups() {
		out = append(out, g.Name)
	}
	return out
}

func tlsSignatureNames() []string {
	var out []string
	for _, s := range TLSSignatures() {
		out = append(out, s.Name)
	}
	return out
}

// TLSSpec is a tls-matrix's own section of the spec, spec.tls.
type TLSSpec struct {
	// Groups are the key-exchange groups (TLSGroups names), the matrix's rows.
	Groups []string `yaml:"groups" json:"groups"`
	// Signatures are the signature schemes (TLSSignatures names), its columns; each cell's
	// certificate chain (a CA and a leaf) is of that scheme's algorithm.
	Signatures []string `yaml:"signatures" json:"signatures"`
	// CipherSuite is the one suite offered and accepted (default TLS_AES_128_GCM_SHA256).
	CipherSuite string `yaml:"cipherSuite,omitempty" json:"cipherSuite"`
	// Stacks are measured in this order, per cell: pqrepro first, then optionally crypto/tls
	// (whose cells are variants; a cell crypto/tls cannot run is skipped with the reason).
	Stacks []string `yaml:"stacks,omitempty" json:"stacks"`
	// Batch is the handshakes per CPU-accounting batch (default 10): each side's CPU is read
	// from the kernel before and after every batch. The last batch of a cell is shorter when
	// batch does not divide iterations.
	Batch int `yaml:"batch,omitempty" json:"batch"`
	// Echo is the bytes of seed-derived application data the client sends and the server
	// echoes after every handshake, untimed, before the handshake counts (default 32).
	Echo int `yaml:"echo,omitempty" json:"echo"`
	// Server is the server every handshake of the host's cells goes to: "engine" (the
	// default, written as nothing: the engine's own server in a child process, per cell) or
	// HOST:PORT, an outside server. Against an outside server the cell records the peer
	// (TLSCell.Server), measures no server CPU or phases and sends no echo, and is never
	// compared as the engine-vs-engine measurement.
	Server string `yaml:"server,omitempty" json:"server,omitempty"`
	// Role is the side every cell measures (TLSRoles): "client" (the default, written as
	// nothing so that manifests made before roles keep their identity) times the client's
	// handshake, "server" the server's (the side that signs the CertificateVerify); on a board
	// the board plays that side and the runner the other. RoleOf gives the default.
	Role string `yaml:"role,omitempty" json:"role,omitempty"`
}

// TLSServerEngine is spec.tls.server's default: the engine's own per-cell server.
const TLSServerEngine = "engine"

// MaxTLSServerAddr bounds spec.tls.server and --tls-server.
const MaxTLSServerAddr = 261 // a 255-byte host name, ':' and a 5-digit port

// ParseTLSServer checks a spec.tls.server value: "engine" (or empty) gives "", anything else
// must be HOST:PORT with a non-empty host of printable characters and a port 1..65535
// (an IPv6 host in brackets).
func ParseTLSServer(s string) (string, error) {
	if s == "" || s == TLSServerEngine {
		return "", nil
	}
	if len(s) > MaxTLSServerAddr {
		return "", fmt.Errorf("%d bytes, more than %d", len(s), MaxTLSServerAddr)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("%q is neither %s nor HOST:PORT: %v", s, TLSServerEngine, err)
	}
	if host == "" {
		return "", fmt.Errorf("%q: no host before the port", s)
	}
	for _, r := range host {
		if r <= ' ' || r == 0x7f || r == '/' || r == '@' || !unicode.IsPrint(r) {
			return "", fmt.Errorf("%q: host %q has a character %q a host name cannot hold", s, host, r)
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
	}
	return s, nil
}

// TLSPeer is the identity of the outside server a cell's handshakes went to, as its last
// timed handshake presented it: which server stack answered.
type TLSPeer struct {
	// Address is spec.tls.server (HOST:PORT).
	Address string `json:"address"`
	// Subject is the leaf's subject (RFC 2253 form), SANs its DNS names and IP addresses,
	// Issuer the leaf's issuer.
	Subject string   `json:"subject"`
	SANs    []string `json:"sans,omitempty"`
	Issuer  string   `json:"issuer"`
	// KeyAlgorithm is the leaf's public key algorithm (e.g. ML-DSA-44, Ed25519, ECDSA P-256,
	// RSA-2048).
	KeyAlgorithm string `json:"keyAlgorithm"`
	// Leaf is the digest of the leaf's DER (sha256:<hex>).
	Leaf string `json:"leaf"`
}

// TLSEnvironment is environment.json's record of a tls-matrix run: the chains it made and how
// each figure was taken.
type TLSEnvironment struct {
	// ServerName is the host name every leaf is issued for and the client checks.
	ServerName string `json:"serverName"`
	// Chains are the certificate chains, one per signature scheme, made once for the run.
	Chains []TLSChain `json:"chains"`
	// Latency, ClientCPU and ServerCPU say how the cells' figures were measured.
	Latency   string `json:"latency"`
	ClientCPU string `json:"clientCpu"`
	ServerCPU string `json:"serverCpu"`
}

// TLSChain is one scheme's chain: the CA (the client's trust anchor) and the leaf (what the
// server sends), DER (base64 in JSON).
type TLSChain struct {
	Signature string `json:"signature"`
	CA        []byte `json:"ca"`
	Leaf      []byte `json:"leaf"`
}

// MaxTLSEcho bounds spec.tls.echo: one TLS record's plaintext.
const MaxTLSEcho = 16384

// TLSCell is what a tls-matrix cell measured beyond its client handshake latency (Cell.Stats).
type TLSCell struct {
	// Group, Signature and CipherSuite are what both ends negotiated (checked against the
	// cell on both ends); Stack is pqrepro or crypto/tls.
	Group       string `json:"group"`
	Signature   string `json:"signature"`
	CipherSuite string `json:"cipherSuite"`
	Stack       string `json:"stack"`
	// Batch is the handshakes per CPU batch (the manifest's spec.tls.batch).
	Batch int `json:"batch"`
	// ClientCPU and ServerCPU are ns of CPU (user + system) per handshake, one sample per
	// batch: the kernel's getrusage(RUSAGE_SELF) of the runner's process (client) and of the
	// server's child process, over the batch, divided by its handshakes.
	ClientCPU *Stats `json:"clientCpu"`
	ServerCPU *Stats `json:"serverCpu"`
	// Phases are the engine's own per-handshake timings by phase and side (pqrepro stack
	// only; crypto/tls reports none).
	Phases []TLSPhase `json:"phases,omitempty"`
	// BytesClient and BytesServer are the wire bytes each way of one handshake (records
	// included, application data excluded), as the last timed handshake measured them.
	BytesClient int `json:"bytesClient"`
	BytesServer int `json:"bytesServer"`
	// Flights is the number of flights of one handshake, both directions (0: the stack does
	// not say, crypto/tls).
	Flights int `json:"flights"`
	// ChainBytes is the DER bytes of the certificate_list the server sent.
	ChainBytes int `json:"chainBytes"`
	// HelloRetry is true when any timed handshake of the cell took a HelloRetryRequest.
	HelloRetry bool `json:"helloRetry"`
	// Client is empty when both ends ran Stack on the host; on a board it names the board's
	// own TLS client (e.g. "board firmware pqrepro-fw 0.2.0, wolfssl-5.8.2"), Stack is then the
	// server's, the cell's Stats are the board's own handshake times, ClientCPU is absent (the
	// board's CPU is its own) and Phases are the server's only.
	Client string `json:"client,omitempty"`
	// Server is set when the handshakes went to an outside server (spec.tls.server HOST:PORT):
	// who answered. ServerCPU and the server's phases are then absent (its CPU is its own).
	Server *TLSPeer `json:"server,omitempty"`
	// Role is the side the cell measured, the manifest's spec.tls.role (client or server;
	// empty in bundles from before roles, which measured the client: RoleOf). In the server
	// role the cell's Stats are the server's own time (or count) per handshake.
	Role string `json:"role,omitempty"`
	// BoardServer names the board's own TLS server when a board played the server (e.g.
	// "pqrepro C server (board firmware pqrepro-fw 0.3.0)", SerialTLSServer first): Stack is
	// then the runner's client's, the cell's Stats are the board's counts, ClientCPU and
	// ServerCPU are absent (the runner's process relays the board's bytes; the board's CPU is
	// its own) and the server's phases are the board's split (BoardServerPhaseNames).
	BoardServer string `json:"boardServer,omitempty"`
	// Rounds are the ML-DSA rejection rounds of each timed handshake's CertificateVerify
	// signature, as the signer reported them (tls.csv's rounds column); nil where the signer
	// does not report them, RoundsAbsent then saying why for an ML-DSA cell. A scheme without
	// rejection sampling signs in one round.
	Rounds       *Stats `json:"rounds,omitempty"`
	RoundsAbsent string `json:"roundsAbsent,omitempty"`
}

// Measured names what played the measured side on a board (the board's client or server),
// "" when both ends ran on the host.
func (t *TLSCell) Measured() string {
	if t.BoardServer != "" {
		return t.BoardServer
	}
	return t.Client
}

// TLSPhase is one phase's per-handshake cost on one side.
type TLSPhase struct {
	// Name is one of TLSPhaseNames; Side is client or server.
	Name string `json:"name"`
	Side string `json:"side"`
	// Unit is empty for the engine's phases (ns of wall time); a board's client phases are in
	// the board's counter, the cell's own unit (instructions on an emulated board: the
	// board's split of its count, BoardPhaseNames).
	Unit Unit `json:"unit,omitempty"`
	// Stats are the phase's cost per handshake over the timed handshakes (ns, or Unit).
	Stats *Stats `json:"stats"`
}

// TLS sides.
const (
	SideClient = "client"
	SideServer = "server"
)

// TLSPhaseNames lists the phases a cell may record. "handshake" is the side's own handshake
// time as the engine measures it; "primitive" is the sum of the primitive phases (key-share
// .. record-layer), "wait" the time blocked reading the peer's bytes, and "protocol" the rest
// (handshake − primitive − wait), as the engine documents them.
func TLSPhaseNames() []string {
	return []string{"handshake", "key-share", "encapsulate", "decapsulate", "sign", "verify", "chain-verify", "key-schedule", "record-layer", "primitive", "wait", "protocol",
		"key-exchange", "key-schedule-records", "rest"}
}

// BoardCounts reports whether c is a board's own count of its TLS client's or server's work:
// a client or server named on the board and a unit that is not time (instructions or cycles).
func (c *Cell) BoardCounts() bool {
	return c.TLS != nil && c.TLS.Measured() != "" && !c.Unit.IsTime()
}

// BoardPhaseMedians is the median of each of c's board phases (BoardPhaseNames on the client
// side, or BoardServerPhaseNames on the server side for a board in the server role, in c's
// unit), by name; empty when c has none.
func (c *Cell) BoardPhaseMedians() map[string]float64 {
	out := map[string]float64{}
	if c.TLS == nil || c.Unit == "" {
		return out
	}
	side := SideClient
	if c.TLS.BoardServer != "" {
		side = SideServer
	}
	for _, p := range c.TLS.Phases {
		if p.Side == side && p.Unit == c.Unit && p.Stats != nil {
			out[p.Name] = p.Stats.Median
		}
	}
	return out
}

// BoardPhaseNames are the phases of a board's own client split of its count (firmware/PROTOCOL.md,
// HANDSHAKE count_kex .. count_rest), client side, in the cell's unit: the key exchange
// (ML-KEM key generation and decapsulation), the chain ("chain-verify": the trust anchor and
// the leaf parsed and the leaf's signature checked), CertificateVerify ("verify"), the key
// schedule with record protection, and the rest (parsing, transcript hashing, copying). They
// sum to the handshake's count.
func BoardPhaseNames() []string {
	return []string{"key-exchange", "chain-verify", "verify", "key-schedule-records", "rest"}
}

// BoardServerPhaseNames are the phases of a board's own server split of its count
// (HANDSHAKE role=server count_kex, count_cv, count_ksrec, count_rest), server side, in the
// cell's unit: the key exchange (ML-KEM encapsulation, ECDH), CertificateVerify ("sign"), the
// key schedule with record protection, and the rest. They sum to the handshake's count.
func BoardServerPhaseNames() []string {
	return []string{"key-exchange", "sign", "key-schedule-records", "rest"}
}

// TLSSeriesCPU is the tls.csv series of per-batch CPU samples.
const TLSSeriesCPU = "cpu"

// FileTLS is tls.csv, the per-batch CPU and per-handshake phase samples of a tls-matrix run.
// It is an optional content file: present (and attested) only in bundles whose result has
// tls-matrix cells.
const FileTLS = "tls.csv"

// TLSHeader is tls.csv's header. series is "cpu" (one row per batch: ns of CPU per
// handshake of the batch) or a phase name (one row per timed handshake: ns, or the phase's
// unit when result.json gives one: a board's phases); side is client or server; index
// counts the cell's rows of that series and side from 0. role is the cell's role (TLSRoles),
// the same on all its rows. rounds, on a per-handshake row (a phase's), is the ML-DSA
// rejection rounds of handshake index's CertificateVerify signature as the signer reported
// them: a cell gives it on all its per-handshake rows (the rows of one handshake agreeing) or
// on none, and never on a cpu row; empty where not measured.
var TLSHeader = []string{"algorithm", "operation", "variant", "series", "side", "index", "value", "role", "rounds"}

// legacyTLSHeaders are the headers bundles had before: without role and rounds (their cells
// measured the client), and before that with the value column named ns (every phase then was
// in ns).
var legacyTLSHeaders = [][]string{
	TLSHeader[:7],
	{"algorithm", "operation", "variant", "series", "side", "index", "ns"},
}

// MaxTLSRounds bounds a rounds value: far beyond any ML-DSA signature's rejection loop (the
// expected rounds are 4.25, 5.1 and 3.85 for ML-DSA-44/65/87).
const MaxTLSRounds = 1 << 16

// TLSSeriesKey names one series of a cell in tls.csv.
type TLSSeriesKey struct{ Series, Side string }

// TLSSeries is one series of a cell's tls.csv rows, in index order.
type TLSSeries struct {
	Series, Side string
	Values       []float64
}

func (v *validator) checkTLS(m *Manifest) {
	s := &m.Spec
	if len(s.Algorithms) > 0 {
		v.Add("spec.algorithms", "a tls-matrix names its cells with spec.tls.groups and spec.tls.signatures")
	}
	if len(s.Operations) > 0 {
		v.Add("spec.operations", "a tls-matrix has the one operation %s; remove the list", OpHandshake)
	}
	if s.Message.Size != 0 || s.Message.Text != "" {
		v.Add("spec.message", "a tls-matrix signs nothing of its own; remove the message (spec.tls.echo sets the application data)")
	}
	if s.Budget > 0 {
		v.Add("spec.budget", "a tls-matrix runs every handshake it asks for (its CPU is accounted per batch); remove the budget")
	}
	t := s.TLS
	if t == nil {
		v.Add("spec.tls", "a tls-matrix needs spec.tls with groups and signatures")
		return
	}
	list := func(field string, names, valid []string) {
		if len(names) == 0 {
			v.Add("spec.tls."+field, "list at least one (valid: %s)", strings.Join(valid, ", "))
		}
		for i, n := range names {
			path := fmt.Sprintf("spec.tls.%s[%d]", field, i)
			switch {
			case slices.Index(names, n) != i:
				v.Add(path, "%q is listed twice", n)
			case !slices.Contains(valid, n):
				v.Add(path, "unknown %s %q (valid: %s)", strings.TrimSuffix(field, "s"), n, strings.Join(valid, ", "))
			}
		}
	}
	list("groups", t.Groups, tlsGroupNames())
	list("signatures", t.Signatures, tlsSignatureNames())
	list("stacks", t.Stacks, TLSStacks())
	if len(t.Stacks) > 0 && t.Stacks[0] != StackPQRepro {
		v.Add("spec.tls.stacks[0]", "must be %s: other stacks are measured beside the engine, as variants of its cells", StackPQRepro)
	}
	if !slices.Contains(TLSCipherSuites(), t.CipherSuite) {
		v.Add("spec.tls.cipherSuite", "unknown cipher suite %q (valid: %s)", t.CipherSuite, strings.Join(TLSCipherSuites(), ", "))
	}
	switch {
	case t.Batch < 1 || t.Batch > MaxSamplesPerCell:
		v.Add("spec.tls.batch", "must be between 1 and %d handshakes, got %d", MaxSamplesPerCell, t.Batch)
	case s.Iterations >= 1 && t.Batch > s.Iterations:
		v.Add("spec.tls.batch", "%d handshakes per CPU batch, more than the %d iterations of a cell: no batch would be full", t.Batch, s.Iterations)
	}
	if _, err := ParseTLSServer(t.Server); err != nil {
		v.Add("spec.tls.server", "%v (write %s, the default, or HOST:PORT)", err, TLSServerEngine)
	}
	if t.Echo < 1 || t.Echo > MaxTLSEcho {
		v.Add("spec.tls.echo", "must be between 1 and %d bytes (one record), got %d", MaxTLSEcho, t.Echo)
	}
	v.checkTLSRole(t)
}

// checkTLSRole checks spec.tls.role and what the server role rules out: an outside server
// (the runner plays the client and the measured server is its own or the board's) and stacks
// beyond the engine (crypto/tls does not say how long its server waited for the client, so
// its server's own time cannot be told from the client's).
func (v *validator) checkTLSRole(t *TLSSpec) {
	switch RoleOf(t.Role) {
	case TLSRoleClient:
		return
	case TLSRoleServer:
	default:
		v.Add("spec.tls.role", "unknown role %q (valid: %s; the default is %s)", t.Role, strings.Join(TLSRoles(), ", "), TLSRoleClient)
		return
	}
	if t.Server != "" {
		v.Add("spec.tls.server", "%s with role %s: the server role measures the engine's or the board's own server, the runner playing the client; an outside server belongs to the client role", t.Server, TLSRoleServer)
	}
	for i, st := range t.Stacks {
		if st != StackPQRepro {
			v.Add(fmt.Sprintf("spec.tls.stacks[%d]", i), "%s with role %s: the server role's sample is the server's own time, the engine's handshake less its recorded waits for the client, and crypto/tls keeps no such record; measure it in the client role", st, TLSRoleServer)
		}
	}
}

func tlsDefaults(m *Manifest) {
	if m.Spec.Method == "" {
		m.Spec.Method = MethodLoopbackTCP
	}
	// manifest.yaml writes the unused lists as []: read back, they must give the same identity.
	if len(m.Spec.Algorithms) == 0 {
		m.Spec.Algorithms = nil
	}
	if len(m.Spec.Operations) == 0 {
		m.Spec.Operations = nil
	}
	t := m.Spec.TLS
	if t == nil {
		return
	}
	if t.CipherSuite == "" {
		t.CipherSuite = "TLS_AES_128_GCM_SHA256"
	}
	if len(t.Stacks) == 0 {
		t.Stacks = []string{StackPQRepro}
	}
	if t.Batch == 0 {
		t.Batch = 10
	}
	if t.Echo == 0 {
		t.Echo = 32
	}
	if t.Server == TLSServerEngine {
		t.Server = "" // the default, written as nothing: manifests made before keep their identity
	}
	if t.Role == TLSRoleClient {
		t.Role = "" // likewise
	}
}

// tlsCells lists group-major cells, "<group>+<scheme>" / handshake. The crypto/tls stack's
// cells are variants of these (TLSStackVariant), each right after its engine cell.
func tlsCells(m *Manifest) []CellRef {
	t := m.Spec.TLS
	if t == nil {
		return nil
	}
	var cells []CellRef
	for _, g := range t.Groups {
		for _, s := range t.Signatures {
			cells = append(cells, CellRef{Algorithm: g + "+" + s, Operation: OpHandshake})
		}
	}
	return cells
}

// tlsVariant accepts a variant only for a stack the manifest lists beyond the engine.
func tlsVariant(m *Manifest, variant string) error {
	for _, st := range m.Spec.TLS.Stacks {
		if st != StackPQRepro && variant == TLSStackVariant(st) {
			return nil
		}
	}
	return fmt.Errorf("%q is not a stack of this manifest (stacks: %s)", variant, strings.Join(m.Spec.TLS.Stacks, ", "))
}

// TLSBatches is the number of CPU batches of a cell of n handshakes in batches of batch.
func TLSBatches(n, batch int) int {
	if batch < 1 {
		return 0
	}
	return (n + batch - 1) / batch
}

// tlsRederive checks an ok tls-matrix cell's TLS record: what the cell and manifest fix
// (group, scheme, stack, suite, batch, key-share sizes within the bytes) from result.json, and
// its CPU and phase statistics against tls.csv. It returns the file and field at fault.
func tlsRederive(m *Manifest, c *Cell, s Samples) (string, string, error) {
	t := c.TLS
	if t == nil {
		return FileResult, "tls", fmt.Errorf("missing: a tls-matrix cell records its CPU, bytes and phases")
	}
	if f, fld, err := tlsFixedCheck(m, c); err != nil {
		return f, fld, err
	}
	if f, fld, err := tlsPeerCheck(m, t); err != nil {
		return f, fld, err
	}
	rows := s.TLS[KeyOf(*c)]
	used := map[TLSSeriesKey]bool{}
	want := func(field string, key TLSSeriesKey, st *Stats, n int) (string, string, error) {
		used[key] = true
		if st == nil {
			return FileResult, field, fmt.Errorf("missing")
		}
		if err := plausibleStats(st); err != nil {
			return FileResult, field, err
		}
		vals, ok := rows[key]
		if !ok {
			return FileTLS, field, fmt.Errorf("no %s %s rows for this cell", key.Side, key.Series)
		}
		if len(vals) != n || st.N != n {
			return FileTLS, field + ".n", fmt.Errorf("%d rows, result.json says n = %d, the cell's %d handshakes give %d", len(vals), st.N, c.Stats.N, n)
		}
		if e := matchStats(Summarize(vals), st, false); e != nil {
			return FileTLS, field + "." + e.field, fmt.Errorf("result.json says %v, %s gives %v", e.got, FileTLS, e.want)
		}
		return "", "", nil
	}
	batches := TLSBatches(c.Stats.N, t.Batch)
	switch {
	case t.Measured() == "":
		if f, fld, err := want("tls.clientCpu", TLSSeriesKey{TLSSeriesCPU, SideClient}, t.ClientCPU, batches); err != nil {
			return f, fld, err
		}
	case t.ClientCPU != nil && t.Client != "":
		return FileResult, "tls.clientCpu", fmt.Errorf("a board's client (%s) records no client CPU", t.Client)
	case t.ClientCPU != nil:
		return FileResult, "tls.clientCpu", fmt.Errorf("a board's server (%s): the runner's process relays its bytes, so its CPU is not the client's", t.BoardServer)
	}
	// A board that counts its own work (its client over the serial line) has the runner relay
	// its bytes in the process the engine's server runs in, so that process's CPU is not the
	// server's: such a cell records none (the server's own phases remain).
	countingBoard := c.BoardCounts() || t.BoardServer != ""
	switch {
	case t.Server == nil && !countingBoard:
		if f, fld, err := want("tls.serverCpu", TLSSeriesKey{TLSSeriesCPU, SideServer}, t.ServerCPU, batches); err != nil {
			return f, fld, err
		}
	case countingBoard && t.ServerCPU != nil:
		return FileResult, "tls.serverCpu", fmt.Errorf("a board counting its own work in %s (%s): the runner's process relays its bytes, so its CPU is not the server's", c.Unit, t.Measured())
	}
	if f, fld, err := tlsRoleCheck(m, c, s); err != nil {
		return f, fld, err
	}
	for j, p := range t.Phases {
		field := fmt.Sprintf("tls.phases[%d]", j)
		if err := tlsPhaseCheck(c, t, p); err != nil {
			return FileResult, field, err
		}
		key := TLSSeriesKey{p.Name, p.Side}
		if used[key] {
			return FileResult, field, fmt.Errorf("%s %s listed twice", p.Side, p.Name)
		}
		if f, fld, err := want(field+".stats", key, p.Stats, c.Stats.N); err != nil {
			return f, fld, err
		}
	}
	for key := range rows {
		if !used[key] {
			return FileTLS, "series", fmt.Errorf("%s %s rows that result.json does not summarise", key.Side, key.Series)
		}
	}
	return "", "", nil
}

// tlsFixedCheck checks what the cell and the manifest fix in its TLS record: group, scheme,
// stack, suite and batch, and bytes no fewer than the key shares and the chain.
func tlsFixedCheck(m *Manifest, c *Cell) (string, string, error) {
	t := c.TLS
	group, scheme, _ := strings.Cut(c.Algorithm, "+")
	stack := StackPQRepro
	if c.Variant != "" {
		stack = strings.TrimPrefix(c.Variant, "stack: ")
	}
	for _, f := range []struct{ field, got, want string }{
		{"tls.group", t.Group, group}, {"tls.signature", t.Signature, scheme}, {"tls.stack", t.Stack, stack},
		{"tls.cipherSuite", t.CipherSuite, m.Spec.TLS.CipherSuite},
	} {
		if f.got != f.want {
			return FileResult, f.field, fmt.Errorf("%q, the cell is %q", f.got, f.want)
		}
	}
	if t.Batch != m.Spec.TLS.Batch {
		return FileResult, "tls.batch", fmt.Errorf("%d, the manifest's batch is %d", t.Batch, m.Spec.TLS.Batch)
	}
	g, _ := LookupTLSGroup(group)
	switch {
	case t.BytesClient < g.ClientShare:
		return FileResult, "tls.bytesClient", fmt.Errorf("%d bytes, fewer than the %d of a %s client key share", t.BytesClient, g.ClientShare, group)
	case t.BytesServer < g.ServerShare+t.ChainBytes:
		return FileResult, "tls.bytesServer", fmt.Errorf("%d bytes, fewer than a %s server key share (%d) and the chain (%d)", t.BytesServer, group, g.ServerShare, t.ChainBytes)
	case t.ChainBytes <= 0:
		return FileResult, "tls.chainBytes", fmt.Errorf("%d: the server sends a certificate", t.ChainBytes)
	case t.Flights < 0 || (stack == StackPQRepro && t.Flights < 3):
		return FileResult, "tls.flights", fmt.Errorf("%d flights; a full TLS 1.3 handshake has at least 3", t.Flights)
	}
	return "", "", nil
}

// tlsRoleCheck checks a cell's role against the manifest's and tls.csv's, who played the
// measured side against the role, and the signature rounds against tls.csv's rounds column.
func tlsRoleCheck(m *Manifest, c *Cell, s Samples) (string, string, error) {
	t, k := c.TLS, KeyOf(*c)
	role := RoleOf(t.Role)
	switch {
	case role != RoleOf(m.Spec.TLS.Role):
		return FileResult, "tls.role", fmt.Errorf("%q, the manifest's spec.tls.role is %q", role, RoleOf(m.Spec.TLS.Role))
	case s.TLSRoles[k] != "" && s.TLSRoles[k] != role:
		return FileTLS, "role", fmt.Errorf("%q, result.json says %q", s.TLSRoles[k], role)
	case t.BoardServer != "" && role != TLSRoleServer:
		return FileResult, "tls.boardServer", fmt.Errorf("a board's server (%s) on a cell in the %s role", t.BoardServer, role)
	case t.Client != "" && role != TLSRoleClient:
		return FileResult, "tls.client", fmt.Errorf("a board's client (%s) on a cell in the %s role", t.Client, role)
	}
	rounds := s.TLSRounds[k]
	switch {
	case t.Rounds == nil && len(rounds) > 0:
		return FileTLS, "rounds", fmt.Errorf("rounds for %d handshakes that result.json does not summarise", len(rounds))
	case t.Rounds == nil:
		return "", "", nil
	case t.RoundsAbsent != "":
		return FileResult, "tls.roundsAbsent", fmt.Errorf("%q beside rounds measured", t.RoundsAbsent)
	case len(rounds) == 0:
		return FileTLS, "tls.rounds", fmt.Errorf("no rounds in %s for this cell", FileTLS)
	case len(rounds) != c.Stats.N || t.Rounds.N != c.Stats.N:
		return FileTLS, "tls.rounds.n", fmt.Errorf("rounds for %d handshakes, result.json says n = %d, the cell has %d", len(rounds), t.Rounds.N, c.Stats.N)
	}
	vals := make([]float64, len(rounds))
	for i, r := range rounds {
		if r != 1 && !strings.HasPrefix(t.Signature, "ML-DSA") {
			return FileTLS, "rounds", fmt.Errorf("handshake %d: %d rounds; %s signs in one", i, r, t.Signature)
		}
		vals[i] = float64(r)
	}
	if e := matchStats(Summarize(vals), t.Rounds, false); e != nil {
		return FileTLS, "tls.rounds." + e.field, fmt.Errorf("result.json says %v, %s gives %v", e.got, FileTLS, e.want)
	}
	return "", "", nil
}

// tlsPhaseCheck checks one phase record's name, side and unit: an engine's phase in ns (no
// unit), a board's client phase one of BoardPhaseNames in the cell's unit, and no server phase
// against an outside server.
func tlsPhaseCheck(c *Cell, t *TLSCell, p TLSPhase) error {
	switch {
	case !slices.Contains(TLSPhaseNames(), p.Name) || (p.Side != SideClient && p.Side != SideServer):
		return fmt.Errorf("unknown phase %q on side %q (phases: %s; sides client, server)", p.Name, p.Side, strings.Join(TLSPhaseNames(), ", "))
	case t.Server != nil && p.Side == SideServer:
		return fmt.Errorf("a server %s phase on a cell against an outside server (%s): its phases are its own", p.Name, t.Server.Address)
	case t.Client != "" && p.Side == SideClient && (p.Unit != c.Unit || !slices.Contains(BoardPhaseNames(), p.Name)):
		return fmt.Errorf("a client %s phase in %q on a board's cell: a board's client phases are its own split of its count (%s), in the cell's unit %q", p.Name, p.Unit, strings.Join(BoardPhaseNames(), ", "), c.Unit)
	case t.BoardServer != "" && p.Side == SideServer && (p.Unit != c.Unit || !slices.Contains(BoardServerPhaseNames(), p.Name)):
		return fmt.Errorf("a server %s phase in %q on a board server's cell: a board's server phases are its own split of its count (%s), in the cell's unit %q", p.Name, p.Unit, strings.Join(BoardServerPhaseNames(), ", "), c.Unit)
	case t.BoardServer == "" && p.Side == SideServer && p.Unit != "", t.Client == "" && p.Side == SideClient && p.Unit != "":
		return fmt.Errorf("unit %q: the engine's phases are ns of wall time (no unit)", p.Unit)
	}
	return nil
}

// tlsPeerCheck checks a cell's peer record against the manifest's spec.tls.server: present
// exactly when the server is outside, naming that address, with the leaf's subject, key
// algorithm and digest; and no server CPU then.
func tlsPeerCheck(m *Manifest, t *TLSCell) (string, string, error) {
	addr := m.Spec.TLS.Server
	p := t.Server
	switch {
	case addr == "" && p != nil:
		return FileResult, "tls.server", fmt.Errorf("a peer %s on a cell of the engine's own server (spec.tls.server is %s)", p.Address, TLSServerEngine)
	case addr == "":
		return "", "", nil
	case p == nil:
		return FileResult, "tls.server", fmt.Errorf("missing: the cell ran against %s and must record who answered", addr)
	case p.Address != addr:
		return FileResult, "tls.server.address", fmt.Errorf("%q, spec.tls.server is %q", p.Address, addr)
	case p.Subject == "" && len(p.SANs) == 0:
		return FileResult, "tls.server.subject", fmt.Errorf("empty, and no SANs: the peer's leaf names nobody")
	case p.KeyAlgorithm == "":
		return FileResult, "tls.server.keyAlgorithm", fmt.Errorf("missing")
	case !isDigest(p.Leaf):
		return FileResult, "tls.server.leaf", fmt.Errorf("%q is not a sha256:<hex> digest", p.Leaf)
	case t.ServerCPU != nil:
		return FileResult, "tls.serverCpu", fmt.Errorf("an outside server's CPU is its own; the cell cannot have measured it")
	}
	return "", "", nil
}

// tlsValue checks a tls.csv value: finite and non-negative.
func tlsValue(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// WriteTLSRows writes one cell's series as tls.csv rows (after TLSHeader): role is the
// cell's (TLSCell.Role; "" is written as client) and rounds, when not nil, each handshake's
// signature rounds, written on every per-handshake row; every per-handshake series must then
// have one value per handshake.
func WriteTLSRows(w *csv.Writer, k CellKey, role string, rounds []int, series []TLSSeries) error {
	role = RoleOf(role)
	for _, s := range series {
		perHandshake := s.Series != TLSSeriesCPU
		if rounds != nil && perHandshake && len(s.Values) != len(rounds) {
			return fmt.Errorf("%s %s %s: %d values, %d handshakes with rounds", k.Algorithm, s.Side, s.Series, len(s.Values), len(rounds))
		}
		for i, v := range s.Values {
			r := ""
			if rounds != nil && perHandshake {
				r = strconv.Itoa(rounds[i])
			}
			if err := w.Write([]string{k.Algorithm, k.Operation, k.Variant, s.Series, s.Side, strconv.Itoa(i), strconv.FormatFloat(v, 'f', -1, 64), role, r}); err != nil {
				return err
			}
		}
	}
	return nil
}

// TLSFile is tls.csv as read: each cell's series, its role and its handshakes' rounds.
type TLSFile struct {
	Series map[CellKey]map[TLSSeriesKey][]float64
	// Roles is each cell's role column (client for a file from before roles).
	Roles map[CellKey]string
	// Rounds is, for a cell whose rows give rounds, each handshake's rounds in index order.
	Rounds map[CellKey][]int
}

// ParseTLSSamples reads tls.csv's series (ParseTLSFile without roles and rounds).
func ParseTLSSamples(data []byte) (map[CellKey]map[TLSSeriesKey][]float64, error) {
	f, err := ParseTLSFile(data)
	return f.Series, err
}

// tlsCellRows is what ParseTLSFile has read of one cell's role and rounds so far.
type tlsCellRows struct {
	role          string
	rounds        []int
	with, without bool // per-handshake rows with and without rounds
}

// ParseTLSFile reads tls.csv. Every row must have the header's columns, a finite non-negative
// value, and indexes numbered 0, 1, 2, ... per cell, series and side, at most
// MaxSamplesPerCell of them; a cell's rows name one role, and give rounds (an integer from 1
// to MaxTLSRounds) on all its per-handshake rows or on none, never on a cpu row, the rows of
// one handshake agreeing. A file from before roles (seven columns) is read as the client's.
// Errors name the line and the column.
func ParseTLSFile(data []byte) (TLSFile, error) {
	f := TLSFile{Series: map[CellKey]map[TLSSeriesKey][]float64{}, Roles: map[CellKey]string{}, Rounds: map[CellKey][]int{}}
	r, head, err := csvHead(data, FileTLS, TLSHeader, 0)
	if err != nil {
		return TLSFile{}, err
	}
	if !slices.Equal(head, TLSHeader) && !slices.ContainsFunc(legacyTLSHeaders, func(h []string) bool { return slices.Equal(head, h) }) {
		return TLSFile{}, fmt.Errorf("%s line 1: header %v, want %v", FileTLS, head, TLSHeader)
	}
	valueColumn, cols := head[6], len(head) // the reader reuses head's array for the next records
	cells := map[CellKey]*tlsCellRows{}
	series := 0
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return TLSFile{}, fmt.Errorf("%s: %w", FileTLS, err)
		}
		k := CellKey{Algorithm: rec[0], Operation: rec[1], Variant: rec[2]}
		if k.Algorithm == "" || k.Operation == "" {
			return TLSFile{}, fmt.Errorf("%s line %d: empty algorithm or operation", FileTLS, line)
		}
		sk := TLSSeriesKey{Series: rec[3], Side: rec[4]}
		if sk.Series != TLSSeriesCPU && !slices.Contains(TLSPhaseNames(), sk.Series) {
			return TLSFile{}, fmt.Errorf("%s line %d: series %q: not cpu or a phase (%s)", FileTLS, line, sk.Series, strings.Join(TLSPhaseNames(), ", "))
		}
		if sk.Side != SideClient && sk.Side != SideServer {
			return TLSFile{}, fmt.Errorf("%s line %d: side %q: not client or server", FileTLS, line, sk.Side)
		}
		idx, err := strconv.Atoi(rec[5])
		if err != nil {
			return TLSFile{}, fmt.Errorf("%s line %d: index %q: not an integer", FileTLS, line, rec[5])
		}
		v, err := strconv.ParseFloat(rec[6], 64)
		if err != nil || !tlsValue(v) {
			return TLSFile{}, fmt.Errorf("%s line %d: %s %q: not a finite non-negative number", FileTLS, line, valueColumn, rec[6])
		}
		cell := f.Series[k]
		if cell == nil {
			if len(f.Series) >= MaxCells*(MaxVariants+1) {
				return TLSFile{}, fmt.Errorf("%s line %d: more than %d cells", FileTLS, line, MaxCells*(MaxVariants+1))
			}
			cell = map[TLSSeriesKey][]float64{}
			f.Series[k] = cell
			cells[k] = &tlsCellRows{}
		}
		vals, ok := cell[sk]
		if !ok {
			if series++; series > MaxCells*(MaxVariants+1)*2*len(TLSPhaseNames())+1 {
				return TLSFile{}, fmt.Errorf("%s line %d: too many series", FileTLS, line)
			}
		}
		if len(vals) >= MaxSamplesPerCell {
			return TLSFile{}, fmt.Errorf("%s line %d: more than %d rows for %s %s %s %s", FileTLS, line, MaxSamplesPerCell, k.Algorithm, k.Variant, sk.Side, sk.Series)
		}
		if idx != len(vals) {
			return TLSFile{}, fmt.Errorf("%s line %d: index %d of %s %s %s, want %d", FileTLS, line, idx, k.Algorithm, sk.Side, sk.Series, len(vals))
		}
		role, rounds := TLSRoleClient, ""
		if cols == len(TLSHeader) {
			role, rounds = rec[7], rec[8]
		}
		if err := cells[k].add(k, sk, idx, role, rounds); err != nil {
			return TLSFile{}, fmt.Errorf("%s line %d: %w", FileTLS, line, err)
		}
		f.Roles[k] = cells[k].role
		if cells[k].with {
			f.Rounds[k] = cells[k].rounds
		}
		cell[sk] = append(vals, v)
	}
}

// add checks one row's role and rounds against the cell's rows before it.
func (c *tlsCellRows) add(k CellKey, sk TLSSeriesKey, idx int, role, rounds string) error {
	switch {
	case !slices.Contains(TLSRoles(), role):
		return fmt.Errorf("role %q: not %s", role, strings.Join(TLSRoles(), " or "))
	case c.role != "" && role != c.role:
		return fmt.Errorf("role %q of %s %s, earlier rows said %q", role, k.Algorithm, k.Variant, c.role)
	}
	c.role = role
	switch {
	case sk.Series == TLSSeriesCPU && rounds != "":
		return fmt.Errorf("rounds %q on a cpu row: rounds belong to a handshake", rounds)
	case sk.Series == TLSSeriesCPU:
		return nil
	case rounds == "" && c.with:
		return fmt.Errorf("rounds of %s %s %s handshake %d: empty, earlier rows of the cell gave them", k.Algorithm, sk.Side, sk.Series, idx)
	case rounds == "":
		c.without = true
		return nil
	case c.without:
		return fmt.Errorf("rounds %q of %s %s %s handshake %d: earlier rows of the cell gave none", rounds, k.Algorithm, sk.Side, sk.Series, idx)
	}
	n, err := strconv.Atoi(rounds)
	if err != nil || n < 1 || n > MaxTLSRounds {
		return fmt.Errorf("rounds %q: not an integer from 1 to %d", rounds, MaxTLSRounds)
	}
	c.with = true
	switch {
	case idx < len(c.rounds) && c.rounds[idx] != n:
		return fmt.Errorf("rounds %d of %s handshake %d, another of its rows said %d", n, k.Algorithm, idx, c.rounds[idx])
	case idx == len(c.rounds):
		c.rounds = append(c.rounds, n)
	case idx > len(c.rounds):
		return fmt.Errorf("rounds of %s handshake %d before handshake %d's", k.Algorithm, idx, len(c.rounds))
	}
	return nil
}

// ParseBundleSamples reads a bundle's samples: samples.csv, and tls.csv when the bundle holds
// one (Samples.TLS stays nil otherwise).
func ParseBundleSamples(b *Bundle) (Samples, error) {
	s, err := ParseSamples(b.Files[FileSamples])
	if err != nil {
		return s, err
	}
	if data, ok := b.Files[FileTLS]; ok {
		f, err := ParseTLSFile(data)
		if err != nil {
			return s, err
		}
		s.TLS, s.TLSRoles, s.TLSRounds = f.Series, f.Roles, f.Rounds
	}
	return s, nil
}

func isDigest(d string) bool { _, ok := DigestHex(d); return ok }
