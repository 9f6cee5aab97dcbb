package portal

import (
	"context"
	"sync"
	"time"

	"pqrepro/portal/store"
)

// committer publishes the runs that concurrent ingests have verified in batches, one
// transaction per batch (store.PublishBatch), when Config.PublishBatch is above 1: each
// publication still passes every check of the ingest on its own, and only the commit is
// shared. A batch takes what is waiting when the previous one ends, so it grows with the
// load and waits for nothing. When a batch is refused (one of its publications is a duplicate,
// or its lease was lost) its publications are published one by one, so each gets its own
// answer.
//
// With a linger (Config.PublishLinger, a bulk load's choice) a batch that is not full waits up
// to that long for more publications after the first: on a machine whose cores the ingests
// keep busy, few are waiting at the instant a commit ends, and a transaction of one or two
// runs costs about what one of many does.
//
// With more than one commit line (Config.PublishCommits, a bulk load's choice on PostgreSQL)
// that many batches fill and commit at once, each in its own transaction: a publication's
// transaction reads only what it locks or a unique index guards, so concurrent ones never
// conflict (replicas publish concurrently too), and PostgreSQL runs them side by side where a
// single line leaves the ingests waiting on one transaction's round trips. SQLite's single
// write connection takes them in turn.
type committer struct {
	st     publisher
	max    int
	linger time.Duration
	lines  int

	queue chan *pendingRun
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// commitRun publishes a verified run: in the next batch when batches are on, else alone.
func (s *Server) commitRun(ctx context.Context, p store.Publication) (int64, error) {
	if s.batch != nil {
		return s.batch.publish(ctx, p)
	}
	return s.store.Publish(ctx, p)
}

// publisher publishes runs, one or a batch per transaction (the store).
type publisher interface {
	Publish(ctx context.Context, p store.Publication) (int64, error)
	PublishBatch(ctx context.Context, ps []store.Publication) ([]int64, error)
}

// pendingRun is one publication waiting for its batch; id and err are set before done closes.
type pendingRun struct {
	ctx  context.Context
	pub  store.Publication
	id   int64
	err  error
	done chan struct{}
}

func newCommitter(st publisher, max int, linger time.Duration, lines int) *committer {
	if lines < 1 {
		lines = 1
	}
	c := &committer{st: st, max: max, linger: linger, lines: lines, queue: make(chan *pendingRun, max*lines), stop: make(chan struct{}), done: make(chan struct{})}
	var wg sync.WaitGroup
	for range lines {
		wg.Go(c.run)
	}
	go func() { wg.Wait(); close(c.done) }()
	return c
}

// publish hands p to the next batch and waits for its outcome. Once handed over, the
// publication is committed or refused whatever happens to ctx, as Store.Publish would.
func (c *committer) publish(ctx context.Context, p store.Publication) (int64, error) {
	w := &pendingRun{ctx: context.WithoutCancel(ctx), pub: p, done: make(chan struct{})}
	select {
	case c.queue <- w:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-c.stop:
		return c.st.Publish(ctx, p)
	}
	<-w.done
	return w.id, w.err
}

// close ends the committer once the publications handed to it are committed.
func (c *committer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// run is one commit line: it fills a batch and commits it, until close.
func (c *committer) run() {
	for {
		var first *pendingRun
		select {
		case first = <-c.queue:
		case <-c.stop:
			for {
				select {
				case w := <-c.queue:
					c.commit([]*pendingRun{w})
				default:
					return
				}
			}
		}
		c.commit(c.fill(first))
	}
}

// fill is the batch that starts with first: what waits in the queue, and with a linger what
// arrives within it, up to max.
func (c *committer) fill(first *pendingRun) []*pendingRun {
	batch := []*pendingRun{first}
	var expired <-chan time.Time // nil without a linger: never ready
	if c.linger > 0 {
		t := time.NewTimer(c.linger)
		defer t.Stop()
		expired = t.C
	}
	for len(batch) < c.max {
		select {
		case w := <-c.queue:
			batch = append(batch, w)
			continue
		default:
		}
		if expired == nil {
			return batch
		}
		select {
		case w := <-c.queue:
			batch = append(batch, w)
		case <-expired:
			return batch
		case <-c.stop:
			return batch
		}
	}
	return batch
}

// commit publishes batch in one transaction, or one by one when that is refused or when it
// holds one publication.
func (c *committer) commit(batch []*pendingRun) {
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	if len(batch) > 1 {
		pubs := make([]store.Publication, len(batch))
		for i, w := range batch {
			pubs[i] = w.pub
		}
		if ids, err := c.st.PublishBatch(batch[0].ctx, pubs); err == nil {
			for i, w := range batch {
				w.id = ids[i]
			}
			return
		}
	}
	for _, w := range batch {
		w.id, w.err = c.st.Publish(w.ctx, w.pub)
	}
}
