package portal_test

import (
	"net/http"
	"strings"
	"testing"

	"pqrepro/portal/portaltest"
)

// TestExperimentSaysWhatIsComparable: before any run, an experiment page says per board how
// many of the paper's figures a run there could be compared with, and why not the rest, by
// the comparison's own rules; and which claims a run can give a verdict.
func TestExperimentSaysWhatIsComparable(t *testing.T) {
	p := portaltest.Start(t, nil)
	b := newBrowser(t, p.URL)
	code, body := b.get("/experiments/paper002/keygen-openssl")
	if code != http.StatusOK {
		t.Fatalf("GET: %d", code)
	}
	i := strings.Index(body, `id="comparable"`)
	if i < 0 {
		t.Fatalf("no comparability section:\n%s", body)
	}
	sec := body[i:]
	sec = sec[:strings.Index(sec, "</section>")]
	// On the host nothing is comparable (the paper's laptops are other boards); on a board
	// the paper measured, its openssl_cli figures are, with this manifest's method.
	if !strings.Contains(sec, "<td>host") || !strings.Contains(sec, "board differs: measured on host") {
		t.Errorf("host row missing or without its reason:\n%s", sec)
	}
	if !strings.Contains(sec, "C002-09") || !strings.Contains(sec, "a run checks it") {
		t.Errorf("claims preview missing:\n%s", sec)
	}
	if strings.Count(sec, "</tr>") < 3 {
		t.Errorf("fewer boards than the host and the paper's own:\n%s", sec)
	}
	if !strings.Contains(sec, " of ") || strings.Contains(sec, "0 of 0") {
		t.Errorf("counts:\n%s", sec)
	}
}
