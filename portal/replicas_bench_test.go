package portal_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts/protocol"
	"pqrepro/internal/lb"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/runner/portalclient"
)

// leaseBenchJobs is how many jobs each iteration queues and leases.
const leaseBenchJobs = 1000

// leaseBenchClients is how many runner clients lease at once.
const leaseBenchClients = 8

// BenchmarkLeaseReplicas: jobs leased per second by 8 runner clients through the balancer,
// with 1 and 3 replicas on one PostgreSQL database (and one versitygw bucket), and with one
// replica on SQLite (SQLite is one process's file: it cannot have 3). Each iteration queues
// 1,000 jobs (untimed, spread over the replicas), then times the clients leasing until the
// queue is empty (a lease request with no wait answering "no job"); every job must be
// leased exactly once, or the benchmark fails. Leases last ten minutes, so none expires and
// comes back during the benchmark; after each iteration (untimed) the clients end their
// leases (reporting the jobs failed), so every iteration starts from the same queue. The runner routes' rate limit is off: every client here
// shares the address 127.0.0.1, and one budget for all of them would measure the limiter,
// not the queue.
func BenchmarkLeaseReplicas(b *testing.B) {
	mod := func(c *portal.Config) {
		c.LeaseDuration = 10 * time.Minute
		c.RateLimits.Runner = portal.Budget{}
	}
	for _, n := range []int{1, 3} {
		b.Run("replicas="+strconv.Itoa(n), func(b *testing.B) {
			benchLeases(b, startSite(b, n, mod))
		})
	}
	b.Run("sqlite/replicas=1", func(b *testing.B) {
		p := portaltest.Start(b, func(c *portal.Config) {
			mod(c)
			c.Database = "" // SQLite, even when PQREPRO_TEST_DATABASE=postgres
		})
		bal, err := lb.New(p.URL)
		if err != nil {
			b.Fatal(err)
		}
		front := httptest.NewServer(bal)
		b.Cleanup(front.Close)
		benchLeases(b, &site{replicas: []*portaltest.Portal{p}, lb: bal, url: front.URL})
	})
}

// benchLeases runs the iterations on s and reports jobs/s over all of them.
func benchLeases(b *testing.B, s *site) {
	ctx := context.Background()
	m := smallManifest(b, 2)
	var clients []*portalclient.Client
	for i := range leaseBenchClients {
		r := enrol(b, s.replicas[i%len(s.replicas)], "bench runner "+strconv.Itoa(i))
		c := &portalclient.Client{BaseURL: s.url, Client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
		c.SetToken(r.client.Token())
		clients = append(clients, c)
	}
	var leasing time.Duration
	leased := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		queued := map[int64]bool{}
		for i := range leaseBenchJobs {
			queued[queueJob(b, s.replicas[i%len(s.replicas)], m)] = true
		}
		seen := make(map[int64]int, leaseBenchJobs)
		var held []heldLease
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, len(clients))
		b.StartTimer()
		start := time.Now()
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					l, err := c.Lease(ctx, 0)
					if err != nil {
						errs <- err
						return
					}
					if l == nil {
						return
					}
					mu.Lock()
					seen[l.JobID]++
					held = append(held, heldLease{c, l.JobID, l.LeaseID})
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		close(errs)
		for err := range errs {
			b.Fatalf("lease: %v", err)
		}
		for id, k := range seen {
			if k != 1 || !queued[id] {
				b.Fatalf("job %d leased %d times (queued this iteration: %v)", id, k, queued[id])
			}
		}
		if len(seen) != leaseBenchJobs {
			b.Fatalf("%d of %d jobs leased", len(seen), leaseBenchJobs)
		}
		leasing += elapsed
		leased += len(seen)
		endLeases(b, held)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(leased)/leasing.Seconds(), "jobs/s")
	b.ReportMetric(float64(leasing.Nanoseconds())/float64(leased), "ns/lease")
	b.Logf("%d replicas, b.N %d: %d jobs leased in %v; the balancer's answers per replica (enrolments and lease endings included): %v",
		len(s.replicas), b.N, leased, leasing.Round(time.Millisecond), s.lb.Served())
}

// heldLease is a lease a benchmark client took.
type heldLease struct {
	c     *portalclient.Client
	job   int64
	lease string
}

// endLeases ends the leased jobs (as failed, through the clients, 8 at a time), so the next
// iteration's queue looks like this one's instead of growing a backlog of running jobs.
func endLeases(b *testing.B, held []heldLease) {
	b.Helper()
	ctx := context.Background()
	work := make(chan heldLease)
	errs := make(chan error, leaseBenchClients)
	var wg sync.WaitGroup
	for range leaseBenchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range work {
				if err := h.c.Fail(ctx, h.job, protocol.FailRequest{LeaseID: h.lease, Reason: "benchmark lease ended"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, h := range held {
		work <- h
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("end a lease: %v", err)
	}
}
