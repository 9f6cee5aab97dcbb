package compare

import (
	"fmt"
	"strings"

	"pqrepro/artifacts"
)

// keyExchangePhases are the phases on a handshake's critical path that do the key exchange:
// the client's key-share generation (inside its handshake time, see tls13's Stats), the
// server's encapsulation or ECDH (the client waits for it) and the client's decapsulation.
var keyExchangePhases = []struct{ name, side string }{
	{"key-share", artifacts.SideClient}, {"encapsulate", artifacts.SideServer}, {"decapsulate", artifacts.SideClient},
}

// keyExchangeWhat says which phases kx is, as keyExchangeNS takes them for run's role.
func keyExchangeWhat(run Run) string {
	if tlsRole(run) == artifacts.TLSRoleServer {
		return "the server's encapsulation or ECDH, phase medians: the server's own time has no client phase"
	}
	return "key share + decapsulation + encapsulation phase medians"
}

// keyExchangeNS returns the key-exchange cost per handshake of the cell ref in the cell's own
// unit, from the manifest's own cell (no variant), or why it is not recorded: on the host the
// sum of the medians of keyExchangePhases in ns (in the server role the server's encapsulation
// alone: the server's own time excludes its waits for the client, the client's key share and
// decapsulation included); on a board that splits its count, the median of its own
// key-exchange phase (a client's ML-KEM key generation and decapsulation, a server's
// encapsulation or ECDH, in the board's counter: the peer's part runs on the runner, outside
// the board's count).
func keyExchangeNS(run Run, ref string) (float64, string) {
	alg, op, _ := strings.Cut(ref, "/")
	for _, c := range run.Result.Cells {
		if c.Algorithm != alg || c.Operation != op || c.Variant != "" {
			continue
		}
		if c.TLS == nil || len(c.TLS.Phases) == 0 {
			return 0, "the cell records no phase times (the engine's stack records them; crypto/tls does not)"
		}
		if kx, ok := c.BoardPhaseMedians()["key-exchange"]; ok {
			return kx, ""
		}
		sum := 0.0
		for _, want := range keyExchangePhases {
			if artifacts.RoleOf(c.TLS.Role) == artifacts.TLSRoleServer && want.side != artifacts.SideServer {
				continue
			}
			found := false
			for _, p := range c.TLS.Phases {
				if p.Name == want.name && p.Side == want.side && p.Stats != nil {
					sum += p.Stats.Median
					found = true
					break
				}
			}
			if !found {
				return 0, fmt.Sprintf("no %s phase on the %s side", want.name, want.side)
			}
		}
		return sum, ""
	}
	return 0, "not measured in this run"
}
