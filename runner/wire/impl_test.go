package wire

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/firmware/impltable"
)

// TestALGSReportsImplementationTable asks the host build for its algorithms and checks that
// every one comes with the implementation the ELF's .pqrepro_impl section and metadata.json
// name: the table the build filled is what the board reports.
func TestALGSReportsImplementationTable(t *testing.T) {
	bin := hostFirmware(t)
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := impltable.ReadELF(f)
	if err != nil {
		t.Fatalf("the host build's ELF: %v", err)
	}
	var meta struct {
		Implementations []struct {
			Algorithm, Name, Version string
			Source                   string `json:"source_sha256"`
		} `json:"implementations"`
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(bin), "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if len(table) != 18 || len(meta.Implementations) != len(table) {
		t.Fatalf("the ELF's table has %d lines, metadata.json %d; want 18 each", len(table), len(meta.Implementations))
	}
	c, _ := startHost(t, nil, nil, Options{RetryInterval: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range table {
		got, ok := h.Implementations[e.Algorithm]
		want := Implementation{Name: e.Name, Version: e.Version, Commit: e.Commit, Source: e.Source}
		if !ok || got != want {
			t.Errorf("%s: ALGS says %+v, the ELF section %+v", e.Algorithm, got, want)
		}
		if md := meta.Implementations[i]; md.Algorithm != e.Algorithm || md.Source != e.Source || md.Name != e.Name || md.Version != e.Version {
			t.Errorf("%s: metadata.json says %+v", e.Algorithm, md)
		}
		if err := got.Artifact().Validate(); err != nil {
			t.Errorf("%s: %v", e.Algorithm, err)
		}
	}
	if len(h.Implementations) != len(h.Algorithms) {
		t.Errorf("%d algorithms, %d with an implementation", len(h.Algorithms), len(h.Implementations))
	}
}
