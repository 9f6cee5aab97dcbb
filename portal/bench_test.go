package portal_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
)

// BenchmarkBundleUploadVerify posts a signed community bundle (paper001/mlkem, 9 cells) to
// /api/v1/submissions over loopback: read, verify both signatures and every digest against
// the registered keys, compare with the paper, store the blob and publish. Reported as
// bundles/s.
func BenchmarkBundleUploadVerify(b *testing.B) {
	p := portaltest.Start(b, nil)
	id, _ := identity.GenerateIdentity()
	tok := submitterToken(b, p, "bench", id)
	bundle := signedBundle(b, smallManifest(b, 100), id, attest.OriginLocal)
	b.SetBytes(int64(len(bundle)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A bundle is published once: every iteration uploads a fresh signature of it.
		b.StopTimer()
		bundle = resigned(b, bundle, id)
		b.StartTimer()
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/submissions", bytes.NewReader(bundle))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "bundles/s")
}

// BenchmarkLongPoll50Runners has 50 enrolled runners long-polling at once; each iteration
// queues 50 jobs and measures how long until every runner holds one (no job twice).
func BenchmarkLongPoll50Runners(b *testing.B) {
	const runners = 50
	p := portaltest.Start(b, func(c *portal.Config) { c.LongPoll, c.RateLimits.Enrol.Burst = 20*time.Second, runners })
	m := smallManifest(b, 2)
	clients := make([]enrolled, runners)
	for i := range clients {
		clients[i] = enrol(b, p, "poller")
	}
	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[int64]bool{}
		ready := make(chan struct{}, runners)
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ready <- struct{}{}
				l, err := c.client.Lease(context.Background(), 15*time.Second)
				if err != nil || l == nil {
					b.Errorf("lease: %v %v", l, err)
					return
				}
				mu.Lock()
				if seen[l.JobID] {
					b.Errorf("job %d leased twice", l.JobID)
				}
				seen[l.JobID] = true
				mu.Unlock()
			}()
		}
		for range runners {
			<-ready
		}
		time.Sleep(100 * time.Millisecond) // let every runner enter its long poll
		start := time.Now()
		for range runners {
			queueJob(b, p, m)
		}
		p.Server.Notify()
		wg.Wait()
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Milliseconds()), "ms-to-lease-all-50")
}
