package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/runner/host"
)

// TestLogSequenceGap: with Config.LogSequenceGap the sequencer's next round waits out the gap
// however it is poked: a run published after a round stays pending (an hour's gap, looked at
// two seconds later), and cancelling the sequencer ends the wait.
func TestLogSequenceGap(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) { c.LogSequenceGap = time.Hour })
	s := newSubmitter(t, p)
	if code, body := s.submit(t, p, s.bundle(t, &host.Host{}, smallManifest(t, 3))); code != http.StatusOK {
		t.Fatalf("submit: %d %s", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Server.SequenceLog(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitLog(t, p, func(cp string) bool { return strings.Contains(cp, "\n1\n") }) // the first round

	if code, body := s.submit(t, p, s.bundle(t, &host.Host{}, smallManifest(t, 4))); code != http.StatusOK {
		t.Fatalf("submit: %d %s", code, body)
	}
	time.Sleep(2 * time.Second)
	if n, err := p.Server.Store().PendingLogEntries(context.Background()); err != nil || n != 1 {
		t.Fatalf("within the gap: %d entries pending (%v), want the second run's", n, err)
	}
	if _, cp := get(t, p.URL+"/log/checkpoint"); !strings.Contains(cp, "\n1\n") {
		t.Fatalf("within the gap the checkpoint moved on:\n%s", cp)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("SequenceLog did not end within a minute of its cancel, in the gap")
	}
}
