package portal_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal"
	"pqrepro/portal/postgres"
	"pqrepro/portal/store"
)

// childReplica is what a replica child process is told to do, in its environment.
type childReplica struct {
	Config   portal.Config
	Point    string // the store's hook point where it kills itself
	JobID    int64
	LeaseID  string
	Token    string // the runner's bearer token
	Bundle   string // the bundle file to complete the job with
	Complete string // the completion route
}

// TestReplicaKilledWhilePublishing: a replica process completing a job SIGKILLs itself inside
// the publication's transaction (everything written, nothing committed), or just after the
// commit. Killed before the commit, the shared database holds no part of the run (no run, no
// cells, no claim verdicts, no log entry) and the job is still leased, so after its lease
// expires it is re-queued and published once; killed after the commit, the run is whole and
// the runner's retried completion through another replica gets that same run.
func TestReplicaKilledWhilePublishing(t *testing.T) {
	for _, point := range []string{"publish:uncommitted", "publish:committed"} {
		t.Run(point, func(t *testing.T) {
			ctx := context.Background()
			// The child must reach its kill point within the lease, on a loaded machine too.
			s := startSite(t, 1, func(c *portal.Config) { c.LeaseDuration = 5 * time.Second })
			live := s.replicas[0]
			m := smallManifest(t, 3)
			jobID := queueJob(t, live, m)
			r := enrol(t, live, "runner")
			l, err := r.client.Lease(ctx, 0)
			if err != nil || l == nil {
				t.Fatalf("lease: %+v %v", l, err)
			}
			bundle := runnerBundle(t, m, r.id, l)
			file := filepath.Join(t.TempDir(), "bundle.tar.gz")
			if err := os.WriteFile(file, bundle, 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := live.Config
			cfg.DataDir = t.TempDir()
			spec, _ := json.Marshal(childReplica{Config: cfg, Point: point, JobID: jobID, LeaseID: l.LeaseID, Token: r.client.Token(),
				Bundle: file, Complete: fmt.Sprintf("/api/v1/jobs/%d/complete", jobID)})
			cmd := exec.Command(os.Args[0], "-test.run=^TestReplicaChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "PQREPRO_REPLICA_CHILD="+string(spec))
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the replica was not killed at %s: %v\n%s", point, err, out)
			}
			db, err := sql.Open("pgx", cfg.Database)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			count := func(q string) int {
				var n int
				if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			runs, cells := count(`SELECT COUNT(*) FROM runs`), count(`SELECT COUNT(*) FROM cells`)
			verdicts, entries := count(`SELECT COUNT(*) FROM claim_verdicts`), count(`SELECT COUNT(*) FROM log_entries`)
			switch point {
			case "publish:uncommitted":
				if runs+cells+verdicts+entries != 0 {
					t.Fatalf("killed before the commit, the database holds %d runs, %d cells, %d verdicts, %d log entries", runs, cells, verdicts, entries)
				}
				j, err := live.Server.Store().Job(ctx, jobID)
				if err != nil || j.State != store.JobRunning {
					t.Fatalf("job after the kill: %+v %v", j, err)
				}
				// The lease lapses; the job goes back to the queue and is published once.
				var l2 *protocol.Lease
				waitFor(t, "the job to be leased again", func() bool {
					l2, err = r.client.Lease(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					return l2 != nil
				})
				if _, err := r.client.Complete(ctx, jobID, l2.LeaseID, runnerBundle(t, m, r.id, l2)); err != nil {
					t.Fatal(err)
				}
			case "publish:committed":
				b, err := artifacts.ReadTarGz(bytes.NewReader(bundle), artifacts.MaxBundleBytes)
				if err != nil {
					t.Fatal(err)
				}
				res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
				if err != nil {
					t.Fatal(err)
				}
				want := len(res.Cells)
				if runs != 1 || cells != want || entries != 1 {
					t.Fatalf("killed after the commit: %d runs, %d cells (want %d), %d log entries", runs, cells, want, entries)
				}
				resp, err := r.client.Complete(ctx, jobID, l.LeaseID, bundle)
				if err != nil {
					t.Fatalf("the retried completion through another replica: %v", err)
				}
				run, err := live.Server.Store().Run(ctx, resp.RunID)
				if err != nil || run.JobID != jobID {
					t.Fatalf("the retry answered run %d: %+v %v", resp.RunID, run, err)
				}
			}
			all, err := live.Server.Store().Runs(ctx, store.RunFilter{})
			if err != nil || len(all) != 1 || all[0].JobID != jobID {
				t.Fatalf("runs in the end: %+v %v, want one for job %d", all, err, jobID)
			}
		})
	}
}

// TestReplicaChild is the replica process of TestReplicaKilledWhilePublishing.
func TestReplicaChild(t *testing.T) {
	raw := os.Getenv("PQREPRO_REPLICA_CHILD")
	if raw == "" {
		t.Skip("the child process of TestReplicaKilledWhilePublishing")
	}
	var spec childReplica
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := portal.Open(ctx, spec.Config, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := srv.Store().(*postgres.Store)
	if !ok {
		t.Fatalf("store %T, want PostgreSQL", srv.Store())
	}
	st.Hook = func(point string) {
		if point == spec.Point {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	data, err := os.ReadFile(spec.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, spec.Complete, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+spec.Token)
	req.Header.Set(protocol.ProtocolHeaderLease, spec.LeaseID)
	req.Header.Set("Content-Type", "application/gzip")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	t.Fatalf("the completion finished without reaching %s: %d %s", spec.Point, rec.Code, body)
}
