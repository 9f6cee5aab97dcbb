package portal_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// pagePlanIndexes is, for every query behind a page (sqlstore's pageQueries), the index its
// plan must use: each entry one index that must appear, "a|b" when either serves it, "pk:t"
// for table t's primary key. The summaries (run counts, claim tallies) are not listed here.
var pagePlanIndexes = map[string][]string{
	"home runs":                  {"runs_list"},
	"home jobs running":          {"jobs_list_state"},
	"home jobs queued":           {"jobs_list_state"},
	"runners":                    {"runners_last_seen"},
	"paper runs":                 {"runs_list_paper"},
	"paper next claim":           {"claim_verdicts_latest|claim_verdicts_paper"},
	"paper claim verdicts":       {"claim_verdicts_latest", "pk:runs"},
	"board runs":                 {"runs_list_board"},
	"experiment runs":            {"runs_list_experiment"},
	"experiment jobs":            {"jobs_list_experiment"},
	"firmware builds":            {"firmware_list"},
	"firmware builds of a board": {"firmware_list_board"},
	"run":                        {"pk:runs"},
	"run cells":                  {"pk:cells"},
	"run verdicts":               {"pk:claim_verdicts"},
	"run signer revoked":         {"pk:runners", "unique:submitter_keys"},
	"run log entry":              {"pk:log_entries"},
	"leaderboard algorithms":     {"cells_leaderboard|cells_rank"},
	"leaderboard":                {"cells_rank"},
	"leaderboard median":         {"cells_rank|cells_scheme"}, // both lead with its equalities, then median
	"schemes boards":             {"runs_board_level"},
	"schemes":                    {"cells_scheme"},
	"runs":                       {"runs_list"},
	"runs by paper":              {"runs_list_paper"},
	"runs by experiment":         {"runs_list_experiment"},
	"runs by board":              {"runs_list_board"},
	"runs by assurance":          {"runs_list_level"},
	"runs by kind":               {"runs_list_kind"},
	"runs by method":             {"runs_list_method"},
	"runs by submitter":          {"runs_list_submitter"},
	"runs by algorithm":          {"runs_list", "cells_run_algorithm|pk:cells"},
	"runs rows":                  {"pk:runs"},
	"runs facet paper":           {"runs_list_paper|runs_paper"},
	"runs facet experiment":      {"runs_list_experiment|runs_experiment"},
	"runs facet board_class":     {"runs_list_board|runs_board|runs_board_level"},
	"runs facet level":           {"runs_list_level"},
	"runs facet kind":            {"runs_list_kind"},
	"runs facet method":          {"runs_list_method"},
	"jobs":                       {"jobs_list"},
	"jobs by paper":              {"jobs_list_paper"},
	"jobs by experiment":         {"jobs_list_experiment"},
	"jobs by board":              {"jobs_list_board"},
	"jobs by state":              {"jobs_list_state"},
	"jobs by method":             {"jobs_list_method"},
	"compare report":             {"pk:run_pair_intervals"},
	"job":                        {"pk:jobs"},
	"jobs rows":                  {"pk:jobs"},
	"users":                      {"pk:users"},
	"enrolment tokens":           {"pk:enrol_tokens", "runners_enrol_token"},
	"submitter keys":             {"pk:submitter_keys"},
	"submitter keys of a user":   {"submitter_keys_user"},
}

// sortFree are the page queries whose order an index gives: their plans sort nothing.
var sortFree = []string{"home runs", "home jobs running", "home jobs queued", "runners", "paper runs", "paper claim verdicts", "board runs",
	"experiment runs", "experiment jobs", "firmware builds", "firmware builds of a board", "run cells", "leaderboard median",
	"runs", "runs by paper", "runs by experiment", "runs by board", "runs by assurance", "runs by kind", "runs by method", "runs by submitter",
	"runs by algorithm", "jobs", "jobs by paper", "jobs by experiment", "jobs by board", "jobs by state", "jobs by method",
	"users", "enrolment tokens", "submitter keys", "submitter keys of a user"}

// growing are the tables that grow with published runs and queued jobs: no page query
// reads one whole.
var growing = []string{"runs", "cells", "claim_verdicts", "jobs", "log_entries"}

func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// seedPlans seeds the store as a portal that ran for a while: n runs, most from leased jobs
// (each with four cells from 72 (algorithm, operation) pairs and two claim verdicts) over
// eight papers, sixteen experiments and three board classes, and then a tail of n/40 runs
// with values no other run has (paper009, its experiment, the board rpi4-b at hardware
// assurance, the tls-matrix kind, the openssl-cli method, one submitter) and a few jobs
// still queued or running: the newest run and job, whose values PagePlans explains the
// queries with. A filter on a rare value is the case a filter's index exists for (a common
// one finds its page in the time order anyway). Accounts, runners (each enrolled with a
// token of its own), submitter keys, enrolment tokens and firmware builds come by the
// hundred, more than an administrator's list shows; every other run has a stored comparison.
func seedPlans(t *testing.T, st store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	admin, err := st.CreateUser(ctx, "plan-admin", store.RoleAdmin, "plan-admin-hash")
	if err != nil {
		t.Fatal(err)
	}
	accounts := 8 * store.AdminList
	var users []int64
	var runners []int64
	var keys []identity.PublicKeys
	for i := range accounts {
		u, err := st.CreateUser(ctx, fmt.Sprintf("member-%04d", i), store.RoleSubmitter, fmt.Sprintf("member-token-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, u.ID)
		tok := fmt.Sprintf("enrol-%d", i)
		if _, err := st.CreateEnrolToken(ctx, fmt.Sprintf("token %d", i), tok, admin.ID, store.EnrolTokenOptions{MaxUses: 1}); err != nil {
			t.Fatal(err)
		}
		board := []string{"host", "qemu-mps2-an386"}[i%2]
		if i >= accounts-20 {
			board = "rpi4-b"
		}
		if err := st.AddFirmware(ctx, store.Firmware{Digest: digestOf(fmt.Sprint("fw", i)), Filename: "fw.bin", Size: 1024, BoardClass: board, Toolchain: "gcc"}, admin.ID); err != nil {
			t.Fatal(err)
		}
		rid, err := identity.GenerateIdentity()
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := st.Enrol(ctx, store.Enrolment{EnrolTokenHash: tok, Name: fmt.Sprintf("runner-%d", i), Version: "test",
			Keys: rid.Public(), NewTokenHash: fmt.Sprintf("runner-token-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		runners = append(runners, r)
		kid, err := identity.GenerateIdentity()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddSubmitterKey(ctx, u.ID, "laptop", kid.Public()); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, kid.Public())
	}
	var pairs [][2]string
	for a := range 24 {
		for _, op := range []string{"keygen", "encaps", "decaps"} {
			pairs = append(pairs, [2]string{fmt.Sprintf("ALG-%02d", a), op})
		}
	}
	boards := [][2]string{{"host", "host"}, {"qemu-mps2-an386", "emulated"}, {"qemu-virt-a53", "emulated"}}
	tail := n - n/40
	for i := range n {
		paper := fmt.Sprintf("paper%03d", 1+i%8)
		exp := paper + "/" + []string{"kem", "sig"}[i/8%2]
		kind, method, b := []string{"kem-bench", "sig-bench"}[i/8%2], "in-process", boards[i%7%3]
		submitter := int64(0)
		if i%3 == 0 {
			submitter = users[i%(accounts-1)]
		}
		if i >= tail {
			paper, exp, kind, method, b, submitter = "paper009", "paper009/tls", "tls-matrix", "openssl-cli", [2]string{"rpi4-b", "hardware"}, users[accounts-1]
		}
		k := keys[i%accounts]
		run := store.Run{Experiment: exp, Paper: paper, ManifestID: "sha256:m", Kind: artifacts.Kind(kind), Method: artifacts.Method(method), BoardClass: b[0], BoardName: b[0],
			Level: artifacts.Level(b[1]), Origin: "community", Signer: k.Fingerprint(), PublicKeys: k, Bundle: digestOf(fmt.Sprint("run", i)),
			StartedAt: time.Now(), FinishedAt: time.Now(), Environment: "{}", Report: "{}", Checks: "[]", CellsTotal: 4, CellsOK: 4, SubmitterID: submitter}
		pub := store.Publication{Run: run}
		for c := range 4 {
			ao := pairs[(i*4+c)%len(pairs)]
			pub.Cells = append(pub.Cells, artifacts.Cell{Algorithm: ao[0], Operation: ao[1], Status: artifacts.StatusOK, Unit: "ns",
				Stats: &artifacts.Stats{N: 5, Min: 1, P25: 2, Median: float64(10 + i%97), P75: 4, Max: 5, Mean: 3}})
		}
		for c := range 2 {
			pub.Claims = append(pub.Claims, store.ClaimVerdict{Paper: paper, ClaimID: fmt.Sprintf("C-%s-%02d", paper, c+1), Verdict: "holds", Reason: "r", ClassStatus: "declared"})
		}
		if submitter == 0 {
			// A portal runner's run: queued as a job, leased and published through it.
			rid := runners[i%len(runners)]
			jid, err := st.CreateJob(ctx, store.NewJob{Experiment: exp, Paper: paper, ManifestYAML: "kind: x", ManifestID: "sha256:m", BoardClass: b[0], Method: artifacts.Method(method), RequestedBy: admin.ID})
			if err != nil {
				t.Fatal(err)
			}
			lease := fmt.Sprint("lease-", i)
			if _, err := st.LeaseJob(ctx, rid, []string{b[0]}, nil, []string{b[0]}, lease, lease, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			pub.JobID, pub.RunnerID, pub.LeaseID, pub.Run.RunnerID = jid, rid, lease, rid
		}
		rid, err := st.Publish(ctx, pub)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			// A comparison someone asked for: the run against the one before.
			if err := st.SavePairReport(ctx, rid-1, rid, "v1", "{}"); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Jobs in progress: a few running, then a few queued (the newest job).
	for i := range 30 {
		if _, err := st.CreateJob(ctx, store.NewJob{Experiment: "paper009/tls", Paper: "paper009", ManifestYAML: "kind: x", ManifestID: "sha256:m",
			BoardClass: "rpi4-b", Method: "openssl-cli", RequestedBy: admin.ID}); err != nil {
			t.Fatal(err)
		}
		if i < 10 {
			lease := fmt.Sprint("lease-tail-", i)
			if _, err := st.LeaseJob(ctx, runners[i], []string{"rpi4-b"}, nil, []string{"rpi4-b"}, lease, lease, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
}

// aliases are the names page queries give tables, as SQLite's plans call them.
var aliases = map[string]string{"runs": "r", "jobs": "j", "cells": "c", "claim_verdicts": "v", "users": "u", "submitter_keys": "k",
	"enrol_tokens": "t", "runners": "rn", "firmware": "f"}

// planUses reports whether plan names index (see pagePlanIndexes) in SQLite's or
// PostgreSQL's words. A SQLite rowid table's primary key is "INTEGER PRIMARY KEY", or a
// plain SCAN in rowid order (the sortFree check then says nothing is sorted).
func planUses(plan, index string) bool {
	match := func(re string) bool { return regexp.MustCompile(re).MatchString(plan) }
	if t, ok := strings.CutPrefix(index, "pk:"); ok {
		name := `(` + t + `|` + aliases[t] + `)` // every table with a primary key here has an alias
		return match(`\b`+t+`_pkey\b`) || match(`\bsqlite_autoindex_`+t+`_1\b`) ||
			match(`SEARCH `+name+` USING INTEGER PRIMARY KEY`) || match(`SCAN `+name+`(;|$)`)
	}
	if t, ok := strings.CutPrefix(index, "unique:"); ok {
		return match(`\b` + t + `_\w+_key\b|\bsqlite_autoindex_` + t + `_\d\b`)
	}
	return match(`\b` + regexp.QuoteMeta(index) + `\b`)
}

// fullScan names a growing table the plan reads whole (a table or index scan with no
// condition), or "".
func fullScan(plan string) string {
	for _, t := range growing {
		name := t
		if a := aliases[t]; a != "" {
			name += "|" + a
		}
		if strings.Contains(plan, "Seq Scan on "+t) || regexp.MustCompile(`SCAN (`+name+`)\b`).MatchString(plan) {
			return t
		}
	}
	return ""
}

// TestPagePlansUseTheirIndexes seeds a few thousand runs through the store, runs ANALYZE and
// checks that every query behind a page (home, papers, boards, experiments, runs, the
// leaderboards and schemes, /runs and /jobs with each filter, the JSON API, the administrator's
// lists) is planned on its named index, sorts nothing where an index gives the order, and
// reads no growing table whole. On PostgreSQL when PQREPRO_TEST_DATABASE=postgres.
func TestPagePlansUseTheirIndexes(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 1200
	}
	p := portaltest.Start(t, nil)
	st := p.Server.Store()
	seedPlans(t, st, n)
	// The administrator's lists hold their newest rows and say they are partial.
	b := newBrowser(t, p.URL)
	b.signIn(p.AdminToken)
	if code, body := b.get("/admin"); code != 200 || !strings.Contains(body, `id="admin-list-note"`) ||
		strings.Count(body, `action="/admin/users/`) != store.AdminList || !strings.Contains(body, fmt.Sprintf("member-%04d", 8*store.AdminList-1)) {
		t.Errorf("admin page: %d, note %v, %d account rows (want %d, the newest first)", code, strings.Contains(body, "admin-list-note"),
			strings.Count(body, `action="/admin/users/`), store.AdminList)
	}
	plans, err := st.PagePlans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name := range plans {
		if _, ok := pagePlanIndexes[name]; !ok {
			t.Errorf("page query %q has no expected index in pagePlanIndexes", name)
		}
	}
	engine := "SQLite"
	if os.Getenv("PQREPRO_TEST_DATABASE") == "postgres" {
		engine = "PostgreSQL"
	}
	for name, want := range pagePlanIndexes {
		plan, ok := plans[name]
		if !ok {
			t.Errorf("no plan of %q", name)
			continue
		}
		if testing.Verbose() {
			t.Logf("%s %s: %s", engine, name, plan)
		}
		for _, w := range want {
			if !slices.ContainsFunc(strings.Split(w, "|"), func(ix string) bool { return planUses(plan, ix) }) {
				t.Errorf("%s: %s: plan %q does not use %s", engine, name, plan, w)
			}
		}
		// PostgreSQL reads a range it estimates small (a rare value's rows) through a bitmap
		// of the index and sorts those rows: accepted when the bitmap is the expected index.
		bitmapOfIndex := slices.ContainsFunc(strings.Split(want[0], "|"), func(ix string) bool {
			return strings.Contains(plan, "Bitmap Index Scan using "+ix)
		})
		if slices.Contains(sortFree, name) && (strings.Contains(plan, "TEMP B-TREE") || regexp.MustCompile(`(^|; )(Incremental )?Sort\b`).MatchString(plan) && !bitmapOfIndex) {
			t.Errorf("%s: %s: plan %q sorts what its index orders", engine, name, plan)
		}
		if tbl := fullScan(plan); tbl != "" {
			t.Errorf("%s: %s: plan %q reads all of %s", engine, name, plan, tbl)
		}
	}
}
