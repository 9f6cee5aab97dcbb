package yamlcheck

import (
	"strings"
	"testing"
)

// FuzzParseBounded: no input panics; an accepted document is within the node limit and
// holds no key twice in one mapping.
func FuzzParseBounded(f *testing.F) {
	f.Add([]byte("apiVersion: pqrepro/v1\nkind: sig-bench\nmetadata:\n  name: x\n"))
	f.Add([]byte("a: &a [x, x]\nb: [*a, *a]\n"))
	f.Add([]byte("k: 1\nk: 2\n"))
	f.Add([]byte(strings.Repeat("k: 1\n", 400)))
	f.Fuzz(func(t *testing.T, data []byte) {
		root, problems := ParseBounded(data, "document")
		if problems != nil {
			if root != nil || len(problems[0].Msg) == 0 {
				t.Fatalf("refused with a node or without a message: %v", problems)
			}
			return
		}
		if n := CountNodes(root, MaxNodes+2); n > MaxNodes {
			t.Fatalf("accepted %d nodes", n)
		}
		if d := duplicateKeys(root); len(d) > 0 {
			t.Fatalf("accepted a repeated key: %v", d)
		}
	})
}
