package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSeedPublishesThroughIngest seeds a small portal: every run goes through the real
// ingest (verification, re-derivation, the class check, the rate limits it is exempt from),
// so a change there that the seeder does not follow fails here.
func TestSeedPublishesThroughIngest(t *testing.T) {
	var out bytes.Buffer
	if err := seed(context.Background(), t.TempDir(), 100, &out); err != nil {
		t.Fatalf("seed: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "seeded ") || !strings.Contains(out.String(), "cells in total") {
		t.Errorf("seed output: %s", out.String())
	}
}
