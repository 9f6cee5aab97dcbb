package sqlstore

import (
	"context"
	"fmt"

	"pqrepro/portal/store"
)

// The change counters (store.Generations), as bit positions of Tx.changed.
const (
	genRuns = iota
	genWork
	genLog
	generations
)

// GenerationNames are the counters' names, by bit position, as the engines name their rows
// or sequences (Dialect.Advance).
var GenerationNames = [generations]string{genRuns: "runs", genWork: "work", genLog: "log"}

// change marks generation gen to be advanced with the transaction.
func (t *Tx) change(gen int) { t.changed |= 1 << gen }

// advance runs, inside the transaction, the statements advancing what it changed (dialects
// whose AdvanceInTx is set).
func (t *Tx) advance(ctx context.Context) error {
	for g := range generations {
		if t.changed&(1<<g) != 0 {
			if _, err := t.tx.ExecContext(ctx, t.d.Advance(GenerationNames[g])); err != nil {
				return fmt.Errorf("advance generation %d: %w", g, err)
			}
		}
	}
	return nil
}

// advance advances the generations in changed after a write committed, one statement each.
// The write is committed whatever happens here, so a failure is not returned (the caller
// would retry a write that took effect); a statement that fails is tried once more, and the
// event the write raised (the portal's listener) drops the replicas' cached pages as well.
func (s *DB) advance(ctx context.Context, changed uint8) {
	ctx = context.WithoutCancel(ctx)
	for g := range generations {
		if changed&(1<<g) != 0 {
			if _, err := s.write.db.ExecContext(ctx, s.d.Advance(GenerationNames[g])); err != nil {
				s.write.db.ExecContext(ctx, s.d.Advance(GenerationNames[g]))
			}
		}
	}
}

// changed advances the generations after a write that ran outside a transaction of s.tx
// (one statement) committed.
func (s *DB) changed(ctx context.Context, gens ...int) {
	var c uint8
	for _, g := range gens {
		c |= 1 << g
	}
	s.advance(ctx, c)
}

// Generations returns the change counters, read in one query through the read pool.
func (s *DB) Generations(ctx context.Context) (store.Generations, error) {
	var g store.Generations
	if err := s.read.QueryRowContext(ctx, s.d.Generations).Scan(&g.Runs, &g.Work, &g.Log); err != nil {
		return g, fmt.Errorf("read the change counters: %w", err)
	}
	return g, nil
}
