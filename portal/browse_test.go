package portal_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/runner/portalclient"
)

// communityRuns publishes n host runs of paper001/mlkem (iterations samples per cell) as a
// community submitter named name, through the real submission API, and returns their ids.
func communityRuns(t *testing.T, p *portaltest.Portal, name string, n, iterations int) []int64 {
	t.Helper()
	ctx := context.Background()
	token := "browse_" + name + "_token-for-tests"
	u, err := p.Server.Store().CreateUser(ctx, name, "submitter", portal.HashToken(token))
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Server.Store().AddSubmitterKey(ctx, u.ID, "k", id.Public()); err != nil {
		t.Fatal(err)
	}
	sub := portalclient.NewSubmitter(p.URL, token)
	var ids []int64
	for range n {
		cr, err := sub.Submit(ctx, signedBundle(t, smallManifest(t, iterations), id, attest.OriginLocal))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, cr.RunID)
	}
	return ids
}

type answer struct {
	code   int
	body   string
	header http.Header
}

func fetch(t *testing.T, url string) answer {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

var runLinkRE = regexp.MustCompile(`<a href="/runs/(\d+)">#`)

func pageRuns(body string) []string {
	var ids []string
	for _, m := range runLinkRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

var nextRE = regexp.MustCompile(`href="(/runs\?[^"]*after=[^"]*)" id="next-page"`)

func TestBrowseRunsJobsSchemesAndCompare(t *testing.T) {
	p := portaltest.Start(t, nil)
	a := communityRuns(t, p, "lab-a", 3, 6)
	b := communityRuns(t, p, "lab-b", 1, 6)
	all := append(slices.Clone(a), b...)
	slices.Reverse(all) // newest first

	// /runs pages through every run once, newest first, with the filters in the next link.
	var seen []string
	next := "/runs?limit=2&paper=paper001"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		r := fetch(t, p.URL+strings.ReplaceAll(next, "&amp;", "&"))
		if r.code != 200 {
			t.Fatalf("GET %s: %d %s", next, r.code, r.body)
		}
		seen = append(seen, pageRuns(r.body)...)
		next = ""
		if m := nextRE.FindStringSubmatch(r.body); m != nil {
			next = m[1]
			if !strings.Contains(next, "paper=paper001") || !strings.Contains(next, "limit=2") {
				t.Errorf("next link %q lost the filters", next)
			}
		}
	}
	var want []string
	for _, id := range all {
		want = append(want, fmt.Sprint(id))
	}
	if !slices.Equal(seen, want) {
		t.Errorf("paged runs %v, want %v", seen, want)
	}
	// Filters.
	for q, wantIDs := range map[string][]int64{
		"submitter=LAB-A":                 {a[2], a[1], a[0]},
		"submitter=nobody":                nil,
		"algorithm=ML-KEM-768&board=host": all,
		"algorithm=ML-DSA-65":             nil,
		"algorithm=ml-kem":                all, // in part, regardless of case
		"algorithm=ML-KEM_":               nil, // _ is a letter, not LIKE's wildcard
		"assurance=emulated":              nil,
		"origin=community":                all,
		"origin=portal-runner":            nil, // who ran it: these are all submitted
		"board=host&origin=local":         nil,
		"from=2000-01-01&to=2000-01-31":   nil,
		"experiment=paper001/mlkem&kind=kem-bench&method=in-process&assurance=host": all,
	} {
		r := fetch(t, p.URL+"/runs?"+q)
		var exp []string
		for _, id := range wantIDs {
			exp = append(exp, fmt.Sprint(id))
		}
		if got := pageRuns(r.body); r.code != 200 || !slices.Equal(got, exp) {
			t.Errorf("/runs?%s: %d %v, want %v", q, r.code, got, exp)
		}
	}
	// Bad filters are refused, naming the filter.
	for path, word := range map[string]string{
		"/runs?assurance=cloud":               "assurance",
		"/runs?origin=lab":                    "filter origin",
		"/jobs?origin=community":              "origin",
		"/runs?from=yesterday":                "from",
		"/runs?from=2026-02-01&to=2026-01-01": "after to",
		"/runs?after=12":                      "cursor",
		"/runs?limit=0":                       "limit",
		"/runs?state=failed":                  "state",
		"/jobs?algorithm=ML-KEM-768":          "algorithm",
		"/compare?runs=1,2,3,4":               "one to three",
		"/compare?runs=x":                     "not a run id",
		"/api/v1/runs?assurance=x":            "assurance",
	} {
		if r := fetch(t, p.URL+path); r.code != 400 || !strings.Contains(r.body, word) {
			t.Errorf("GET %s: %d %q, want 400 naming %q", path, r.code, r.body, word)
		}
	}

	// The JSON API: the same array as before, the next page in a Link header.
	r := fetch(t, p.URL+"/api/v1/runs?limit=3")
	var page []struct {
		ID   int64  `json:"id"`
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(r.body), &page); err != nil || len(page) != 3 || page[0].ID != all[0] || page[0].Kind != "kem-bench" {
		t.Fatalf("api page: %v %s", err, r.body)
	}
	link := r.header.Get("Link")
	m := regexp.MustCompile(`^<(/api/v1/runs\?[^>]+)>; rel="next"$`).FindStringSubmatch(link)
	if m == nil || r.header.Get("X-Next-Cursor") == "" {
		t.Fatalf("no next link: %q", link)
	}
	r = fetch(t, p.URL+m[1])
	if err := json.Unmarshal([]byte(r.body), &page); err != nil || len(page) != 1 || page[0].ID != all[3] || r.header.Get("Link") != "" {
		t.Fatalf("api second page: %v %s %q", err, r.body, r.header.Get("Link"))
	}
	// An out-of-range limit is 100, as it always was.
	if r := fetch(t, p.URL+"/api/v1/runs?limit=100000"); r.code != 200 || strings.Count(r.body, `"id":`) != 4 {
		t.Errorf("limit 100000: %d %s", r.code, r.body)
	}
	r = fetch(t, p.URL+"/api/v1/runs?submitter=lab-b&format=csv")
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if err != nil || len(recs) != 2 || recs[0][0] != "id" || recs[1][0] != fmt.Sprint(b[0]) || recs[1][10] != "lab-b" {
		t.Fatalf("csv: %v %q", err, r.body)
	}
	// Jobs: none queued here, the list says so; the JSON list is an empty array.
	if r := fetch(t, p.URL+"/jobs?state=queued"); r.code != 200 || !strings.Contains(r.body, "No job matches") {
		t.Errorf("/jobs: %d", r.code)
	}
	if r := fetch(t, p.URL+"/api/v1/jobs"); r.code != 200 || strings.TrimSpace(r.body) != "[]" {
		t.Errorf("/api/v1/jobs: %d %s", r.code, r.body)
	}
	// A queued job is listed, filtered by state and board, as HTML, JSON and CSV.
	job := queueJob(t, p, smallManifest(t, 3))
	for path, w := range map[string]string{
		"/jobs?state=queued&board=host":                     fmt.Sprintf(`href="/jobs/%d"`, job),
		"/api/v1/jobs?state=queued":                         fmt.Sprintf(`"id":%d`, job),
		"/api/v1/jobs?experiment=paper001/mlkem&format=csv": fmt.Sprintf("%d,/jobs/%d,paper001,paper001/mlkem,host,in-process,queued,", job, job),
		"/api/v1/jobs?state=published&format=csv":           "id,url,paper",
	} {
		if r := fetch(t, p.URL+path); r.code != 200 || !strings.Contains(r.body, w) {
			t.Errorf("GET %s: %d lacks %q: %s", path, r.code, w, r.body)
		}
	}
	if r := fetch(t, p.URL+"/api/v1/jobs?state=published"); strings.Contains(r.body, `"id"`) {
		t.Errorf("a queued job listed as published: %s", r.body)
	}

	// The scheme table: every scheme x operation on host, linked to the runs behind it.
	r = fetch(t, p.URL+"/schemes?assurance=host&board=host")
	for _, w := range []string{"ML-KEM-512", "ML-KEM-1024", "decaps", `class="num median"`, `href="/runs?algorithm=ML-KEM-768&amp;assurance=host&amp;board=host">4</a>`,
		`class="chart intervals"`, "<title>"} {
		if r.code != 200 || !strings.Contains(r.body, w) {
			t.Errorf("/schemes lacks %q", w)
		}
	}
	if r := fetch(t, p.URL+"/schemes"); r.code != 200 || !strings.Contains(r.body, `<option value="host/host" selected>`) {
		t.Errorf("/schemes without a choice should pick host/host: %d", r.code)
	}

	// Compare: intervals computed once and stored; a second request reads them, even with
	// the bundles gone.
	cmp := fmt.Sprintf("/compare?runs=%d,%d", a[0], b[0])
	first := fetch(t, p.URL+cmp)
	if first.code != 200 {
		t.Fatalf("compare: %d %s", first.code, first.body)
	}
	for _, w := range []string{"Cells side by side", "ML-KEM-768 encaps", "95%: ", "B / A", `class="chart intervals"`, `class="chart boxplot"`,
		"whiskers at 1.5×IQR", "against paper001"} {
		if !strings.Contains(first.body, w) {
			t.Errorf("compare page lacks %q", w)
		}
	}
	if !strings.Contains(first.body, "within the noise") && !strings.Contains(first.body, "beyond the noise") {
		t.Errorf("compare page gives no verdict on the noise")
	}
	if n, err := p.Server.Store().PairReports(context.Background()); err != nil || n != 1 {
		t.Fatalf("stored pair reports: %d %v", n, err)
	}
	blobs := filepath.Join(p.Config.DataDir, "blobs")
	if err := os.RemoveAll(blobs); err != nil {
		t.Fatal(err)
	}
	second := fetch(t, p.URL+cmp)
	ratios := regexp.MustCompile(`95%: [0-9.]+ – [0-9.]+`)
	if second.code != 200 || !slices.Equal(ratios.FindAllString(first.body, -1), ratios.FindAllString(second.body, -1)) {
		t.Fatalf("second compare (bundles removed): %d, intervals differ", second.code)
	}
	if n, _ := p.Server.Store().PairReports(context.Background()); n != 1 {
		t.Errorf("a second request stored again: %d reports", n)
	}
	// A pair never compared needs the bundles: without them it fails rather than inventing.
	if r := fetch(t, p.URL+fmt.Sprintf("/compare?runs=%d,%d", a[1], b[0])); r.code < 400 || strings.Contains(r.body, "95%") {
		t.Errorf("uncomputed pair without bundles: %d", r.code)
	}
	// The same stored report as JSON.
	var api struct {
		Pairs []portal.PairReport `json:"pairs"`
	}
	if r := fetch(t, p.URL+strings.Replace(cmp, "/compare", "/api/v1/compare", 1)); r.code != 200 || json.Unmarshal([]byte(r.body), &api) != nil ||
		len(api.Pairs) != 1 || api.Pairs[0].A != a[0] || api.Pairs[0].B != b[0] || api.Pairs[0].Version != portal.PairCodeVersion || len(api.Pairs[0].Cells) != 9 {
		t.Errorf("api compare: %d %s", r.code, r.body)
	} else {
		for _, pc := range api.Pairs[0].Cells {
			if pc.Reason == "" && !(pc.Lo <= pc.Point && pc.Point <= pc.Hi && pc.Verdict != "") {
				t.Errorf("cell %s %s: interval %v [%v, %v] verdict %q", pc.Algorithm, pc.Operation, pc.Point, pc.Lo, pc.Hi, pc.Verdict)
			}
		}
	}
	// One run: against its paper only.
	if r := fetch(t, p.URL+fmt.Sprintf("/compare?run=%d", a[0])); r.code != 200 || !strings.Contains(r.body, "against paper001") || strings.Contains(r.body, "Cells side by side") {
		t.Errorf("one-run compare: %d", r.code)
	}

	// The leaderboard picker offers only pairs that exist.
	r = fetch(t, p.URL+"/leaderboards?pair=ML-KEM-768/decaps")
	if r.code != 200 || !strings.Contains(r.body, `<option value="ML-KEM-768/decaps" selected>`) || strings.Contains(r.body, `value="ML-KEM-768/sign"`) ||
		!strings.Contains(r.body, `value="ML-DSA-65/sign"`) {
		t.Errorf("leaderboard picker: %d", r.code)
	}
}
