package artifacts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"pqrepro/artifacts/yamlcheck"
)

// hostileManifest is a manifest of at most size bytes whose top-level mapping carries as many
// extra keys as fit: distinct ones, or the same key again and again (the YAML library's
// slowest path).
func hostileManifest(size int, repeat bool) []byte {
	var b strings.Builder
	b.WriteString(goodManifest)
	for i := 0; ; i++ {
		line := fmt.Sprintf("x%d: 1\n", i)
		if repeat {
			line = "x: 1\n"
		}
		if b.Len()+len(line) > size {
			break
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}

func TestParseManifestLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  []byte
		want string
	}{
		{"over size", hostileManifest(MaxManifestBytes+100, false), "MaxManifestBytes"},
		{"over nodes", hostileManifest(MaxManifestBytes, false), "MaxManifestNodes"},
		{"repeated keys", hostileManifest(4000, true), "key given twice"},
		{"alias bomb", []byte("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"), "MaxManifestNodes"},
		{"long title", []byte(strings.Replace(goodManifest, "  name: mldsa\n", "  name: mldsa\n  title: "+strings.Repeat("t", MaxTextField+1)+"\n", 1)), "metadata.title: is at most 4096 bytes (MaxTextField)"},
		{"long message", []byte(strings.Replace(goodManifest, "Test message for ML-DSA benchmark", strings.Repeat("m", MaxTextField+1), 1)), "spec.message.text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest(tc.src, "hostile")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
	// A manifest built in code is held to the same limits, so `run` never signs one that
	// `verify` refuses.
	m, err := ParseManifest([]byte(goodManifest), "ok")
	if err != nil {
		t.Fatal(err)
	}
	m.Metadata.Title = strings.Repeat("t", 50<<20)
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "MaxTextField") {
		t.Fatalf("a 50 MB title validated: %v", err)
	}
	m.Metadata.Title = strings.Repeat("t", MaxTextField)
	if err := m.Validate(); err != nil {
		t.Fatalf("a title at the limit is refused: %v", err)
	}
	if _, err := ParseManifest(m.YAML(), "written"); err != nil {
		t.Fatalf("what Validate accepts does not parse back: %v", err)
	}
}

// BenchmarkParseHostileManifest parses the worst manifests a reader can be handed: 64 KiB of
// distinct top-level keys, and repeated keys (MaxManifestNodes nodes, and 64 KiB).
func BenchmarkParseHostileManifest(b *testing.B) {
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"64KiB-distinct-keys", hostileManifest(MaxManifestBytes, false)},
		{"4096-nodes-repeated-keys", hostileManifest(len(goodManifest)+5*(MaxManifestNodes/2-40), true)},
		{"64KiB-repeated-keys", hostileManifest(MaxManifestBytes, true)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.src)))
			for b.Loop() {
				if _, err := ParseManifest(tc.src, "hostile"); err == nil {
					b.Fatal("a hostile manifest parsed")
				}
			}
		})
	}
}

// TestReadYAMLFileBounded: a 150 MB file named as a manifest is refused by its size after
// reading one byte more than the limit, naming the file and its size; a small one is read.
func TestReadYAMLFileBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(150 << 20); err != nil { // sparse: no 150 MB written
		t.Fatal(err)
	}
	f.Close()
	_, err = yamlcheck.ReadFile(big, "manifest")
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "157286400 bytes") {
		t.Fatalf("150 MB manifest: %v", err)
	}
	small := filepath.Join(dir, "small.yaml")
	os.WriteFile(small, []byte("apiVersion: pqrepro/v1\n"), 0o644)
	if b, err := yamlcheck.ReadFile(small, "manifest"); err != nil || len(b) != 23 {
		t.Fatalf("small manifest: %d bytes, %v", len(b), err)
	}
}

// TestReadYAMLFileStopsAtTheLimit reads a manifest from a pipe that never ends: the read stops
// one byte past the limit instead of waiting for the end of the file.
func TestReadYAMLFileStopsAtTheLimit(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "endless.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		w.Write(make([]byte, MaxManifestBytes+4096))
		<-done // never at end of file while the test runs
	}()
	if _, err := yamlcheck.ReadFile(fifo, "manifest"); err == nil || !strings.Contains(err.Error(), "more than 65536 bytes") {
		t.Fatalf("endless manifest: %v", err)
	}
}
