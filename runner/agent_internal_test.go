package runner

import (
	"context"
	"fmt"
	"io"
	"pqrepro/artifacts/protocol"
	"strings"
	"testing"
	"time"
)

// TestLogStreamSendsWholeLines: a flush sends the whole lines written so far and keeps a line
// still being written for the next one (the portal keeps summary lines per chunk); a burst
// larger than a request may carry goes as several chunks of whole lines; the last flush sends
// the rest.
func TestLogStreamSendsWholeLines(t *testing.T) {
	p := &chunkPortal{}
	ctx := context.Background()
	s := &logStream{}
	io.WriteString(s, "cell ML-KEM-512 keygen: ok n=3\ncell ML-KEM-5")
	if err := s.flush(ctx, p, 1, "L", false); err != nil {
		t.Fatal(err)
	}
	io.WriteString(s, "12 encaps: ok n=3\n")
	s.flush(ctx, p, 1, "L", false)
	if p.logs[0] != "cell ML-KEM-512 keygen: ok n=3\n" || p.logs[1] != "cell ML-KEM-512 encaps: ok n=3\n" {
		t.Fatalf("chunks %v", p.logs)
	}
	line := strings.Repeat("x", 999) + "\n"
	for range 1300 { // 1.3 MB at once
		io.WriteString(s, line)
	}
	io.WriteString(s, "the last line, unfinished")
	s.flush(ctx, p, 1, "L", false)
	n := len(p.logs)
	if n < 5 {
		t.Fatalf("%d chunks for 1.3 MB", n)
	}
	for i := 2; i < n; i++ {
		if c := p.logs[i]; len(c) > maxLogChunk || !strings.HasSuffix(c, "\n") || strings.Count(c, line) != len(c)/len(line) {
			t.Fatalf("chunk %d: %d bytes, not whole lines", i, len(c))
		}
	}
	s.flush(ctx, p, 1, "L", true)
	if got := p.log(); !strings.HasSuffix(got, line+"the last line, unfinished") || len(got) != 2*31+1300*len(line)+25 {
		t.Fatalf("the stream sent %d bytes", len(got))
	}
}

// TestRetryDelayHonoursRetryAfter: a rate-limited answer's Retry-After is the wait (capped
// at 5 minutes); any other error waits the fallback.
func TestRetryDelayHonoursRetryAfter(t *testing.T) {
	limited := &protocol.RemoteError{Kind: protocol.KindRateLimited, RetryAfter: 7 * time.Second}
	if d := retryDelay(limited, time.Second); d != 7*time.Second {
		t.Errorf("rate limited: wait %v, want 7s", d)
	}
	if d := retryDelay(&protocol.RemoteError{Kind: protocol.KindRateLimited, RetryAfter: time.Hour}, time.Second); d != 5*time.Minute {
		t.Errorf("an hour's Retry-After: wait %v, want the 5 min cap", d)
	}
	if d := retryDelay(&protocol.RemoteError{Kind: protocol.KindUnavailable}, 3*time.Second); d != 3*time.Second {
		t.Errorf("unavailable: wait %v, want the fallback", d)
	}
}

// chunkPortal records the log chunks sent to it; it answers nothing else.
type chunkPortal struct {
	protocol.Portal
	logs []string
}

func (p *chunkPortal) AppendLog(_ context.Context, _ int64, _ string, index int, chunk []byte) error {
	if index != len(p.logs) {
		return fmt.Errorf("chunk %d after %d chunks", index, len(p.logs))
	}
	p.logs = append(p.logs, string(chunk))
	return nil
}

func (p *chunkPortal) log() string { return strings.Join(p.logs, "") }
