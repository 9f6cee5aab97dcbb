package compare

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/experiments"
	"pqrepro/internal/boardcat"
)

// basis says what a claim's verdict rests on: the board with its class status and assurance,
// and the method and implementation that ran; and, when the board or the implementation is not
// the paper's, the scope sentence (the paper's setting, and that the verdict is about this
// board and implementation).
func basis(run Run, method artifacts.Method, paper *experiments.Paper) string {
	res := run.Result
	board := res.Board + " ("
	if run.Board.ClassStatus != "" {
		board += run.Board.ClassStatus + ", "
	}
	board += string(res.Assurance) + ")"
	s := "Rests on " + board + ", " + implementation(res, method) + "."
	if paper == nil || paper.Setting == "" {
		return s
	}
	samePaperBoard := slices.Contains(paper.Boards, res.Board) && run.Board.ClassStatus == artifacts.ClassVerified
	sameImpl := paper.Method != "" && paper.Method == method && res.Assurance != artifacts.AssuranceEmulated
	switch {
	case samePaperBoard && sameImpl:
		return s + " The paper's board and method."
	case samePaperBoard:
		return s + " The paper measured " + paper.Setting + ": the board is the paper's, the implementation is not, so the verdict is about this implementation on it."
	}
	return s + " The paper measured " + paper.Setting + ": the verdict is about this board and implementation, not a reproduction of the paper's figures."
}

// implementation names the code and method a run measured, in a phrase.
func implementation(res *artifacts.Result, method artifacts.Method) string {
	switch {
	case res.Assurance == artifacts.AssuranceEmulated && isRP2040JS(res.Board):
		return "the project's C firmware in rp2040js, counted in cycles of its cycle model (not silicon cycles)"
	case res.Assurance == artifacts.AssuranceEmulated:
		return "the project's C firmware under QEMU, counted in retired instructions"
	case outsidePeer(res) != nil:
		p := outsidePeer(res)
		return fmt.Sprintf("pqrepro's own TLS 1.3 engine as client of an outside server at %s (leaf %s, %s key)", p.Address, peerName(p), p.KeyAlgorithm)
	case res.Kind == artifacts.KindTLSMatrix && res.Assurance == artifacts.AssuranceHardware:
		return "the board's TLS client against pqrepro's own TLS 1.3 engine as server"
	case res.Assurance == artifacts.AssuranceHardware:
		return "the project's firmware on the board, timed by the board"
	case res.Kind == artifacts.KindTLSMatrix && resultRole(res) == artifacts.TLSRoleServer:
		return "pqrepro's own TLS 1.3 engine (Go, circl) at both ends, the server's own time in each handshake (its waits for the client excluded) timed in its child process"
	case method == artifacts.MethodOpenSSLCLI:
		return "the openssl command line, whole processes timed"
	case method == artifacts.MethodProcessPerOperation:
		return "pqrepro's own binary (Go, circl), one process per operation"
	}
	if s, ok := hostImplementations[res.Kind]; ok {
		return s
	}
	return inProcessGo // a result that names no kind this build knows
}

// hostImplementations names, per experiment kind, the code a host run measures in process.
// Every kind has an entry (TestHostImplementationsComplete).
var hostImplementations = map[artifacts.Kind]string{
	artifacts.KindKEMBench:       inProcessGo,
	artifacts.KindSigBench:       inProcessGo,
	artifacts.KindKEMSigSequence: inProcessGo,
	artifacts.KindTLSMatrix:      "pqrepro's own TLS 1.3 engine (Go, circl) at both ends, timed in process",
	artifacts.KindMQTTTelemetry:  "pqrepro's own telemetry scheme and Ascon (Go), timed in process",
}

// outsidePeer is the outside server a tls-matrix run's cells handshook with (spec.tls.server
// HOST:PORT), nil when they used the engine's own server.
func outsidePeer(res *artifacts.Result) *artifacts.TLSPeer {
	for _, c := range res.Cells {
		if c.TLS != nil && c.TLS.Server != nil {
			return c.TLS.Server
		}
	}
	return nil
}

// peerName is a peer's leaf subject, else its first SAN.
func peerName(p *artifacts.TLSPeer) string {
	if p.Subject != "" || len(p.SANs) == 0 {
		return strconv.Quote(p.Subject)
	}
	return p.SANs[0]
}

// outsideReason says why a cell measured against an outside server is never the paper's
// figure nor the engine-vs-engine measurement: another server stack answered, so the latency
// includes its work and its machine, and its CPU is not measured.
func outsideReason(p *artifacts.TLSPeer) string {
	return fmt.Sprintf("server differs: the handshakes went to an outside server at %s (leaf %s, %s key), not to pqrepro's engine at both ends; its work and machine are in the latency and its CPU is not measured",
		p.Address, peerName(p), p.KeyAlgorithm)
}

const inProcessGo = "pqrepro's Go implementations (circl and the standard library), timed in process"

// withBasis adds what the verdict rests on to a claim result's reason (scoped claims, which
// never ran, keep their reason alone).
func withBasis(cr *ClaimResult, run Run, paper *experiments.Paper) {
	if cr.Claim.Scope != "" {
		return
	}
	b := basis(run, cr.Method, paper)
	r := strings.TrimSpace(cr.Reason)
	switch {
	case r == "":
		cr.Reason = b
	case strings.HasSuffix(r, "."):
		cr.Reason = r + " " + b
	default:
		cr.Reason = r + ". " + b
	}
}

// isRP2040JS reports whether class is an emulated board the catalogue boots in rp2040js.
func isRP2040JS(class string) bool {
	m, ok := boardcat.LookupEmulated(class)
	return ok && m.IsRP2040JS()
}
