package blob

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"pqrepro/portal/fault"
)

// Files stores named objects beside the content-addressed blobs: the transparency log's tiles
// and checkpoint (C2SP tlog-tiles paths such as "tile/0/x001/234", "checkpoint"), which every
// portal replica serves from the same folder or bucket. A write replaces the object as a whole:
// a reader sees the old content or the new, never part of either.
type Files interface {
	// WriteFile stores data under name (ValidName), replacing what was there.
	WriteFile(ctx context.Context, name string, data []byte) error
	// ReadFile returns name's content; a missing object is a fault.NotFound error.
	ReadFile(ctx context.Context, name string) ([]byte, error)
	// RemoveFiles removes every object under dir ("dir/…") and reports how many it removed;
	// an absent dir removes nothing.
	RemoveFiles(ctx context.Context, dir string) (int, error)
}

var _ Files = (*FS)(nil)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)

// ValidName reports whether name is a relative slash-separated path of at most 256 bytes whose
// elements are letters, digits, '.', '_' or '-' and never "." or "..".
func ValidName(name string) bool {
	if len(name) > 256 || !nameRE.MatchString(name) {
		return false
	}
	for _, el := range strings.Split(name, "/") {
		if el == "." || el == ".." {
			return false
		}
	}
	return true
}

func (s *FS) filePath(name string) (string, error) {
	if !ValidName(name) {
		return "", fault.New(fault.Invalid, "malformed object name %q", name)
	}
	return filepath.Join(s.Dir, "files", filepath.FromSlash(name)), nil
}

// WriteFile implements Files: a temporary file, synced, renamed into place.
func (s *FS) WriteFile(ctx context.Context, name string, data []byte) error {
	dst, err := s.filePath(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	f, err := os.CreateTemp(filepath.Join(s.Dir, "tmp"), "file-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if d, err := os.Open(filepath.Dir(dst)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadFile implements Files.
func (s *FS) ReadFile(_ context.Context, name string) ([]byte, error) {
	p, err := s.filePath(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fault.Wrap(fault.NotFound, err, "object %s not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// RemoveFiles implements Files.
func (s *FS) RemoveFiles(ctx context.Context, dir string) (int, error) {
	p, err := s.filePath(dir)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err == nil {
		err = os.RemoveAll(p)
	}
	if err != nil {
		return 0, fmt.Errorf("remove %s: %w", dir, err)
	}
	return n, nil
}
