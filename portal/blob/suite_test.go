package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"pqrepro/portal/fault"
)

// suiteStore is one store under test, with ways to look behind its interface: the keys of
// the blobs it holds and of its temporaries.
type suiteStore struct {
	Store
	Files
	blobs func() []string
	temps func() []string
}

// runSuite runs the blob suite against stores made by open (a fresh, empty store per call).
// Every implementation of Store and Files must pass it.
func runSuite(t *testing.T, open func(t *testing.T) suiteStore) {
	ctx := context.Background()
	t.Run("round trip", func(t *testing.T) {
		s := open(t)
		for _, n := range []int{0, 5, 1 << 20, s3PartSize + 1000} {
			data := pattern(n)
			d, size, err := s.Put(ctx, bytes.NewReader(data), int64(n)+10)
			if err != nil {
				t.Fatalf("put %d bytes: %v", n, err)
			}
			if d != digestOf(data) || size != int64(n) {
				t.Fatalf("put %d bytes: digest %s size %d, want %s", n, d, size, digestOf(data))
			}
			if got := readBlob(t, s, d); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes of %d", len(got), n)
			}
			if st, err := s.Stat(ctx, d); err != nil || st != int64(n) {
				t.Fatalf("stat: %d %v, want %d", st, err, n)
			}
		}
		if got := s.blobs(); len(got) != 4 {
			t.Errorf("%d blobs stored, want 4: %v", len(got), got)
		}
		if got := s.temps(); len(got) != 0 {
			t.Errorf("temporaries left: %v", got)
		}
	})
	t.Run("size limit", func(t *testing.T) {
		s := open(t)
		if _, _, err := s.Put(ctx, bytes.NewReader(pattern(100)), 100); err != nil {
			t.Fatalf("exactly the limit: %v", err)
		}
		for _, tc := range []struct {
			name string
			n    int
			max  int64
		}{{"one byte over", 101, 100}, {"over, past the first part", 3*s3PartSize/2 + 7, s3PartSize + 1}} {
			data := pattern(tc.n)
			_, _, err := s.Put(ctx, bytes.NewReader(data), tc.max)
			if !fault.Is(err, fault.TooLarge) {
				t.Fatalf("%s: %v, want too large", tc.name, err)
			}
			for _, d := range []string{digestOf(data), digestOf(data[:tc.max]), digestOf(data[:tc.max+1])} {
				if _, err := s.Stat(ctx, d); !fault.Is(err, fault.NotFound) {
					t.Errorf("%s: stat of a refused upload's digest %s: %v, want not found", tc.name, d, err)
				}
			}
		}
		if got := s.blobs(); len(got) != 1 {
			t.Errorf("blobs after refused puts: %v, want only the one at the limit", got)
		}
		if got := s.temps(); len(got) != 0 {
			t.Errorf("temporaries left: %v", got)
		}
	})
	t.Run("missing and malformed", func(t *testing.T) {
		s := open(t)
		for d, k := range map[string]fault.Kind{
			"sha256:../../etc/passwd":           fault.Invalid,
			"md5:abc":                           fault.Invalid,
			"sha256:" + strings.Repeat("A", 64): fault.Invalid,
			"sha256:" + strings.Repeat("a", 64): fault.NotFound,
		} {
			if rc, err := s.Open(ctx, d); !fault.Is(err, k) {
				t.Errorf("Open(%q): %v, want %v", d, err, k)
				if rc != nil {
					rc.Close()
				}
			}
			if _, err := s.Stat(ctx, d); !fault.Is(err, k) {
				t.Errorf("Stat(%q): %v, want %v", d, err, k)
			}
		}
	})
	t.Run("concurrent put of the same content", func(t *testing.T) {
		s := open(t)
		data := pattern(300 << 10)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		digests := make([]string, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				digests[i], _, errs[i] = s.Put(ctx, bytes.NewReader(data), 1<<20)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil || digests[i] != digestOf(data) {
				t.Fatalf("put %d: %s %v", i, digests[i], err)
			}
		}
		if got := readBlob(t, s, digestOf(data)); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes", len(got))
		}
		if got := s.blobs(); len(got) != 1 {
			t.Errorf("blobs: %v, want one", got)
		}
		if got := s.temps(); len(got) != 0 {
			t.Errorf("temporaries left: %v", got)
		}
	})
	t.Run("interrupted upload", func(t *testing.T) {
		s := open(t)
		for _, n := range []int{64 << 10, s3PartSize + 512<<10} { // in the first part; past it
			ctx, cancel := context.WithCancel(ctx)
			r := &cancellingReader{data: pattern(n), cancel: cancel, ctx: ctx}
			_, _, err := s.Put(ctx, r, 1<<30)
			cancel()
			if err == nil {
				t.Fatalf("put of a stream cancelled after %d bytes succeeded", n)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err %v, want one that is context.Canceled", err)
			}
			if got := s.blobs(); len(got) != 0 {
				t.Errorf("blobs after an interrupted upload: %v", got)
			}
			if got := s.temps(); len(got) != 0 {
				t.Errorf("temporaries after an interrupted upload: %v", got)
			}
		}
	})
	t.Run("files", func(t *testing.T) {
		s := open(t)
		if _, err := s.ReadFile(ctx, "checkpoint"); !fault.Is(err, fault.NotFound) {
			t.Fatalf("missing object: %v", err)
		}
		for _, v := range []string{"one", "two, longer than one", ""} {
			if err := s.WriteFile(ctx, "tile/0/x001/234", []byte(v)); err != nil {
				t.Fatal(err)
			}
			if b, err := s.ReadFile(ctx, "tile/0/x001/234"); err != nil || string(b) != v {
				t.Fatalf("read %q %v, want %q", b, err, v)
			}
		}
		if err := s.WriteFile(ctx, "checkpoint", []byte("cp")); err != nil {
			t.Fatal(err)
		}
		if b, err := s.ReadFile(ctx, "checkpoint"); err != nil || string(b) != "cp" {
			t.Fatalf("checkpoint %q %v", b, err)
		}
		for _, bad := range []string{"", "/abs", "a/../b", "..", "a//b", "a/./b", "a\\b", "tile/0/x 1", "tile/", strings.Repeat("a", 257)} {
			if err := s.WriteFile(ctx, bad, nil); !fault.Is(err, fault.Invalid) {
				t.Errorf("WriteFile(%q) = %v, want invalid", bad, err)
			}
			if _, err := s.ReadFile(ctx, bad); !fault.Is(err, fault.Invalid) {
				t.Errorf("ReadFile(%q) = %v, want invalid", bad, err)
			}
		}
		if got := s.blobs(); len(got) != 0 {
			t.Errorf("named objects show as blobs: %v", got)
		}
		// Removing a directory of objects: only what is under it goes.
		for _, name := range []string{"tile/0/x001/234.p/1", "tile/0/x001/234.p/17", "tile/0/x001/2345"} {
			if err := s.WriteFile(ctx, name, []byte(name)); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.RemoveFiles(ctx, "tile/0/x001/234.p"); err != nil || n != 2 {
			t.Fatalf("RemoveFiles: %d, %v; want 2 removed", n, err)
		}
		if _, err := s.ReadFile(ctx, "tile/0/x001/234.p/17"); !fault.Is(err, fault.NotFound) {
			t.Fatalf("a removed object reads: %v", err)
		}
		for _, kept := range []string{"tile/0/x001/234", "tile/0/x001/2345", "checkpoint"} {
			if _, err := s.ReadFile(ctx, kept); err != nil {
				t.Fatalf("%s went with the directory beside it: %v", kept, err)
			}
		}
		if n, err := s.RemoveFiles(ctx, "tile/9/none.p"); err != nil || n != 0 {
			t.Fatalf("RemoveFiles of nothing: %d, %v", n, err)
		}
		if _, err := s.RemoveFiles(ctx, "a/../b"); !fault.Is(err, fault.Invalid) {
			t.Fatalf("RemoveFiles of a bad name: %v", err)
		}
	})
}

// cancellingReader yields data, then cancels ctx and fails as a client that went away does.
type cancellingReader struct {
	data   []byte
	cancel context.CancelFunc
	ctx    context.Context
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		r.cancel()
		<-r.ctx.Done()
		return 0, r.ctx.Err()
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// pattern is n bytes that differ from one call's length to another's.
func pattern(n int) []byte {
	b := make([]byte, n)
	x := uint32(n)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func readBlob(t *testing.T, s Store, d string) []byte {
	t.Helper()
	rc, err := s.Open(context.Background(), d)
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", d, err)
	}
	return b
}

// listFiles lists the regular files under dir, relative to it.
func listFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

func TestSuiteFS(t *testing.T) {
	runSuite(t, func(t *testing.T) suiteStore {
		s, err := OpenFS(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return suiteStore{Store: s, Files: s,
			blobs: func() []string { return listFiles(filepath.Join(s.Dir, "sha256")) },
			temps: func() []string { return listFiles(filepath.Join(s.Dir, "tmp")) }}
	})
}

// TestSuiteFSUnsynced: a store that skips the syncs (a bulk load's) behaves as the synced one.
func TestSuiteFSUnsynced(t *testing.T) {
	runSuite(t, func(t *testing.T) suiteStore {
		s, err := OpenFS(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s.Unsynced = true
		return suiteStore{Store: s, Files: s,
			blobs: func() []string { return listFiles(filepath.Join(s.Dir, "sha256")) },
			temps: func() []string { return listFiles(filepath.Join(s.Dir, "tmp")) }}
	})
}
