package portal_test

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/runner/portalclient"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden/*.html from the pages as they render now")

// goldenClock is the portal's clock in the golden test: every publication, age and expiry
// is measured against it.
var goldenClock = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// goldenBundles are real bundles recorded once with the pqrepro binary and a test identity whose
// public keys are testdata/golden/runner.pub.json (see testdata/golden/README.md), published in this order: run 1 is
// the first.
var goldenBundles = []string{"host-mlkem", "host-mldsa", "tls", "board-mlkem", "host-mlkem-2", "board-tls"}

// goldenKeyFiles are the public keys of the identities that recorded the bundles (board-tls was
// recorded later, by another identity, when the boards gained a TLS client).
var goldenKeyFiles = []string{"runner.pub.json", "runner-board-tls.pub.json"}

// goldenPages are the pages a reader reaches, each rendered for an anonymous reader unless
// signedIn.
var goldenPages = []struct {
	name, path string
	signedIn   bool
}{
	{"home", "/", false},
	{"paper001", "/papers/paper001", false},
	{"paper000", "/papers/paper000", false},
	{"energy", "/papers/paper002/energy?board=rpi1-b", false},
	{"run-host", "/runs/1", false},
	{"run-host-sig", "/runs/2", false},
	{"run-tls", "/runs/3", false},
	{"run-board", "/runs/4", false},
	{"run-board-tls", "/runs/6", false},
	{"log-host", "/runs/1/log", false},
	{"log-board", "/runs/4/log", false},
	{"runs", "/runs", false},
	{"schemes", "/schemes", false},
	{"schemes-board", "/schemes?at=emulated/qemu-mps2-an386", false},
	{"pqm4", "/datasets/pqm4", false},
	{"pqm4-kem-768", "/datasets/pqm4?family=kem&scheme=ml-kem-768", false},
	{"leaderboards", "/leaderboards", false},
	{"leaderboard-encaps", "/leaderboards?algorithm=ML-KEM-768&operation=encaps", false},
	{"leaderboard-energy", "/leaderboards?algorithm=ML-KEM-768&operation=encaps&metric=energy", false},
	{"compare", "/compare?runs=1,4", false},
	{"compare-three", "/compare?runs=1,5,4", false},
	{"compare-one", "/compare?runs=2", false},
	{"boards", "/boards", false},
	{"jobs", "/jobs", false},
	{"log", "/log", false},
	{"experiment", "/experiments/paper001/mlkem", false},
	{"experiment-rerun-tls", "/experiments/paper000/matrix-stacks", true},
}

// goldenVarying matches what differs from one rendering to the next although nothing
// changed: the masked CSRF token of forms, and the log key of the test's fresh portal.
var goldenVarying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`name="_csrf" value="[^"]+"`), `name="_csrf" value="CSRF"`},
	{regexp.MustCompile(`name="csrf-token" content="[^"]+"`), `name="csrf-token" content="CSRF"`},
	// the log's verifier key: each test portal makes its own log key.
	{regexp.MustCompile(`/log\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*`), `/log+LOGKEY`},
}

// TestGoldenPages publishes real recorded bundles into a fresh portal with a fixed clock and
// compares the main pages byte for byte with testdata/golden/<page>.html (go test -run
// TestGoldenPages -update rewrites them). Bundle signatures are hedged, so the recorded files
// are published as they are, never re-signed: their digests, and every page, stay the same.
func TestGoldenPages(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) {
		c.Now = func() time.Time { return goldenClock }
		c.PageCacheBytes = 0
	})
	ctx := context.Background()
	tok := "sub-token-golden-lab-0123456789"
	u, err := p.Server.Store().CreateUser(ctx, "golden-lab", "submitter", portal.HashToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range goldenKeyFiles {
		pubJSON, err := os.ReadFile(filepath.Join("testdata", "golden", f))
		if err != nil {
			t.Fatal(err)
		}
		var keys identity.PublicKeys
		if err := json.Unmarshal(pubJSON, &keys); err != nil {
			t.Fatal(err)
		}
		name := "test"
		if i > 0 {
			name = strings.TrimSuffix(f, ".pub.json")
		}
		if _, err := p.Server.Store().AddSubmitterKey(ctx, u.ID, name, keys); err != nil {
			t.Fatal(err)
		}
	}
	sub := portalclient.NewSubmitter(p.URL, tok)
	for i, name := range goldenBundles {
		data, err := os.ReadFile(filepath.Join("testdata", "golden", "bundles", name+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := sub.Submit(ctx, data)
		if err != nil {
			t.Fatalf("submit %s: %v", name, err)
		}
		if got.RunID != int64(i+1) {
			t.Fatalf("%s was published as run %d, want %d", name, got.RunID, i+1)
		}
	}
	if err := p.Server.RefreshHighlights(ctx); err != nil {
		t.Fatal(err)
	}
	anon := newBrowser(t, p.URL)
	for _, pg := range goldenPages {
		t.Run(pg.name, func(t *testing.T) {
			b := anon
			if pg.signedIn {
				// Signed in just before the page, which shows the sign-in's flash: the flash
				// cookie lives 60 s of real time, and a loaded machine takes longer than that
				// to render the pages before this one.
				b = newBrowser(t, p.URL)
				b.signIn(p.AdminToken)
			}
			b.t = t
			code, body := b.get(pg.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", pg.path, code)
			}
			if w := repeatedWord(body); w != "" {
				t.Errorf("GET %s shows a word twice in a row: %q", pg.path, w)
			}
			if w := levelTwice(body); w != "" {
				t.Errorf("GET %s shows a board's name beside the same level word: %q", pg.path, w)
			}
			for _, v := range goldenVarying {
				body = v.re.ReplaceAllString(body, v.with)
			}
			file := filepath.Join("testdata", "golden", pg.name+".html")
			if *updateGolden {
				if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./portal -run TestGoldenPages -update writes it)", err)
			}
			if body != string(want) {
				t.Errorf("GET %s differs from %s:\n%s", pg.path, file, firstDifference(string(want), body))
			}
		})
	}
}

// firstDifference shows where got first departs from want: the line and the text around
// the first differing byte.
func firstDifference(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	line := strings.Count(want[:i], "\n") + 1
	around := func(s string) string {
		from, to := max(i-150, 0), min(i+150, len(s))
		return strings.ToValidUTF8(s[from:to], "�")
	}
	return "line " + itoa(int64(line)) + ", byte " + itoa(int64(i)) + ":\n  want: …" + around(want) + "…\n  got:  …" + around(got) + "…"
}
