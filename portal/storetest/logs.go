package storetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pqrepro/artifacts/logtext"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// leased queues a host job and leases it to a new runner under lease "l1".
func (e *env) leased() (job, runner int64) {
	e.Helper()
	r, _ := e.runner(fmt.Sprint("r", e.n))
	e.n++
	id := e.job("host", "")
	if j := e.lease(r, "host", "l1", time.Now().Add(hour)); j.ID != id {
		e.Fatalf("leased %d, want %d", j.ID, id)
	}
	return id, r
}

func (e *env) logText(job int64, attempt int) string {
	e.Helper()
	s, err := e.st.JobLog(e.ctx, job, attempt)
	e.must(err, "job log")
	return s
}

// testLogOrder: chunks are kept in the order they arrive (an index out of order is stored
// where it arrived), a retried index is ignored, and LogSince continues from a position.
func testLogOrder(e *env) {
	job, r := e.leased()
	if v, err := e.st.JobLogView(e.ctx, job, 0, 100, 100); err != nil || v.Attempt != 0 || v.Text != "" {
		e.Fatalf("log view of a job without a log: %+v, %v", v, err)
	}
	for _, c := range []struct {
		idx  int
		data string
	}{{0, "a\n"}, {2, "c\n"}, {1, "b\n"}, {0, "retried\n"}, {2, "again\n"}} {
		e.must(e.st.AppendLog(e.ctx, job, r, "l1", c.idx, c.data), fmt.Sprint("append chunk ", c.idx))
	}
	if got := e.logText(job, 0); got != "a\nc\nb\n" {
		e.Fatalf("log %q, want the chunks in arrival order without the retries", got)
	}
	e.wantKind(e.st.AppendLog(e.ctx, job, r, "l2", 3, "x"), fault.LeaseLost, "append under another lease")
	e.wantKind(e.st.AppendLog(e.ctx, job, r, "l1", -1, "x"), fault.Invalid, "a negative index")
	e.wantKind(e.st.AppendLog(e.ctx, job, r, "l1", store.DefaultLogLimits().MaxIndex, "x"), fault.Invalid, "an index beyond the limit")

	v, err := e.st.JobLogView(e.ctx, job, 0, 1000, 1000)
	e.must(err, "log view")
	if v.Attempt != 1 || v.Text != "a\nc\nb\n" || v.End != 6 || v.Omitted != 0 {
		e.Fatalf("log view %+v", v)
	}
	v, err = e.st.JobLogView(e.ctx, job, 0, 2, 2)
	e.must(err, "bounded log view")
	if v.Omitted != 2 || !strings.HasPrefix(v.Text, "a\n") || !strings.HasSuffix(v.Text, "b\n") || !strings.Contains(v.Text, "2 bytes dropped") || v.End != 6 {
		e.Fatalf("log view of 2+2 bytes %+v", v)
	}
	for _, c := range []struct {
		after   int64
		limit   int
		text    string
		end     int64
		ok      bool
		attempt int
	}{
		{2, 100, "c\nb\n", 6, true, 1},
		{6, 100, "", 6, true, 1},
		{0, 100, "a\nc\nb\n", 6, true, 1},
		{7, 100, "", 0, false, 1},  // beyond the end
		{-1, 100, "", 0, false, 1}, // not a position
		{0, 100, "", 0, false, 2},  // not the latest attempt
	} {
		text, end, ok, err := e.st.LogSince(e.ctx, job, c.attempt, c.after, c.limit)
		e.must(err, "log since")
		if text != c.text || end != c.end || ok != c.ok {
			e.Fatalf("LogSince(attempt %d, after %d) = %q, %d, %v; want %q, %d, %v", c.attempt, c.after, text, end, ok, c.text, c.end, c.ok)
		}
	}
	text, end, ok, err := e.st.LogSince(e.ctx, job, 1, 0, 2)
	e.must(err, "log since, limited")
	if !ok || end != 6 || !strings.HasSuffix(text, "b\n") || !strings.Contains(text, "4 bytes dropped") {
		e.Fatalf("LogSince limited to 2 bytes: %q, %d, %v", text, end, ok)
	}
}

// testLogFailure: the log sent with a failure is kept when nothing was streamed, and not
// stored twice when it was.
func testLogFailure(e *env) {
	job, r := e.leased()
	e.must(e.st.FailJob(e.ctx, job, r, "l1", "exit status 1", "the whole output\n"), "fail with a log")
	if got := e.logText(job, 0); got != "the whole output\n" {
		e.Fatalf("log of a failure %q", got)
	}
	if v, _ := e.st.JobLogView(e.ctx, job, 0, 100, 100); v.Attempt != 1 || v.End != 0 {
		e.Fatalf("view of a failure's log %+v (nothing was streamed: End 0)", v)
	}
	job2, r2 := e.leased()
	e.must(e.st.AppendLog(e.ctx, job2, r2, "l1", 0, "streamed\n"), "append")
	e.must(e.st.FailJob(e.ctx, job2, r2, "l1", "exit status 1", "streamed\nand the rest\n"), "fail")
	if got := e.logText(job2, 0); got != "streamed\n" {
		e.Fatalf("log of a streamed failure %q, want the streamed chunks only", got)
	}
}

// testLogAttempts: each attempt has its own log; the view shows the latest.
func testLogAttempts(e *env) {
	job, r := e.leased()
	e.must(e.st.AppendLog(e.ctx, job, r, "l1", 0, "one\n"), "append to attempt 1")
	e.must(e.st.Heartbeat(e.ctx, job, r, "l1", time.Now().Add(-time.Second), protocol.Progress{}), "expire the lease")
	if n, err := e.st.RequeueExpired(e.ctx); err != nil || n != 1 {
		e.Fatalf("requeue: %d, %v", n, err)
	}
	if j := e.lease(r, "host", "l2", time.Now().Add(hour)); j.ID != job || j.Attempt != 2 {
		e.Fatalf("second lease %+v", j)
	}
	e.wantKind(e.st.AppendLog(e.ctx, job, r, "l1", 1, "late\n"), fault.LeaseLost, "append under the expired lease")
	e.must(e.st.AppendLog(e.ctx, job, r, "l2", 0, "two\n"), "append to attempt 2")
	if got := e.logText(job, 0); got != "two\n" {
		e.Fatalf("latest log %q", got)
	}
	if got := e.logText(job, 1); got != "one\n" {
		e.Fatalf("attempt 1 log %q", got)
	}
	if v, _ := e.st.JobLogView(e.ctx, job, 0, 100, 100); v.Attempt != 2 {
		e.Fatalf("view of attempt %d, want 2", v.Attempt)
	}
	if _, _, ok, _ := e.st.LogSince(e.ctx, job, 1, 0, 100); ok {
		e.Fatal("LogSince continued attempt 1 after attempt 2 began")
	}
}

// testLogBounded: beyond the attempt limit the oldest chunks after the head are dropped; the
// head and the newest stay, the view says how much is missing, and a retried dropped chunk
// is not stored again.
func testLogBounded(e *env) {
	lim := store.DefaultLogLimits()
	const size = 64 << 10
	chunks := int(lim.AttemptBytes/size) + 6
	job, r := e.leased()
	chunk := func(i int) string {
		s := fmt.Sprintf("[c%03d]", i)
		return s + strings.Repeat(".", size-len(s)-1) + "\n"
	}
	for i := range chunks {
		e.must(e.st.AppendLog(e.ctx, job, r, "l1", i, chunk(i)), fmt.Sprint("append chunk ", i))
	}
	check := func(when string) {
		v, err := e.st.JobLogView(e.ctx, job, 0, int(lim.HeadBytes), int(lim.AttemptBytes))
		e.must(err, "log view")
		dropped := int64(chunks)*size - lim.AttemptBytes
		if v.End != int64(chunks)*size || v.Omitted != dropped || !strings.Contains(v.Text, fmt.Sprintf("%d bytes dropped", dropped)) {
			e.Fatalf("%s: end %d omitted %d, want %d and %d", when, v.End, v.Omitted, int64(chunks)*size, dropped)
		}
		if !strings.HasPrefix(v.Text, "[c000]") || !strings.Contains(v.Text, fmt.Sprintf("[c%03d]", chunks-1)) || strings.Contains(v.Text, "[c001]") {
			e.Fatalf("%s: the head and the newest chunks must stay, the oldest after the head go", when)
		}
	}
	check("after the limit")
	e.must(e.st.AppendLog(e.ctx, job, r, "l1", 1, chunk(1)), "retry a dropped chunk")
	check("after retrying a dropped chunk")
}

// realLog is a log a runner wrote (six cells on the host firmware over a line that damages
// frames, artifacts/logtext/testdata), read from the engine's package directory.
func (e *env) realLog() string {
	e.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "artifacts", "logtext", "testdata", "host-link-trouble.log"))
	e.must(err, "read the runner's log")
	return string(b)
}

// summaryLines is the sequence of s's summary lines.
func summaryLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if logtext.IsSummary(l) {
			out = append(out, l)
		}
	}
	return out
}

// testLogKeepsSummaryLines: a long log sent in chunks of whole lines, far beyond the attempt
// limit, keeps every summary line of the chunks trimming dropped and of the middle a view
// leaves out: the view, a poll from the start and a failure's log show all of them once, in
// their order.
func testLogKeepsSummaryLines(e *env) {
	lim := store.DefaultLogLimits()
	one := e.realLog()
	var b strings.Builder
	for i := 0; b.Len() <= int(lim.AttemptBytes)+(1<<20); i++ {
		b.WriteString(fmt.Sprintf("repeat %d of the runner's log\n", i))
		b.WriteString(one)
	}
	raw := b.String()
	want := summaryLines(raw)
	check := func(what, text string) {
		e.Helper()
		got := summaryLines(text)
		if len(got) != len(want) {
			e.Fatalf("%s: %d summary lines, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				e.Fatalf("%s: summary line %d is %q, want %q", what, i, got[i], want[i])
			}
		}
		if !strings.Contains(text, "summary lines among them follow") {
			e.Fatalf("%s: no marker before the kept summary lines", what)
		}
	}

	job, r := e.leased()
	idx := 0
	for rest := raw; rest != ""; idx++ {
		n := logtext.HeadCut(rest, 64<<10)
		e.must(e.st.AppendLog(e.ctx, job, r, "l1", idx, rest[:n]), fmt.Sprint("append chunk ", idx))
		rest = rest[n:]
	}
	v, err := e.st.JobLogView(e.ctx, job, 0, 16<<10, 64<<10)
	e.must(err, "log view")
	if v.End != int64(len(raw)) || v.Omitted < int64(len(raw))-lim.AttemptBytes {
		e.Fatalf("view: end %d of %d, omitted %d", v.End, len(raw), v.Omitted)
	}
	check("view of the bounded log", v.Text)
	full, err := e.st.JobLog(e.ctx, job, 0)
	e.must(err, "job log")
	check("the stored log", full)
	text, end, ok, err := e.st.LogSince(e.ctx, job, 1, 0, 64<<10)
	e.must(err, "log since the start")
	if !ok || end != int64(len(raw)) {
		e.Fatalf("log since the start: end %d, ok %v", end, ok)
	}
	check("a poll from the start", text)

	job2, r2 := e.leased()
	e.must(e.st.FailJob(e.ctx, job2, r2, "l1", "exit status 1", raw), "fail with the whole log")
	failed, err := e.st.JobLog(e.ctx, job2, 0)
	e.must(err, "failure's log")
	if len(failed) > int(lim.AttemptBytes)+(64<<10) {
		e.Fatalf("a failure's log of %d bytes stored as %d", len(raw), len(failed))
	}
	check("a failure's log", failed)
}
