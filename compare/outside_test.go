package compare

import (
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

// withPeer marks every cell of run as measured against an outside server.
func withPeer(run Run) Run {
	for i := range run.Result.Cells {
		g, s, _ := strings.Cut(run.Result.Cells[i].Algorithm, "+")
		run.Result.Cells[i].TLS = &artifacts.TLSCell{Group: g, Signature: s, Stack: artifacts.StackPQRepro,
			Server: &artifacts.TLSPeer{Address: "192.0.2.7:4433", Subject: "CN=outside.test", KeyAlgorithm: "ML-DSA-44"}}
	}
	run.Result.Kind = artifacts.KindTLSMatrix
	return run
}

// TestOutsideServerNotComparable: a cell whose handshakes went to an outside server is never
// set beside a published figure, even where everything else matches, and the claim that
// would hold on the engine's own server is not verdicted; the reason names the server.
func TestOutsideServerNotComparable(t *testing.T) {
	cl := paper000Claim(t, "C000-01")
	own := matrixRun("pico-w", pq512(1/0.59), flat(0.02))
	if cr := CheckClaim(cl, own, ""); cr.Verdict != Holds {
		t.Fatalf("the fixture's own-server claim: %s (%s)", cr.Verdict, cr.Reason)
	}
	out := withPeer(matrixRun("pico-w", pq512(1/0.59), flat(0.02)))
	cr := CheckClaim(cl, out, "")
	if cr.Verdict != NotVerdicted || !strings.Contains(cr.Reason, "outside server at 192.0.2.7:4433") {
		t.Fatalf("outside-server claim: %s (%s)", cr.Verdict, cr.Reason)
	}
	m := &artifacts.Manifest{Kind: artifacts.KindTLSMatrix, Spec: artifacts.Spec{Method: artifacts.MethodLoopbackTCP,
		TLS: &artifacts.TLSSpec{Server: "192.0.2.7:4433"}}}
	row := experiments.Row{Board: "pico-w", Stat: "median", Unit: "ns"}
	c := out.Result.Cells[0]
	reasons := rowReasons(row, c, "pico-w", m)
	found := false
	for _, r := range reasons {
		found = found || strings.HasPrefix(r, "server differs: the handshakes went to an outside server at 192.0.2.7:4433 (leaf \"CN=outside.test\", ML-DSA-44 key)")
	}
	if !found {
		t.Fatalf("reasons %q lack the outside server", reasons)
	}
	c.TLS.Server = nil
	for _, r := range rowReasons(row, c, "pico-w", m) {
		if strings.HasPrefix(r, "server differs") {
			t.Fatalf("the engine's own server given as a reason: %q", r)
		}
	}
	if b := implementation(out.Result, artifacts.MethodLoopbackTCP); !strings.Contains(b, "client of an outside server at 192.0.2.7:4433") {
		t.Fatalf("basis %q", b)
	}
}
