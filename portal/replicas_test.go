package portal_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts/protocol"
	"pqrepro/internal/lb"
	"pqrepro/portal"
	"pqrepro/portal/blob"
	"pqrepro/portal/blob/s3test"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/postgres/pgtest"
	"pqrepro/portal/store"
	"pqrepro/runner/portalclient"
)

// site is several portal replicas on one PostgreSQL database and one S3 bucket, behind a
// round-robin load balancer, as a portal past one machine runs.
type site struct {
	replicas []*portaltest.Portal
	lb       *lb.Balancer
	url      string
}

// startSite starts n replicas sharing a fresh database, a fresh bucket and the log's key,
// all answering as one public URL (the balancer's), each with mod applied to its Config.
func startSite(t testing.TB, n int, mod func(*portal.Config)) *site {
	t.Helper()
	dsn := pgtest.DSN(t)
	bucket := s3test.Start(t).Bucket(t)
	keyFile := filepath.Join(t.TempDir(), "log.key")
	front := httptest.NewUnstartedServer(nil)
	public := "http://" + front.Listener.Addr().String()
	s := &site{url: public}
	var urls []string
	for range n {
		p := portaltest.Start(t, func(c *portal.Config) {
			c.Database = dsn
			c.Blobs, c.S3Credentials = bucket.URL(), blob.S3Credentials{AccessKey: bucket.AccessKey, SecretKey: bucket.SecretKey}
			c.LogKeyFile = keyFile
			c.PublicURL = public
			// The balancer is the replicas' reverse proxy: its X-Forwarded-For is believed, so
			// rate limits count the client, not the balancer.
			c.TrustedProxies = []string{"127.0.0.1"}
			if mod != nil {
				mod(c)
			}
		})
		s.replicas = append(s.replicas, p)
		urls = append(urls, p.URL)
	}
	b, err := lb.New(urls...)
	if err != nil {
		t.Fatal(err)
	}
	s.lb = b
	front.Config.Handler = b
	front.Start()
	t.Cleanup(front.Close)
	return s
}

// pinned sends every request to replica i through the balancer.
type pinned struct {
	i    int
	next http.RoundTripper
}

func (p pinned) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(lb.Pin, strconv.Itoa(p.i))
	return p.next.RoundTrip(r)
}

// pin makes the browser's requests go to replica i (-1: round robin).
func (b *browser) pin(i int) *browser {
	if i < 0 {
		b.c.Transport = nil
	} else {
		b.c.Transport = pinned{i, http.DefaultTransport}
	}
	return b
}

// TestReplicasServeOneSite: three replicas on one database and bucket are one site. A sign-in
// on one replica holds on the others, and a form's CSRF token from one is accepted by
// another; a runner's long poll on one replica wakes when a job is queued on another (the
// replicas' own re-check is an hour, so only the store's event can wake it); heartbeats, log
// chunks and the completion reach different replicas and the run is published once and shown
// by all, with the leaderboards of a replica that had cached them before refreshed; and one
// client's rate limit is one budget across replicas.
func TestReplicasServeOneSite(t *testing.T) {
	ctx := context.Background()
	s := startSite(t, 3, func(c *portal.Config) {
		c.LeasePoll = time.Hour
		c.LongPoll = 20 * time.Second
		c.WriteTimeout = 40 * time.Second
		c.RateLimits.SignIn = portal.Budget{PerSecond: 0.001, Burst: 8}
	})

	// Sessions and CSRF: sign in through replica 0, use the session and a form token from
	// replica 1 on replica 2.
	admin := newBrowser(t, s.url).pin(0)
	admin.signIn(s.replicas[0].AdminToken)
	admin.pin(1)
	if code, body := admin.get("/admin"); code != http.StatusOK || !strings.Contains(body, "Enrolment") && !strings.Contains(body, "enrol") {
		t.Fatalf("the session from replica 0 on replica 1: %d", code)
	}
	admin.pin(2)
	code, body := admin.postFollow("/admin/users", url.Values{"name": {"replica-member"}, "role": {"submitter"}})
	if code != http.StatusOK || !strings.Contains(body, "pqu_") {
		t.Fatalf("a form from replica 1 posted to replica 2: %d", code)
	}
	users, err := s.replicas[0].Server.Store().Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range users {
		found = found || u.Name == "replica-member"
	}
	if !found {
		t.Fatal("the account created through replica 2 is not in the shared store")
	}

	// A replica caches its leaderboards before the run exists.
	lbPage := newBrowser(t, s.url).pin(0)
	if code, _ := lbPage.get("/leaderboards?algorithm=ML-KEM-768&operation=encaps"); code != http.StatusOK {
		t.Fatalf("leaderboards: %d", code)
	}

	// A long poll on replica 1 wakes when replica 2 queues the job.
	r := enrol(t, s.replicas[0], "roaming runner")
	r.client.BaseURL = s.url
	m := smallManifest(t, 3)
	leased := make(chan *protocol.Lease, 1)
	pollErr := make(chan error, 1)
	go func() {
		c := &portalclient.Client{BaseURL: s.url, Client: &http.Client{Transport: pinned{1, http.DefaultTransport}}}
		copyToken(t, r.client, c)
		// The client gives up after 10 s of the 20 s poll: an answer before then came from a
		// wake (the poll's own re-check is an hour; at its end it looks once more).
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		l, err := c.Lease(cctx, 20*time.Second)
		pollErr <- err
		leased <- l
	}()
	time.Sleep(500 * time.Millisecond) // let the poll start waiting (if it has not, it finds the job at once)
	jobID := queueJob(t, s.replicas[2], m)
	if err := <-pollErr; err != nil {
		t.Fatal(err)
	}
	l := <-leased
	if l == nil || l.JobID != jobID {
		t.Fatalf("the long poll on replica 1 was not woken by the job queued on replica 2: lease %+v", l)
	}

	// Heartbeats, log chunks and the completion go round robin.
	for i := range 3 {
		if err := r.client.Heartbeat(ctx, jobID, protocol.HeartbeatRequest{LeaseID: l.LeaseID, Progress: protocol.Progress{CellsDone: i, CellsTotal: 3}}); err != nil {
			t.Fatalf("heartbeat %d: %v", i, err)
		}
		if err := r.client.AppendLog(ctx, jobID, l.LeaseID, i, []byte("line "+strconv.Itoa(i)+"\n")); err != nil {
			t.Fatalf("log chunk %d: %v", i, err)
		}
	}
	resp, err := r.client.Complete(ctx, jobID, l.LeaseID, runnerBundle(t, m, r.id, l))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range s.replicas {
		run, err := p.Server.Store().Run(ctx, resp.RunID)
		if err != nil || run.JobID != jobID {
			t.Fatalf("replica %d: run %d: %+v %v", i, resp.RunID, run, err)
		}
		j, err := p.Server.Store().Job(ctx, jobID)
		if err != nil || j.State != store.JobPublished || j.RunID != resp.RunID {
			t.Fatalf("replica %d: job %+v %v", i, j, err)
		}
		text, err := p.Server.Store().JobLog(ctx, jobID, 1)
		if err != nil || text != "line 0\nline 1\nline 2\n" {
			t.Fatalf("replica %d: the log from three replicas is %q (%v)", i, text, err)
		}
	}
	runs, err := s.replicas[1].Server.Store().Runs(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs published, want 1 (%v)", len(runs), err)
	}
	// Replica 0 cached its leaderboards before the run; the publication elsewhere dropped them.
	waitFor(t, "replica 0's leaderboards to show the run published through another replica", func() bool {
		_, body := lbPage.get("/leaderboards?algorithm=ML-KEM-768&operation=encaps")
		return strings.Contains(body, "/runs/"+strconv.FormatInt(resp.RunID, 10))
	})
	for i := range s.replicas {
		_, body := newBrowser(t, s.url).pin(i).get("/runs/" + strconv.FormatInt(resp.RunID, 10))
		if !strings.Contains(body, "ML-KEM-768") {
			t.Fatalf("replica %d does not show the run", i)
		}
	}

	// One budget of 8 sign-ins for one client, however they are spread.
	limited := 0
	for i := range 12 {
		b := newBrowser(t, s.url).pin(i % 3)
		if code, _, _ := b.post("/signin", url.Values{"token": {"wrong-token-wrong-token"}}); code == http.StatusTooManyRequests {
			limited++
		}
	}
	// The admin's sign-in above spent one token of the same client's budget.
	if limited < 12-7 {
		t.Fatalf("%d of 12 sign-ins over three replicas refused; a shared budget of 8 (one spent) refuses at least 5", limited)
	}
	if served := s.lb.Served(); served[0] == 0 || served[1] == 0 || served[2] == 0 {
		t.Fatalf("the balancer did not use every replica: %v", served)
	}
}

// TestKilledRunnerRequeuedAcrossReplicasPublishedOnce: a runner leases a job through one
// replica and dies; the lease expires, another replica's sweeper re-queues it, a second
// runner leases it through another replica and publishes; the dead runner's late completion
// is refused; exactly one run exists for the job.
func TestKilledRunnerRequeuedAcrossReplicasPublishedOnce(t *testing.T) {
	ctx := context.Background()
	// The lease is long enough for a bundle to be made on a loaded machine.
	s := startSite(t, 3, func(c *portal.Config) { c.LeaseDuration = 4 * time.Second })
	m := smallManifest(t, 3)
	jobID := queueJob(t, s.replicas[0], m)
	dead := enrol(t, s.replicas[0], "dies")
	dead.client.BaseURL = s.url
	l1, err := dead.client.Lease(ctx, 0)
	if err != nil || l1 == nil || l1.JobID != jobID {
		t.Fatalf("first lease: %+v %v", l1, err)
	}
	bundle1 := runnerBundle(t, m, dead.id, l1)
	// The runner dies: no heartbeat. A second runner waits through the balancer.
	live := enrol(t, s.replicas[1], "lives")
	live.client.BaseURL = s.url
	var l2 *protocol.Lease
	waitFor(t, "the expired job to be leased again", func() bool {
		l2, err = live.client.Lease(ctx, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return l2 != nil
	})
	if l2.JobID != jobID || l2.Attempt != 2 {
		t.Fatalf("second lease: %+v", l2)
	}
	resp, err := live.client.Complete(ctx, jobID, l2.LeaseID, runnerBundle(t, m, live.id, l2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.client.Complete(ctx, jobID, l1.LeaseID, bundle1); err == nil {
		t.Fatal("the dead runner's late completion was accepted")
	}
	runs, err := s.replicas[2].Server.Store().Runs(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 || runs[0].ID != resp.RunID || runs[0].JobID != jobID {
		t.Fatalf("runs after the re-queue: %+v (%v), want only run %d", runs, err, resp.RunID)
	}
}

// TestConcurrentLeasesAcrossReplicas: six runners leasing through three replicas take each
// of 150 jobs exactly once.
func TestConcurrentLeasesAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	s := startSite(t, 3, nil)
	m := smallManifest(t, 2)
	const jobs = 150
	for i := range jobs {
		queueJob(t, s.replicas[i%3], m)
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for i := range 6 {
		r := enrol(t, s.replicas[i%3], "runner "+strconv.Itoa(i))
		r.client.BaseURL = s.url
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, err := r.client.Lease(ctx, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if l == nil {
					return
				}
				mu.Lock()
				seen[l.JobID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Fatalf("%d distinct jobs leased, want %d", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %d leased %d times", id, n)
		}
	}
}

// waitFor polls cond every 50 ms for up to 30 s (a bound for a stuck test, not a speed claim).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// copyToken gives c the runner token from's enrolment left in it.
func copyToken(t *testing.T, from, c *portalclient.Client) {
	t.Helper()
	c.SetToken(from.Token())
}
