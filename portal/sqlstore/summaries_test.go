package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/portal/postgres"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/sqlite"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// summaryStore is a store with the shared SQL exposed, so a test can read the tables.
type summaryStore interface {
	store.Store
	Read() *sqlstore.Conn
	Write() *sqlstore.Conn
}

// engines opens a fresh store on each engine: a SQLite file, and a PostgreSQL database from
// pgtest (skipped, with the reason, where PostgreSQL cannot start).
var engines = []struct {
	// migration adds the summaries; tallies is the later one that refills the claim tallies
	// per origin.
	name, migration, tallies string
	open                     func(t *testing.T) summaryStore
}{
	{"sqlite", "../sqlite/migrations/0015_summaries.sql", "../sqlite/migrations/0020_implementation.sql", func(t *testing.T) summaryStore {
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "portal.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", "../postgres/migrations/0003_summaries.sql", "../postgres/migrations/0008_implementation.sql", func(t *testing.T) summaryStore {
		st, err := postgres.Open(context.Background(), pgtest.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

var (
	boards = []struct {
		class string
		level artifacts.Level
	}{{"host", "host"}, {"qemu-mps2-an386", "emulated"}, {"rpi4-b", "hardware"}, {"pico-w", "hardware"}}
	papers   = []string{"paper001", "paper002", "paper003"}
	verdicts = []string{"holds", "fails", "inconclusive", "untestable", "partly-testable"}
	kinds    = []artifacts.Kind{"kem-bench", "sig-bench", "tls-matrix"}
	methods  = []artifacts.Method{artifacts.MethodInProcess, artifacts.MethodProcessPerOperation}
)

// addRunners stores n runners directly (enrolment is not what is tested) and returns their ids.
func addRunners(t *testing.T, st summaryStore, n int) []int64 {
	t.Helper()
	var ids []int64
	for i := range n {
		var id int64
		err := st.Write().QueryRowContext(context.Background(), `INSERT INTO runners (name, fingerprint, public_keys, boards, token_hash, version, created_at, last_seen)
			VALUES (?, ?, '{}', '[]', ?, 'test', 0, 0) RETURNING id`, fmt.Sprintf("r%d", i), fmt.Sprintf("fp%d", i), fmt.Sprintf("tok%d", i)).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// randomClaims is a random subset of a paper's claims (C01..C06) with random verdicts.
func randomClaims(rng *rand.Rand, paper string) []store.ClaimVerdict {
	var out []store.ClaimVerdict
	for c := range 6 {
		if rng.IntN(3) == 0 {
			continue
		}
		status := artifacts.ClassVerified
		if rng.IntN(4) == 0 {
			status = artifacts.ClassDeclared
		}
		out = append(out, store.ClaimVerdict{Paper: paper, ClaimID: fmt.Sprintf("C%02d", c), Verdict: verdicts[rng.IntN(len(verdicts))], Reason: "r", ClassStatus: status})
	}
	return out
}

// randomPublication is a run on a random board of a random paper, with random verdicts,
// from one of runners or uploaded (no runner).
func randomPublication(rng *rand.Rand, runners []int64, bundle string) store.Publication {
	b := boards[rng.IntN(len(boards))]
	paper := papers[rng.IntN(len(papers))]
	var runner int64
	if rng.IntN(4) != 0 {
		runner = runners[rng.IntN(len(runners))]
	}
	now := time.Now()
	return store.Publication{Run: store.Run{Experiment: fmt.Sprintf("%s/e%d", paper, rng.IntN(3)), Paper: paper, ManifestID: "sha256:x",
		Kind: kinds[rng.IntN(len(kinds))], Method: methods[rng.IntN(len(methods))], BoardClass: b.class, BoardName: b.class, Level: b.level,
		ClassStatus: artifacts.ClassVerified, Origin: "community", RunnerID: runner, Signer: "s", Bundle: bundle,
		StartedAt: now, FinishedAt: now, Environment: "{}", Report: "{}", Checks: "[]"}, Claims: randomClaims(rng, paper)}
}

// summaries is every maintained counter: the sum of its rows.
type summaries struct {
	Tallies, Boards, Counts []string
}

func readSummaries(t *testing.T, st summaryStore) summaries {
	t.Helper()
	var s summaries
	for _, q := range []struct {
		dst   *[]string
		query string
	}{
		{&s.Tallies, `SELECT paper || '|' || claim_id || '|' || origin || '|' || level || '|' || board_class || '|' || class_status || '|' || verdict || '=' || CAST(SUM(n) AS TEXT)
			FROM claim_tallies GROUP BY paper, claim_id, origin, level, board_class, class_status, verdict HAVING SUM(n) <> 0 ORDER BY 1`},
		{&s.Boards, `SELECT board_class || '|' || level || '=' || CAST(SUM(n) AS TEXT) FROM board_counts GROUP BY board_class, level HAVING SUM(n) <> 0 ORDER BY 1`},
		{&s.Counts, `SELECT dimension || '|' || key || '=' || CAST(SUM(n) AS TEXT) FROM run_counts GROUP BY dimension, key HAVING SUM(n) <> 0 ORDER BY 1`},
	} {
		rows, err := st.Read().QueryContext(context.Background(), q.query)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			*q.dst = append(*q.dst, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// checkAgainstRebuild asserts the maintained counters equal a recomputation from the runs
// (RebuildSummaries), and the store's readers equal the recomputing queries the pages ran
// before the counters existed (kept here as the oracle).
func checkAgainstRebuild(t *testing.T, st summaryStore, wantRuns int) {
	t.Helper()
	ctx := context.Background()
	maintained := readSummaries(t, st)
	for _, paper := range papers {
		got, err := st.ClaimTallies(ctx, paper)
		if err != nil {
			t.Fatal(err)
		}
		if want := oracleTallies(t, st, paper); !reflect.DeepEqual(got, want) {
			t.Errorf("claim tallies of %s:\n got %+v\nwant %+v", paper, got, want)
		}
	}
	got, err := st.BoardCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := oracleBoards(t, st); !reflect.DeepEqual(got, want) {
		t.Errorf("board counts:\n got %+v\nwant %+v", got, want)
	}
	counts, err := st.RunCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != wantRuns {
		t.Errorf("run counts per paper sum to %d, %d runs were published", total, wantRuns)
	}
	removed, err := st.CompactSummaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compacted := readSummaries(t, st)
	if !reflect.DeepEqual(maintained, compacted) {
		t.Errorf("compaction changed the summaries:\n    before %v\ncompacted %v", maintained, compacted)
	}
	if n := summaryRows(t, st); n != len(compacted.Tallies)+len(compacted.Boards)+len(compacted.Counts) {
		t.Errorf("%d counter rows after compaction (%d removed), %d counters", n, removed, len(compacted.Tallies)+len(compacted.Boards)+len(compacted.Counts))
	}
	if err := st.RebuildSummaries(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt := readSummaries(t, st)
	if !reflect.DeepEqual(maintained, rebuilt) {
		t.Errorf("maintained summaries differ from the rebuild:\nmaintained %v\n   rebuilt %v", maintained, rebuilt)
	}
	if len(rebuilt.Tallies) == 0 || len(rebuilt.Boards) == 0 || len(rebuilt.Counts) == 0 {
		t.Errorf("nothing to compare: %+v", rebuilt)
	}
}

// summaryRows counts the rows of the counter tables.
func summaryRows(t *testing.T, st summaryStore) int {
	t.Helper()
	total := 0
	for _, table := range []string{"claim_tallies", "board_counts", "run_counts"} {
		var n int
		if err := st.Read().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// oracleTallies is ClaimTallies as it was computed before the counters: over every verdict.
func oracleTallies(t *testing.T, st summaryStore, paper string) []store.ClaimTally {
	rows, err := st.Read().QueryContext(context.Background(), `SELECT v.claim_id, r.origin, r.board_class, r.level, v.class_status, v.verdict, COUNT(*)
		FROM claim_verdicts v JOIN runs r ON r.id = v.run_id WHERE v.paper = ?
		GROUP BY v.claim_id, r.origin, r.level, r.board_class, v.class_status, v.verdict
		ORDER BY v.claim_id, r.origin, r.level, r.board_class, v.class_status, v.verdict`, paper)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.ClaimTally
	for rows.Next() {
		var c store.ClaimTally
		if err := rows.Scan(&c.ClaimID, &c.Origin, &c.BoardClass, &c.Level, &c.ClassStatus, &c.Verdict, &c.Runs); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// oracleBoards is BoardCounts as it was computed before the counters.
func oracleBoards(t *testing.T, st summaryStore) []store.BoardCount {
	rows, err := st.Read().QueryContext(context.Background(), `SELECT board_class, COUNT(*), MIN(level) FROM runs GROUP BY board_class ORDER BY board_class`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.BoardCount
	for rows.Next() {
		var b store.BoardCount
		if err := rows.Scan(&b.BoardClass, &b.Runs, &b.Levels); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestSummariesMatchRebuild publishes random runs (random boards, papers, kinds, methods,
// runners and verdicts), revokes some runners, re-derives some runs' verdicts (SaveRebuilt)
// and checks after each step that the maintained counters equal the recomputation.
func TestSummariesMatchRebuild(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			st := e.open(t)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(14, 1))
			runners := addRunners(t, st, 4)
			var ids []int64
			for i := range 120 {
				id, err := st.Publish(ctx, randomPublication(rng, runners, fmt.Sprintf("sha256:%064d", i)))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			checkAgainstRebuild(t, st, len(ids))
			// A duplicate publication is refused and counts nothing.
			if _, err := st.Publish(ctx, randomPublication(rng, runners, fmt.Sprintf("sha256:%064d", 3))); err == nil {
				t.Fatal("a duplicate bundle was published")
			}
			for _, r := range runners[:2] {
				if err := st.RevokeRunner(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range ids {
				if rng.IntN(3) != 0 {
					continue
				}
				r, err := st.Run(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				claims := randomClaims(rng, r.Paper)
				if rng.IntN(5) == 0 {
					claims = nil // a rebuild that finds no claim it can decide
				}
				if err := st.SaveRebuilt(ctx, store.Rebuilt{RunID: id, Report: "{}", ReportVersion: 2, Claims: claims}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 30 {
				if _, err := st.Publish(ctx, randomPublication(rng, runners[2:], fmt.Sprintf("sha256:%064d", 1000+i))); err != nil {
					t.Fatal(err)
				}
			}
			checkAgainstRebuild(t, st, len(ids)+30)
			n, err := st.RunCount(ctx, store.CountRunner, fmt.Sprint(runners[3]))
			if err != nil || n == 0 {
				t.Errorf("runner %d counted %d runs (%v)", runners[3], n, err)
			}
			f, err := st.Facets(ctx)
			if err != nil || len(f.Papers) != len(papers) || len(f.Boards) != len(boards) || len(f.Kinds) != len(kinds) || len(f.Methods) != len(methods) ||
				!strings.HasPrefix(strings.Join(f.Levels, ","), "emulated,hardware,host") {
				t.Errorf("facets %+v (%v)", f, err)
			}
		})
	}
}

// TestSummariesUnderConcurrentPublishers: many goroutines publish (and rebuild) at once
// while another compacts the counters; no increment is lost and none counted twice, on
// either engine.
func TestSummariesUnderConcurrentPublishers(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			st := e.open(t)
			ctx := context.Background()
			runners := addRunners(t, st, 3)
			const workers, each = 16, 12
			var wg sync.WaitGroup
			errs := make(chan error, workers*each+1000)
			// A compactor folds the counters while the publishers append to them, as the
			// summary job of every portal process does.
			stop := make(chan struct{})
			compacted := make(chan int)
			go func() {
				n := 0
				defer func() { compacted <- n }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := st.CompactSummaries(ctx); err != nil {
						errs <- fmt.Errorf("compaction: %w", err)
						return
					}
					n++
					time.Sleep(5 * time.Millisecond)
				}
			}()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 2))
					for i := range each {
						id, err := st.Publish(ctx, randomPublication(rng, runners, fmt.Sprintf("sha256:%032d%032d", w, i)))
						if err != nil {
							errs <- err
							continue
						}
						if i%3 == 0 {
							r, err := st.Run(ctx, id)
							if err == nil {
								err = st.SaveRebuilt(ctx, store.Rebuilt{RunID: id, Report: "{}", ReportVersion: 2, Claims: randomClaims(rng, r.Paper)})
							}
							if err != nil {
								errs <- err
							}
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			if n := <-compacted; n < 2 {
				t.Errorf("the compactor ran %d times beside the publishers", n)
			}
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			checkAgainstRebuild(t, st, workers*each)
		})
	}
}

// TestSummariesMigrationBackfill: the migration that adds the summaries fills them from the
// runs already stored as the maintained counters would have them.
func TestSummariesMigrationBackfill(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			st := e.open(t)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(14, 3))
			runners := addRunners(t, st, 2)
			for i := range 40 {
				if _, err := st.Publish(ctx, randomPublication(rng, runners, fmt.Sprintf("sha256:%064d", i))); err != nil {
					t.Fatal(err)
				}
			}
			maintained := readSummaries(t, st)
			statements := func(file string) []string {
				src, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				var code []string
				for _, line := range strings.Split(string(src), "\n") {
					if !strings.HasPrefix(strings.TrimSpace(line), "--") {
						code = append(code, line)
					}
				}
				return strings.Split(strings.Join(code, "\n"), ";")
			}
			backfills := 0
			for _, table := range []string{"claim_tallies", "board_counts", "run_counts"} {
				if _, err := st.Write().ExecContext(ctx, `DELETE FROM `+table); err != nil {
					t.Fatal(err)
				}
			}
			for _, stmt := range statements(e.migration) {
				if strings.HasPrefix(strings.TrimSpace(stmt), "INSERT") {
					if _, err := st.Write().ExecContext(ctx, stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
					backfills++
				}
			}
			if backfills != 7 {
				t.Fatalf("%d backfill statements in %s", backfills, e.migration)
			}
			// The later migration refills the claim tallies per origin, as they are maintained.
			refills := 0
			for _, stmt := range statements(e.tallies) {
				if s := strings.TrimSpace(stmt); strings.HasPrefix(s, "DELETE FROM claim_tallies") || strings.HasPrefix(s, "INSERT INTO claim_tallies") {
					if _, err := st.Write().ExecContext(ctx, stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
					refills++
				}
			}
			if refills != 2 {
				t.Fatalf("%d claim tally refill statements in %s", refills, e.tallies)
			}
			if got := readSummaries(t, st); !reflect.DeepEqual(got, maintained) {
				t.Errorf("the migration's backfill differs from the maintained counters:\nbackfill   %v\nmaintained %v", got, maintained)
			}
		})
	}
}
