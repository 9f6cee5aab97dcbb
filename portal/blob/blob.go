// Package blob stores immutable content by its SHA-256 digest. The filesystem implementation
// writes into a temporary file, syncs it and renames it into place, so a reader never sees a
// partial blob; an interrupted upload leaves at most a temporary file that no row refers to.
package blob

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/portal/fault"
)

// Store is what the portal needs from blob storage. An S3-compatible implementation would
// satisfy the same three methods.
type Store interface {
	// Put stores r's content, at most max bytes (a longer stream is refused with a
	// fault.TooLarge error and nothing is stored), and returns "sha256:<hex>" and the size.
	Put(ctx context.Context, r io.Reader, max int64) (digest string, size int64, err error)
	// Open returns the blob's content; a missing blob is a fault.NotFound error.
	Open(ctx context.Context, digest string) (io.ReadCloser, error)
	// Stat returns the blob's size; a missing blob is a fault.NotFound error.
	Stat(ctx context.Context, digest string) (int64, error)
}

// TempSweeper is a store whose interrupted uploads can leave temporaries behind (a process
// killed mid-upload): SweepTemporaries removes those last written before cutoff and returns
// how many. Both stores implement it; call it with a cutoff older than any upload in progress.
type TempSweeper interface {
	SweepTemporaries(ctx context.Context, cutoff time.Time) (int, error)
}

var (
	_ TempSweeper = (*FS)(nil)
	_ TempSweeper = (*S3)(nil)
)

// FS stores blobs under Dir as sha256/<2 hex>/<64 hex>, with temporary files in Dir/tmp.
// It is safe for concurrent use.
type FS struct {
	Dir string
	// Unsynced skips syncing each blob and its folder in Put: the rename still makes a blob
	// appear whole to readers, and a process that stops keeps what it wrote, but a crash of
	// the machine may lose blobs. Only for a bulk load that syncs the filesystem when it
	// ends (bench/seed).
	Unsynced bool
}

var _ Store = (*FS)(nil)

// OpenFS creates the directories of a filesystem blob store.
func OpenFS(dir string) (*FS, error) {
	for _, d := range []string{dir, filepath.Join(dir, "tmp"), filepath.Join(dir, "sha256")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("open blob store %s: %w", dir, err)
		}
	}
	return &FS{Dir: dir}, nil
}

// SweepTemporaries implements TempSweeper: it removes the files in Dir/tmp modified before
// cutoff.
func (s *FS) SweepTemporaries(ctx context.Context, cutoff time.Time) (int, error) {
	dir := filepath.Join(s.Dir, "tmp")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list temporaries in %s: %w", dir, err)
	}
	n := 0
	for _, e := range ents {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || !info.ModTime().Before(cutoff) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("remove temporary %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether d has the form "sha256:<64 lowercase hex>".
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

func (s *FS) path(digest string) (string, error) {
	if !ValidDigest(digest) {
		return "", fault.New(fault.Invalid, "malformed digest %q", digest)
	}
	h := strings.TrimPrefix(digest, artifacts.DigestPrefix)
	return filepath.Join(s.Dir, "sha256", h[:2], h), nil
}

// Put implements Store.
func (s *FS) Put(ctx context.Context, r io.Reader, max int64) (string, int64, error) {
	f, err := os.CreateTemp(filepath.Join(s.Dir, "tmp"), "put-*")
	if err != nil {
		return "", 0, fmt.Errorf("store blob: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, max+1))
	if err == nil && n > max {
		err = fault.New(fault.TooLarge, "upload is larger than the limit of %d bytes", max)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && !s.Unsynced {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, fmt.Errorf("store blob: %w", err)
	}
	digest := artifacts.DigestOfSum(h.Sum(nil))
	dst, _ := s.path(digest)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", 0, fmt.Errorf("store blob: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return "", 0, fmt.Errorf("store blob: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", 0, fmt.Errorf("store blob: %w", err)
	}
	if s.Unsynced {
		return digest, n, nil
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		d.Sync()
		d.Close()
	}
	return digest, n, nil
}

// Open implements Store.
func (s *FS) Open(_ context.Context, digest string) (io.ReadCloser, error) {
	p, err := s.path(digest)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fault.Wrap(fault.NotFound, err, "blob %s not found", digest)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob %s: %w", digest, err)
	}
	return f, nil
}

// Stat implements Store.
func (s *FS) Stat(_ context.Context, digest string) (int64, error) {
	p, err := s.path(digest)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fault.Wrap(fault.NotFound, err, "blob %s not found", digest)
	}
	if err != nil {
		return 0, fmt.Errorf("stat blob %s: %w", digest, err)
	}
	return st.Size(), nil
}
