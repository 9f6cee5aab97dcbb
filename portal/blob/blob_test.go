package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/portal/fault"
)

func TestPut(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		data    string
		max     int64
		wantErr fault.Kind
	}{
		{"small", "hello", 10, ""},
		{"exactly the limit", "0123456789", 10, ""},
		{"one byte over", "0123456789x", 10, fault.TooLarge},
		{"empty", "", 10, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenFS(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			d, n, err := s.Put(ctx, strings.NewReader(tc.data), tc.max)
			if tc.wantErr != "" {
				if !fault.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				if files := countFiles(t, s.Dir); files != 0 {
					t.Errorf("%d files left after a refused put", files)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(tc.data))
			if d != "sha256:"+hex.EncodeToString(sum[:]) || n != int64(len(tc.data)) {
				t.Errorf("digest %s size %d", d, n)
			}
			rc, err := s.Open(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Equal(got, []byte(tc.data)) {
				t.Errorf("read back %q", got)
			}
			if files := countFiles(t, filepath.Join(s.Dir, "tmp")); files != 0 {
				t.Errorf("%d temporary files left", files)
			}
		})
	}
}

func TestOpenRefusesMalformedAndMissingDigests(t *testing.T) {
	s, _ := OpenFS(t.TempDir())
	for d, k := range map[string]fault.Kind{
		"sha256:../../etc/passwd":           fault.Invalid,
		"md5:abc":                           fault.Invalid,
		"sha256:" + strings.Repeat("a", 64): fault.NotFound,
	} {
		if _, err := s.Open(context.Background(), d); !fault.Is(err, k) {
			t.Errorf("Open(%q): %v, want %v", d, err, k)
		}
	}
}

func countFiles(t *testing.T, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

func TestFiles(t *testing.T) {
	s, err := OpenFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.ReadFile(ctx, "checkpoint"); !fault.Is(err, fault.NotFound) {
		t.Fatalf("missing object: %v", err)
	}
	for _, v := range []string{"one", "two"} {
		if err := s.WriteFile(ctx, "tile/0/x001/234", []byte(v)); err != nil {
			t.Fatal(err)
		}
		if b, err := s.ReadFile(ctx, "tile/0/x001/234"); err != nil || string(b) != v {
			t.Fatalf("read %q %v, want %q", b, err, v)
		}
	}
	for _, bad := range []string{"", "/abs", "a/../b", "..", "a//b", "a/./b", "a\\b", "tile/0/x 1", strings.Repeat("a", 257)} {
		if err := s.WriteFile(ctx, bad, nil); !fault.Is(err, fault.Invalid) {
			t.Errorf("WriteFile(%q) = %v, want invalid", bad, err)
		}
		if _, err := s.ReadFile(ctx, bad); !fault.Is(err, fault.Invalid) {
			t.Errorf("ReadFile(%q) = %v, want invalid", bad, err)
		}
	}
}
