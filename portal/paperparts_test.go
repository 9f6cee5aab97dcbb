package portal_test

import (
	"regexp"
	"strings"
	"testing"

	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/templates"
)

// TestPaperPageKeepsOnlyItsUnchangingParts: a paper page's title, experiments, figures,
// energies and reference numbers are rendered once and kept (the same bytes on every later
// view), while its claims and runs are read on every request: rendered anew (no response
// cache), the page lists a run published after the parts were kept.
func TestPaperPageKeepsOnlyItsUnchangingParts(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) { c.PageCacheBytes = 0 })
	code, before := get(t, p.URL+"/papers/paper001")
	if code != 200 {
		t.Fatalf("paper page: %d", code)
	}
	first, err := p.Server.PaperParts("paper001")
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Server.PaperParts("paper001")
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]any{"head": {first.Head, again.Head}, "middle": {first.Middle, again.Middle}, "foot": {first.Foot, again.Foot}} {
		a, okA := pair[0].(templates.Prerendered)
		b, okB := pair[1].(templates.Prerendered)
		if !okA || !okB || len(a) == 0 || &a[0] != &b[0] {
			t.Errorf("the %s of paper001's page was not rendered once and kept", name)
		}
		if okA && !strings.Contains(before, string(a)) {
			t.Errorf("the page does not show its kept %s", name)
		}
	}
	id := publishAs(t, p, enrol(t, p, "paper parts runner"))
	link := `href="/runs/` + itoa(id) + `"`
	if strings.Contains(before, link) {
		t.Fatalf("run %d listed before it was published", id)
	}
	code, after := get(t, p.URL+"/papers/paper001")
	if code != 200 || !strings.Contains(after, link) {
		t.Fatalf("paper page after a publication: %d, lists run %d: %v", code, id, strings.Contains(after, link))
	}
	ref := regexp.MustCompile(`(?s)<h2 id="reference">.*?</h2>`)
	if r := ref.FindString(after); r == "" || r != ref.FindString(before) {
		t.Errorf("the reference section changed or went: %q", r)
	}
}
