package portal_test

import (
	"net/http"
	"strings"
	"testing"

	"pqrepro/portal/portaltest"
)

// TestEnergySection: paper002's page shows its energies re-derived from the authors' traces,
// labelled as such, with the plot of a capture and the energy claims; a paper without traces
// has no such section.
func TestEnergySection(t *testing.T) {
	p := portaltest.Start(t, nil)
	b := newBrowser(t, p.URL)
	code, body := b.get("/papers/paper002")
	if code != http.StatusOK {
		t.Fatalf("/papers/paper002: %d", code)
	}
	if len(body) >= 100<<10 {
		t.Errorf("/papers/paper002 is %d bytes, want under 100 KB", len(body))
	}
	for _, want := range []string{`id="energy"`, "re-derived from the paper&#39;s traces", `class="chart trace"`, "01_pi1_baseline.csv.gz",
		"07_pi1_keys_ml-kem-768.csv.gz", `id="energy-C002-01"`, `id="energy-C002-05"`, "disagreeing source", "drift between the idle and the load capture"} {
		if !strings.Contains(body, want) {
			t.Errorf("paper002's page lacks %q", want)
		}
	}
	if !strings.Contains(body, `href="/papers/paper002/energy?board=rpi-zero-wh"`) {
		t.Error("no link to a board's energies")
	}
	code, page := b.get("/papers/paper002/energy?board=rpi1-b")
	if code != http.StatusOK || !strings.Contains(page, "<td>ML-KEM-768</td><td>keygen</td><td class=\"num\">0.050223016</td>") ||
		strings.Contains(page, `id="rpi4-b"`) || strings.Count(page, "<tr>") != 48 {
		t.Errorf("/papers/paper002/energy?board=rpi1-b: %d, %d rows", code, strings.Count(page, "<tr>"))
	}
	if code, page := b.get("/papers/paper002/energy"); code != http.StatusOK || strings.Count(page, "<tr>") != 329+7 {
		t.Errorf("/papers/paper002/energy: %d, %d rows, want 329 and 7 headers", code, strings.Count(page, "<tr>"))
	}
	for _, path := range []string{"/papers/paper002/energy?board=no-such-board", "/papers/paper001/energy", "/papers/paper009/energy"} {
		if code, _ := b.get(path); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
	if _, body := b.get("/papers/paper001"); strings.Contains(body, `id="energy"`) {
		t.Error("paper001's page has an energy section")
	}
}

// paper002's idle power rows name no algorithm: its reference groups listed them as an empty
// entry ("…, ML-KEM-768, "); they are named for what they are.
func TestReferenceGroupsHaveNoEmptyAlgorithm(t *testing.T) {
	p := portaltest.Start(t, nil)
	b := newBrowser(t, p.URL)
	_, body := b.get("/papers/paper002")
	for _, bad := range []string{", )", ", </td>", "<td>, ", ", , ", ": , "} {
		if strings.Contains(body, bad) {
			t.Errorf("paper002's page has an empty algorithm entry (%q)", bad)
		}
	}
	if !strings.Contains(body, "whole-board figures (no algorithm)") {
		t.Error("paper002's page does not name its whole-board figures")
	}
	code, page := b.get("/papers/paper002/reference?board=rpi4-b&library=OpenSSL+3.5+%28openssl+CLI%29")
	if code == http.StatusOK && strings.Contains(page, "<summary> <span") {
		t.Error("a reference page's group of no algorithm has an empty summary")
	}
}
