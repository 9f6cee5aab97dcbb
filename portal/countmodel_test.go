package portal

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"pqrepro/portal/store"
	"pqrepro/templates"
)

// TestRunPageNamesTheRP2040JSCycleModel: a run on the rp2040js board says on its page that
// its cycles are rp2040js's cycle model (no XIP-flash wait states, no exception-entry cycles,
// no bus contention) and never compared with silicon cycles; a QEMU or host run carries no
// such line.
func TestRunPageNamesTheRP2040JSCycleModel(t *testing.T) {
	for _, c := range []struct {
		class string
		want  bool
	}{{"rp2040js-picow", true}, {"qemu-mps2-an386", false}, {"host", false}, {"pico-w", false}} {
		v := runHeader(store.Run{ID: 1, BoardClass: c.class, Kind: "kem-bench"})
		var page bytes.Buffer
		if err := templates.RunPage(v).Render(context.Background(), &page); err != nil {
			t.Fatal(err)
		}
		got := page.String()
		has := strings.Contains(got, "rp2040js cycle model") && strings.Contains(got, "no XIP-flash wait states") &&
			strings.Contains(got, "no exception-entry cycles") && strings.Contains(got, "no bus contention") &&
			strings.Contains(got, "Never compared with silicon cycles")
		if has != c.want || strings.Contains(got, "count-model") != c.want {
			t.Errorf("%s: cycle-model line %v, want %v", c.class, has, c.want)
		}
	}
}
